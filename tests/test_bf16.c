/*
 * test_bf16.c -- bfloat16 convolutions on the CPU (AVX-512) against the
 * naive reference. The reference sums in double the very bf16 values the
 * library reads; the library sums bf16 products in float and rounds each
 * output to bf16 once, so per element
 *   |got - want| <= 1e-5 * sqrt(L) * abs_sum + 4 * 2^-8 * |want|
 * (L the reduction length, abs_sum the sum of |products|: the float
 * accumulation; 2^-8: half a bf16 unit, the final rounding). Random
 * problems cover rank 1-3, both layouts, groups, stride, dilation, padding,
 * batch 0-3, bias and ReLU, 1-3 threads; outputs start as NaN. With integer
 * data the float sums are exact, and every output must be bit for bit the
 * bf16 nearest to the exact result (ties to even: one rounding). Also:
 * transposed convolutions (as adjoints), plans, determinism, and -- run
 * with CONV_CPU_ISA=baseline (ctest: test_bf16_refused) -- the refusal on a
 * CPU without AVX-512. Skips (77) on a CPU without it.
 */
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBLEMS 300 /* per pass */

static conv_context_t contexts[3]; /* 1, 2 and 3 threads */

/* float -> bf16 bits, to nearest, ties to even (the inputs are in range). */
static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* A bf16 tensor and its values widened to double (the reference's input). */
typedef struct btensor {
    conv_tensor_t t;
    uint16_t *data;
    double *ref;
    int64_t elems;
} btensor;

static void bt_make(btensor *b, conv_context_t ctx, const tu_problem *tp, int nd,
                    const int64_t *dims)
{
    memset(b, 0, sizeof *b);
    b->elems = 1;
    for (int i = 0; i < nd; i++)
        b->elems *= dims[i];
    conv_layout_t layout =
        tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST;
    assert_int_equal(conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, layout, nd, dims, &b->t),
                     CONV_STATUS_SUCCESS);
    void *data = NULL;
    assert_int_equal(conv_tensor_get_data(b->t, &data), CONV_STATUS_SUCCESS);
    b->data = data;
    b->ref = calloc((size_t)b->elems + 1, sizeof(double));
}

/* Uniform [-1, 1) values rounded to bf16, or (ints) integers in [-8, 8]. */
static void bt_fill(btensor *b, tu_rng *r, int ints)
{
    for (int64_t i = 0; i < b->elems; i++) {
        b->data[i] = to_bf16(ints ? (double)tu_range(r, -8, 8) : tu_uniform(r));
        b->ref[i] = from_bf16(b->data[i]);
    }
}

static void bt_fill_nan(btensor *b)
{
    for (int64_t i = 0; i < b->elems; i++)
        b->data[i] = 0x7fc0;
}

static void bt_free(btensor *b)
{
    conv_tensor_destroy(b->t);
    free(b->ref);
    memset(b, 0, sizeof *b);
}

/* The four tensors of a problem in convolution roles. */
typedef struct bcase {
    btensor x, w, y, b;
} bcase;

static void bcase_make_data(bcase *c, conv_context_t ctx, const tu_problem *tp, tu_rng *r,
                            int ints)
{
    int64_t d[5];
    int nd = tu_x_dims(tp, d);
    bt_make(&c->x, ctx, tp, nd, d);
    tu_w_dims(tp, d);
    bt_make(&c->w, ctx, tp, nd, d);
    tu_y_dims(tp, d);
    bt_make(&c->y, ctx, tp, nd, d);
    memset(&c->b, 0, sizeof c->b);
    if (tp->bias) {
        int bn = tu_b_dims(tp, d);
        bt_make(&c->b, ctx, tp, bn, d);
    }
    bt_fill(&c->x, r, ints);
    bt_fill(&c->w, r, ints);
    bt_fill(&c->y, r, ints);
    if (tp->bias)
        bt_fill(&c->b, r, ints);
}

static void bcase_make(bcase *c, conv_context_t ctx, const tu_problem *tp, tu_rng *r)
{
    bcase_make_data(c, ctx, tp, r, 0);
}

