/*
 * peer_onednn.c -- --peer onednn: the same layers and passes through
 * oneDNN's convolution primitive (C API, v2.x), in this process. Built only
 * where CMake finds oneDNN (CB_HAVE_ONEDNN); libconv itself never links it.
 *
 * What is measured -- "oneDNN, primitive only", the measurement of the
 * baseline table in issue 4:
 *  - src, weights and dst are described with format_tag `any`, so oneDNN
 *    picks the layouts it prefers (blocked, e.g. nChw16c on AVX-512) and the
 *    implementation it runs in them. Only dnnl_primitive_execute and
 *    dnnl_stream_wait are timed. The inputs are filled once in a plain
 *    layout and reordered into oneDNN's before timing; those reorders are not
 *    counted. A framework that keeps plain (nchw) tensors would pay them on
 *    every call, so this is oneDNN at its best, and a ratio > 1 is not
 *    flattered by it.
 *  - The same batch and dtype as libconv: f32 only, oneDNN has no f64
 *    convolution (f64 rows are n/a). The same warm-up, repeats and median:
 *    runner.c's cb_time_calls. The same input values: cb_fill_random with
 *    libconv's seeds, in channels-first order.
 *  - Algorithm `auto` (oneDNN picks direct or Winograd, as libconv's
 *    heuristic picks among its own), forward_training (the forward
 *    primitive is also the backward passes' hint), no bias (libconv's rows
 *    pass none), scratchpad user-managed and allocated before timing (as
 *    libconv's workspace grows once): nothing is allocated in the timed loop.
 *  - As many threads as the libconv context. Debian's oneDNN runs on OpenMP
 *    (libgomp), which reads OMP_NUM_THREADS while it is loaded, before main,
 *    so setting that variable here would come too late: omp_set_num_threads
 *    is called instead, looked up in the process (oneDNN loaded its OpenMP
 *    runtime with it), before the first primitive is created. convbench
 *    itself is not built with OpenMP.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h> /* dnnl_status2str */

#include "convbench.h"

/* The engine and stream every pass uses, and the thread count. */
static struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    int threads;         /* what oneDNN runs with; 0: unknown */
    const char *runtime; /* its threading runtime, for the header */
} g;

int cb_onednn_open(const cb_bench *b, char *err, size_t errlen);
void cb_onednn_describe(const cb_bench *b, char *buf, size_t len);
void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times,
                   cb_row *r);
void cb_onednn_close(void);

