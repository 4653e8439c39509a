/*
 * overhead.c -- --overhead: what one call costs the host on problems so
 * small that the arithmetic hardly counts (a 1x1 convolution of 1x8x4x4, a
 * 3x3 one of 1x8x8x8): argument checks, algorithm choice, workspace, thread
 * pool hand-off. Each pass is called many times in rounds; a row gives the
 * median round's nanoseconds per call.
 *
 * A column is a way of making the call (cb_way below): the one-shot calls
 * (conv_forward & co., which find their plan in the context's cache) and
 * executing a plan made once (conv_plan_execute); their difference is what
 * the cache lookup costs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convbench.h"

/* 2000 untimed calls, then 9 rounds of 2500 timed ones (22,500 calls). */
enum { kWarmupCalls = 2000, kRounds = 9, kCallsPerRound = 2500 };

/* The tiny problems, batch 1: pointwise on 8x4x4 and 3x3 (pad 1) on 8x8x8. */
static const cb_layer kTiny[] = {
    {"1x1", 2, 8, 8, 1, {4, 4}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1},
    {"3x3 pad 1", 2, 8, 8, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
};
enum { kTinyCount = sizeof kTiny / sizeof kTiny[0] };

/* One pass of one tiny problem, ready to be called. The tensors are in the
 * roles of conv_workspace_size: input (x, or dx), filter (w, or dw), output
 * (y, or dy); no bias. */
typedef struct tiny_run {
    const cb_bench *b;
    conv_op_t op;
    conv_desc_t desc;
    int ndim;
    int64_t x_dims[CB_MAX_SPATIAL + 2], w_dims[CB_MAX_SPATIAL + 2], y_dims[CB_MAX_SPATIAL + 2];
    conv_tensor_t in, filt, out;
    conv_plan_t plan;
} tiny_run;

/* A way of making the call: a column of the table. `prepare` (may be NULL)
 * runs once before the warm-up, `release` (may be NULL) after the timing. */
typedef struct cb_way {
    const char *column;
    conv_status_t (*prepare)(tiny_run *r);
    conv_status_t (*call)(tiny_run *r);
    void (*release)(tiny_run *r);
    const char *what; /* the call, for messages (NULL: the pass's one-shot call) */
} cb_way;

static conv_status_t one_shot(tiny_run *r)
{
    const cb_bench *b = r->b;
    switch (r->op) {
    case CONV_OP_FORWARD:
        return conv_forward(b->ctx, r->desc, r->in, r->filt, NULL, r->out, b->ws);
    case CONV_OP_BACKWARD_DATA:
        return conv_backward_data(b->ctx, r->desc, r->filt, r->out, r->in, b->ws);
    default: return conv_backward_filter(b->ctx, r->desc, r->in, r->out, r->filt, NULL, b->ws);
    }
}

static conv_status_t plan_create(tiny_run *r)
{
    const cb_options *o = r->b->opt;
    return conv_plan_create(r->b->ctx, r->desc, r->op, o->dtype, o->layout, r->ndim, r->x_dims,
                            r->w_dims, 0, &r->plan);
}

static conv_status_t plan_execute(tiny_run *r)
{
    return conv_plan_execute(r->plan, r->in, r->filt, NULL, r->out, r->b->ws);
}

static void plan_destroy(tiny_run *r)
{
    conv_plan_destroy(r->plan);
    r->plan = NULL;
}

static const cb_way kWays[] = {
    {"one-shot ns", NULL, one_shot, NULL, NULL},
    {"plan execute ns", plan_create, plan_execute, plan_destroy, "conv_plan_execute"},
};
enum { kWayCount = sizeof kWays / sizeof kWays[0] };

static int column_width(const cb_way *way)
{
    int len = (int)strlen(way->column);
    return len > 12 ? len : 12;
}

/* Warm-up, then the rounds; *ns gets the median round's time per call. A
 * round ends by waiting for the device (a no-op on the CPU), so on a GPU
 * the figure is the larger of the host's and the GPU's time per call. */
static conv_status_t time_way(tiny_run *r, const cb_way *way, double *ns)
{
    double rounds[kRounds];
    conv_status_t s = CONV_STATUS_SUCCESS;
    for (int i = 0; i < kWarmupCalls && s == CONV_STATUS_SUCCESS; i++)
        s = way->call(r);
    for (int k = 0; k < kRounds && s == CONV_STATUS_SUCCESS; k++) {
        double t0 = cb_now_ns();
        for (int i = 0; i < kCallsPerRound && s == CONV_STATUS_SUCCESS; i++)
            s = way->call(r);
        if (s == CONV_STATUS_SUCCESS)
            s = conv_context_synchronize(r->b->ctx);
        rounds[k] = (cb_now_ns() - t0) / kCallsPerRound;
    }
    if (s != CONV_STATUS_SUCCESS)
        return s;
    *ns = cb_median(rounds, kRounds);
    return CONV_STATUS_SUCCESS;
}

/* Descriptor, dims and tensors of pass `op` of `l`; inputs hold random
 * values. Returns the status, with the failing call in *call. */
static conv_status_t tiny_open(tiny_run *r, const cb_layer *l, const char **call)
{
    const cb_options *o = r->b->opt;
    conv_context_t ctx = r->b->ctx;
    r->ndim = l->spatial + 2;
    r->x_dims[0] = 1;
    r->x_dims[1] = l->c;
    r->w_dims[0] = l->k;
    r->w_dims[1] = l->c / l->groups;
    memcpy(r->x_dims + 2, l->in, sizeof(int64_t) * (size_t)l->spatial);
    memcpy(r->w_dims + 2, l->kernel, sizeof(int64_t) * (size_t)l->spatial);
    *call = "conv_desc_create";
    conv_status_t s = conv_desc_create(l->spatial, &r->desc);
    if (s == CONV_STATUS_SUCCESS) {
        *call = "conv_desc_set_padding";
        s = conv_desc_set_padding(r->desc, l->pad_begin, l->pad_end);
    }
    if (s == CONV_STATUS_SUCCESS) {
        *call = "conv_desc_set_algorithm";
        s = conv_desc_set_algorithm(r->desc, r->op, o->algo[r->op]);
    }
    if (s == CONV_STATUS_SUCCESS) {
        *call = "conv_output_dims";
        s = conv_output_dims(r->desc, r->ndim, r->x_dims, r->w_dims, r->y_dims);
    }
    const int64_t *dims[3] = {r->x_dims, r->w_dims, r->y_dims};
    conv_tensor_t *tensors[3] = {&r->in, &r->filt, &r->out};
    for (int i = 0; i < 3 && s == CONV_STATUS_SUCCESS; i++) {
        *call = "conv_tensor_create";
        s = conv_tensor_create(ctx, o->dtype, o->layout, r->ndim, dims[i], tensors[i]);
        int64_t n = 0;
        size_t bytes = 0;
        void *host = NULL;
        if (s == CONV_STATUS_SUCCESS) {
            conv_tensor_get_elements(*tensors[i], &n);
            conv_tensor_get_bytes(*tensors[i], &bytes);
            host = malloc(bytes ? bytes : 1);
            s = host ? CONV_STATUS_SUCCESS : CONV_STATUS_OUT_OF_MEMORY;
        }
        /* fp16/bf16 tensors keep their zeros: the values do not matter here */
        if (s == CONV_STATUS_SUCCESS && !cb_is_16bit(o->dtype)) {
            *call = "conv_tensor_copy_from";
            cb_fill_random(host, o->dtype, n, CB_SEED_X + (uint64_t)i);
            s = conv_tensor_copy_from(*tensors[i], host, bytes);
        }
        free(host);
    }
    return s;
}

static void tiny_close(tiny_run *r)
{
    conv_tensor_destroy(r->in);
    conv_tensor_destroy(r->filt);
    conv_tensor_destroy(r->out);
    conv_desc_destroy(r->desc);
    memset(r, 0, sizeof *r);
}

/* One row: the problem, the pass, the algorithm, a column per way. Returns
 * 0, or 1 after printing what failed. */
static int overhead_row(const cb_bench *b, const cb_layer *l, conv_op_t op)
{
    tiny_run r = {.b = b, .op = op};
    const char *call = "";
    char problem[128];
    snprintf(problem, sizeof problem, "%s %lld->%lld on 1x%lldx%lldx%lld", l->name,
             (long long)l->c, (long long)l->k, (long long)l->c, (long long)l->in[0],
             (long long)l->in[1]);
    conv_status_t s = tiny_open(&r, l, &call);
    conv_algo_t algo = CONV_ALGO_AUTO;
    if (s == CONV_STATUS_SUCCESS) {
        call = "conv_chosen_algorithm";
        s = conv_chosen_algorithm(b->ctx, r.desc, op, r.in, r.filt, r.out, &algo);
    }
    printf("%-28s %-10s %-18s", problem, cb_op_name(op),
           s == CONV_STATUS_SUCCESS ? conv_algo_name(algo) : "-");
    for (int w = 0; w < kWayCount && s == CONV_STATUS_SUCCESS; w++) {
        const cb_way *way = &kWays[w];
        double ns = 0;
        static const char *const one_shot_calls[] = {"conv_forward", "conv_backward_data",
                                                     "conv_backward_filter"};
        call = way->what ? way->what : one_shot_calls[op];
        if (way->prepare)
            s = way->prepare(&r);
        if (s == CONV_STATUS_SUCCESS)
            s = time_way(&r, way, &ns);
        if (way->release)
            way->release(&r);
        if (s == CONV_STATUS_SUCCESS)
            printf(" %*.0f", column_width(way), ns);
    }
    /* A forced algorithm that does not fit the problem is not a failure. */
    const int not_applicable = s == CONV_STATUS_UNSUPPORTED && b->opt->algo[op] != CONV_ALGO_AUTO;
    printf("%s\n", not_applicable ? " n/a" : "");
    if (s != CONV_STATUS_SUCCESS && !not_applicable)
        fprintf(stderr, "convbench --overhead: %s %s: %s: %s: %s\n", problem, cb_op_name(op),
                call, conv_status_string(s), conv_last_error());
    tiny_close(&r);
    fflush(stdout);
    return s != CONV_STATUS_SUCCESS && !not_applicable;
}

int cb_run_overhead(const cb_bench *b)
{
    const cb_options *o = b->opt;
    printf("host overhead per call: %d warm-up calls, then %d rounds of %d; the median "
           "round's ns per call\n",
           kWarmupCalls, kRounds, kCallsPerRound);
    printf("%-28s %-10s %-18s", "problem", "pass", "algorithm");
    for (int w = 0; w < kWayCount; w++)
        printf(" %*s", column_width(&kWays[w]), kWays[w].column);
    printf("\n");
    int status = 0;
    for (int i = 0; i < kTinyCount; i++)
        for (int op = 0; op < 3; op++)
            if (o->ops & (1 << op))
                status |= overhead_row(b, &kTiny[i], (conv_op_t)op);
    return status;
}
