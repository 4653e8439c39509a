/* direct_avx512 (channels in the vector, src/cpu/direct_avx512.cpp and
 * direct_avx512_filter.cpp): forward, backward-data (strided: by phases)
 * and backward-filter (filters in the vector, chunks of positions, columns
 * in dw's order) against the reference on random 1-D, 2-D and 3-D problems
 * (depth slices as rows, strided depth by phases; backward-filter's columns
 * carrying their slice), in both layouts (exactly on integer data; real data
 * within the rounding tolerance), across its blocks -- 16-channel vectors
 * and their last partial one, 1-4 vectors a tile, row remainders, work
 * items of several rows, channel blocks (strict: 32 at most); and plans
 * with prepared weights, fresh and stale; backward-filter laying dy out
 * chunk by chunk on large planes; backward-data's large filters packed a
 * block of dy's channels at a time, and large items' vectors a range of
 * source channels at a time. ctest runs it with AVX-512 tiles
 * and again with CONV_CPU_ISA=baseline (portable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

static conv_algo_t direct(void)
{
    conv_algo_t a;
    assert_int_equal(conv_algo_from_name("direct_avx512", &a), CONV_STATUS_SUCCESS);
    return a;
}

/* Kernels 1..7 (3-D: 1..3), strides 1..3 (backward-data: its stride phases), dilation, asymmetric padding,
 * channel counts around 16, 32 and 64, groups, batch 1..3. */
static void random_problem(tu_rng *r, tu_problem *tp, conv_op_t op, int wide)
{
    int spatial = tu_chance(r, 20) ? 1 : tu_chance(r, 20) ? 3 : 2;
    int64_t in[3], kernel[3];
    for (int a = 0; a < spatial; a++) {
        kernel[a] = tu_range(r, 1, spatial == 3 ? 3 : 7);
        in[a] = tu_range(r, 1, spatial == 3 ? (wide ? 12 : 8) : wide ? 40 : 16);
    }
    int64_t groups = tu_chance(r, 20) ? tu_range(r, 2, 3) : 1;
    int64_t cmax = wide ? 80 : 20;
    tu_problem_init(tp, spatial, tu_range(r, 1, wide ? 2 : 3), groups * tu_range(r, 1, cmax),
                    groups * tu_range(r, 1, cmax), in, kernel);
    tp->p.groups = groups;
    for (int a = 0; a < spatial; a++) {
        tp->p.stride[a] = tu_range(r, 1, 3);
        tp->p.dilation[a] = tu_chance(r, 20) ? 2 : 1;
        tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a]);
        tp->desc_pad_end[a] = tu_range(r, 0, kernel[a]);
    }
    tp->p.channels_last = tu_chance(r, 40);
    tp->dtype = tu_chance(r, 75) ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64;
    tp->bias = op != CONV_OP_BACKWARD_DATA && tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = direct();
}

/* The pass (forward 40%, backward-data 30%, backward-filter 30%) and its problem. */
static void draw(tu_rng *r, tu_problem *tp, conv_op_t *op, int wide)
{
    int64_t pick = tu_range(r, 0, 9);
    *op = pick < 4 ? CONV_OP_FORWARD : pick < 7 ? CONV_OP_BACKWARD_DATA : CONV_OP_BACKWARD_FILTER;
    random_problem(r, tp, *op, wide);
}

static void check_random(int wide, int real, uint64_t seed0, int count0, conv_math_t math)
{
    tu_check_solver_random(draw, wide, real, seed0, count0, math);
}

static void test_small_exact(void **state)
{
    (void)state;
    check_random(0, 0, 0xd1ec11, 1200, CONV_MATH_DEFAULT);
}

/* Wider planes and channel counts: several vectors, items and blocks. */
static void test_wide_exact(void **state)
{
    (void)state;
    check_random(1, 0, 0xd1ec22, 150, CONV_MATH_DEFAULT);
}

static void test_real(void **state)
{
    (void)state;
    check_random(1, 1, 0xd1ec33, 60, CONV_MATH_DEFAULT);
}

/* CONV_MATH_STRICT: channel blocks of at most 32 summed apart, then added. */
static void test_strict(void **state)
{
    (void)state;
    check_random(1, 0, 0xd1ec44, 150, CONV_MATH_STRICT);
    check_random(1, 1, 0xd1ec55, 60, CONV_MATH_STRICT);
}

/* Layers shaped like ResNet-50's (smaller), both layouts: conv1's 7x7
 * stride 2 on 3 channels, 3x3 on 7x7 and 14x14 planes with 64+ channels
 * (4-vector tiles, channel blocks), stride 2, with bias and ReLU. */
static void test_layers(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, c, k, hw, kernel, stride, pad;
    } layers[] = {
        {1, 3, 64, 46, 7, 2, 3},  {2, 96, 80, 7, 3, 1, 1}, {1, 64, 48, 14, 3, 1, 1},
        {1, 40, 72, 15, 3, 2, 1}, {3, 33, 17, 12, 5, 1, 2},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec66);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        for (int last = 0; last < 2; last++)
            for (int op = CONV_OP_FORWARD; op <= CONV_OP_BACKWARD_FILTER; op++) {
                int64_t in[2] = {layers[i].hw, layers[i].hw};
                int64_t kernel[2] = {layers[i].kernel, layers[i].kernel};
                tu_problem tp;
                tu_problem_init(&tp, 2, layers[i].n, layers[i].c, layers[i].k, in, kernel);
                for (int a = 0; a < 2; a++) {
                    tp.p.stride[a] = layers[i].stride;
                    tp.desc_pad_begin[a] = tp.desc_pad_end[a] = layers[i].pad;
                }
                tp.p.channels_last = last;
                tp.bias = op != CONV_OP_BACKWARD_DATA;
                tp.p.relu = 1;
                tp.algo = direct();
                assert_true(tu_resolve(&tp));
                char what[640], failure[1536];
                int len = snprintf(what, sizeof what, "%s ", tu_op_name((conv_op_t)op));
                tu_describe(&tp, what + len, sizeof what - (size_t)len);
                assert_ok(conv_context_set_threads(ctx, 1 + (int)(i % 2)));
                if (tu_run_checked(ctx, NULL, &tp, (conv_op_t)op, &r, 0, 0, what, failure,
                                   sizeof failure))
                    fail_msg("%s", failure);
            }
    conv_context_destroy(ctx);
}

