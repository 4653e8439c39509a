/* Winograd F(4x4, 3x3): accuracy within its documented bound against the
 * float64 reference on random problems, the cases where it must decline,
 * and the accuracy contract of CONV_MATH_STRICT. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

/* docs/algorithms.md's bounds, inputs here in [-1, 1): forward and
 * backward-data |err| <= 32 * L * eps * max|x| * max|w|, L the reduction
 * length (input channels per group x 9, or output channels per group x 9;
 * a bias adds one more term of at most 1); backward-filter the same with
 * max|dy| for max|w| and L = batch x output positions. */
static double winograd_bound(const tu_problem *tp, conv_op_t op)
{
    const ref_problem *p = &tp->p;
    double eps = tp->dtype == CONV_DTYPE_FLOAT64 ? 2.220446e-16 : 1.192093e-7;
    if (op == CONV_OP_BACKWARD_FILTER) {
        int64_t y[5];
        tu_y_dims(tp, y);
        return 32.0 * (double)(y[0] * y[2] * y[3]) * eps;
    }
    double L = (double)(op == CONV_OP_FORWARD ? p->c : p->k) / (double)p->groups * 9.0;
    return 32.0 * (L + (op == CONV_OP_FORWARD && tp->bias)) * eps;
}

/* Backward-filter's bias gradient: the sum of dy over batch and positions,
 * summed directly (exact to rounding). */
static void check_bias_gradient(const tu_problem *tp, tu_case *c, uint64_t seed, int i)
{
    int64_t y[5];
    tu_y_dims(tp, y);
    int64_t plane = y[2] * y[3], k = tp->p.k;
    for (int64_t ch = 0; ch < k; ch++) {
        double want = 0, mag = 0;
        for (int64_t e = 0; e < y[0] * k * plane; e++)
            if (tu_y_channel(tp, e) == ch) {
                want += tu_get(&c->y, e);
                mag += fabs(tu_get(&c->y, e));
            }
        double got = tu_get(&c->b, ch);
        if (!(fabs(got - want) <= 4 * mag * 1.2e-7 + 1e-30))
            fail_msg("seed %llu problem %d: bias gradient %lld: got %.9g want %.9g",
                     (unsigned long long)seed, i, (long long)ch, got, want);
    }
}

static void random_winograd_problem(tu_rng *r, tu_problem *tp)
{
    int64_t in[2] = {tu_range(r, 1, 15), tu_range(r, 1, 15)}, kernel[2] = {3, 3};
    int64_t groups = tu_range(r, 1, 3);
    tu_problem_init(tp, 2, tu_range(r, 0, 2), groups * tu_range(r, 1, 24),
                    groups * tu_range(r, 1, 24), in, kernel);
    tp->p.groups = groups;
    tp->p.channels_last = tu_chance(r, 50);
    tp->dtype = tu_chance(r, 50) ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
    tp->p.relu = tu_chance(r, 30);
    tp->bias = tu_chance(r, 50);
    for (int a = 0; a < 2; a++) {
        tp->desc_pad_begin[a] = tu_range(r, 0, 2);
        tp->desc_pad_end[a] = tu_range(r, 0, 2);
        if (in[a] + tp->desc_pad_begin[a] + tp->desc_pad_end[a] < 3)
            tp->p.in[a] = 3;
    }
    tp->algo = CONV_ALGO_WINOGRAD_4X4_3X3;
    assert_true(tu_resolve(tp));
}

/* Runs one problem and checks every output element against the reference. */
static int check_problem(conv_context_t ctx, tu_problem *tp, conv_op_t op, tu_rng *r,
                         uint64_t seed, int i)
{
    conv_desc_t desc;
    assert_ok(tu_make_desc(tp, op, &desc));
    tu_case c;
    assert_ok(tu_case_make(&c, ctx, tp, 0));
    tu_case_fill(&c, op, r, 1); /* outputs NaN: an element left unwritten fails */
    assert_ok(tu_case_run(&c, ctx, desc, op, NULL));
    const int filter = op == CONV_OP_BACKWARD_FILTER;
    const tu_tensor *out = op == CONV_OP_FORWARD ? &c.y : filter ? &c.w : &c.x;
    int64_t n = op == CONV_OP_FORWARD ? ref_y_elements(&tp->p)
                : filter              ? ref_w_elements(&tp->p)
                                      : ref_x_elements(&tp->p);
    double bound = winograd_bound(tp, op);
    ref_problem rp = tp->p;
    if (op != CONV_OP_FORWARD)
        rp.relu = 0;
    for (int64_t e = 0; e < n; e++) {
        double want = op == CONV_OP_FORWARD
                          ? ref_forward_at(&rp, tu_ref_dtype(tp->dtype), c.x.data, c.w.data,
                                           tp->bias ? c.b.data : NULL, e, NULL)
                      : filter ? ref_backward_filter_at(&rp, tu_ref_dtype(tp->dtype), c.x.data,
                                                        c.y.data, e, NULL)
                               : ref_backward_data_at(&rp, tu_ref_dtype(tp->dtype), c.w.data,
                                                      c.y.data, e, NULL);
        double got = tu_get(out, e);
        if (!(fabs(got - want) <= bound)) {
            char what[512];
            tu_describe(tp, what, sizeof what);
            fail_msg("seed %llu problem %d (%s) %s element %lld: got %.9g want %.9g, "
                     "bound %.3g",
                     (unsigned long long)seed, i, what, tu_op_name(op), (long long)e, got, want,
                     bound);
        }
    }
    if (filter && tp->bias)
        check_bias_gradient(tp, &c, seed, i);
    tu_case_free(&c);
    conv_desc_destroy(desc);
    return (int)n;
}

