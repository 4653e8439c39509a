/*
 * runner.c -- one layer: descriptor, tensors, and per pass the warm-up, the
 * timed calls and the check. Everything is allocated before the first timed
 * call; the timed loop only makes the call and reads the clock. The timing
 * policy (cb_time_calls) is also the one the --peer libraries are timed by.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convbench.h"

/* Adaptive repeats: time until target_ms has been spent, or past window_ms
 * enough_repeats calls, within the limits. The window: 50 calls of a 25 us
 * pass were 1.25 ms, too short for a thread pool's workers to settle after
 * the peer's run (ResNet-20's 16->16 32x32 backward-filter at 2 threads
 * timed 64 us in such windows and 39 us in longer ones). */
static const double target_ms = 300.0;
static const double window_ms = 20.0;
static const int min_repeats = 3;
static const int enough_repeats = 50;
static const int max_repeats = 4000;

/* A libconv tensor and its host copy (the data sent, or what came back). */
typedef struct host_tensor {
    conv_tensor_t t;
    void *host;
    int64_t elements;
    size_t bytes;
} host_tensor;

typedef struct layer_run {
    cb_bench *b;
    const cb_layer *l;
    conv_desc_t desc;
    int ndim;
    int64_t x_dims[CB_MAX_SPATIAL + 2], w_dims[CB_MAX_SPATIAL + 2], y_dims[CB_MAX_SPATIAL + 2];
    host_tensor x, w, dy; /* inputs, created for the passes that read them */
    host_tensor out;      /* the output of the pass being run */
    conv_plan_t plan;     /* --prepared: the pass's plan, its weights prepared */
} layer_run;

double cb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ms(void) { return cb_now_ns() * 1e-6; }

/* Records a failed libconv call in the row; returns 1 if `s` is a failure. */
static int failed(conv_status_t s, const char *call, cb_row *r)
{
    if (s == CONV_STATUS_SUCCESS)
        return 0;
    r->status = CB_ROW_FAILED;
    r->error_status = s;
    snprintf(r->error, sizeof r->error, "%s: %s: %s", call, conv_status_string(s),
             conv_last_error());
    return 1;
}

/* The algorithm the library runs for this pass (forced, tuned or heuristic). */
static const char *algo_used(layer_run *lr, conv_op_t op, conv_tensor_t in, conv_tensor_t filt,
                             conv_tensor_t outp)
{
    conv_algo_t algo;
    if (conv_chosen_algorithm(lr->b->ctx, lr->desc, op, in, filt, outp, &algo) != CONV_STATUS_SUCCESS)
        return lr->b->opt->algo[op] == CONV_ALGO_AUTO ? "auto" : conv_algo_name(lr->b->opt->algo[op]);
    return conv_algo_name(algo);
}

/* A GPU call only enqueues its work: each timed call waits for it with
 * conv_context_synchronize (a no-op on the CPU, whose calls return done). */
static conv_status_t wait_device(const cb_bench *b)
{
    return conv_context_synchronize(b->ctx);
}

/* The host copy holds floats for fp16/bf16 (see cb_to_16bit): to and from
 * the tensor through a 16-bit staging buffer. */
static conv_status_t upload(host_tensor *h, conv_dtype_t dtype)
{
    if (!cb_is_16bit(dtype))
        return conv_tensor_copy_from(h->t, h->host, h->bytes);
    uint16_t *tmp = malloc(h->bytes ? h->bytes : 2);
    if (!tmp)
        return CONV_STATUS_OUT_OF_MEMORY;
    cb_to_16bit(dtype, h->host, tmp, h->elements);
    conv_status_t s = conv_tensor_copy_from(h->t, tmp, h->bytes);
    free(tmp);
    return s;
}

static conv_status_t download(host_tensor *h, conv_dtype_t dtype)
{
    if (!cb_is_16bit(dtype))
        return conv_tensor_copy_to(h->t, h->host, h->bytes);
    uint16_t *tmp = malloc(h->bytes ? h->bytes : 2);
    if (!tmp)
        return CONV_STATUS_OUT_OF_MEMORY;
    conv_status_t s = conv_tensor_copy_to(h->t, tmp, h->bytes);
    if (s == CONV_STATUS_SUCCESS)
        cb_from_16bit(dtype, tmp, h->host, h->elements);
    free(tmp);
    return s;
}

static void host_tensor_destroy(host_tensor *h)
{
    conv_tensor_destroy(h->t);
    free(h->host);
    memset(h, 0, sizeof *h);
}