/* One pass of tp (direct_avx512 forced) on `threads` threads in `math`,
 * real data on an exact workspace against a guard page (after or before
 * it), checked against the reference. */
/* ... with tu_run_checked's `flags` besides the exact workspace and its guard. */
static void check_exact_with(conv_context_t ctx, tu_problem *tp, conv_op_t op, int threads, conv_math_t math,
                             int guard_before, int flags, tu_rng *r)
{
    tp->algo = direct();
    assert_true(tu_resolve(tp));
    char what[640], failure[1536];
    int len = snprintf(what, sizeof what, "%s (%d threads) ", tu_op_name(op), threads);
    tu_describe(tp, what + len, sizeof what - (size_t)len);
    assert_ok(conv_context_set_threads(ctx, threads));
    assert_ok(conv_context_set_math(ctx, math));
    if (tu_run_checked(ctx, NULL, tp, op, r, 1,
                       flags | TU_RUN_EXACT_WORKSPACE | (guard_before ? TU_RUN_GUARD_BEFORE : TU_RUN_GUARD_AFTER),
                       what, failure, sizeof failure))
        fail_msg("%s", failure);
}

static void check_exact(conv_context_t ctx, tu_problem *tp, conv_op_t op, int threads, conv_math_t math,
                        int guard_before, tu_rng *r)
{
    check_exact_with(ctx, tp, op, threads, math, guard_before, 0, r);
}

/* 3-D kernels with more taps a channel than a generated tile takes
 * unrolled: ResNet3D's conv1 (3x7x7, stride 1x2x2, padding 1x3x3) scaled
 * down, a 5x5x7 kernel, and 4x7x5 at stride 2 with uneven padding. Every
 * forward's tiles (4 x 5-6, 3 x 7, 2 x 9 on Zen 4) and the 5x5x7
 * backward-data's run the taps as a loop over the kernel's slices; the
 * strided backward-data's phases hold few enough taps to stay unrolled
 * (with CONV_CPU_JIT=0: the compiled tiles). Forward and backward-data, 1
 * and 2 threads, both layouts, exact workspaces against guard pages. */
static void test_many_taps_3d(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, c, k, in[3], kernel[3], stride[3], pad_begin[3], pad_end[3];
        int last;
    } cases[] = {
        {1, 3, 64, {6, 30, 30}, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 3, 3}, 0},
        {2, 2, 40, {5, 12, 14}, {5, 5, 7}, {1, 1, 1}, {2, 2, 3}, {2, 2, 3}, 1},
        {1, 4, 20, {6, 17, 19}, {4, 7, 5}, {2, 2, 1}, {1, 0, 2}, {2, 3, 1}, 0},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec3d);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int op = 0; op < 2; op++) {
            const int fwd = op == 0;
            tu_problem tp;
            /* Backward-data's tiles make dx from dy: the few channels are dx's. */
            tu_problem_init(&tp, 3, cases[i].n, cases[i].c, fwd ? cases[i].k : cases[i].k / 2, cases[i].in,
                            cases[i].kernel);
            for (int a = 0; a < 3; a++) {
                tp.p.stride[a] = cases[i].stride[a];
                tp.desc_pad_begin[a] = cases[i].pad_begin[a];
                tp.desc_pad_end[a] = cases[i].pad_end[a];
            }
            tp.p.channels_last = cases[i].last;
            tp.bias = fwd && i % 2 == 0;
            check_exact(ctx, &tp, fwd ? CONV_OP_FORWARD : CONV_OP_BACKWARD_DATA, 1 + (int)(i % 2),
                        i == 1 ? CONV_MATH_DEFAULT : CONV_MATH_STRICT, op, &r);
        }
    conv_context_destroy(ctx);
}

/* Backward-data with filters of 4 MB and more packed a block of dy's
 * channels at a time for all of a thread's dx vectors (source-major order,
 * runs_source_major): the items' sums carried between blocks in the
 * thread's slot. Both layouts, either math mode (their channel blocks
 * differ), 1 and 2 threads, unit and strided (phases), a partial last
 * vector (350 dx channels), several images, on an exact workspace against
 * guard pages. */
static void test_source_major(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, hw, stride;
        int last, threads;
        conv_math_t math;
    } cases[] = {
        {1, 5, 1, 0, 1, CONV_MATH_STRICT}, {2, 6, 2, 0, 2, CONV_MATH_DEFAULT},
        {1, 4, 1, 1, 2, CONV_MATH_STRICT}, {3, 5, 1, 1, 1, CONV_MATH_DEFAULT},
        {1, 7, 1, 0, 2, CONV_MATH_DEFAULT},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec5a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].hw, cases[i].hw + 1}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, 350, 340, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
        }
        tp.p.channels_last = cases[i].last;
        check_exact(ctx, &tp, CONV_OP_BACKWARD_DATA, cases[i].threads, cases[i].math, (int)(i % 2), &r);
    }
    conv_context_destroy(ctx);
}

/* One-shot calls on 2-4 threads whose items are rows, not whole channel
 * blocks (1-3 blocks of destination channels, batch 1-3): each thread packs
 * the blocks its items meet into a copy of its own, at their first use in
 * the call (mirrors_weights). Forward and backward-data, unit and stride 2,
 * both layouts and math modes, each case twice on one context with new
 * data (a thread's record of what it packed must not outlive the call),
 * exact workspaces against guard pages. The tile weighs each thread's
 * packing at 2+ threads on a batch too small to share out by images
 * (choose_tile): 64 channels on 8x8 take two blocks of 2 x 8 tiles there
 * (one block of 4 x 4 at 1 thread), 512 on 7x8 blocks of 4 vectors, not 3. */
