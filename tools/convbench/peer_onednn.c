/*
 * peer_onednn.c -- --peer onednn: the same layers and passes through
 * oneDNN's convolution primitive (3.x C API), in this process. The library
 * is loaded at run time (onednn_load.c; scripts/onednn.sh fetches oneDNN
 * 3.2 from PyPI): neither convbench nor libconv links it.
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
 *  - The same batch and dtype as libconv: f32, or bf16 (every tensor bf16,
 *    oneDNN accumulating in f32; the inputs are libconv's f32 values
 *    rounded by the reorder). oneDNN has no f64 convolution, and f16 on the
 *    CPU needs AVX512-FP16: those rows are n/a. The same warm-up, repeats
 *    and median: runner.c's cb_time_calls. The same input values:
 *    cb_fill_random with libconv's seeds, in channels-first order.
 *  - Algorithm `auto` (oneDNN picks its implementation, as libconv's
 *    heuristic picks among its own), forward_training (the forward
 *    primitive is also the backward passes' hint), no bias (libconv's rows
 *    pass none), scratchpad user-managed and allocated before timing (as
 *    libconv's workspace grows once): nothing is allocated in the timed loop.
 *  - --peer-reorders instead times what a caller holding its tensors in
 *    libconv's layout (--layout: nchw or nhwc, filters oihw or ohwi) pays:
 *    each timed call reorders the pass's inputs from those tensors into the
 *    primitive's layouts, runs it, and reorders its output back, on the
 *    same stream (no reorder where the two layouts agree). With --prepared
 *    the weights are reordered once before timing, as libconv prepares
 *    its plan's weights once. A framework keeping plain tensors pays this.
 *  - As many threads as the libconv context. The PyPI wheels' oneDNN runs on
 *    OpenMP (libgomp), so omp_set_num_threads of the runtime oneDNN loaded
 *    is called before the first primitive is created. convbench itself is
 *    not built with OpenMP.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convbench.h"
#include "onednn_api.h"

/* The library, the engine and stream every pass uses, and the threads. */
static onednn_api dnnl;
static struct {
    onednn_engine_t engine;
    onednn_stream_t stream;
    int threads;         /* what oneDNN runs with; 0: unknown */
    char runtime[64];    /* its threading runtime, for the header */
} g;

int cb_onednn_open(const cb_bench *b, char *err, size_t errlen);
void cb_onednn_describe(const cb_bench *b, char *buf, size_t len);
void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times,
                   cb_row *r);
void cb_onednn_close(void);

/* A function of the library oneDNN loaded (or one it depends on), or NULL. */
static void *symbol(const char *name)
{
    return dlsym(dnnl.handle, name);
}