/* A function of the OpenMP runtime already in the process, or NULL. */
static void *omp_symbol(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static int set_threads(int want, char *err, size_t errlen)
{
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
    void (*set)(int) = NULL;
    int (*get)(void) = NULL;
    void *s = omp_symbol("omp_set_num_threads"), *q = omp_symbol("omp_get_max_threads");
    /* POSIX: a dlsym result converts to a function pointer; memcpy says so
     * without the ISO C warning. */
    memcpy(&set, &s, sizeof s);
    memcpy(&get, &q, sizeof q);
    if (!set || !get) {
        snprintf(err, errlen,
                 "oneDNN is built with OpenMP but omp_set_num_threads is not in the process: "
                 "cannot give it the libconv context's %d threads",
                 want);
        return 1;
    }
    if (want > 0)
        set(want);
    g.threads = get();
    g.runtime = "OpenMP";
#elif DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_SEQ
    (void)want;
    (void)err;
    (void)errlen;
    g.threads = 1;
    g.runtime = "sequential build";
#else
    /* TBB or a threadpool: no portable way to set the count from here. */
    (void)want;
    (void)err;
    (void)errlen;
    g.threads = 0;
    g.runtime = "TBB/threadpool build, its own default";
#endif
    return 0;
}

int cb_onednn_open(const cb_bench *b, char *err, size_t errlen)
{
    if (b->device != CONV_DEVICE_CPU) {
        snprintf(err, errlen, "oneDNN is timed on the CPU only; add --device cpu");
        return 2;
    }
    int rc = set_threads(b->threads, err, errlen);
    if (rc)
        return rc;
    dnnl_status_t s = dnnl_engine_create(&g.engine, dnnl_cpu, 0);
    const char *call = "dnnl_engine_create";
    if (s == dnnl_success) {
        call = "dnnl_stream_create";
        s = dnnl_stream_create(&g.stream, g.engine, dnnl_stream_default_flags);
    }
    if (s != dnnl_success) {
        snprintf(err, errlen, "%s: %s", call, dnnl_status2str(s));
        cb_onednn_close();
        return 1;
    }
    return 0;
}

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

void cb_onednn_describe(const cb_bench *b, char *buf, size_t len)
{
    const dnnl_version_t *v = dnnl_version();
    char threads[16] = "?";
    if (g.threads > 0)
        snprintf(threads, sizeof threads, "%d", g.threads);
    /* OpenMP threads spin at barriers by default: on a machine loaded by
     * other work a descheduled thread stalls the others for a time slice,
     * which can multiply oneDNN's times (libconv's pool blocks and shares
     * out work dynamically instead). OMP_WAIT_POLICY=passive avoids that; the
     * header says which was in force so a table can be read. */
    const char *wait = getenv("OMP_WAIT_POLICY");
    snprintf(buf, len,
             "oneDNN %d.%d.%d | isa %s | threads %s (%s, OMP_WAIT_POLICY %s) | %s | primitive "
             "only: format any (oneDNN's layouts), reorders not timed, algorithm auto",
             v->major, v->minor, v->patch, isa_name(dnnl_get_effective_cpu_isa()), threads,
             g.runtime, wait && *wait ? wait : "unset",
             b->opt->dtype == CONV_DTYPE_FLOAT32 ? "f32"
                                                 : "n/a: oneDNN has no f64 convolution");
}

void cb_onednn_close(void)
{
    if (g.stream)
        dnnl_stream_destroy(g.stream);
    if (g.engine)
        dnnl_engine_destroy(g.engine);
    g.stream = NULL;
    g.engine = NULL;
}

/* ------------------------------------------------------------ one pass */

enum { MAX_ARGS = 4 }; /* two inputs, the output, the scratchpad */

typedef struct onednn_pass {
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t fwd_pd; /* the forward pass, or the backward passes' hint */
    dnnl_primitive_desc_t bwd_pd;
    dnnl_primitive_t prim;
    dnnl_exec_arg_t args[MAX_ARGS];
    int nargs;
    /* the call that failed, and its status */
    const char *call;
    dnnl_status_t status;
} onednn_pass;

/* Records a failed call; returns 1 if `s` is a failure. */
static int failed(onednn_pass *p, dnnl_status_t s, const char *call)
{
    if (s == dnnl_success)
        return 0;
    p->call = call;
    p->status = s;
    return 1;
}

static dnnl_format_tag_t plain_tag(int ndims)
{
    switch (ndims) {
    case 3: return dnnl_abc;
    case 4: return dnnl_abcd;
    case 5: return dnnl_abcde;
    default: return dnnl_abcdef;
    }
}

/* The memory oneDNN wants for argument `arg`, allocated by it; an input
 * (seed > 0) gets cb_fill_random's values, written in the plain layout of
 * `dims` and reordered into oneDNN's (untimed). */
static int add_arg(onednn_pass *p, const_dnnl_primitive_desc_t pd, int arg, int ndims,
                   const dnnl_dim_t *dims, uint64_t seed)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    dnnl_memory_t mem = NULL;
    if (!md)
        return failed(p, dnnl_invalid_arguments, "dnnl_primitive_desc_query_md");
    if (failed(p, dnnl_memory_create(&mem, md, g.engine, DNNL_MEMORY_ALLOCATE),
               "dnnl_memory_create"))
        return 1;
    p->args[p->nargs++] = (dnnl_exec_arg_t){arg, mem};
    if (!seed)
        return 0;

    dnnl_memory_desc_t user_md;
    dnnl_memory_t user = NULL;
    dnnl_primitive_desc_t reorder_pd = NULL;
    dnnl_primitive_t reorder = NULL;
    void *data = NULL;
    int64_t elements = 1;
    for (int i = 0; i < ndims; i++)
        elements *= dims[i];
    int bad = failed(p, dnnl_memory_desc_init_by_tag(&user_md, ndims, dims, dnnl_f32,
                                                     plain_tag(ndims)),
                     "dnnl_memory_desc_init_by_tag") ||
              failed(p, dnnl_memory_create(&user, &user_md, g.engine, DNNL_MEMORY_ALLOCATE),
                     "dnnl_memory_create") ||
              failed(p, dnnl_memory_get_data_handle(user, &data), "dnnl_memory_get_data_handle");
    if (!bad) {
        cb_fill_random(data, CONV_DTYPE_FLOAT32, elements, seed);
        dnnl_exec_arg_t rargs[] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, mem}};
        bad = failed(p, dnnl_reorder_primitive_desc_create(&reorder_pd, &user_md, g.engine, md,
                                                           g.engine, NULL),
                     "dnnl_reorder_primitive_desc_create") ||
              failed(p, dnnl_primitive_create(&reorder, reorder_pd), "dnnl_primitive_create") ||
              failed(p, dnnl_primitive_execute(reorder, g.stream, 2, rargs),
                     "dnnl_primitive_execute (reorder)") ||
              failed(p, dnnl_stream_wait(g.stream), "dnnl_stream_wait");
    }
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (reorder_pd)
        dnnl_primitive_desc_destroy(reorder_pd);
    if (user)
        dnnl_memory_destroy(user);
    return bad;
}