static void bcase_free(bcase *c)
{
    bt_free(&c->x);
    bt_free(&c->w);
    bt_free(&c->y);
    bt_free(&c->b);
}

static int64_t reduction_length(const ref_problem *p, conv_op_t op)
{
    int64_t kk = 1, out = 1;
    for (int a = 0; a < p->spatial; a++) {
        kk *= p->kernel[a];
        out *= p->out[a];
    }
    return op == CONV_OP_FORWARD         ? p->c / p->groups * kk
           : op == CONV_OP_BACKWARD_DATA ? p->k / p->groups * kk
                                         : p->n * out;
}

/* The bound for a sum of `length` products: float accumulation, one rounding to bf16. */
static double bound(int64_t length, double want, double abs_sum)
{
    return 1e-5 * sqrt((double)length) * abs_sum + 4 * 0x1p-8 * fabs(want) + 1e-30;
}

/* Checks `got` (one pass's output) element by element; 0 when all are within
 * the bound. `relu`: wanted values pass through max(0, .) (transposed). */
static int check(const tu_problem *tp, conv_op_t op, const bcase *c, const btensor *got,
                 const double *bias_of, int relu, int exact, char *msg, size_t size)
{
    const ref_problem *p = &tp->p;
    const void *bias = tp->bias && op == CONV_OP_FORWARD && !bias_of ? c->b.ref : NULL;
    for (int64_t i = 0; i < got->elems; i++) {
        double mag = 0, want;
        if (op == CONV_OP_FORWARD)
            want = ref_forward_at(p, REF_FLOAT64, c->x.ref, c->w.ref, bias, i, &mag);
        else if (op == CONV_OP_BACKWARD_DATA)
            want = ref_backward_data_at(p, REF_FLOAT64, c->w.ref, c->y.ref, i, &mag);
        else
            want = ref_backward_filter_at(p, REF_FLOAT64, c->x.ref, c->y.ref, i, &mag);
        if (bias_of) { /* a transposed forward: bias per channel of dx, then relu */
            int64_t plane = 1;
            for (int a = 0; a < p->spatial; a++)
                plane *= p->in[a];
            int64_t ch = p->channels_last ? i % p->c : (i / plane) % p->c;
            want += bias_of[ch];
            mag += fabs(bias_of[ch]);
        }
        if (relu && want < 0)
            want = 0;
        double g = from_bf16(got->data[i]), b = bound(reduction_length(p, op), want, mag);
        if (exact ? g != from_bf16(to_bf16(want)) : !(fabs(g - want) <= b)) {
            snprintf(msg, size, "element %" PRId64 " of %" PRId64 ": got %.9g want %.9g (bound %g)",
                     i, got->elems, g, want, b);
            return 1;
        }
    }
    return 0;
}

/* db: sums of dy over batch and positions, rounded once. */
static int check_db(const tu_problem *tp, const bcase *c, int exact, char *msg, size_t size)
{
    for (int64_t k = 0; k < tp->p.k; k++) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < c->y.elems; i++)
            if (tu_y_channel(tp, i) == k) {
                want += c->y.ref[i];
                mag += fabs(c->y.ref[i]);
            }
        double g = from_bf16(c->b.data[k]);
        if (exact ? g != from_bf16(to_bf16(want))
                  : !(fabs(g - want) <= bound(c->y.elems / tp->p.k, want, mag))) {
            snprintf(msg, size, "db[%" PRId64 "]: got %.9g want %.9g", k, g, want);
            return 1;
        }
    }
    return 0;
}

static const btensor *output_of(const bcase *c, conv_op_t op)
{
    return op == CONV_OP_FORWARD ? &c->y : op == CONV_OP_BACKWARD_DATA ? &c->x : &c->w;
}

static conv_status_t run_pass(conv_context_t ctx, conv_desc_t d, conv_op_t op, bcase *c)
{
    conv_tensor_t b = c->b.t;
    switch (op) {
    case CONV_OP_FORWARD: return conv_forward(ctx, d, c->x.t, c->w.t, b, c->y.t, NULL);
    case CONV_OP_BACKWARD_DATA: return conv_backward_data(ctx, d, c->w.t, c->y.t, c->x.t, NULL);
    default: return conv_backward_filter(ctx, d, c->x.t, c->y.t, c->w.t, b, NULL);
    }
}