static void test_thread_copies(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, c, k, hw, stride;
        int last, threads, op;
        conv_math_t math;
    } cases[] = {
        {1, 64, 64, 8, 1, 0, 2, CONV_OP_FORWARD, CONV_MATH_STRICT},
        {1, 64, 64, 8, 1, 0, 2, CONV_OP_BACKWARD_DATA, CONV_MATH_DEFAULT},
        {1, 96, 128, 7, 1, 1, 3, CONV_OP_FORWARD, CONV_MATH_DEFAULT},
        {3, 40, 150, 9, 1, 0, 2, CONV_OP_BACKWARD_DATA, CONV_MATH_STRICT},
        {1, 48, 80, 12, 2, 0, 4, CONV_OP_FORWARD, CONV_MATH_STRICT},
        {2, 130, 24, 6, 2, 1, 3, CONV_OP_BACKWARD_DATA, CONV_MATH_DEFAULT},
        {2, 32, 48, 10, 1, 0, 2, CONV_OP_FORWARD, CONV_MATH_DEFAULT},
        {1, 96, 512, 7, 1, 0, 2, CONV_OP_FORWARD, CONV_MATH_STRICT},
        {1, 512, 96, 7, 1, 0, 2, CONV_OP_BACKWARD_DATA, CONV_MATH_DEFAULT},
        {1, 64, 64, 8, 1, 0, 1, CONV_OP_FORWARD, CONV_MATH_DEFAULT},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec5c);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].hw, cases[i].hw + 1}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
        }
        tp.p.channels_last = cases[i].last;
        tp.bias = cases[i].op == CONV_OP_FORWARD;
        for (int again = 0; again < 2; again++)
            check_exact(ctx, &tp, (conv_op_t)cases[i].op, cases[i].threads, cases[i].math, (int)((i + again) % 2), &r);
    }
    conv_context_destroy(ctx);
}

/* Work items whose packed vectors outgrow an L2 share pack and run them a
 * range of source channels at a time (item_ranges), their sums carried
 * between ranges: forward from 1000 channels (2-D, strided, channels-last),
 * 3-D from 300, and backward-data from 1000 dy channels (a filter under
 * source-major's 4 MB), either math mode, 1 and 2 threads, exact
 * workspaces against guard pages. */
static void test_item_ranges(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int spatial;
        int64_t n, c, k, hw, stride;
        int last, threads, op;
        conv_math_t math;
    } cases[] = {
        {2, 1, 1000, 130, 5, 1, 0, 1, CONV_OP_FORWARD, CONV_MATH_STRICT},
        {2, 2, 1000, 140, 7, 2, 0, 1, CONV_OP_FORWARD, CONV_MATH_DEFAULT},
        {2, 1, 1000, 260, 4, 1, 1, 2, CONV_OP_FORWARD, CONV_MATH_STRICT},
        {3, 1, 300, 140, 4, 1, 0, 1, CONV_OP_FORWARD, CONV_MATH_DEFAULT},
        {2, 1, 100, 1000, 5, 1, 0, 1, CONV_OP_BACKWARD_DATA, CONV_MATH_STRICT},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec5b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int sp = cases[i].spatial;
        int64_t in[3] = {2, cases[i].hw, cases[i].hw + 1}, kernel[3] = {3, 3, 3};
        tu_problem tp;
        tu_problem_init(&tp, sp, cases[i].n, cases[i].c, cases[i].k, sp == 3 ? in : in + 1, kernel);
        for (int a = 0; a < sp; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
        }
        tp.p.channels_last = cases[i].last;
        tp.bias = cases[i].op == CONV_OP_FORWARD;
        check_exact(ctx, &tp, (conv_op_t)cases[i].op, cases[i].threads, cases[i].math, (int)(i % 2), &r);
    }
    conv_context_destroy(ctx);
}

/* Channels-last backward-filter whose items take whole channels (columns
 * ordered channel by channel, each tap's run of an item's channels stored
 * into dw's (tap, channel) row apart): channel counts with a partial last
 * block of 16, groups, strides, 1-3 filter vectors, 1 and 2 threads,
 * either math mode; kernels whose taps keep the tap-major order (5x5,
 * 3x3x3); and few filters (16-64, groups of 16 and 32), whose dy the tiles
 * read where it lies. Exact workspaces against guard pages before and
 * after. */
static void test_filter_channel_columns(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int spatial;
        int64_t n, c, k, groups, hw, kernel, stride;
        int threads;
        conv_math_t math;
    } cases[] = {
        {2, 1, 40, 20, 1, 9, 3, 1, 1, CONV_MATH_STRICT},  {2, 2, 100, 70, 1, 8, 3, 1, 2, CONV_MATH_DEFAULT},
        {2, 1, 96, 40, 2, 7, 3, 2, 1, CONV_MATH_DEFAULT}, {2, 1, 72, 33, 1, 10, 3, 1, 2, CONV_MATH_STRICT},
        {2, 1, 64, 48, 1, 6, 5, 1, 1, CONV_MATH_STRICT},  {3, 1, 40, 24, 1, 4, 3, 1, 2, CONV_MATH_DEFAULT},
        /* dy read in place (whole vectors of at most 64 filters): */
        {2, 2, 3, 32, 1, 15, 3, 2, 1, CONV_MATH_STRICT},  {2, 1, 1, 16, 1, 9, 3, 1, 2, CONV_MATH_DEFAULT},
        {2, 1, 12, 64, 2, 10, 3, 1, 2, CONV_MATH_STRICT}, {2, 3, 8, 48, 1, 7, 5, 1, 1, CONV_MATH_DEFAULT},
        {3, 1, 4, 32, 1, 5, 3, 1, 1, CONV_MATH_STRICT},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec77);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int sp = cases[i].spatial;
        int64_t in[3] = {3, cases[i].hw, cases[i].hw + 1}, kernel[3];
        for (int a = 0; a < 3; a++)
            kernel[a] = cases[i].kernel;
        tu_problem tp;
        tu_problem_init(&tp, sp, cases[i].n, cases[i].c, cases[i].k, sp == 3 ? in : in + 1, kernel);
        tp.p.groups = cases[i].groups;
        for (int a = 0; a < sp; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].kernel / 2;
        }
        tp.p.channels_last = 1;
        tp.bias = i % 2 == 0;
        check_exact(ctx, &tp, CONV_OP_BACKWARD_FILTER, cases[i].threads, cases[i].math, (int)(i % 2), &r);
    }
    conv_context_destroy(ctx);
}

