/* CONV_ALGO_IMPLICIT_GEMM: forward, backward-filter and stride-1
 * backward-data against the reference on random 1-D and 2-D problems in
 * both layouts (exactly, on
 * integer data; and real data within the rounding tolerance), across the
 * boundaries of its micro-tiles, work items and phase planes; and the cases
 * where it must decline. ctest runs it with AVX-512 kernels and again with
 * CONV_CPU_ISA=baseline (portable kernels). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

/* Sizes chosen around the algorithm's blocks: 8 filters per micro-tile, 64
 * per work item, 32 or 48 positions per micro-tile, stride phases. */
static void random_problem(tu_rng *r, tu_problem *tp, conv_op_t op, int wide)
{
    int spatial = tu_chance(r, 20) ? 1 : 2;
    int64_t in[2], kernel[2];
    for (int a = 0; a < spatial; a++) {
        kernel[a] = tu_range(r, 1, 5);
        in[a] = tu_range(r, 1, wide ? 40 : 14);
    }
    int64_t groups = tu_chance(r, 25) ? tu_range(r, 2, 3) : 1;
    int64_t cmax = wide ? 72 : 12;
    tu_problem_init(tp, spatial, tu_range(r, 0, wide ? 2 : 3), groups * tu_range(r, 1, cmax),
                    groups * tu_range(r, 1, cmax), in, kernel);
    tp->p.groups = groups;
    for (int a = 0; a < spatial; a++) {
        tp->p.stride[a] = op != CONV_OP_BACKWARD_DATA ? tu_range(r, 1, 3) : 1;
        tp->p.dilation[a] = tu_chance(r, 25) ? 2 : 1;
        tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a]);
        tp->desc_pad_end[a] = tu_range(r, 0, kernel[a]);
    }
    tp->p.channels_last = tu_chance(r, 50);
    tp->dtype = tu_chance(r, 70) ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64;
    tp->bias = op != CONV_OP_BACKWARD_DATA && tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = CONV_ALGO_IMPLICIT_GEMM;
}

static void check_random(int wide, int real, uint64_t seed0, int count0, conv_math_t math)
{
    tu_rng r;
    uint64_t seed = tu_env_seed(seed0);
    tu_seed(&r, seed);
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_ok(conv_context_set_math(ctx, math));
    int count = tu_env_count(count0), done = 0;
    for (int i = 0; done < count && i < 20 * count; i++) {
        int64_t pick = tu_range(&r, 0, 2);
        conv_op_t op = pick == 0   ? CONV_OP_FORWARD
                       : pick == 1 ? CONV_OP_BACKWARD_DATA
                                   : CONV_OP_BACKWARD_FILTER;
        tu_problem tp;
        random_problem(&r, &tp, op, wide);
        if (!tu_resolve(&tp))
            continue; /* no output: drawn again */
        assert_ok(conv_context_set_threads(ctx, (int)tu_range(&r, 1, 3)));
        char what[640], failure[1536];
        int len = snprintf(what, sizeof what, "seed %llu problem %d %s ",
                           (unsigned long long)seed, i, tu_op_name(op));
        tu_describe(&tp, what + len, sizeof what - (size_t)len);
        /* outputs NaN-filled: unwritten elements fail */
        if (tu_run_checked(ctx, NULL, &tp, op, &r, real, tu_chance(&r, 50), what, failure,
                           sizeof failure))
            fail_msg("%s", failure);
        done++;
    }
    assert_int_equal(done, count);
    conv_context_destroy(ctx);
}

/* Small problems, exact on integer data: every size class near zero. */
static void test_small_exact(void **state)
{
    (void)state;
    check_random(0, 0, 0x1a9e11, 1500, CONV_MATH_DEFAULT);
}

/* Wider problems crossing the 8-filter, 64-filter and 32/48-position blocks. */
static void test_wide_exact(void **state)
{
    (void)state;
    check_random(1, 0, 0x1a9e22, 150, CONV_MATH_DEFAULT);
}

/* Real-valued data: within the rounding bound of a dot product. */
static void test_real(void **state)
{
    (void)state;
    check_random(1, 1, 0x1a9e33, 60, CONV_MATH_DEFAULT);
}

/* CONV_MATH_STRICT: channel blocks of at most 32 summed apart and then
 * added (a second way through the tiles), exact and on real data. The
 * channel counts go past 32 so that there are several blocks. */
static void test_strict(void **state)
{
    (void)state;
    check_random(1, 0, 0x1a9e44, 150, CONV_MATH_STRICT);
    check_random(1, 1, 0x1a9e55, 60, CONV_MATH_STRICT);
}

/* Fixed channels-first fp32 layers shaped like real networks' strided ones:
 * rows wider than the 16-lane chunks of the padded copy, so its vector
 * paths (stride 1 and the stride-2 deinterleave) are fully exercised. */