static void random_bf16_problem(tu_rng *r, tu_problem *tp, conv_op_t op)
{
    tu_random_problem(r, tp);
    tp->dtype = CONV_DTYPE_BFLOAT16;
    tp->algo = CONV_ALGO_AUTO;
    if (op == CONV_OP_BACKWARD_DATA)
        tp->bias = 0;
}

/* Random problems of one pass. `exact`: integer data, whose float sums are
 * exact, so every output must be exactly the bf16 nearest (ties to even) to
 * the exact result -- the one rounding, bit for bit. */
static void run_many(conv_op_t op, uint64_t base, int exact)
{
    uint64_t first = tu_env_seed(base);
    int n = tu_env_count(PROBLEMS), layouts[2] = {0, 0}, grouped = 0, rank[4] = {0};
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_problem tp;
        tu_seed(&r, seed);
        random_bf16_problem(&r, &tp, op);
        int threads = (int)tu_range(&r, 1, 3);
        conv_context_t ctx = contexts[threads - 1];
        char what[1024], msg[512];
        int len = snprintf(what, sizeof what, "seed %" PRIu64 " %s threads=%d ", seed,
                           tu_op_name(op), threads);
        tu_describe(&tp, what + len, sizeof what - (size_t)len);
        layouts[tp.p.channels_last]++;
        grouped += tp.p.groups > 1;
        rank[tp.p.spatial]++;

        bcase c;
        conv_desc_t d;
        bcase_make_data(&c, ctx, &tp, &r, exact);
        bt_fill_nan((btensor *)output_of(&c, op));
        if (op == CONV_OP_BACKWARD_FILTER && tp.bias)
            bt_fill_nan(&c.b);
        assert_int_equal(tu_make_desc(&tp, op, &d), CONV_STATUS_SUCCESS);
        conv_status_t s = run_pass(ctx, d, op, &c);
        if (s != CONV_STATUS_SUCCESS)
            fail_msg("%s: status %d: %s", what, (int)s, conv_last_error());
        if (check(&tp, op, &c, output_of(&c, op), NULL, 0, exact, msg, sizeof msg))
            fail_msg("%s: %s", what, msg);
        if (op == CONV_OP_BACKWARD_FILTER && tp.bias &&
            check_db(&tp, &c, exact, msg, sizeof msg))
            fail_msg("%s: %s", what, msg);
        conv_desc_destroy(d);
        bcase_free(&c);
    }
    print_message("%s: %d bf16 problems (%s, seeds %" PRIu64 "..), %d/%d channels-first/last, "
                  "%d grouped, %d/%d/%d of rank 1/2/3\n",
                  tu_op_name(op), n, exact ? "integers, exact" : "real data", first, layouts[0],
                  layouts[1], grouped, rank[1], rank[2], rank[3]);
}

static void test_forward(void **state)
{
    (void)state;
    run_many(CONV_OP_FORWARD, 1100000, 0);
    run_many(CONV_OP_FORWARD, 1110000, 1);
}

static void test_backward_data(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_DATA, 1200000, 0);
    run_many(CONV_OP_BACKWARD_DATA, 1210000, 1);
}

static void test_backward_filter(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_FILTER, 1300000, 0);
    run_many(CONV_OP_BACKWARD_FILTER, 1310000, 1);
}

/* Layers with ResNet-50's shapes (scaled down): several GEMM blocks along
 * every dimension, 1x1 and 3x3, stride 2, 2 threads. */