/* Descriptors, primitive and memories of pass `op`; returns 0 or 1 (the
 * failed call in p). Dims as in libconv: src (N, C, in...), weights
 * (K, C, kernel...) or, with groups, (G, K/G, C/G, kernel...), dst
 * (N, K, out...); oneDNN's dilation counts the gaps (d - 1). */
static int set_up(const cb_bench *b, const cb_layer *l, conv_op_t op, onednn_pass *p)
{
    const int sp = l->spatial, nd = sp + 2;
    const int wnd = l->groups > 1 ? nd + 1 : nd;
    dnnl_dims_t src = {b->opt->batch, l->c}, dst = {b->opt->batch, l->k}, wei;
    dnnl_dims_t strides, dilates, pad_l, pad_r;
    int w0 = 0;
    if (l->groups > 1)
        wei[w0++] = l->groups;
    wei[w0++] = l->k / l->groups;
    wei[w0++] = l->c / l->groups;
    for (int a = 0; a < sp; a++) {
        src[2 + a] = l->in[a];
        dst[2 + a] = cb_out_size(l, a);
        wei[w0 + a] = l->kernel[a];
        strides[a] = l->stride[a];
        dilates[a] = l->dilation[a] - 1;
        pad_l[a] = l->pad_begin[a];
        pad_r[a] = l->pad_end[a];
    }

    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_convolution_desc_t fwd, bwd;
    if (failed(p, dnnl_memory_desc_init_by_tag(&src_md, nd, src, dnnl_f32, dnnl_format_tag_any),
               "dnnl_memory_desc_init_by_tag") ||
        failed(p, dnnl_memory_desc_init_by_tag(&wei_md, wnd, wei, dnnl_f32, dnnl_format_tag_any),
               "dnnl_memory_desc_init_by_tag") ||
        failed(p, dnnl_memory_desc_init_by_tag(&dst_md, nd, dst, dnnl_f32, dnnl_format_tag_any),
               "dnnl_memory_desc_init_by_tag") ||
        failed(p, dnnl_primitive_attr_create(&p->attr), "dnnl_primitive_attr_create") ||
        failed(p, dnnl_primitive_attr_set_scratchpad_mode(p->attr, dnnl_scratchpad_mode_user),
               "dnnl_primitive_attr_set_scratchpad_mode") ||
        failed(p, dnnl_dilated_convolution_forward_desc_init(
                      &fwd, dnnl_forward_training, dnnl_convolution_auto, &src_md, &wei_md, NULL,
                      &dst_md, strides, dilates, pad_l, pad_r),
               "dnnl_dilated_convolution_forward_desc_init") ||
        failed(p, dnnl_primitive_desc_create(&p->fwd_pd, &fwd, p->attr, g.engine, NULL),
               "dnnl_primitive_desc_create (forward)"))
        return 1;

    const_dnnl_primitive_desc_t pd = p->fwd_pd;
    if (op == CONV_OP_BACKWARD_DATA) {
        if (failed(p, dnnl_dilated_convolution_backward_data_desc_init(
                          &bwd, dnnl_convolution_auto, &src_md, &wei_md, &dst_md, strides,
                          dilates, pad_l, pad_r),
                   "dnnl_dilated_convolution_backward_data_desc_init") ||
            failed(p, dnnl_primitive_desc_create(&p->bwd_pd, &bwd, p->attr, g.engine, p->fwd_pd),
                   "dnnl_primitive_desc_create (backward data)"))
            return 1;
        pd = p->bwd_pd;
    } else if (op == CONV_OP_BACKWARD_FILTER) {
        if (failed(p, dnnl_dilated_convolution_backward_weights_desc_init(
                          &bwd, dnnl_convolution_auto, &src_md, &wei_md, NULL, &dst_md, strides,
                          dilates, pad_l, pad_r),
                   "dnnl_dilated_convolution_backward_weights_desc_init") ||
            failed(p, dnnl_primitive_desc_create(&p->bwd_pd, &bwd, p->attr, g.engine, p->fwd_pd),
                   "dnnl_primitive_desc_create (backward weights)"))
            return 1;
        pd = p->bwd_pd;
    }
    if (failed(p, dnnl_primitive_create(&p->prim, pd), "dnnl_primitive_create"))
        return 1;

    /* The pass's inputs (seeded as libconv's), its output, the scratchpad. */
    int in0, in1, out;
    const dnnl_dim_t *in0_dims, *in1_dims;
    int in0_nd, in1_nd;
    uint64_t in0_seed, in1_seed;
    switch (op) {
    case CONV_OP_FORWARD:
        in0 = DNNL_ARG_SRC, in0_dims = src, in0_nd = nd, in0_seed = CB_SEED_X;
        in1 = DNNL_ARG_WEIGHTS, in1_dims = wei, in1_nd = wnd, in1_seed = CB_SEED_W;
        out = DNNL_ARG_DST;
        break;
    case CONV_OP_BACKWARD_DATA:
        in0 = DNNL_ARG_WEIGHTS, in0_dims = wei, in0_nd = wnd, in0_seed = CB_SEED_W;
        in1 = DNNL_ARG_DIFF_DST, in1_dims = dst, in1_nd = nd, in1_seed = CB_SEED_DY;
        out = DNNL_ARG_DIFF_SRC;
        break;
    default:
        in0 = DNNL_ARG_SRC, in0_dims = src, in0_nd = nd, in0_seed = CB_SEED_X;
        in1 = DNNL_ARG_DIFF_DST, in1_dims = dst, in1_nd = nd, in1_seed = CB_SEED_DY;
        out = DNNL_ARG_DIFF_WEIGHTS;
        break;
    }
    if (add_arg(p, pd, in0, in0_nd, in0_dims, in0_seed) ||
        add_arg(p, pd, in1, in1_nd, in1_dims, in1_seed) || add_arg(p, pd, out, 0, NULL, 0))
        return 1;
    const dnnl_memory_desc_t *scratch =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (scratch && dnnl_memory_desc_get_size(scratch) > 0)
        return add_arg(p, pd, DNNL_ARG_SCRATCHPAD, 0, NULL, 0);
    return 0;
}