/* Creates the tensor and, where one is needed, its host copy: an input
 * (seed > 0) gets random values; an output (seed 0) is NaN-filled when
 * verifying, so what stays NaN was never written, and has no copy otherwise.
 * Returns 0, or -1 with the reason in *r. */
static int host_tensor_create(layer_run *lr, const int64_t *dims, uint64_t seed, host_tensor *h,
                              cb_row *r)
{
    const cb_options *o = lr->b->opt;
    if (failed(conv_tensor_create(lr->b->ctx, o->dtype, o->layout, lr->ndim, dims, &h->t),
               "conv_tensor_create", r))
        return -1;
    conv_tensor_get_elements(h->t, &h->elements);
    conv_tensor_get_bytes(h->t, &h->bytes);
    if (!seed && !o->verify)
        return 0;
    /* 16-bit dtypes: a float per element (cb_to_16bit) */
    size_t host_bytes = cb_is_16bit(o->dtype) ? (size_t)h->elements * sizeof(float) : h->bytes;
    h->host = malloc(host_bytes ? host_bytes : 1);
    if (!h->host) {
        r->status = CB_ROW_FAILED;
        snprintf(r->error, sizeof r->error, "malloc: no host memory for a %zu-byte copy",
                 h->bytes);
        return -1;
    }
    conv_dtype_t host_dtype = cb_is_16bit(o->dtype) ? CONV_DTYPE_FLOAT32 : o->dtype;
    if (seed)
        cb_fill_random(h->host, host_dtype, h->elements, seed);
    else
        cb_fill_nan(h->host, host_dtype, h->elements);
    if (cb_is_16bit(o->dtype)) { /* the values the GPU will see, exactly */
        uint16_t *tmp = malloc(h->elements ? (size_t)h->elements * 2 : 2);
        if (tmp) {
            cb_to_16bit(o->dtype, h->host, tmp, h->elements);
            cb_from_16bit(o->dtype, tmp, h->host, h->elements);
            free(tmp);
        }
    }
    return failed(upload(h, o->dtype), "conv_tensor_copy_from", r)
               ? -1
               : 0;
}

static const char *const pass_call[] = {"conv_forward", "conv_backward_data",
                                        "conv_backward_filter"};