static void test_large(void **state)
{
    (void)state;
    static const int64_t shapes[][6] = {
        /* c, k, in, kernel, stride, pad */
        {64, 256, 28, 1, 1, 0},  {256, 64, 28, 1, 1, 0}, {64, 64, 28, 3, 1, 1},
        {128, 128, 15, 3, 2, 1}, {512, 96, 7, 1, 1, 0},  {3, 40, 40, 7, 2, 3},
        {400, 30, 9, 3, 1, 1},   {64, 200, 5, 3, 1, 1}, /* more filters than positions */
    };
    tu_rng r;
    tu_seed(&r, 31);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int last = 0; last < 2; last++)
            for (int op = 0; op < 3; op++) {
                const int64_t in[2] = {shapes[i][2], shapes[i][2] + 1};
                const int64_t k[2] = {shapes[i][3], shapes[i][3]};
                tu_problem tp;
                tu_problem_init(&tp, 2, op == CONV_OP_BACKWARD_FILTER ? 2 : 1, shapes[i][0],
                                shapes[i][1], in, k);
                tp.p.stride[0] = tp.p.stride[1] = shapes[i][4];
                for (int a = 0; a < 2; a++)
                    tp.desc_pad_begin[a] = tp.desc_pad_end[a] = shapes[i][5];
                tp.p.channels_last = last;
                tp.dtype = CONV_DTYPE_BFLOAT16;
                tp.bias = op != CONV_OP_BACKWARD_DATA;
                tp.p.relu = op == CONV_OP_FORWARD;
                assert_true(tu_resolve(&tp));
                bcase c;
                conv_desc_t d;
                char msg[512];
                bcase_make(&c, contexts[1], &tp, &r);
                bt_fill_nan((btensor *)output_of(&c, (conv_op_t)op));
                assert_int_equal(tu_make_desc(&tp, (conv_op_t)op, &d), CONV_STATUS_SUCCESS);
                assert_int_equal(run_pass(contexts[1], d, (conv_op_t)op, &c), CONV_STATUS_SUCCESS);
                if (check(&tp, (conv_op_t)op, &c, output_of(&c, (conv_op_t)op), NULL, 0, 0, msg,
                          sizeof msg))
                    fail_msg("layer %zu %s %s: %s", i, last ? "channels-last" : "channels-first",
                             tu_op_name((conv_op_t)op), msg);
                if (op == CONV_OP_BACKWARD_FILTER && check_db(&tp, &c, 0, msg, sizeof msg))
                    fail_msg("layer %zu: %s", i, msg);
                conv_desc_destroy(d);
                bcase_free(&c);
            }
}

/* A transposed forward is the backward-data pass of the convolution it
 * undoes (u), plus the bias per output channel and the ReLU: T's input is
 * u's dy, T's output u's dx, the filter the same memory. */
static void test_transposed(void **state)
{
    (void)state;
    int n = tu_env_count(100);
    for (int i = 0; i < n; i++) {
        uint64_t seed = 1400000 + (uint64_t)i;
        tu_rng r;
        tu_problem u;
        tu_seed(&r, seed);
        random_bf16_problem(&r, &u, CONV_OP_BACKWARD_DATA);
        u.auto_pad = CONV_AUTO_PAD_NOTSET;
        if (!tu_resolve(&u))
            continue;
        u.p.relu = tu_chance(&r, 50);
        bcase c;
        bcase_make(&c, contexts[0], &u, &r);
        /* T's bias: one per channel of its output (u's C) */
        btensor tb;
        tu_problem ub = u; /* the bias dims of a problem with K = u's C */
        ub.p.k = u.p.c;
        int64_t bd[5];
        int bn = tu_b_dims(&ub, bd);
        bt_make(&tb, contexts[0], &u, bn, bd);
        bt_fill(&tb, &r, 0);
        bt_fill_nan(&c.x);
        conv_desc_t d;
        int64_t out_pad[3] = {0, 0, 0};
        for (int a = 0; a < u.p.spatial; a++) {
            int64_t e = (u.p.kernel[a] - 1) * u.p.dilation[a] + 1;
            out_pad[a] = u.p.in[a] - ((u.p.out[a] - 1) * u.p.stride[a] - u.p.pad_begin[a] -
                                      u.pad_end[a] + e);
        }
        assert_int_equal(tu_make_desc(&u, CONV_OP_FORWARD, &d), CONV_STATUS_SUCCESS);
        assert_int_equal(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED), CONV_STATUS_SUCCESS);
        assert_int_equal(conv_desc_set_output_padding(d, out_pad), CONV_STATUS_SUCCESS);
        conv_status_t s = conv_forward(contexts[0], d, c.y.t, c.w.t, tb.t, c.x.t, NULL);
        char what[1024], msg[512];
        tu_describe(&u, what, sizeof what);
        if (s != CONV_STATUS_SUCCESS)
            fail_msg("seed %" PRIu64 " transposed %s: status %d: %s", seed, what, (int)s,
                     conv_last_error());
        if (check(&u, CONV_OP_BACKWARD_DATA, &c, &c.x, tb.ref, u.p.relu, 0, msg, sizeof msg))
            fail_msg("seed %" PRIu64 " transposed %s: %s", seed, what, msg);
        conv_desc_destroy(d);
        bt_free(&tb);
        bcase_free(&c);
    }
}