/* Backward-filter's tiles as wide as make the columns (source channel,
 * tap) whole tiles, a thread's share of them where the threads split the
 * columns (balanced_columns): 3 channels x 9 taps onto 17-32 filters as 3
 * tiles of 9 on one thread and 4 of 7 on two (not 12 + 12 + 3), 1 x 9 as
 * one of 9, 3 x 9 onto 16 as 14 + 13, 3 x 49 onto 64 (7x7, stride 2) as 6s,
 * 5 x 9 onto 48 as 8s; both layouts, 1 and 2 threads, exact workspaces
 * against guard pages. ctest runs it with generated tiles and again with
 * the compiled ones. */
static void test_filter_balanced_columns(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, c, k, hw, kernel, stride;
    } cases[] = {
        {1, 3, 32, 30, 3, 2}, {2, 3, 20, 11, 3, 1}, {1, 1, 32, 12, 3, 1},
        {1, 3, 16, 13, 3, 1}, {1, 3, 64, 23, 7, 2}, {2, 5, 48, 9, 3, 1},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec99);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int last = 0; last < 2; last++) {
            int64_t in[2] = {cases[i].hw, cases[i].hw + 1}, kernel[2] = {cases[i].kernel, cases[i].kernel};
            tu_problem tp;
            tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
            for (int a = 0; a < 2; a++) {
                tp.p.stride[a] = cases[i].stride;
                tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].kernel / 2;
            }
            tp.p.channels_last = last;
            tp.bias = last;
            for (int threads = 1; threads <= 2; threads++)
                check_exact(ctx, &tp, CONV_OP_BACKWARD_FILTER, threads, i % 3 ? CONV_MATH_DEFAULT : CONV_MATH_STRICT,
                            last, &r);
        }
    conv_context_destroy(ctx);
}

/* Backward-filter's windows: channels-first columns in blocks of a tile's
 * channels, the taps outside, so that each tile sums only the positions
 * where its tap reads x -- items of whole blocks (64->64 8x8), blocks
 * shared by items on one thread (16->16 32x32; at 2 threads the (channel,
 * tap) order), padding past the kernel (taps that read only padding),
 * asymmetric padding, dilation, stride 2; and x padded a block of images
 * at a time by the plan's shape, a part's last block of fewer images
 * (96->32 8x8 over 9 images). The tensors and exact workspaces against
 * guard pages, 1 and 2 threads, both math modes. */
static void test_filter_windows(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    const struct {
        int64_t n, c, k, hw, kernel, stride, dilation, pad_begin, pad_end;
    } cases[] = {
        {1, 64, 64, 8, 3, 1, 1, 1, 1},  {2, 16, 16, 32, 3, 1, 1, 1, 1}, {9, 96, 32, 8, 3, 1, 1, 1, 1},
        {1, 24, 32, 6, 3, 1, 1, 4, 4},  {2, 20, 40, 9, 5, 1, 1, 3, 0},  {1, 32, 16, 12, 3, 2, 1, 1, 2},
        {1, 18, 48, 11, 3, 1, 2, 2, 1},
    };
    tu_rng r;
    tu_seed(&r, 0xd1eca1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].hw, cases[i].hw + 1}, kernel[2] = {cases[i].kernel, cases[i].kernel};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.p.dilation[a] = cases[i].dilation;
            tp.desc_pad_begin[a] = cases[i].pad_begin;
            tp.desc_pad_end[a] = cases[i].pad_end;
        }
        tp.bias = i % 2;
        for (int threads = 1; threads <= 2; threads++)
            check_exact_with(ctx, &tp, CONV_OP_BACKWARD_FILTER, threads,
                             (i + threads) % 2 ? CONV_MATH_DEFAULT : CONV_MATH_STRICT, threads == 2, TU_RUN_WRAP, &r);
    }
    conv_context_destroy(ctx);
}

/* ---------------------------------------------------- prepared weights */

/* A plan with prepared weights gives the one-shot result, keeps using them
 * after w changes (stale, by the documented rule) until prepared again, and
 * reads w again once released: forward and backward-data, both layouts. */
static void test_prepared_weights(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_ok(conv_context_set_threads(ctx, 2));
    tu_rng r;
    tu_seed(&r, 0xd1ec77);
    for (int last = 0; last < 2; last++)
        for (int op = CONV_OP_FORWARD; op <= CONV_OP_BACKWARD_DATA; op++) {
            int64_t in[2] = {9, 10}, kernel[2] = {3, 3};
            tu_problem tp;
            tu_problem_init(&tp, 2, 2, 20, 37, in, kernel);
            for (int a = 0; a < 2; a++)
                tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
            tp.p.channels_last = last;
            tp.bias = op == CONV_OP_FORWARD;
            tp.algo = direct();
            assert_true(tu_resolve(&tp));
            tu_check_prepared_weights(ctx, &tp, (conv_op_t)op, &r, "direct_avx512", 1);
        }
    conv_context_destroy(ctx);
}

/* Backward-data at strides past 3 along the width (4, 5, 7, 16, 17): each
 * of dx's column phases leaves through stores that spread its positions over
 * every stride-th lane (one position a store past 16). */