static void test_accuracy(void **state)
{
    (void)state;
    tu_rng r;
    uint64_t seed = tu_env_seed(0x3a11ce);
    tu_seed(&r, seed);
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    int count = tu_env_count(400), checked = 0;
    for (int i = 0; i < count; i++) {
        tu_problem tp;
        random_winograd_problem(&r, &tp);
        conv_op_t op = (conv_op_t)tu_range(&r, 0, 2);
        assert_ok(conv_context_set_threads(ctx, (int)tu_range(&r, 1, 3)));
        checked += check_problem(ctx, &tp, op, &r, seed, i);
    }
    assert_true(checked > 10000);
    conv_context_destroy(ctx);
}

/* What the vectorised (16-channel) path adds: channel counts around and
 * past multiples of 16 (masked tails, several input-channel chunks, 16- and
 * 32-wide output panels), batches whose tile blocks span images, planes
 * from 1x1 to several blocks, and few tiles on many threads (the blocks
 * then shared out by output channels). */
static void test_accuracy_wide(void **state)
{
    (void)state;
    tu_rng r;
    uint64_t seed = tu_env_seed(0x16ca7);
    tu_seed(&r, seed);
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    static const int64_t widths[] = {1, 15, 16, 17, 31, 32, 33, 48, 63};
    int count = tu_env_count(60), checked = 0;
    for (int i = 0; i < count; i++) {
        tu_problem tp;
        int64_t in[2] = {tu_range(&r, 1, 21), tu_range(&r, 1, 21)}, kernel[2] = {3, 3};
        int64_t groups = tu_range(&r, 1, 3);
        int64_t cg = widths[tu_range(&r, 0, 8)], kg = widths[tu_range(&r, 0, 8)];
        tu_problem_init(&tp, 2, tu_range(&r, 1, 5), groups * cg, groups * kg, in, kernel);
        tp.p.groups = groups;
        tp.p.channels_last = tu_chance(&r, 50);
        tp.dtype = tu_chance(&r, 80) ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64;
        tp.p.relu = tu_chance(&r, 30);
        tp.bias = tu_chance(&r, 50);
        for (int a = 0; a < 2; a++) {
            tp.desc_pad_begin[a] = tu_range(&r, 0, 2);
            tp.desc_pad_end[a] = tu_range(&r, 0, 2);
            if (in[a] + tp.desc_pad_begin[a] + tp.desc_pad_end[a] < 3)
                tp.p.in[a] = 3;
        }
        tp.algo = CONV_ALGO_WINOGRAD_4X4_3X3;
        assert_true(tu_resolve(&tp));
        conv_op_t op = (conv_op_t)tu_range(&r, 0, 2);
        assert_ok(conv_context_set_threads(ctx, (int)tu_range(&r, 1, 4)));
        checked += check_problem(ctx, &tp, op, &r, seed, i);
    }
    assert_true(checked > 10000);
    conv_context_destroy(ctx);
}

/* Fixed shapes at the edges: 1x1 and odd planes with one- or two-sided
 * padding, batches that put tiles of several images in one block (all
 * three passes). */
static void test_edges(void **state)
{
    (void)state;
    static const struct {
        int64_t n, c, k, groups, h, w, pb, pe;
    } cases[] = {
        {1, 16, 16, 1, 1, 1, 1, 1}, {3, 5, 7, 1, 5, 7, 1, 1},   {2, 17, 33, 1, 13, 9, 2, 0},
        {4, 32, 32, 2, 7, 5, 0, 2}, {5, 48, 48, 3, 4, 4, 1, 1}, {1, 64, 64, 1, 22, 22, 1, 1},
        {9, 3, 40, 1, 6, 6, 0, 0},
    };
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    tu_rng r;
    tu_seed(&r, 7);
    int i = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int variant = 0; variant < 8; variant++, i++) {
            tu_problem tp;
            int64_t in[2] = {cases[k].h, cases[k].w}, kernel[2] = {3, 3};
            tu_problem_init(&tp, 2, cases[k].n, cases[k].c, cases[k].k, in, kernel);
            tp.p.groups = cases[k].groups;
            tp.p.channels_last = variant & 1;
            tp.p.relu = tp.bias = (variant >> 2) & 1;
            for (int a = 0; a < 2; a++) {
                tp.desc_pad_begin[a] = cases[k].pb;
                tp.desc_pad_end[a] = cases[k].pe;
            }
            tp.algo = CONV_ALGO_WINOGRAD_4X4_3X3;
            assert_true(tu_resolve(&tp));
            assert_ok(conv_context_set_threads(ctx, 1 + i % 3));
            check_problem(ctx, &tp, (conv_op_t)((variant >> 1) % 3), &r, 7, i);
        }
    conv_context_destroy(ctx);
}