/* A plan computes what the one-shot call does, bit for bit (same threads),
 * and a second run of either gives the same bits (determinism). */
static void test_plans(void **state)
{
    (void)state;
    for (int i = 0; i < 30; i++) {
        tu_rng r;
        tu_problem tp;
        tu_seed(&r, 1500000 + (uint64_t)i);
        conv_op_t op = (conv_op_t)(i % 3);
        random_bf16_problem(&r, &tp, op);
        bcase c;
        bcase_make(&c, contexts[1], &tp, &r);
        conv_desc_t d;
        assert_int_equal(tu_make_desc(&tp, op, &d), CONV_STATUS_SUCCESS);
        const btensor *out = output_of(&c, op);
        size_t bytes = (size_t)out->elems * 2;
        assert_int_equal(run_pass(contexts[1], d, op, &c), CONV_STATUS_SUCCESS);
        uint16_t *once = malloc(bytes + 1);
        tu_copy(once, out->data, bytes);

        int64_t xd[5], wd[5];
        int nd = tu_x_dims(&tp, xd);
        tu_w_dims(&tp, wd);
        conv_plan_t plan;
        assert_int_equal(conv_plan_create(contexts[1], d, op, CONV_DTYPE_BFLOAT16,
                                          tp.p.channels_last ? CONV_LAYOUT_CHANNELS_LAST
                                                             : CONV_LAYOUT_CHANNELS_FIRST,
                                          nd, xd, wd, tp.bias && op != CONV_OP_BACKWARD_DATA,
                                          &plan),
                         CONV_STATUS_SUCCESS);
        const char *name = NULL;
        assert_int_equal(conv_plan_get_solver_name(plan, &name), CONV_STATUS_SUCCESS);
        if (tp.p.n > 0 && tp.p.c > 0)
            assert_string_equal(name, "bf16_gemm");
        for (int rep = 0; rep < 2; rep++) {
            bt_fill_nan((btensor *)out);
            /* the roles: (x, w, b, y), (dx, w, NULL, dy), (x, dw, db, dy) */
            conv_tensor_t b = op == CONV_OP_BACKWARD_DATA ? NULL : c.b.t;
            assert_int_equal(conv_plan_execute(plan, c.x.t, c.w.t, b, c.y.t, NULL),
                             CONV_STATUS_SUCCESS);
            assert_true(tu_same(once, out->data, bytes));
        }
        conv_plan_destroy(plan);
        free(once);
        conv_desc_destroy(d);
        bcase_free(&c);
    }
}

/* The numerical guard reads bf16 outputs: a NaN input reaches y. */
static void test_numerical_guard(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_int_equal(conv_context_create(CONV_DEVICE_CPU, 0, &ctx), CONV_STATUS_SUCCESS);
    assert_int_equal(conv_context_set_check_numerics(ctx, 1), CONV_STATUS_SUCCESS);
    tu_rng r;
    tu_problem tp;
    tu_seed(&r, 1700000);
    do
        random_bf16_problem(&r, &tp, CONV_OP_FORWARD);
    while (tp.p.n == 0 || tp.p.relu);
    bcase c;
    bcase_make(&c, ctx, &tp, &r);
    conv_desc_t d;
    assert_int_equal(tu_make_desc(&tp, CONV_OP_FORWARD, &d), CONV_STATUS_SUCCESS);
    assert_int_equal(run_pass(ctx, d, CONV_OP_FORWARD, &c), CONV_STATUS_SUCCESS);
    bt_fill_nan(&c.w); /* every output reads the filter */
    assert_int_equal(run_pass(ctx, d, CONV_OP_FORWARD, &c), CONV_STATUS_NUMERICAL_ERROR);
    assert_non_null(strstr(conv_last_error(), "NaN"));
    conv_desc_destroy(d);
    bcase_free(&c);
    conv_context_destroy(ctx);
}