static void test_wide_strides(void **state)
{
    (void)state;
    static const int64_t strides[] = {4, 5, 7, 16, 17};
    uint64_t first = tu_env_seed(4600);
    int n = tu_env_count(15);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t sw = strides[i % 5];
        int64_t in[2] = {tu_range(&r, 2, 9), tu_range(&r, 2 * sw, 40 + 2 * sw)};
        int64_t kernel[2] = {tu_range(&r, 1, 3), tu_range(&r, 1, sw + 2)};
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), tu_range(&r, 1, 40), tu_range(&r, 1, 40), in, kernel);
        tp.p.stride[0] = tu_range(&r, 1, 2);
        tp.p.stride[1] = sw;
        tp.p.channels_last = tu_chance(&r, 30);
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_DATA, &r, 0);
    }
}

/* Batches larger than one block of images (backward-filter lays x and dy
 * out a block that stays in L2 at a time, the items' sums carried between
 * blocks) and batches the threads take a whole image at a time (forward
 * and backward-data pad each image into the thread's slot; unpadded
 * channels-first forward reads x in place). */
static void test_image_blocks(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(4700);
    int n = tu_env_count(18);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t hw = tu_range(&r, 28, 40), kernel[2] = {3, 3}, in[2] = {hw, hw};
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 6, 9), tu_range(&r, 12, 24), tu_range(&r, 12, 40), in, kernel);
        for (int a = 0; a < 2; a++)
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = i % 3 == 0 ? 0 : 1;
        tp.p.channels_last = i % 3 == 2;
        tp.bias = tu_chance(&r, 50);
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        const conv_op_t op = (conv_op_t)(CONV_OP_FORWARD + (i / 3) % 3);
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, i % 2);
    }
}

/* Backward-filter on images whose x and dy outgrow a block (512 KiB) and
 * whose filter vectors one item each reads (1 thread, dy past 1 MiB): each
 * item lays out dy chunk by chunk into the thread's buffer (conv1-like
 * layers: few source channels, large planes, 3x3 and 7x7, strided, both
 * layouts), strict and not; then on 2 threads. One filter block on 64+
 * rows: the rows in 4 parts, an item each, their sums added at the end. */
static void test_filter_chunks(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(4900);
    int n = tu_env_count(6);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        const int64_t k = i % 2 ? 7 : 3, stride = i % 3 == 0 ? 2 : 1, side = stride == 2 ? 230 : 110;
        int64_t in[2] = {tu_range(&r, side, side + 20), tu_range(&r, side, side + 20)}, kernel[2] = {k, k};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1, tu_range(&r, 1, 4), tu_range(&r, 17, 40), in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = k / 2;
        }
        tp.p.channels_last = i / 2 % 2;
        tp.bias = tu_chance(&r, 50);
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        for (int t = 0; t < 2; t++) {
            char what[640], failure[1536];
            tu_describe(&tp, what, sizeof what);
            if (tu_run_checked(tu_contexts[t], NULL, &tp, CONV_OP_BACKWARD_FILTER, &r, i % 2, TU_RUN_GUARD_AFTER, what,
                               failure, sizeof failure))
                fail_msg("seed %llu, %d thread(s): %s", (unsigned long long)seed, t + 1, failure);
        }
    }
}

/* The source copy's rows of up to 16 padded columns (one expanding load a
 * row) and its stride-2 rows, all three passes, each run twice with the
 * tensors wrapping caller memory against a guard page (tu_run_checked's
 * TU_RUN_GUARD_AFTER, then _BEFORE) on an exact workspace, checked against
 * the reference. */
static void test_copy_at_page_edges(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(4900);
    int n = tu_env_count(24);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 1, 9), tu_range(&r, 1, 14)}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), tu_range(&r, 1, 20), tu_range(&r, 16, 24), in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = i % 3 == 2 ? 2 : 1;
            tp.desc_pad_begin[a] = tu_range(&r, 0, 2);
            tp.desc_pad_end[a] = tu_range(&r, 0, 2);
        }
        tp.algo = direct();
        if (!tu_resolve(&tp))
            continue;
        const conv_op_t op = (conv_op_t)(CONV_OP_FORWARD + i % 3);
        for (int side = 0; side < 2; side++) {
            char what[64], failure[1024];
            snprintf(what, sizeof what, "seed %llu, %s", (unsigned long long)seed,
                     side ? "guard before" : "guard after");
            const int flags = TU_RUN_WRAP | TU_RUN_EXACT_WORKSPACE |
                              (side ? TU_RUN_GUARD_BEFORE : TU_RUN_GUARD_AFTER);
            if (tu_run_checked(tu_contexts[i % 2], NULL, &tp, op, &r, 0, flags, what, failure,
                               sizeof failure))
                fail_msg("%s", failure);
        }
    }
}

/* Channels-first sources past 2 MiB (one padded image): on AVX-512 the
 * generated tiles read them in place, their next rows asked into L2 from
 * the source's own rows rather than a padded copy. Forward at strides 1
 * and 2 and backward-data at both (dy the source), 1 and 2 threads, each
 * against a guard page after and before, on an exact workspace, checked
 * against the reference. */
static void test_large_source_in_place(void **state)
{
    (void)state;
    static const struct {
        int64_t c, k, h, w, stride;
        conv_op_t op;
    } cases[] = {{32, 32, 128, 128, 1, CONV_OP_FORWARD},       {32, 24, 130, 127, 2, CONV_OP_FORWARD},
                 {32, 32, 128, 128, 1, CONV_OP_BACKWARD_DATA}, {16, 64, 256, 256, 2, CONV_OP_BACKWARD_DATA}};
    tu_rng r;
    tu_seed(&r, 6100);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
        }
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        for (int side = 0; side < 2; side++) {
            char what[96], failure[1024];
            snprintf(what, sizeof what, "case %zu, %s", i, side ? "guard before" : "guard after");
            const int flags = TU_RUN_WRAP | TU_RUN_EXACT_WORKSPACE |
                              (side ? TU_RUN_GUARD_BEFORE : TU_RUN_GUARD_AFTER);
            if (tu_run_checked(tu_contexts[(i + side) % 2], NULL, &tp, cases[i].op, &r, 0, flags, what, failure,
                               sizeof failure))
                fail_msg("%s", failure);
        }
    }
}