static conv_status_t call_pass(layer_run *lr, conv_op_t op)
{
    cb_bench *b = lr->b;
    conv_status_t s;
    if (lr->plan) { /* the roles of conv_plan_execute: x, w, b, y */
        switch (op) {
        case CONV_OP_FORWARD:
            s = conv_plan_execute(lr->plan, lr->x.t, lr->w.t, NULL, lr->out.t, b->ws);
            break;
        case CONV_OP_BACKWARD_DATA:
            s = conv_plan_execute(lr->plan, lr->out.t, lr->w.t, NULL, lr->dy.t, b->ws);
            break;
        default:
            s = conv_plan_execute(lr->plan, lr->x.t, lr->out.t, NULL, lr->dy.t, b->ws);
            break;
        }
        return s == CONV_STATUS_SUCCESS ? wait_device(b) : s;
    }
    switch (op) {
    case CONV_OP_FORWARD:
        s = conv_forward(b->ctx, lr->desc, lr->x.t, lr->w.t, NULL, lr->out.t, b->ws);
        break;
    case CONV_OP_BACKWARD_DATA:
        s = conv_backward_data(b->ctx, lr->desc, lr->w.t, lr->dy.t, lr->out.t, b->ws);
        break;
    default:
        s = conv_backward_filter(b->ctx, lr->desc, lr->x.t, lr->dy.t, lr->out.t, NULL, b->ws);
        break;
    }
    return s == CONV_STATUS_SUCCESS ? wait_device(b) : s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cb_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cb_timing_slots(const cb_options *o)
{
    return o->repeats ? o->repeats : max_repeats;
}

int cb_time_calls(const cb_options *o, cb_call_fn call, void *arg, double *times, cb_timing *t)
{
    int limit = cb_timing_slots(o);
    int rc;
    memset(t, 0, sizeof *t);
    for (int i = 0; i < o->warmup; i++)
        if ((rc = call(arg)) != 0)
            return rc;
    int n = 0;
    double total = 0;
    while (n < limit) {
        double t0 = now_ms();
        rc = call(arg);
        double t1 = now_ms();
        if (rc != 0)
            return rc;
        times[n++] = t1 - t0;
        total += t1 - t0;
        if (!o->repeats && n >= min_repeats &&
            (total >= target_ms || (n >= enough_repeats && total >= window_ms)))
            break;
    }
    t->ms = cb_median(times, n);
    t->repeats = n;
    t->min_ms = times[0];
    return 0;
}

/* One libconv call for cb_time_calls: the status stays in `s`. */
typedef struct pass_call_arg {
    layer_run *lr;
    conv_op_t op;
    conv_status_t s;
} pass_call_arg;

static int pass_call_fn(void *arg)
{
    pass_call_arg *a = arg;
    a->s = call_pass(a->lr, a->op);
    return a->s != CONV_STATUS_SUCCESS;
}

/* Warm-up, then the timed calls; fills ms, min_ms and repeats. */
static void time_pass(layer_run *lr, conv_op_t op, double *times, cb_row *r)
{
    pass_call_arg a = {lr, op, CONV_STATUS_SUCCESS};
    cb_timing t;
    if (cb_time_calls(lr->b->opt, pass_call_fn, &a, times, &t) != 0) {
        failed(a.s, pass_call[op], r);
        return;
    }
    r->repeats = t.repeats;
    r->min_ms = t.min_ms;
    r->ms = t.ms;
}

/* --prepared: the pass's plan, with the weights prepared once for the
 * passes that read them. Returns 0, or -1 with the reason in *r. */
static int make_prepared_plan(layer_run *lr, conv_op_t op, cb_row *r)
{
    const cb_options *o = lr->b->opt;
    int prepared = 0;
    if (failed(conv_plan_create(lr->b->ctx, lr->desc, op, o->dtype, o->layout, lr->ndim,
                                lr->x_dims, lr->w_dims, 0, &lr->plan),
               "conv_plan_create", r))
        return -1;
    if (op != CONV_OP_BACKWARD_FILTER &&
        failed(conv_plan_prepare_weights(lr->plan, lr->w.t, &prepared), "conv_plan_prepare_weights",
               r))
        return -1;
    return 0;
}

/* With a peer in the same process, each library's timing starts after a
 * pause long enough for the other's idle threads to stop spinning: GNU
 * OpenMP's workers (oneDNN's) spin up to GOMP_SPINCOUNT (300000 pauses,
 * ~15 ms on recent Intel cores) after each parallel region before they
 * sleep, and on two cores a spinning worker took the CPU libconv's second
 * thread needed (MobileNet's 7x7 depthwise layers measured 0.22 ms instead
 * of 0.02 at 2 threads, in some rounds and not others). */
static void settle(int ms)
{
    struct timespec pause = {0, ms * 1000L * 1000L};
    if (ms > 0)
        nanosleep(&pause, NULL);
}

/* With --peer-apart the peer's process is stopped while libconv runs, so
 * libconv starts at once; the peer waits only out libconv's workers' spin
 * (1 ms, src/core/thread_pool.cpp). Longer idle pauses cost both: on a
 * virtual machine the first milliseconds after one ran slow (MobileNet's
 * 14x14 and 28x28 depthwise layers 1.1-1.5x at 2 threads after the 30 ms
 * pause, as after none with 200 more warm-up calls). */
static int settle_before(const cb_options *o, int peer)
{
    if (!o->peer)
        return 0;
    if (o->peer_apart)
        return peer ? 2 : 0;
    return 30;
}

/* The rounds of one pass (--rounds): libconv's timing, then the peer's
 * right after it (both under the same load), o->rounds times; the row
 * gets the medians of the rounds' medians and of their ratios. */
static void time_rounds(layer_run *lr, conv_op_t op, double *times, cb_row *r)
{
    const cb_options *o = lr->b->opt;
    enum { MAX_ROUNDS = 1000 };
    double lib[MAX_ROUNDS], peer[MAX_ROUNDS], ratio[MAX_ROUNDS];
    int n_lib = 0, n_peer = 0, n_ratio = 0, repeats = 0, peer_repeats = 0;
    double min_ms = INFINITY, peer_min = INFINITY;
    cb_row p;
    memset(&p, 0, sizeof p);
    for (int k = 0; k < o->rounds && k < MAX_ROUNDS; k++) {
        settle(settle_before(o, 0));
        time_pass(lr, op, times, r);
        if (r->status != CB_ROW_OK)
            return;
        lib[n_lib++] = r->ms;
        repeats += r->repeats;
        min_ms = fmin(min_ms, r->min_ms);
        if (!o->peer)
            continue;
        settle(settle_before(o, 1));
        o->peer->run(lr->b, lr->l, op, times, &p);
        if (p.peer_status != CB_PEER_OK)
            continue;
        peer[n_peer++] = p.peer_ms;
        peer_repeats += p.peer_repeats;
        peer_min = fmin(peer_min, p.peer_min_ms);
        if (r->ms > 0)
            ratio[n_ratio++] = p.peer_ms / r->ms;
    }
    r->rounds = n_lib;
    r->ms = cb_median(lib, n_lib);
    r->min_ms = min_ms;
    r->repeats = repeats;
    r->ratio = n_ratio ? cb_median(ratio, n_ratio) : NAN; /* sorts ratio[] */
    r->ratio_low = n_ratio ? ratio[0] : NAN;
    r->ratio_high = n_ratio ? ratio[n_ratio - 1] : NAN;
    if (!o->peer)
        return;
    /* The peer's status and message are its last round's; its times, the
     * rounds it ran. */
    r->peer_status = n_peer ? CB_PEER_OK : p.peer_status;
    memcpy(r->peer_error, p.peer_error, sizeof r->peer_error);
    memcpy(r->peer_impl, p.peer_impl, sizeof r->peer_impl);
    r->peer_reorders = p.peer_reorders;
    if (n_peer) {
        r->peer_ms = cb_median(peer, n_peer);
        r->peer_min_ms = peer_min;
        r->peer_repeats = peer_repeats;
    }
}

/* One pass: its output tensor, cost, workspace size, timing, check. */
static void run_pass(layer_run *lr, conv_op_t op, double *times, cb_row *r)
{
    const cb_options *o = lr->b->opt;
    const int64_t *out_dims[] = {lr->y_dims, lr->x_dims, lr->w_dims}; /* y, dx, dw */

    if (failed(conv_cost(lr->desc, op, o->dtype, lr->ndim, lr->x_dims, lr->w_dims, &r->flops,
                         &r->bytes),
               "conv_cost", r) ||
        host_tensor_create(lr, out_dims[op], 0, &lr->out, r) != 0)
        return;
    /* conv_workspace_size takes the tensors by role: input, filter, output. */
    conv_tensor_t in = op == CONV_OP_BACKWARD_DATA ? lr->out.t : lr->x.t;
    conv_tensor_t filt = op == CONV_OP_BACKWARD_FILTER ? lr->out.t : lr->w.t;
    conv_tensor_t outp = op == CONV_OP_FORWARD ? lr->out.t : lr->dy.t;
    conv_status_t s = CONV_STATUS_SUCCESS;
    if (o->tune) { /* benchmark-select first: the context remembers the winner */
        int count;
        s = conv_find_algorithms(lr->b->ctx, lr->desc, op, in, filt, outp, lr->b->ws, 0, NULL,
                                 NULL, NULL, &count);
        if (s != CONV_STATUS_SUCCESS)
            failed(s, "conv_find_algorithms", r);
    }
    if (s == CONV_STATUS_SUCCESS) {
        s = conv_workspace_size(lr->b->ctx, lr->desc, op, in, filt, outp, &r->workspace_bytes);
        if (s != CONV_STATUS_SUCCESS)
            failed(s, "conv_workspace_size", r);
        else if (!o->prepared || make_prepared_plan(lr, op, r) == 0)
            time_rounds(lr, op, times, r);
    }
    r->algo = algo_used(lr, op, in, filt, outp);
    conv_plan_destroy(lr->plan);
    lr->plan = NULL;

    /* A forced algorithm that does not fit this layer is not a failure. */
    if (r->status == CB_ROW_FAILED && o->algo[op] != CONV_ALGO_AUTO &&
        r->error_status == CONV_STATUS_UNSUPPORTED)
        r->status = CB_ROW_SKIPPED;
    if (r->status == CB_ROW_OK && o->verify &&
        !failed(download(&lr->out, o->dtype), "conv_tensor_copy_to", r)) {
        cb_host_data h = {lr->x.host, lr->w.host, lr->dy.host, lr->out.host, lr->out.elements};
        cb_verify(o, lr->l, op, &h, &r->verify);
    }
    host_tensor_destroy(&lr->out);
}

/* Descriptor and dims; returns 0, or -1 with the reason in *r. */
static int set_up(layer_run *lr, cb_row *r)
{
    const cb_layer *l = lr->l;
    const cb_options *o = lr->b->opt;
    int n = l->spatial;
    lr->ndim = n + 2;
    lr->x_dims[0] = o->batch;
    lr->x_dims[1] = l->c;
    lr->w_dims[0] = l->k;
    lr->w_dims[1] = l->c / l->groups;
    memcpy(lr->x_dims + 2, l->in, sizeof(int64_t) * (size_t)n);
    memcpy(lr->w_dims + 2, l->kernel, sizeof(int64_t) * (size_t)n);

    if (failed(conv_desc_create(n, &lr->desc), "conv_desc_create", r) ||
        failed(conv_desc_set_strides(lr->desc, l->stride), "conv_desc_set_strides", r) ||
        failed(conv_desc_set_dilations(lr->desc, l->dilation), "conv_desc_set_dilations", r) ||
        failed(conv_desc_set_padding(lr->desc, l->pad_begin, l->pad_end), "conv_desc_set_padding",
               r) ||
        failed(conv_desc_set_groups(lr->desc, l->groups), "conv_desc_set_groups", r))
        return -1;
    for (int op = 0; op < 3; op++)
        if (failed(conv_desc_set_algorithm(lr->desc, (conv_op_t)op, o->algo[op]),
                   "conv_desc_set_algorithm", r))
            return -1;
    if (failed(conv_output_dims(lr->desc, lr->ndim, lr->x_dims, lr->w_dims, lr->y_dims),
               "conv_output_dims", r))
        return -1;

    /* The reference is given our own output sizes, so they must agree. */
    int64_t want[CB_MAX_SPATIAL + 2] = {o->batch, l->k};
    for (int a = 0; a < n; a++)
        want[2 + a] = cb_out_size(l, a);
    for (int i = 0; i < lr->ndim; i++) {
        if (lr->y_dims[i] != want[i]) {
            r->status = CB_ROW_FAILED;
            snprintf(r->error, sizeof r->error, "conv_output_dims: dim %d is %lld, expected %lld",
                     i, (long long)lr->y_dims[i], (long long)want[i]);
            return -1;
        }
    }
    return 0;
}

/* The inputs the selected passes read; returns 0, or -1 with the reason in *r. */
static int create_inputs(layer_run *lr, cb_row *r)
{
    int ops = lr->b->opt->ops;
    const struct {
        int needed;
        const int64_t *dims;
        uint64_t seed;
        host_tensor *h;
    } in[] = {
        {ops & (CB_OP_FWD | CB_OP_BWD_FILTER), lr->x_dims, CB_SEED_X, &lr->x},
        {ops & (CB_OP_FWD | CB_OP_BWD_DATA), lr->w_dims, CB_SEED_W, &lr->w},
        {ops & (CB_OP_BWD_DATA | CB_OP_BWD_FILTER), lr->y_dims, CB_SEED_DY, &lr->dy},
    };
    for (int i = 0; i < 3; i++)
        if (in[i].needed && host_tensor_create(lr, in[i].dims, in[i].seed, in[i].h, r) != 0)
            return -1;
    return 0;
}

int cb_run_layer(cb_bench *b, const char *suite, const cb_layer *l, cb_row *rows)
{
    const cb_options *o = b->opt;
    int n = 0;
    for (int op = 0; op < 3; op++) {
        if (!(o->ops & (1 << op)))
            continue;
        cb_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        r->suite = suite;
        r->layer = l;
        r->op = (conv_op_t)op;
        r->algo = "-";
        r->ratio = r->ratio_low = r->ratio_high = NAN; /* until rounds with the peer */
        cb_layer_shape(l, r->shape, sizeof r->shape);
    }

    layer_run lr = {.b = b, .l = l};
    cb_row setup = {.status = CB_ROW_OK}; /* a failure before any pass: every row's */
    double *times = malloc(sizeof(double) * (size_t)cb_timing_slots(o));
    if (!times) {
        setup.status = CB_ROW_FAILED;
        snprintf(setup.error, sizeof setup.error, "malloc: no host memory for the timings");
    }
    if (times && set_up(&lr, &setup) == 0 && create_inputs(&lr, &setup) == 0) {
        for (int i = 0; i < n; i++) {
            run_pass(&lr, rows[i].op, times, &rows[i]);
            /* A pass libconv could not time: the peer still times it, once. */
            if (o->peer && rows[i].status != CB_ROW_OK) {
                settle(settle_before(o, 1));
                o->peer->run(b, l, rows[i].op, times, &rows[i]);
            }
        }
    } else {
        for (int i = 0; i < n; i++) {
            rows[i].status = CB_ROW_FAILED;
            memcpy(rows[i].error, setup.error, sizeof setup.error);
        }
    }

    host_tensor_destroy(&lr.x);
    host_tensor_destroy(&lr.w);
    host_tensor_destroy(&lr.dy);
    conv_desc_destroy(lr.desc);
    free(times);
    return n;
}