static void tear_down(onednn_pass *p)
{
    for (int i = 0; i < p->nargs; i++)
        dnnl_memory_destroy(p->args[i].memory);
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    if (p->bwd_pd)
        dnnl_primitive_desc_destroy(p->bwd_pd);
    if (p->fwd_pd)
        dnnl_primitive_desc_destroy(p->fwd_pd);
    if (p->attr)
        dnnl_primitive_attr_destroy(p->attr);
}

/* The timed call: the primitive's execution and nothing else. */
static int execute(void *arg)
{
    onednn_pass *p = arg;
    return failed(p, dnnl_primitive_execute(p->prim, g.stream, p->nargs, p->args),
                  "dnnl_primitive_execute") ||
           failed(p, dnnl_stream_wait(g.stream), "dnnl_stream_wait");
}

void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times, cb_row *r)
{
    if (b->opt->dtype != CONV_DTYPE_FLOAT32) {
        r->peer_status = CB_PEER_NA;
        snprintf(r->peer_error, sizeof r->peer_error, "oneDNN has no %s convolution",
                 cb_dtype_name(b->opt->dtype));
        return;
    }
    onednn_pass p = {0};
    cb_timing t;
    if (set_up(b, l, op, &p) == 0 && cb_time_calls(b->opt, execute, &p, times, &t) == 0) {
        r->peer_status = CB_PEER_OK;
        r->peer_ms = t.ms;
        r->peer_min_ms = t.min_ms;
        r->peer_repeats = t.repeats;
    } else {
        r->peer_status = CB_PEER_FAILED;
        snprintf(r->peer_error, sizeof r->peer_error, "%s: %s", p.call,
                 dnnl_status2str(p.status));
    }
    tear_down(&p);
}