/* Forward and backward-data onto at most 8 channels at stride 1
 * (direct_narrow_avx512.cpp, positions in the vector, windows masked where
 * they overhang the source): 1-D and 2-D, kernels 1-7 and asymmetric
 * padding up to the kernel's size (so rows and columns that no window
 * reaches), planes narrower and wider than a vector (forward takes it where
 * the rows fill 3/4 of their vectors, the tiles elsewhere), row counts
 * around its blocks of 3-8 rows, 1-70 source channels (so several blocks
 * of 32 summed apart), bias and ReLU, threads 1-3 and guard pages. */
static void test_narrow_destination(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5300);
    int n = tu_env_count(80);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        const conv_op_t op = i % 2 ? CONV_OP_BACKWARD_DATA : CONV_OP_FORWARD;
        int spatial = tu_chance(&r, 20) ? 1 : 2;
        int64_t in[2], kernel[2];
        for (int a = 0; a < spatial; a++) {
            kernel[a] = tu_range(&r, 1, 7);
            in[a] = a == spatial - 1 ? tu_range(&r, 1, 40) : tu_range(&r, 1, 20);
        }
        int64_t few = tu_range(&r, 1, 8), many = tu_chance(&r, 30) ? tu_range(&r, 33, 70) : tu_range(&r, 1, 32);
        tu_problem tp;
        tu_problem_init(&tp, spatial, tu_range(&r, 1, 3), op == CONV_OP_FORWARD ? many : few,
                        op == CONV_OP_FORWARD ? few : many, in, kernel);
        for (int a = 0; a < spatial; a++) {
            tp.desc_pad_begin[a] = tu_range(&r, 0, kernel[a]);
            tp.desc_pad_end[a] = tu_range(&r, 0, kernel[a]);
        }
        tp.bias = op == CONV_OP_FORWARD && tu_chance(&r, 50);
        tp.p.relu = op == CONV_OP_FORWARD && tu_chance(&r, 30);
        tp.algo = direct();
        if (!tu_resolve(&tp)) continue; /* no output (padding too small for the window) */
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, i % 4 < 2);
    }
}

/* The same kernel's row blocks where the window overhangs the source's top
 * or bottom (the generated blocks are made for the rows of their window
 * that lie in the source, the first and last three row blocks' and one
 * inside; any other block that overhangs runs the compiled code): row
 * padding of 8-14, so that four or more blocks overhang at one end, and
 * planes of 1-6 rows under 3-5-row windows, whose blocks overhang at both
 * ends; forward onto and backward-data from 1-8 channels, 1-40 on the
 * other side, bias and ReLU, threads 1-3 and guard pages. */
static void test_narrow_deep_padding(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5350);
    int n = tu_env_count(24);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        const conv_op_t op = i % 2 ? CONV_OP_BACKWARD_DATA : CONV_OP_FORWARD;
        const int deep = i % 4 < 2;
        int64_t kernel[2] = {tu_range(&r, deep ? 1 : 3, 5), tu_range(&r, 1, 5)};
        int64_t in[2] = {deep ? tu_range(&r, 1, 30) : tu_range(&r, 1, 6), tu_range(&r, 16, 40)};
        const int64_t few = tu_range(&r, 1, 8), many = tu_range(&r, 1, 40);
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), op == CONV_OP_FORWARD ? many : few,
                        op == CONV_OP_FORWARD ? few : many, in, kernel);
        tp.desc_pad_begin[0] = deep ? tu_range(&r, 8, 14) : tu_range(&r, 0, kernel[0] - 1);
        tp.desc_pad_end[0] = deep ? tu_range(&r, 8, 14) : tu_range(&r, 0, kernel[0] - 1);
        tp.desc_pad_begin[1] = tu_range(&r, 0, kernel[1] - 1);
        tp.desc_pad_end[1] = tu_range(&r, 0, kernel[1] - 1);
        tp.bias = op == CONV_OP_FORWARD && tu_chance(&r, 50);
        tp.p.relu = op == CONV_OP_FORWARD && tu_chance(&r, 30);
        tp.algo = direct();
        if (!tu_resolve(&tp)) continue;
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, i % 4 == 1);
    }
}

/* Forward from 2-4 source channels onto 9-64 (direct_narrow_avx512.cpp's
 * blocks of 8 destination channels, the last one partial), kernels 1-5,
 * asymmetric padding, planes whose rows fill a vector or spill into a
 * second, bias and ReLU, threads 1-3 and guard pages. */
static void test_narrow_few_sources(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5400);
    int n = tu_env_count(40);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t kernel[2] = {tu_range(&r, 1, 5), tu_range(&r, 1, 5)};
        int64_t in[2] = {tu_range(&r, 1, 20), tu_chance(&r, 50) ? tu_range(&r, 12, 16) : tu_range(&r, 24, 40)};
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 3), tu_range(&r, 2, 4), tu_range(&r, 9, 64), in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.desc_pad_begin[a] = tu_range(&r, 0, kernel[a] - 1);
            tp.desc_pad_end[a] = tu_range(&r, 0, kernel[a] - 1);
        }
        tp.bias = tu_chance(&r, 50);
        tp.p.relu = tu_chance(&r, 30);
        tp.algo = direct();
        if (!tu_resolve(&tp)) continue;
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_FORWARD, &r, i % 4 < 2);
    }
}

/* Forward from 2-4 source channels through a 3x3 window onto destination
 * rows of whole vectors (3-6), the planes past L2 that the kernel takes
 * there too (VGG-16's 3->64 224x224 in small): the blocks of 8 channels on
 * the window's unrolled taps, with and without rows that overhang the
 * source (asymmetric padding 0-2), the last blocks of 1-2 rows, 9-64
 * destination channels, bias and ReLU, threads 1-3 and guard pages. */