/* CONV_CPU_ISA=baseline: the engine refuses bf16 naming the feature, the
 * CPU and the cap, and writes nothing. */
static void test_refused(void **state)
{
    (void)state;
    for (int op = 0; op < 3; op++) {
        tu_rng r;
        tu_problem tp;
        tu_seed(&r, 1600000 + (uint64_t)op);
        do
            random_bf16_problem(&r, &tp, (conv_op_t)op);
        while (tp.p.n == 0);
        bcase c;
        bcase_make(&c, contexts[0], &tp, &r);
        const btensor *out = output_of(&c, (conv_op_t)op);
        bt_fill_nan((btensor *)out);
        conv_desc_t d;
        assert_int_equal(tu_make_desc(&tp, (conv_op_t)op, &d), CONV_STATUS_SUCCESS);
        assert_int_equal(run_pass(contexts[0], d, (conv_op_t)op, &c), CONV_STATUS_UNSUPPORTED);
        const char *m = conv_last_error();
        if (!strstr(m, "AVX-512") || !strstr(m, "CPU (") || !strstr(m, "CONV_CPU_ISA"))
            fail_msg("the refusal does not name the feature, the CPU and the cap: %s", m);
        for (int64_t i = 0; i < out->elems; i++)
            assert_int_equal(out->data[i], 0x7fc0);
        conv_desc_destroy(d);
        bcase_free(&c);
    }
}

/* Whether this process computes bf16 on the CPU: a 1x1 convolution of ones. */
static int bf16_available(void)
{
    conv_context_t ctx;
    conv_tensor_t x, w, y;
    conv_desc_t d;
    const int64_t dims[3] = {1, 1, 1};
    const uint16_t one = 0x3f80;
    conv_status_t s = CONV_STATUS_INTERNAL_ERROR;
    if (conv_context_create(CONV_DEVICE_CPU, 0, &ctx) != CONV_STATUS_SUCCESS)
        return 0;
    if (conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &x) ==
            CONV_STATUS_SUCCESS &&
        conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &w) ==
            CONV_STATUS_SUCCESS &&
        conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &y) ==
            CONV_STATUS_SUCCESS &&
        conv_desc_create(1, &d) == CONV_STATUS_SUCCESS) {
        conv_tensor_copy_from(x, &one, 2);
        conv_tensor_copy_from(w, &one, 2);
        s = conv_forward(ctx, d, x, w, NULL, y, NULL);
        conv_desc_destroy(d);
    }
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(y);
    conv_context_destroy(ctx);
    return s == CONV_STATUS_SUCCESS;
}

static int setup(void **state)
{
    (void)state;
    return tu_thread_contexts_create(contexts, 3) == CONV_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tu_thread_contexts_destroy(contexts, 3);
    return 0;
}

int main(void)
{
    const char *cap = getenv("CONV_CPU_ISA");
    if (cap && strcmp(cap, "baseline") == 0) {
        const struct CMUnitTest refused[] = {cmocka_unit_test(test_refused)};
        return cmocka_run_group_tests(refused, setup, teardown);
    }
    if (!bf16_available()) {
        printf("skipped: this CPU does not compute bf16 (%s)\n", conv_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward),    cmocka_unit_test(test_backward_data),
        cmocka_unit_test(test_backward_filter), cmocka_unit_test(test_large),
        cmocka_unit_test(test_transposed), cmocka_unit_test(test_plans),
        cmocka_unit_test(test_numerical_guard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