static void test_strided_layers(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t c, k, h, w, kernel, stride, pad;
    } layers[] = {
        {3, 16, 45, 38, 7, 2, 3},  /* conv1-like */
        {17, 24, 34, 33, 3, 2, 1}, /* 3x3 stride 2 */
        {9, 8, 40, 41, 3, 1, 1},   /* 3x3 stride 1 */
        {5, 11, 37, 70, 5, 3, 2},  /* stride 3 */
    };
    tu_rng r;
    tu_seed(&r, 0x57e1);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        for (int op = CONV_OP_FORWARD; op <= CONV_OP_BACKWARD_FILTER; op++) {
            if (op == CONV_OP_BACKWARD_DATA && layers[i].stride > 1)
                continue;
            int64_t in[2] = {layers[i].h, layers[i].w};
            int64_t kernel[2] = {layers[i].kernel, layers[i].kernel};
            tu_problem tp;
            tu_problem_init(&tp, 2, 2, layers[i].c, layers[i].k, in, kernel);
            for (int a = 0; a < 2; a++) {
                tp.p.stride[a] = layers[i].stride;
                tp.desc_pad_begin[a] = tp.desc_pad_end[a] = layers[i].pad;
            }
            tp.bias = op != CONV_OP_BACKWARD_DATA;
            tp.algo = CONV_ALGO_IMPLICIT_GEMM;
            assert_true(tu_resolve(&tp));
            char what[640], failure[1536];
            int len = snprintf(what, sizeof what, "%s ", tu_op_name((conv_op_t)op));
            tu_describe(&tp, what + len, sizeof what - (size_t)len);
            if (tu_run_checked(ctx, NULL, &tp, (conv_op_t)op, &r, 0, 0, what, failure,
                               sizeof failure))
                fail_msg("%s", failure);
        }
    conv_context_destroy(ctx);
}

/* Where it must decline, forcing it is UNSUPPORTED naming it, and the
 * outputs are untouched. */
static void test_declines(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    struct {
        int spatial, channels_last, stride;
        conv_op_t op;
    } cases[] = {
        {3, 0, 1, CONV_OP_FORWARD},         /* 3-D */
        {2, 0, 2, CONV_OP_BACKWARD_DATA},   /* strided backward-data */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_problem tp;
        int64_t in[3] = {6, 6, 6}, kernel[3] = {3, 3, 3};
        tu_problem_init(&tp, cases[i].spatial, 1, 4, 4, in, kernel);
        tp.p.channels_last = cases[i].channels_last;
        for (int a = 0; a < cases[i].spatial; a++)
            tp.p.stride[a] = cases[i].stride;
        tp.algo = CONV_ALGO_IMPLICIT_GEMM;
        assert_true(tu_resolve(&tp));
        char failure[512];
        if (tu_check_declined(ctx, &tp, cases[i].op, i + 1, "implicit_gemm", failure,
                              sizeof failure))
            fail_msg("case %zu: %s", i, failure);
    }
    conv_context_destroy(ctx);
}

/* Backward-filter onto few filters over a batch: the batch split into 2
 * or 4 parts of images, each part's sums into its own copy of dw, the
 * copies added up a tree of pairs (cpu/batch_parts.h). Batches 2-9 (parts
 * of unequal sizes), both layouts, strides 1 and 2, either math mode,
 * bias; each on 1-3 threads against the reference on an exact workspace
 * with a guard page, and with the same bits on 1, 2 and 3 threads. */
static void test_filter_batch_parts(void **state)
{
    (void)state;
    const struct {
        int64_t n, c, k, hw, kernel, stride, pad;
        int last;
        conv_math_t math;
    } cases[] = {
        {2, 1, 6, 32, 5, 1, 0, 0, CONV_MATH_STRICT},  {3, 3, 8, 16, 3, 1, 1, 1, CONV_MATH_DEFAULT},
        {5, 1, 8, 28, 3, 1, 0, 0, CONV_MATH_DEFAULT}, {7, 12, 8, 12, 3, 1, 1, 0, CONV_MATH_STRICT},
        {4, 2, 4, 20, 3, 2, 1, 1, CONV_MATH_STRICT},  {9, 6, 12, 15, 5, 1, 2, 0, CONV_MATH_DEFAULT},
    };
    tu_rng r;
    tu_seed(&r, 0x1a9a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].hw, cases[i].hw + 1}, kernel[2] = {cases[i].kernel, cases[i].kernel};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].pad;
        }
        tp.p.channels_last = cases[i].last;
        tp.bias = i % 2 == 0;
        tp.algo = CONV_ALGO_IMPLICIT_GEMM;
        assert_true(tu_resolve(&tp));
        tu_check_case_by_threads(&tp, CONV_OP_BACKWARD_FILTER, cases[i].math, &r, 0x1a9a + i, i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact),
        cmocka_unit_test(test_wide_exact),
        cmocka_unit_test(test_real),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_strided_layers),
        cmocka_unit_test(test_declines),
        cmocka_unit_test(test_filter_batch_parts),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