static void test_narrow_few_sources_3x3(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5450);
    int n = tu_env_count(16);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t pad[2][2], kernel[2] = {3, 3}, in[2];
        for (int a = 0; a < 2; a++) pad[a][0] = tu_range(&r, 0, 2), pad[a][1] = tu_range(&r, 0, 2);
        in[0] = tu_range(&r, 20, 70);
        in[1] = 16 * tu_range(&r, 3, 6) + 2 - pad[1][0] - pad[1][1]; /* the destination's rows: whole vectors */
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), tu_range(&r, 2, 4), tu_range(&r, 9, 64), in, kernel);
        for (int a = 0; a < 2; a++) tp.desc_pad_begin[a] = pad[a][0], tp.desc_pad_end[a] = pad[a][1];
        tp.bias = tu_chance(&r, 50);
        tp.p.relu = tu_chance(&r, 30);
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_FORWARD, &r, i % 4 < 2);
    }
}

/* The same kernel on source images whose padded copy outgrows a band
 * (1 MiB on AVX2: each work item then pads and computes a band of the
 * destination's rows, one image at a time too) and at batch 1-2 with 2-3
 * threads (four bands a thread): forward onto and backward-data from 1-8
 * channels out of 40-64, 3x3 and 5x5 windows, planes of 70-110 rows, so
 * the bands' edges fall inside the blocks' rows and the windows of a
 * band's last rows reach into the next band's source. */
static void test_narrow_bands(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5500);
    int n = tu_env_count(8);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        const conv_op_t op = i % 2 ? CONV_OP_BACKWARD_DATA : CONV_OP_FORWARD;
        const int64_t k = i % 4 < 2 ? 3 : 5;
        int64_t kernel[2] = {k, k}, in[2] = {tu_range(&r, 70, 110), tu_range(&r, 50, 80)};
        const int64_t few = tu_range(&r, 1, 8), many = tu_range(&r, 40, 64);
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), op == CONV_OP_FORWARD ? many : few,
                        op == CONV_OP_FORWARD ? few : many, in, kernel);
        for (int a = 0; a < 2; a++) tp.desc_pad_begin[a] = tp.desc_pad_end[a] = tu_range(&r, 0, k / 2);
        tp.bias = op == CONV_OP_FORWARD && tu_chance(&r, 50);
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, i % 3 == 0);
    }
}

/* The same kernel onto outputs of 8 MiB or more whose rows are whole
 * lines (AVX-512: each line one vector stored non-temporally, the stores
 * fenced before each work item counts as done): MobileNet's conv1 (3->32
 * 3x3 s2 onto 112x112, batch 6) with bias and ReLU, 2->40 5x5 s2 onto
 * 128x128; rows of 100 columns (not whole lines) store as before. 1-3
 * threads, the output against a guard page before or after, every element
 * checked. */
static void test_few_sources_streamed(void **state)
{
    (void)state;
    static const struct {
        int64_t h, c, k, n, kernel;
        int bias;
    } cases[] = {{224, 3, 32, 6, 3, 1}, {256, 2, 40, 4, 5, 0}, {200, 3, 32, 8, 3, 1}};
    tu_rng r;
    tu_seed(&r, 5601);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].h}, kernel[2] = {cases[i].kernel, cases[i].kernel};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = 2;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].kernel / 2;
        }
        tp.bias = cases[i].bias;
        tp.p.relu = cases[i].bias;
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        char what[160];
        snprintf(what, sizeof what, "%lld->%lld %lldx%lld s2 onto %lld columns, batch %lld%s", (long long)cases[i].c,
                 (long long)cases[i].k, (long long)cases[i].kernel, (long long)cases[i].kernel,
                 (long long)tp.p.out[1], (long long)cases[i].n, cases[i].bias ? " bias relu" : "");
        tu_check_guarded_threads(&tp, CONV_OP_FORWARD, &r, 1, what);
    }
}

/* Forward from 1-4 source channels at column stride 2 with AVX2 and AVX-512
 * (direct_few_sources.cpp: positions in the vector, source rows split
 * into their two column phases a band of 8 output rows at a time): kernels
 * 1-9 high and 1-17 wide (3, 5 and 7 wide with constant taps; 17 past what
 * it takes), row strides 1-3, asymmetric padding up to 3 past the kernel's
 * size (windows that overhang both ends of a row, rows and columns no
 * window reaches), output rows narrower and
 * wider than a vector and 16 + a few, filters 1-70 (groups of up to 6, 12
 * on AVX-512, as even as they come), bias and ReLU, several bands, threads
 * 1-3 and guard pages. AVX-512 takes output rows of 32+ columns (or fewer
 * than 16 filters), the channel-vector tiles the rest. */
static void test_few_sources_stride2(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5600);
    int n = tu_env_count(60);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        /* Each draw its own statement: the order of a call's arguments is unspecified. */
        int64_t kernel[2], in[2];
        kernel[0] = tu_range(&r, 1, 9);
        kernel[1] = i % 4 == 0 ? tu_range(&r, 1, 17) : 3 + 2 * tu_range(&r, 0, 2);
        in[0] = tu_range(&r, 1, 40);
        in[1] = tu_chance(&r, 30) ? tu_range(&r, 1, 20) : tu_range(&r, 28, 80);
        const int64_t images = tu_range(&r, 1, 3), sources = tu_range(&r, 1, 4);
        const int64_t filters = tu_chance(&r, 20) ? tu_range(&r, 1, 15) : tu_range(&r, 16, 70);
        tu_problem tp;
        tu_problem_init(&tp, 2, images, sources, filters, in, kernel);
        tp.p.stride[0] = tu_range(&r, 1, 3);
        tp.p.stride[1] = 2;
        for (int a = 0; a < 2; a++) {
            tp.desc_pad_begin[a] = tu_range(&r, 0, kernel[a] + 3);
            tp.desc_pad_end[a] = tu_range(&r, 0, kernel[a] + 3);
        }
        tp.bias = tu_chance(&r, 50);
        tp.p.relu = tu_chance(&r, 30);
        tp.algo = direct();
        if (!tu_resolve(&tp)) continue;
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_FORWARD, &r, i % 4 < 2);
    }
}