/* Where Winograd must decline, forcing it is UNSUPPORTED with a reason and
 * the output is untouched. */
static void test_declines(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    struct {
        int64_t kernel, stride, dilation, pad;
        conv_op_t op;
    } cases[] = {
        {5, 1, 1, 1, CONV_OP_FORWARD},         /* not 3x3 */
        {3, 2, 1, 1, CONV_OP_FORWARD},         /* strided */
        {3, 1, 2, 1, CONV_OP_BACKWARD_DATA},   /* dilated */
        {3, 1, 1, 3, CONV_OP_FORWARD},         /* padding beyond 2 */
        {3, 2, 1, 1, CONV_OP_BACKWARD_FILTER}, /* strided filter gradient */
        {3, 1, 1, 3, CONV_OP_BACKWARD_FILTER}, /* padding beyond 2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_problem tp;
        int64_t in[2] = {9, 9}, kernel[2] = {cases[i].kernel, cases[i].kernel};
        tu_problem_init(&tp, 2, 1, 4, 4, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.p.dilation[a] = cases[i].dilation;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].pad;
        }
        tp.algo = CONV_ALGO_WINOGRAD_4X4_3X3;
        assert_true(tu_resolve(&tp));
        char failure[512];
        if (tu_check_declined(ctx, &tp, cases[i].op, i + 1, "winograd_4x4_3x3", failure,
                              sizeof failure))
            fail_msg("case %zu: %s", i, failure);
    }
    conv_context_destroy(ctx);
}

/* The default choice for a wide 3x3 layer is Winograd; a STRICT context
 * never chooses it, not even when a tuning run found it fastest. */
static void test_strict_excludes(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    tu_problem tp;
    int64_t in[2] = {48, 48}, kernel[2] = {3, 3};  /* 144 tiles: enough to choose it */
    tu_problem_init(&tp, 2, 1, 32, 32, in, kernel);
    tp.desc_pad_begin[0] = tp.desc_pad_begin[1] = tp.desc_pad_end[0] = tp.desc_pad_end[1] = 1;
    assert_true(tu_resolve(&tp));
    conv_desc_t desc;
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &desc));
    tu_case c;
    assert_ok(tu_case_make(&c, ctx, &tp, 0));
    conv_algo_t algo;
    assert_ok(conv_chosen_algorithm(ctx, desc, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, &algo));
    assert_int_equal(algo, CONV_ALGO_WINOGRAD_4X4_3X3);

    conv_math_t math;
    assert_ok(conv_context_get_math(ctx, &math));
    assert_int_equal(math, CONV_MATH_DEFAULT);
    assert_ok(conv_context_set_math(ctx, CONV_MATH_STRICT));
    assert_ok(conv_context_get_math(ctx, &math));
    assert_int_equal(math, CONV_MATH_STRICT);
    assert_ok(conv_chosen_algorithm(ctx, desc, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, &algo));
    assert_int_not_equal(algo, CONV_ALGO_WINOGRAD_4X4_3X3);

    /* find under STRICT offers no Winograd; under DEFAULT it does. */
    conv_algo_t algos[8];
    int count;
    assert_ok(conv_find_algorithms(ctx, desc, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, NULL, 8,
                                   algos, NULL, NULL, &count));
    for (int i = 0; i < count; i++)
        assert_int_not_equal(algos[i], CONV_ALGO_WINOGRAD_4X4_3X3);
    assert_ok(conv_context_set_math(ctx, CONV_MATH_DEFAULT));
    assert_ok(conv_find_algorithms(ctx, desc, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, NULL, 8,
                                   algos, NULL, NULL, &count));
    int seen = 0;
    for (int i = 0; i < count; i++)
        seen |= algos[i] == CONV_ALGO_WINOGRAD_4X4_3X3;
    assert_true(seen);

    /* An unknown math mode is refused and changes nothing. */
    assert_status(conv_context_set_math(ctx, (conv_math_t)7), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_context_get_math(ctx, &math));
    assert_int_equal(math, CONV_MATH_DEFAULT);
    tu_case_free(&c);
    conv_desc_destroy(desc);
    conv_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_accuracy_wide),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_declines),
        cmocka_unit_test(test_strict_excludes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