/* Gives OpenMP the context's thread count; names the runtime's file. */
static int set_omp_threads(int want, char *err, size_t errlen)
{
    void (*set)(int) = NULL;
    int (*get)(void) = NULL;
    void *s = symbol("omp_set_num_threads"), *q = symbol("omp_get_max_threads");
    /* POSIX: a dlsym result converts to a function pointer; memcpy says so
     * without the ISO C warning. */
    memcpy(&set, &s, sizeof s);
    memcpy(&get, &q, sizeof q);
    if (!set || !get) {
        snprintf(err, errlen,
                 "%s is built with OpenMP but omp_set_num_threads is not in the process: "
                 "cannot give it the libconv context's %d threads",
                 dnnl.path, want);
        return 1;
    }
    if (want > 0)
        set(want);
    g.threads = get();
    Dl_info info;
    const char *file = dladdr(s, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    snprintf(g.runtime, sizeof g.runtime, "OpenMP %s", file ? file + 1 : "");
    return 0;
}

static int set_threads(int want, char *err, size_t errlen)
{
    switch (dnnl.version()->cpu_runtime) {
    case ONEDNN_RUNTIME_OMP: return set_omp_threads(want, err, errlen);
    case ONEDNN_RUNTIME_SEQ:
        g.threads = 1;
        snprintf(g.runtime, sizeof g.runtime, "sequential build");
        return 0;
    default: /* TBB or a threadpool: no portable way to set the count from here */
        g.threads = 0;
        snprintf(g.runtime, sizeof g.runtime, "TBB/threadpool build, its own default");
        return 0;
    }
}

int cb_onednn_open(const cb_bench *b, char *err, size_t errlen)
{
    if (b->device != CONV_DEVICE_CPU) {
        snprintf(err, errlen, "oneDNN is timed on the CPU only; add --device cpu");
        return 2;
    }
    if (onednn_load(&dnnl, b->opt->peer_lib, err, errlen) != 0)
        return CB_EXIT_PEER_MISSING;
    int rc = set_threads(b->threads, err, errlen);
    if (rc)
        return rc;
    onednn_status_t s = dnnl.engine_create(&g.engine, ONEDNN_ENGINE_CPU, 0);
    const char *call = "dnnl_engine_create";
    if (s == ONEDNN_SUCCESS) {
        call = "dnnl_stream_create";
        s = dnnl.stream_create(&g.stream, g.engine, ONEDNN_STREAM_DEFAULT_FLAGS);
    }
    if (s != ONEDNN_SUCCESS) {
        snprintf(err, errlen, "%s: %s", call, dnnl.status2str(s));
        cb_onednn_close();
        return 1;
    }
    return 0;
}

/* dnnl_cpu_isa_t's values in 3.x (bit sets: each ISA includes the ones
 * before it). */
static const char *isa_name(int isa)
{
    static const struct {
        int isa;
        const char *name;
    } kIsa[] = {{0x1, "sse41"},
                {0x3, "avx"},
                {0x7, "avx2"},
                {0xf, "avx2_vnni"},
                {0x1f, "avx2_vnni_2"},
                {0x27, "avx512_core"},
                {0x67, "avx512_core_vnni"},
                {0xe7, "avx512_core_bf16"},
                {0x1ef, "avx512_core_fp16"},
                {0xfef, "avx512_core_amx"},
                {0x1fef, "avx512_core_amx_fp16"}};
    for (size_t i = 0; i < sizeof kIsa / sizeof kIsa[0]; i++)
        if (kIsa[i].isa == isa)
            return kIsa[i].name;
    return "newer than 3.2 knows";
}

/* --math fast on f32 tensors: oneDNN's counterpart of libconv's
 * CONV_MATH_FAST on the CPU, bf16 products with f32 sums
 * (fpmath_mode::bf16; on the AMX tiles where the CPU has them). */
static int fpmath_bf16(const cb_bench *b)
{
    return b->opt->math == CONV_MATH_FAST && b->opt->dtype == CONV_DTYPE_FLOAT32;
}

/* What the timed call holds, for the header. */
static const char *timed_part(const cb_bench *b)
{
    if (!b->opt->peer_reorders)
        return "primitive only: format any (oneDNN's layouts), reorders not timed";
    if (b->opt->layout == CONV_LAYOUT_CHANNELS_LAST)
        return b->opt->prepared ? "primitive and reorders: from and to nhwc tensors timed, "
                                  "ohwi weights reordered once before timing (forward, backward-data)"
                                : "primitive and reorders: from and to nhwc/ohwi tensors timed";
    return b->opt->prepared ? "primitive and reorders: from and to nchw tensors timed, "
                              "oihw weights reordered once before timing (forward, backward-data)"
                            : "primitive and reorders: from and to nchw/oihw tensors timed";
}

void cb_onednn_describe(const cb_bench *b, char *buf, size_t len)
{
    const onednn_version_t *v = dnnl.version();
    char threads[16] = "?";
    if (g.threads > 0)
        snprintf(threads, sizeof threads, "%d", g.threads);
    /* OpenMP threads spin at barriers by default: on a machine loaded by
     * other work a descheduled thread stalls the others for a time slice,
     * which can multiply oneDNN's times (libconv's pool blocks and shares
     * out work dynamically instead). OMP_WAIT_POLICY=passive avoids that; the
     * header says which was in force so a table can be read. */
    const char *wait = getenv("OMP_WAIT_POLICY");
    conv_dtype_t dt = b->opt->dtype;
    snprintf(buf, len,
             "oneDNN %d.%d.%d (%s) | isa %s | threads %s (%s, OMP_WAIT_POLICY %s) | %s%s | "
             "%s, algorithm auto",
             v->major, v->minor, v->patch, dnnl.path, isa_name(dnnl.get_effective_cpu_isa()),
             threads, g.runtime, wait && *wait ? wait : "unset",
             dt == CONV_DTYPE_FLOAT32 || dt == CONV_DTYPE_BFLOAT16 ? cb_dtype_name(dt)
                                                                   : "n/a: f32 and bf16 only",
             fpmath_bf16(b) ? ", fpmath_mode bf16" : "", timed_part(b));
}

void cb_onednn_close(void)
{
    if (g.stream)
        dnnl.stream_destroy(g.stream);
    if (g.engine)
        dnnl.engine_destroy(g.engine);
    g.stream = NULL;
    g.engine = NULL;
}

/* ------------------------------------------------------------ one pass */

enum { MAX_ARGS = 4 }; /* two inputs, the output, the scratchpad */
enum { MAX_REORDERS = 3 }; /* --peer-reorders: the two inputs' and the output's */

/* A reorder the timed call runs (--peer-reorders). */
typedef struct onednn_step {
    onednn_primitive_t prim;
    onednn_exec_arg_t args[2]; /* from, to */
} onednn_step;

typedef struct onednn_pass {
    onednn_memory_desc_t src_md, wei_md, dst_md; /* format any */
    onednn_primitive_attr_t attr;
    onednn_primitive_desc_t fwd_pd; /* the forward pass, or the backward passes' hint */
    onednn_primitive_desc_t bwd_pd;
    onednn_primitive_t prim;
    onednn_exec_arg_t args[MAX_ARGS];
    int nargs;
    /* --peer-reorders: the caller's tensors kept apart from the
     * primitive's memory (their layouts differ), and the reorders before
     * the primitive (inputs) and after it (the output) */
    onednn_memory_t user[MAX_REORDERS];
    int nuser;
    onednn_step before[MAX_REORDERS - 1], after;
    int nbefore;
    /* the call that failed, and its status */
    const char *call;
    onednn_status_t status;
} onednn_pass;

/* Records a failed call; returns 1 if `s` is a failure. */
static int failed(onednn_pass *p, onednn_status_t s, const char *call)
{
    if (s == ONEDNN_SUCCESS)
        return 0;
    p->call = call;
    p->status = s;
    return 1;
}

static int plain_tag(int ndims)
{
    switch (ndims) {
    case 3: return ONEDNN_ABC;
    case 4: return ONEDNN_ABCD;
    case 5: return ONEDNN_ABCDE;
    default: return ONEDNN_ABCDEF;
    }
}

/* A reorder of `from` (described by from_md) into `to`: run once now when
 * `keep` is NULL, else kept in *keep for the timed call. */
static int reorder(onednn_pass *p, onednn_memory_t from, const_onednn_memory_desc_t from_md,
                   onednn_memory_t to, const_onednn_memory_desc_t to_md, onednn_step *keep)
{
    onednn_primitive_desc_t pd = NULL;
    onednn_primitive_t prim = NULL;
    onednn_exec_arg_t rargs[] = {{ONEDNN_ARG_FROM, from}, {ONEDNN_ARG_TO, to}};
    int bad = failed(p, dnnl.reorder_primitive_desc_create(&pd, from_md, g.engine, to_md, g.engine,
                                                           NULL),
                     "dnnl_reorder_primitive_desc_create") ||
              failed(p, dnnl.primitive_create(&prim, pd), "dnnl_primitive_create");
    if (!bad && keep) {
        keep->prim = prim;
        memcpy(keep->args, rargs, sizeof rargs);
        prim = NULL;
    } else if (!bad) {
        bad = failed(p, dnnl.primitive_execute(prim, g.stream, 2, rargs),
                     "dnnl_primitive_execute (reorder)") ||
              failed(p, dnnl.stream_wait(g.stream), "dnnl_stream_wait");
    }
    if (prim)
        dnnl.primitive_destroy(prim);
    if (pd)
        dnnl.primitive_desc_destroy(pd);
    return bad;
}

/* A tensor of `dims` as the caller holds it (--peer-reorders): libconv's
 * layout, dense; channels-last puts dimension `channel` (C, or C/groups of
 * grouped filters) innermost and keeps the others' order. */
static int caller_md(onednn_pass *p, const cb_bench *b, int ndims, const onednn_dim_t *dims,
                     int channel, int type, onednn_memory_desc_t *md)
{
    int order[8];
    int n = 0;
    const int last = b->opt->layout == CONV_LAYOUT_CHANNELS_LAST;
    for (int d = 0; d < ndims; d++)
        if (!last || d != channel)
            order[n++] = d;
    if (last)
        order[n++] = channel;
    onednn_dims_t strides;
    onednn_dim_t step = 1;
    for (int i = ndims - 1; i >= 0; i--) {
        strides[order[i]] = step;
        step *= dims[order[i]];
    }
    return failed(p, dnnl.memory_desc_create_with_strides(md, ndims, dims, type, strides),
                  "dnnl_memory_desc_create_with_strides");
}

/* How add_arg serves an argument: `seed` > 0 for an input, filled with
 * cb_fill_random's values; `timed` (--peer-reorders) for one the caller
 * holds in its own layout, reordered from (an input) or into (the output)
 * the primitive's by every timed call. */
typedef struct arg_role {
    int ndims;
    const onednn_dim_t *dims;
    int channel; /* the dimension channels-last puts innermost */
    uint64_t seed;
    int timed;
} arg_role;

/* The memory oneDNN wants for argument `arg`, allocated by it. An input's
 * values are written as f32 in the plain layout of `dims` and reordered
 * (untimed) into the primitive's layout and type -- or, timed, into the
 * caller's tensor, which each timed call then reorders into the
 * primitive's; a timed output is reordered into the caller's tensor after
 * the primitive. Where the caller's layout is the primitive's, the
 * primitive reads or writes the caller's tensor, with no reorder. */
static int add_arg(onednn_pass *p, const cb_bench *b, const_onednn_primitive_desc_t pd, int arg,
                   int type, arg_role role)
{
    const_onednn_memory_desc_t md = dnnl.primitive_desc_query_md(pd, ONEDNN_QUERY_EXEC_ARG_MD, arg);
    if (!md)
        return failed(p, ONEDNN_INVALID_ARGUMENTS, "dnnl_primitive_desc_query_md");
    onednn_memory_desc_t fill_md = NULL, user_md = NULL;
    onednn_memory_t mem = NULL, fill = NULL, user = NULL;
    if (role.timed && caller_md(p, b, role.ndims, role.dims, role.channel, type, &user_md))
        return 1;
    /* A caller's tensor apart from the primitive's memory, and reorders
     * between them, only where their layouts differ. */
    const int apart = role.timed && !dnnl.memory_desc_equal(user_md, md);
    int bad = failed(p, dnnl.memory_create(&mem, md, g.engine, ONEDNN_MEMORY_ALLOCATE),
                     "dnnl_memory_create");
    if (!bad)
        p->args[p->nargs++] = (onednn_exec_arg_t){arg, mem};
    if (!bad && apart) {
        bad = failed(p, dnnl.memory_create(&user, user_md, g.engine, ONEDNN_MEMORY_ALLOCATE),
                     "dnnl_memory_create");
        if (!bad)
            p->user[p->nuser++] = user;
    }
    if (!bad && role.seed) {
        void *data = NULL;
        int64_t elements = 1;
        for (int i = 0; i < role.ndims; i++)
            elements *= role.dims[i];
        bad = failed(p, dnnl.memory_desc_create_with_tag(&fill_md, role.ndims, role.dims,
                                                         ONEDNN_F32, plain_tag(role.ndims)),
                     "dnnl_memory_desc_create_with_tag") ||
              failed(p, dnnl.memory_create(&fill, fill_md, g.engine, ONEDNN_MEMORY_ALLOCATE),
                     "dnnl_memory_create") ||
              failed(p, dnnl.memory_get_data_handle(fill, &data), "dnnl_memory_get_data_handle");
        if (!bad) {
            cb_fill_random(data, CONV_DTYPE_FLOAT32, elements, role.seed);
            bad = apart ? reorder(p, fill, fill_md, user, user_md, NULL)
                        : reorder(p, fill, fill_md, mem, md, NULL);
        }
    }
    if (!bad && apart)
        bad = role.seed ? reorder(p, user, user_md, mem, md, &p->before[p->nbefore++])
                        : reorder(p, mem, md, user, user_md, &p->after);
    if (fill)
        dnnl.memory_destroy(fill);
    if (fill_md)
        dnnl.memory_desc_destroy(fill_md);
    if (user_md)
        dnnl.memory_desc_destroy(user_md);
    return bad;
}

/* Descriptors, primitive and memories of pass `op`; returns 0 or 1 (the
 * failed call in p). Dims as in libconv: src (N, C, in...), weights
 * (K, C, kernel...) or, with groups, (G, K/G, C/G, kernel...), dst
 * (N, K, out...); oneDNN's dilation counts the gaps (d - 1). */
static int set_up(const cb_bench *b, const cb_layer *l, conv_op_t op, int type, onednn_pass *p)
{
    const int sp = l->spatial, nd = sp + 2;
    const int wnd = l->groups > 1 ? nd + 1 : nd;
    onednn_dims_t src = {b->opt->batch, l->c}, dst = {b->opt->batch, l->k}, wei;
    onednn_dims_t strides, dilates, pad_l, pad_r;
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

    const int any = ONEDNN_FORMAT_TAG_ANY, alg = ONEDNN_CONVOLUTION_AUTO;
    if (failed(p, dnnl.memory_desc_create_with_tag(&p->src_md, nd, src, type, any),
               "dnnl_memory_desc_create_with_tag") ||
        failed(p, dnnl.memory_desc_create_with_tag(&p->wei_md, wnd, wei, type, any),
               "dnnl_memory_desc_create_with_tag") ||
        failed(p, dnnl.memory_desc_create_with_tag(&p->dst_md, nd, dst, type, any),
               "dnnl_memory_desc_create_with_tag") ||
        failed(p, dnnl.primitive_attr_create(&p->attr), "dnnl_primitive_attr_create") ||
        failed(p, dnnl.primitive_attr_set_scratchpad_mode(p->attr, ONEDNN_SCRATCHPAD_MODE_USER),
               "dnnl_primitive_attr_set_scratchpad_mode") ||
        (fpmath_bf16(b) &&
         failed(p, dnnl.primitive_attr_set_fpmath_mode(p->attr, ONEDNN_FPMATH_MODE_BF16),
                "dnnl_primitive_attr_set_fpmath_mode")) ||
        failed(p, dnnl.convolution_forward_primitive_desc_create(
                      &p->fwd_pd, g.engine, ONEDNN_FORWARD_TRAINING, alg, p->src_md, p->wei_md,
                      NULL, p->dst_md, strides, dilates, pad_l, pad_r, p->attr),
               "dnnl_convolution_forward_primitive_desc_create"))
        return 1;

    const_onednn_primitive_desc_t pd = p->fwd_pd;
    if (op == CONV_OP_BACKWARD_DATA) {
        if (failed(p, dnnl.convolution_backward_data_primitive_desc_create(
                          &p->bwd_pd, g.engine, alg, p->src_md, p->wei_md, p->dst_md, strides,
                          dilates, pad_l, pad_r, p->fwd_pd, p->attr),
                   "dnnl_convolution_backward_data_primitive_desc_create"))
            return 1;
        pd = p->bwd_pd;
    } else if (op == CONV_OP_BACKWARD_FILTER) {
        if (failed(p, dnnl.convolution_backward_weights_primitive_desc_create(
                          &p->bwd_pd, g.engine, alg, p->src_md, p->wei_md, NULL, p->dst_md,
                          strides, dilates, pad_l, pad_r, p->fwd_pd, p->attr),
                   "dnnl_convolution_backward_weights_primitive_desc_create"))
            return 1;
        pd = p->bwd_pd;
    }
    if (failed(p, dnnl.primitive_create(&p->prim, pd), "dnnl_primitive_create"))
        return 1;

    /* The pass's inputs (seeded as libconv's), its output, the scratchpad.
     * --peer-reorders times the reorders of all but prepared weights. */
    const int timed = b->opt->peer_reorders, weights_timed = timed && !b->opt->prepared;
    const arg_role x = {nd, src, 1, CB_SEED_X, timed},
                   w = {wnd, wei, l->groups > 1 ? 2 : 1, CB_SEED_W, weights_timed},
                   dy = {nd, dst, 1, CB_SEED_DY, timed};
    arg_role out = {nd, dst, 1, 0, timed};
    int in0 = ONEDNN_ARG_SRC, in1 = ONEDNN_ARG_DIFF_DST, out_arg = ONEDNN_ARG_DIFF_WEIGHTS;
    arg_role in0_role = x, in1_role = dy;
    switch (op) {
    case CONV_OP_FORWARD:
        in1 = ONEDNN_ARG_WEIGHTS, in1_role = w, out_arg = ONEDNN_ARG_DST;
        break;
    case CONV_OP_BACKWARD_DATA:
        in0 = ONEDNN_ARG_WEIGHTS, in0_role = w, out_arg = ONEDNN_ARG_DIFF_SRC;
        out.dims = src;
        break;
    default:
        out.ndims = wnd, out.dims = wei, out.channel = w.channel;
        break;
    }
    if (add_arg(p, b, pd, in0, type, in0_role) || add_arg(p, b, pd, in1, type, in1_role) ||
        add_arg(p, b, pd, out_arg, type, out))
        return 1;
    const_onednn_memory_desc_t scratch =
        dnnl.primitive_desc_query_md(pd, ONEDNN_QUERY_SCRATCHPAD_MD, 0);
    if (scratch && dnnl.memory_desc_get_size(scratch) > 0)
        return add_arg(p, b, pd, ONEDNN_ARG_SCRATCHPAD, type, (arg_role){0, NULL, 0, 0, 0});
    return 0;
}

/* The implementation oneDNN chose, e.g. "brg:avx512_core" (for --json). */
static void implementation(const onednn_pass *p, char *buf, size_t len)
{
    const char *impl = NULL;
    const_onednn_primitive_desc_t pd = p->bwd_pd ? p->bwd_pd : p->fwd_pd;
    if (dnnl.primitive_desc_query(pd, ONEDNN_QUERY_IMPL_INFO_STR, 0, &impl) != ONEDNN_SUCCESS)
        impl = NULL;
    snprintf(buf, len, "%s", impl ? impl : "");
}

static void tear_down(onednn_pass *p)
{
    for (int i = 0; i < p->nbefore; i++)
        if (p->before[i].prim)
            dnnl.primitive_destroy(p->before[i].prim);
    if (p->after.prim)
        dnnl.primitive_destroy(p->after.prim);
    for (int i = 0; i < p->nuser; i++)
        dnnl.memory_destroy(p->user[i]);
    for (int i = 0; i < p->nargs; i++)
        dnnl.memory_destroy(p->args[i].memory);
    if (p->prim)
        dnnl.primitive_destroy(p->prim);
    if (p->bwd_pd)
        dnnl.primitive_desc_destroy(p->bwd_pd);
    if (p->fwd_pd)
        dnnl.primitive_desc_destroy(p->fwd_pd);
    if (p->attr)
        dnnl.primitive_attr_destroy(p->attr);
    onednn_memory_desc_t mds[] = {p->src_md, p->wei_md, p->dst_md};
    for (int i = 0; i < 3; i++)
        if (mds[i])
            dnnl.memory_desc_destroy(mds[i]);
}

/* The timed call: the primitive's execution and, with --peer-reorders,
 * the reorders before and after it, on the one in-order stream. */
static int execute(void *arg)
{
    onednn_pass *p = arg;
    for (int i = 0; i < p->nbefore; i++)
        if (p->before[i].prim &&
            failed(p, dnnl.primitive_execute(p->before[i].prim, g.stream, 2, p->before[i].args),
                   "dnnl_primitive_execute (reorder)"))
            return 1;
    return failed(p, dnnl.primitive_execute(p->prim, g.stream, p->nargs, p->args),
                  "dnnl_primitive_execute") ||
           (p->after.prim &&
            failed(p, dnnl.primitive_execute(p->after.prim, g.stream, 2, p->after.args),
                   "dnnl_primitive_execute (reorder)")) ||
           failed(p, dnnl.stream_wait(g.stream), "dnnl_stream_wait");
}

void cb_onednn_run(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times, cb_row *r)
{
    conv_dtype_t dt = b->opt->dtype;
    if (dt != CONV_DTYPE_FLOAT32 && dt != CONV_DTYPE_BFLOAT16) {
        r->peer_status = CB_PEER_NA;
        snprintf(r->peer_error, sizeof r->peer_error,
                 "oneDNN is timed in f32 and bf16, not %s", cb_dtype_name(dt));
        return;
    }
    onednn_pass p = {0};
    cb_timing t;
    int type = dt == CONV_DTYPE_BFLOAT16 ? ONEDNN_BF16 : ONEDNN_F32;
    if (set_up(b, l, op, type, &p) == 0 && cb_time_calls(b->opt, execute, &p, times, &t) == 0) {
        r->peer_status = CB_PEER_OK;
        r->peer_ms = t.ms;
        r->peer_min_ms = t.min_ms;
        r->peer_repeats = t.repeats;
        implementation(&p, r->peer_impl, sizeof r->peer_impl);
        r->peer_reorders = (p.after.prim != NULL);
        for (int i = 0; i < p.nbefore; i++)
            r->peer_reorders += p.before[i].prim != NULL;
    } else {
        r->peer_status = CB_PEER_FAILED;
        snprintf(r->peer_error, sizeof r->peer_error, "%s: %s", p.call,
                 dnnl.status2str(p.status));
    }
    tear_down(&p);
}