/* Backward-filter from 1-4 channels as dot products along the positions
 * (direct_dot_filter.cpp): row strides 1-3 (one run a band, or a run a
 * row), column strides 1 and 2 (x's column phases), dilation, padding up
 * to 3 past the kernel (rows and columns that read only padding), planes
 * from 1x1 to 70x70 (several bands of rows; small planes several images a
 * band), 1-70 filters (threads sharing the filters or the columns), 1-6
 * images (from 4 onto few filters the images in two parts added at the
 * end), bias; each against the reference on 1-3 threads, exact workspaces
 * against guard pages, and every tenth with the same bits on 1, 2 and 3
 * threads. */
static void test_dot_filter(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(5900);
    int n = tu_env_count(60);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        /* Each draw its own statement: the order of a call's arguments is unspecified. */
        int64_t kernel[2], in[2];
        kernel[0] = tu_range(&r, 1, 7);
        kernel[1] = tu_range(&r, 2, 7);
        in[0] = i % 5 == 0 ? tu_range(&r, 40, 70) : tu_range(&r, 1, 24);
        in[1] = i % 5 == 0 ? tu_range(&r, 40, 70) : tu_range(&r, 1, 40);
        const int64_t images = tu_chance(&r, 30) ? tu_range(&r, 4, 6) : tu_range(&r, 1, 3);
        const int64_t sources = tu_range(&r, 1, 4);
        const int64_t filters = tu_chance(&r, 50) ? tu_range(&r, 1, 15) : tu_range(&r, 16, 70);
        tu_problem tp;
        tu_problem_init(&tp, 2, images, sources, filters, in, kernel);
        tp.p.stride[0] = tu_range(&r, 1, 3);
        tp.p.stride[1] = tu_chance(&r, 30) ? 2 : 1;
        for (int a = 0; a < 2; a++) {
            tp.p.dilation[a] = tu_chance(&r, 25) ? 2 : 1;
            tp.desc_pad_begin[a] = tu_range(&r, 0, kernel[a] + 3);
            tp.desc_pad_end[a] = tu_range(&r, 0, kernel[a] + 3);
        }
        tp.bias = tu_chance(&r, 50);
        tp.algo = direct();
        if (!tu_resolve(&tp)) continue;
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_FILTER, &r, i % 4 < 2);
        if (i % 10 == 0) tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_FILTER, seed, "dot filter");
    }
}

/* Backward-filter onto small filters over a batch (dw up to 256 KiB): the
 * batch split into 2 or 4 parts of images, each part's sums into its own
 * copy of dw, the copies added up a tree of pairs. Batches 2-9 (parts of
 * unequal sizes), both layouts, either math mode, bias; images that fill a
 * block alone (a part of several blocks) and conv1-like rows split into
 * parts within a part. Each on 1-3 threads against the reference on an
 * exact workspace with a guard page, and with the same bits on 1, 2 and 3
 * threads (the parts depend on the geometry only). */
static void test_filter_image_parts(void **state)
{
    (void)state;
    const struct {
        int64_t n, c, k, h, w, kernel, stride, pad;
        int last;
        conv_math_t math;
    } cases[] = {
        {2, 1, 16, 8, 8, 3, 1, 1, 0, CONV_MATH_STRICT},     {3, 16, 32, 6, 7, 3, 1, 1, 0, CONV_MATH_DEFAULT},
        {5, 3, 16, 9, 9, 3, 2, 1, 0, CONV_MATH_STRICT},     {7, 6, 16, 10, 10, 5, 1, 0, 1, CONV_MATH_DEFAULT},
        {9, 20, 40, 5, 6, 3, 1, 1, 1, CONV_MATH_STRICT},    {4, 32, 70, 7, 5, 3, 1, 1, 0, CONV_MATH_DEFAULT},
        {5, 16, 16, 64, 64, 3, 1, 1, 0, CONV_MATH_STRICT},  {2, 3, 16, 66, 64, 3, 1, 1, 0, CONV_MATH_STRICT},
        {6, 1, 32, 28, 28, 3, 1, 0, 1, CONV_MATH_STRICT},
    };
    tu_rng r;
    tu_seed(&r, 0xd1ec99);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {cases[i].kernel, cases[i].kernel};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].stride;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = cases[i].pad;
        }
        tp.p.channels_last = cases[i].last;
        tp.bias = i % 2 == 0;
        tp.algo = direct();
        assert_true(tu_resolve(&tp));
        tu_check_case_by_threads(&tp, CONV_OP_BACKWARD_FILTER, cases[i].math, &r, 0xd1ec99 + i, i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact), cmocka_unit_test(test_wide_exact),
        cmocka_unit_test(test_real),        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_layers),      cmocka_unit_test(test_prepared_weights),
        cmocka_unit_test(test_wide_strides),
        cmocka_unit_test(test_image_blocks), cmocka_unit_test(test_narrow_destination),
        cmocka_unit_test(test_narrow_deep_padding),
        cmocka_unit_test(test_narrow_few_sources), cmocka_unit_test(test_narrow_few_sources_3x3),
        cmocka_unit_test(test_narrow_bands),
        cmocka_unit_test(test_few_sources_stride2), cmocka_unit_test(test_few_sources_streamed),
        cmocka_unit_test(test_copy_at_page_edges), cmocka_unit_test(test_large_source_in_place),
        cmocka_unit_test(test_filter_chunks),
        cmocka_unit_test(test_filter_channel_columns), cmocka_unit_test(test_filter_balanced_columns),
        cmocka_unit_test(test_filter_windows), cmocka_unit_test(test_dot_filter),
        cmocka_unit_test(test_source_major), cmocka_unit_test(test_item_ranges),
        cmocka_unit_test(test_many_taps_3d),
        cmocka_unit_test(test_thread_copies), cmocka_unit_test(test_filter_image_parts),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
