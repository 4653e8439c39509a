/*
 * test_depthwise.c -- CONV_ALGO_DEPTHWISE_DIRECT against the naive reference
 * on many depthwise problems shaped to reach every branch of its kernels
 * (the AVX-512 ones and the portable ones, which this test also runs under
 * CONV_CPU_ISA=baseline): channel multipliers 1..9, widths around the
 * 16-lane vector (1, 3, 15, 16, 17, 33, ...), planes smaller than the
 * window, stride 1 and 2 (and 3), asymmetric padding 0..4 (so also wider
 * than the window), dilation, bias and ReLU, both layouts, 1-3 spatial
 * dims, batch 1..3, all three passes,
 * 1-3 threads, and workspaces of exactly the size the library asks for;
 * backward-filter's sums do not depend on the thread count.
 *
 * Integer data in [-3, 3] makes every sum exact in fp32, so most checks
 * are exact; some problems use real data within a rounding tolerance.
 * A failure prints its seed; CONV_TEST_SEED=<seed> CONV_TEST_COUNT=1 reruns it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

/* Widths that straddle the kernels' 16-lane vectors and 8-pixel blocks. */
static int64_t random_width(tu_rng *r)
{
    static const int64_t widths[] = {1, 2, 3, 4, 7, 8, 9, 14, 15, 16, 17, 18, 31, 32, 33, 47, 57};
    if (tu_chance(r, 70))
        return widths[tu_range(r, 0, (int64_t)(sizeof widths / sizeof widths[0]) - 1)];
    return tu_range(r, 1, 40);
}

/* A depthwise problem; `fast` biases it towards what the vector kernels
 * cover (2-D, 3x3, stride 1 or 2, no dilation, multiplier 1); `many`
 * draws 128-300 channels (channels-last, the ring kernels' range) on
 * planes of at most 12 rows. */
static void random_depthwise(tu_rng *r, tu_problem *tp, int fast, int many)
{
    for (;;) {
        int spatial = fast || tu_chance(r, 70) ? 2 : tu_chance(r, 50) ? 1 : 3;
        int64_t in[3], kernel[3];
        for (int a = 0; a < spatial; a++) {
            in[a] = a == spatial - 1 ? random_width(r)
                                     : tu_range(r, 1, spatial == 3 ? 6 : many ? 12 : 20);
            kernel[a] = fast || tu_chance(r, 60) ? 3 : tu_range(r, 1, spatial == 3 ? 3 : 5);
        }
        int64_t c = many ? tu_range(r, 128, 300) : tu_chance(r, 30) ? tu_range(r, 1, 40) : tu_range(r, 1, 6);
        int64_t m = many || (fast && tu_chance(r, 60)) ? 1
                    : tu_chance(r, 25)                 ? tu_range(r, 4, 9)
                                                       : tu_range(r, 1, 3);
        tu_problem_init(tp, spatial, tu_range(r, 1, 3), c, c * m, in, kernel);
        tp->p.groups = c;
        tp->p.channels_last = many ? !tu_chance(r, 20) : tu_chance(r, 50);
        tp->dtype = tu_chance(r, 80) ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64;
        tp->bias = tu_chance(r, 50);
        tp->p.relu = tu_chance(r, 30);
        int64_t stride = tu_chance(r, 10) ? 3 : tu_range(r, 1, 2);
        for (int a = 0; a < spatial; a++) {
            tp->p.stride[a] = fast ? stride : tu_range(r, 1, 3);
            tp->p.dilation[a] = fast || tu_chance(r, 75) ? 1 : 2;
            /* Mostly 0..2; sometimes wider than the window (an output
             * row or column that reads only padding). */
            int64_t most = tu_chance(r, 15) ? 4 : 2;
            tp->desc_pad_begin[a] = tu_range(r, 0, most);
            tp->desc_pad_end[a] = tu_range(r, 0, most);
        }
        tp->algo = CONV_ALGO_DEPTHWISE_DIRECT;
        if (tu_resolve(tp))
            return;
    }
}

static void run_many(uint64_t base, int problems, int fast, int many, int real)
{
    uint64_t first = tu_env_seed(base);
    int n = tu_env_count(problems);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        tu_problem tp;
        random_depthwise(&r, &tp, fast, many);
        for (int op = 0; op < 3; op++)
            tu_check_random_pass(tu_contexts, seed, &tp, (conv_op_t)op, &r, real);
    }
}

/* The shapes the vector kernels are built for, exact. */
static void test_vector_shapes_exact(void **state)
{
    (void)state;
    run_many(1000, 600, 1, 0, 0);
}

/* Many channels (the channels-last ring kernels: groups of channel blocks,
 * a tail block, bands of rows, zero rows and columns), exact. */
static void test_many_channels_exact(void **state)
{
    (void)state;
    run_many(4000, 120, 1, 1, 0);
}

/* Any depthwise geometry (the portable path and the vector kernels' edges). */
static void test_any_shape_exact(void **state)
{
    (void)state;
    run_many(2000, 400, 0, 0, 0);
}

static void test_real_data(void **state)
{
    (void)state;
    run_many(3000, 150, 1, 0, 1);
}

/* MobileNet-like layers: wide planes and many channels (several row blocks,
 * several vectors per row, rows wide enough for the unmasked vectors at
 * stride 2, channel tails; channels-last rows of 16+ pixels swept a pixel
 * block through all channels; tensors past 4 MiB). */
static void test_mobilenet_like(void **state)
{
    (void)state;
    static const struct {
        int64_t c, hw, stride;
    } layers[] = {{32, 56, 1}, {24, 57, 2}, {48, 28, 1}, {40, 29, 2}, {72, 14, 1}, {136, 7, 1},
                  {33, 14, 2}, {6, 112, 2}, {5, 75, 2}, {4, 100, 1}, {512, 14, 1}, {520, 14, 2},
                  {1024, 7, 1}, {256, 28, 2}, {128, 57, 2}, {264, 15, 1},
                  /* the AVX-512 row kernels' fixed planes (fixed_plane) with a
                   * channel left without its pair, or a part of a block */
                  {9, 7, 1}, {17, 56, 2}, {21, 28, 1},
                  /* channels-last stride-2 backward-data of 64-127 channels past L2 and
                   * past the ring's 8 MiB (2 images): the in-place kernel's pixel blocks */
                  {70, 125, 2},
                  /* AVX2 channels-first inputs past 4 MiB on planes wider than 64: the
                   * 8-channel blocks, not the in-place plane sweeps */
                  {132, 100, 1}, {136, 90, 2},
                  /* and past 4 MiB on planes up to 32 (64 for stride-2 forward) wide:
                   * the plane sweeps that ask for the next plane ahead */
                  {1100, 28, 2}, {1400, 28, 1}, {300, 60, 2}};
    tu_rng r;
    tu_seed(&r, 4242);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        for (int last = 0; last < 2; last++) {
            int64_t in[2] = {layers[i].hw, layers[i].hw}, kernel[2] = {3, 3};
            tu_problem tp;
            tu_problem_init(&tp, 2, 1 + (int64_t)(i % 2), layers[i].c, layers[i].c, in, kernel);
            tp.p.groups = layers[i].c;
            tp.p.channels_last = last;
            tp.bias = (int)(i % 2);
            tp.p.relu = (int)(i % 3 == 0);
            for (int a = 0; a < 2; a++) {
                tp.p.stride[a] = layers[i].stride;
                tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
            }
            tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
            assert_true(tu_resolve(&tp));
            for (int op = 0; op < 3; op++)
                tu_check_random_pass(tu_contexts, i, &tp, (conv_op_t)op, &r, 0);
        }
}

/* Stride-2 backward-data on rows of 34+ columns (the channels-first plane
 * strips, past the row kernels) at every top padding 0-3 (TensorFlow's
 * "same" puts 0 on top), one filter a channel and a multiplier of 2, batch
 * 1 and 2, against the reference (tu_check_random_pass: a random thread
 * count, dx NaN-filled, mostly against a guard page). */
static void test_s2_backward_data_pads(void **state)
{
    (void)state;
    static const struct {
        int64_t c, m, h, w, top, bottom, left, right;
    } layers[] = {{8, 1, 40, 40, 0, 1, 0, 1},  {5, 1, 37, 50, 2, 0, 1, 1}, {3, 1, 50, 40, 3, 1, 1, 1},
                  {4, 1, 9, 34, 0, 2, 1, 1},   {6, 1, 112, 112, 0, 1, 0, 1}, {3, 2, 41, 41, 0, 0, 2, 0},
                  {2, 1, 65, 66, 1, 0, 0, 1}, {4, 2, 38, 35, 1, 1, 1, 1}};
    tu_rng r;
    tu_seed(&r, 2828);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        int64_t in[2] = {layers[i].h, layers[i].w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1 + (int64_t)(i % 2), layers[i].c, layers[i].c * layers[i].m, in, kernel);
        tp.p.groups = layers[i].c;
        tp.p.stride[0] = tp.p.stride[1] = 2;
        tp.desc_pad_begin[0] = layers[i].top, tp.desc_pad_end[0] = layers[i].bottom;
        tp.desc_pad_begin[1] = layers[i].left, tp.desc_pad_end[1] = layers[i].right;
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, i, &tp, CONV_OP_BACKWARD_DATA, &r, 0);
    }
}

/* A channel multiplier of 4 or more at stride 1 (MNIST's 1->32 on 28x28,
 * groups == C == 1): the forward kernel that computes 4 output channels of
 * one input plane at a time, with a multiplier's leftover channels (5, 6,
 * 9) one plane at a time, rows not a multiple of its 5-row block, planes
 * narrower and wider than a vector, padding 0-2, bias and ReLU; on flat
 * planes, the kernel that computes 16 at a time (and the rest). */
static void test_channel_multiplier(void **state)
{
    (void)state;
    static const struct {
        int64_t c, m, h, w, pad;
    } layers[] = {{1, 32, 28, 28, 0}, {2, 5, 33, 33, 1}, {3, 8, 17, 19, 0}, {1, 6, 32, 32, 2},
                  {4, 9, 21, 40, 1}, {1, 4, 18, 17, 1}, {2, 7, 23, 9, 0},
                  /* flat planes ("same", at most 256 elements): 16 channels
                   * a call, and the rest */
                  {1, 16, 8, 8, 1},   {2, 20, 7, 7, 1},   {3, 4, 16, 16, 1}, {1, 37, 5, 9, 1},
                  {2, 6, 1, 13, 1}};
    tu_rng r;
    tu_seed(&r, 5150);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        int64_t in[2] = {layers[i].h, layers[i].w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1 + (int64_t)(i % 3), layers[i].c, layers[i].c * layers[i].m, in, kernel);
        tp.p.groups = layers[i].c;
        tp.bias = (int)(i % 2 == 0);
        tp.p.relu = (int)(i % 3 == 1);
        for (int a = 0; a < 2; a++) tp.desc_pad_begin[a] = tp.desc_pad_end[a] = layers[i].pad;
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        assert_true(tu_resolve(&tp));
        for (int op = 0; op < 3; op++)
            tu_check_random_pass(tu_contexts, i, &tp, (conv_op_t)op, &r, (int)(i % 2));
    }
}

/* Backward-filter on small planes (channels-first: the 16-channel-block
 * kernel of depthwise_avx512_blocked.cpp or the row kernel of
 * depthwise_avx512_filter_rows.cpp; channels-last, while x and y fit L2,
 * the tile kernel of depthwise_avx512_nhwc_tile.cpp on planes up to 14x14
 * and from 256 channels the ring kernels, whose parts of the batch are
 * fixed): channel counts with and without a tail block, both strides, odd
 * planes and asymmetric padding, real data; each matches the reference,
 * and 1, 2 and 3 threads give the same bits (the parts of the batch a
 * channel block sums do not depend on the thread count). Channels-last
 * forward and backward-data too: the ring kernels, which run at 1 thread
 * only (but stride-2 backward-data, on any), add a pixel's taps in the
 * in-place kernels' order. */
static void test_sums_by_threads(void **state)
{
    (void)state;
    static const struct {
        int64_t c, h, w, stride, pad_b, pad_e;
        int last;
    } layers[] = {{512, 14, 14, 1, 1, 1, 0}, {1024, 7, 7, 1, 1, 1, 0}, {40, 14, 14, 2, 1, 1, 0},
                  {17, 9, 11, 1, 0, 2, 0},   {33, 7, 5, 2, 2, 0, 0},   {5, 3, 1, 1, 1, 1, 0},
                  {512, 10, 12, 1, 1, 1, 1}, {1000, 7, 7, 1, 1, 1, 1}, {264, 9, 11, 2, 1, 1, 1},
                  {300, 5, 3, 1, 2, 0, 1},   {136, 12, 13, 2, 1, 2, 1}, {280, 6, 9, 1, 0, 2, 1}};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        int64_t in[2] = {layers[i].h, layers[i].w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, 3, layers[i].c, layers[i].c, in, kernel);
        tp.p.groups = layers[i].c;
        /* Channels-last sums are split by thread on the other ISAs. */
        if (layers[i].last && tu_cpu_isa(tu_contexts[0]) != TU_ISA_AVX512)
            continue;
        tp.p.channels_last = layers[i].last;
        tp.bias = 1;
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = layers[i].stride;
            tp.desc_pad_begin[a] = layers[i].pad_b;
            tp.desc_pad_end[a] = layers[i].pad_e;
        }
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        assert_true(tu_resolve(&tp));
        if (layers[i].c >= 256 || !layers[i].last)
            tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_FILTER, 77 + i, "depthwise");
        if (layers[i].last) {
            tu_check_bits_by_threads(&tp, CONV_OP_FORWARD, 77 + i, "depthwise");
            tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_DATA, 77 + i, "depthwise");
        }
    }
}

/* Backward-filter of 2 images of 3 channels, 6 x 20 planes, 3x3 depthwise
 * without padding (dy 4 x 18), inputs random from `seed`: the case the
 * infinity tests below edit before running. */
static void make_filter_case(tu_case *c, conv_desc_t *d, uint64_t seed)
{
    int64_t in[2] = {6, 20}, kernel[2] = {3, 3};
    tu_problem tp;
    tu_problem_init(&tp, 2, 2, 3, 3, in, kernel);
    tp.p.groups = 3;
    tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
    assert_true(tu_resolve(&tp));
    tu_rng r;
    tu_seed(&r, seed);
    assert_ok(tu_case_make(c, tu_contexts[0], &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_BACKWARD_FILTER, d));
    tu_case_fill(c, CONV_OP_BACKWARD_FILTER, &r, 0);
}

/* Backward-filter where a row's last vector is ragged (18 of 24 lanes) and
 * x holds an infinity in a column that only some taps read: dw's other
 * taps stay finite (a vector kernel's lanes past the row must not multiply
 * it by a zero dy into a NaN). x is 6 x 20, no padding, so dy is 4 x 18:
 * tap column 0 reads x's columns 0-17, 1 reads 1-18, 2 reads 2-19. */
static void test_filter_unread_infinity(void **state)
{
    (void)state;
    tu_case c;
    conv_desc_t d;
    make_filter_case(&c, &d, 5150);
    for (int64_t i = 0; i < c.y.elems; i++)
        tu_set(&c.y, i, 1.0); /* every product counts */
    for (int64_t plane = 0; plane < 2 * 3; plane++)
        tu_set(&c.x, plane * 6 * 20 + 2 * 20 + 19, INFINITY); /* row 2, column 19 */
    if (tu_case_run(&c, tu_contexts[0], d, CONV_OP_BACKWARD_FILTER, NULL) != CONV_STATUS_SUCCESS)
        fail_msg("%s", conv_last_error());
    for (int64_t ch = 0; ch < 3; ch++)
        for (int t = 0; t < 9; t++) {
            double v = tu_get(&c.w, ch * 9 + t);
            if ((t % 3 == 2) == (isfinite(v) != 0))
                fail_msg("channel %lld tap %d: dw = %g", (long long)ch, t, v);
        }
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* An infinity in dy at a row's first column is read, past the previous
 * row's end, by the vector kernels' last vector of that row (its lanes past
 * the row are not outputs): it must count once, as +inf times x, and not
 * meet a cleared x lane there as inf * 0 = NaN. */
static void test_filter_infinity_in_dy(void **state)
{
    (void)state;
    tu_case c;
    conv_desc_t d;
    make_filter_case(&c, &d, 5151);
    for (int64_t i = 0; i < c.x.elems; i++)
        tu_set(&c.x, i, 1.0);
    for (int64_t plane = 0; plane < 2 * 3; plane++)
        tu_set(&c.y, plane * 4 * 18 + 1 * 18, INFINITY); /* row 1, column 0 */
    if (tu_case_run(&c, tu_contexts[0], d, CONV_OP_BACKWARD_FILTER, NULL) != CONV_STATUS_SUCCESS)
        fail_msg("%s", conv_last_error());
    for (int64_t ch = 0; ch < 3; ch++)
        for (int t = 0; t < 9; t++) {
            double v = tu_get(&c.w, ch * 9 + t);
            if (!(isinf(v) && v > 0))
                fail_msg("channel %lld tap %d: dw = %g, expected +inf", (long long)ch, t, v);
        }
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* Channels-first passes with padding 1 before and output rows of up to 31
 * columns (depthwise_avx512_filter_rows.cpp: backward-filter;
 * depthwise_avx512_forward_rows.cpp: forward, and backward-data at stride
 * 1; depthwise_avx512_backward_rows.cpp: backward-data at stride 2, dx rows
 * without any dy row below them zeroed): both strides, padding after 0-2, planes of 1-20 rows (32 at stride 2), rows of 1-31
 * columns (one or two vectors; up to 7 two channels a vector, so odd
 * channel counts leave a channel without its pair), channel counts around
 * the 16-channel blocks, batch 1-3, bias and ReLU; exact on integers and
 * within rounding on reals, on 1-3 threads with exact workspaces against
 * guard pages. */
static void test_rows(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(6000);
    int n = tu_env_count(300);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t stride = tu_range(&r, 1, 2), out_w = tu_chance(&r, 50) ? tu_range(&r, 1, 8) : tu_range(&r, 1, 31);
        int64_t pad_end = tu_chance(&r, 15) ? 2 : tu_range(&r, 0, 1);
        /* x as wide as that many dy columns with the padding: out = (in + 1 + pad_end - 3) / s + 1. */
        int64_t in_w = (out_w - 1) * stride + 2 - pad_end + (stride == 2 ? tu_range(&r, 0, 1) : 0);
        /* Up to 32 rows at stride 2 (16 dy rows: backward-filter reads a
         * batch image by image from 14). */
        int64_t rows = tu_range(&r, 1, stride == 2 && tu_chance(&r, 30) ? 32 : 20);
        int64_t in[2] = {rows, in_w < 1 ? 1 : in_w}, kernel[2] = {3, 3};
        int64_t c = tu_chance(&r, 30) ? tu_range(&r, 15, 40) : tu_range(&r, 1, 9);
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 3), c, c, in, kernel);
        tp.p.groups = c;
        tp.bias = tu_chance(&r, 40);
        tp.p.relu = tu_chance(&r, 30);
        tp.dtype = CONV_DTYPE_FLOAT32;
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = stride;
            tp.desc_pad_begin[a] = 1;
            tp.desc_pad_end[a] = pad_end;
        }
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        if (!tu_resolve(&tp))
            continue;
        int real = tu_chance(&r, 30);
        for (int op = 0; op < 3; op++)
            tu_check_random_pass(tu_contexts, seed, &tp, (conv_op_t)op, &r, real);
    }
}

/* ROWS_CHANNELS channels of h x w with padding 1 and stride s,
 * backward-filter, x and dy all ones: the case the infinity tests below
 * edit before running. Nine, so that the AVX-512 row kernels' pairs of
 * channels in the middle read whole vectors, lanes of the planes beside
 * them too (the first and last planes read only their rows). */
#define ROWS_CHANNELS 9
static void make_rows_case(tu_case *c, conv_desc_t *d, int64_t h, int64_t w, int64_t s, int64_t pad)
{
    int64_t in[2] = {h, w}, kernel[2] = {3, 3};
    tu_problem tp;
    tu_problem_init(&tp, 2, 1, ROWS_CHANNELS, ROWS_CHANNELS, in, kernel);
    tp.p.groups = ROWS_CHANNELS;
    for (int a = 0; a < 2; a++) {
        tp.p.stride[a] = s;
        tp.desc_pad_begin[a] = tp.desc_pad_end[a] = pad;
    }
    tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
    assert_true(tu_resolve(&tp));
    tu_rng r;
    tu_seed(&r, 99);
    assert_ok(tu_case_make(c, tu_contexts[0], &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_BACKWARD_FILTER, d));
    tu_case_fill(c, CONV_OP_BACKWARD_FILTER, &r, 0);
    for (int64_t i = 0; i < c->x.elems; i++)
        tu_set(&c->x, i, 1.0);
    for (int64_t i = 0; i < c->y.elems; i++)
        tu_set(&c->y, i, 1.0);
}

/* Runs the case and checks that dw's tap t is +inf exactly where
 * inf_tap(t) says, finite elsewhere, for every channel. */
static void check_rows_infinity(tu_case *c, conv_desc_t d, const char *what, int inf_taps)
{
    if (tu_case_run(c, tu_contexts[0], d, CONV_OP_BACKWARD_FILTER, NULL) != CONV_STATUS_SUCCESS)
        fail_msg("%s: %s", what, conv_last_error());
    for (int64_t ch = 0; ch < ROWS_CHANNELS; ch++)
        for (int t = 0; t < 9; t++) {
            double v = tu_get(&c->w, ch * 9 + t);
            int want_inf = (inf_taps >> t) & 1;
            if (want_inf ? !(isinf(v) && v > 0) : !isfinite(v))
                fail_msg("%s: channel %lld tap %d: dw = %g", what, (long long)ch, t, v);
        }
}

/* The rows kernel's padding: an infinity in dy at a row's first column
 * (taps with kw = 0 read the padding there, and taps with kh = 0 too in
 * the first row) counts in the other taps only, neither read by a lane
 * past a row's outputs nor by a second channel's half of a vector
 * (7-column rows). Widths 14 (one channel a vector) and 7 (two), both
 * strides, and the planes the AVX-512 row kernels compile with their
 * sizes as constants (7, 14, 28 at stride 1; 14, 28, 56 at stride 2).
 * AVX-512, and AVX2 at stride 2 (the plane sweeps: dy rows of 7
 * and 14, their edge lanes cleared once, after the sums): the other
 * kernels multiply zero-padded x by dy, so such a dy infinity gives NaN
 * there, as an im2col with zero padding does. (An infinity in x:
 * test_filter_x_infinity, every ISA.) */
static void test_filter_rows_infinity(void **state)
{
    (void)state;
    const int avx2 = tu_cpu_isa(tu_contexts[0]) == TU_ISA_AVX2;
    if (tu_cpu_isa(tu_contexts[0]) != TU_ISA_AVX512 && !avx2)
        skip();
    static const int64_t shapes[][3] = {{14, 14, 1}, {7, 7, 1},   {6, 29, 1},   {14, 14, 2},
                                        {9, 28, 2},  {28, 28, 1}, {28, 28, 2}, {56, 56, 2}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t h = shapes[i][0], w = shapes[i][1], s = shapes[i][2];
        if (avx2 && s != 2)
            continue;
        int64_t oh = (h - 1) / s + 1, ow = (w - 1) / s + 1;
        tu_case c;
        conv_desc_t d;
        char what[64];
        /* dy(row 0, column 0) and dy(row 1, column 0) of every channel:
         * taps kw >= 1 read x there (kh = 0 only from row 1). */
        make_rows_case(&c, &d, h, w, s, 1);
        for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++) {
            tu_set(&c.y, plane * oh * ow, INFINITY);
            if (oh > 1)
                tu_set(&c.y, plane * oh * ow + ow, INFINITY);
        }
        snprintf(what, sizeof what, "dy %lldx%lld s%lld", (long long)h, (long long)w, (long long)s);
        check_rows_infinity(&c, d, what, oh > 1 ? 0x1b6 : 0x1b0); /* kw >= 1; kh >= 1 unless row 1 */
        conv_desc_destroy(d);
        tu_case_free(&c);
    }
}

/* Stride-1 backward-filter with an infinity in x where only some taps
 * have a dy to meet it: with padding 1, x(h - 1, w - 1) meets dy(h - kh,
 * w - kw), which exists for kh, kw >= 1 only; with no padding, x(0, 0)
 * meets dy(0, 0) at tap (0, 0) only and x(h - 1, w - 1) dy(oh - 1, ow - 1)
 * at tap (2, 2) only. The other taps stay finite: a kernel must not
 * multiply that x by a zero standing for a dy row or column outside dy
 * (0 * inf = NaN). Planes from 7 to 57 wide (AVX2: the 8-channel blocks up
 * to 10, the plane sweeps above; AVX-512: rows past 31 columns, and any
 * without padding, on the plane kernels' rolling sweep), every ISA. */
static void test_filter_x_infinity(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{14, 14}, {7, 7},  {6, 29},  {20, 20}, {9, 12},
                                        {28, 28}, {3, 17}, {11, 40}, {4, 57}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t h = shapes[i][0], w = shapes[i][1];
        tu_case c;
        conv_desc_t d;
        char what[64];
        make_rows_case(&c, &d, h, w, 1, 1);
        for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
            tu_set(&c.x, plane * h * w + h * w - 1, INFINITY);
        snprintf(what, sizeof what, "x %lldx%lld pad 1, last", (long long)h, (long long)w);
        check_rows_infinity(&c, d, what, 0x1b0); /* kh, kw >= 1 */
        conv_desc_destroy(d);
        tu_case_free(&c);
        for (int last = 0; last < 2; last++) {
            make_rows_case(&c, &d, h, w, 1, 0);
            for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
                tu_set(&c.x, plane * h * w + (last ? h * w - 1 : 0), INFINITY);
            snprintf(what, sizeof what, "x %lldx%lld pad 0, %s", (long long)h, (long long)w, last ? "last" : "first");
            check_rows_infinity(&c, d, what, last ? 1 << 8 : 1 << 0);
            conv_desc_destroy(d);
            tu_case_free(&c);
        }
    }
}

/* Stride-2 backward-filter where dy's rows are 10 wide (a second vector
 * of 8 with 2 lanes in the row; AVX2's planes kernel), no padding. An
 * infinity in x's row 2, column 20: only taps with kw = 2 read column 20,
 * and row 2 only with kh = 0 (dy row 1) or kh = 2 (dy row 0), so dw is
 * +inf at taps 2 and 8 and finite elsewhere -- a lane past dy's row reads
 * that column at kw = 0, and unless x's lane is cleared too, 0 * inf
 * makes tap 0 NaN. Then an infinity in dy at row 1's first column, which
 * row 0's last vector reads past the row's end: every tap +inf, none NaN
 * (from a cleared x lane). Then padding 1 on a row of 80, in x and in dy.
 * Every ISA. */
static void test_filter_stride2_infinity(void **state)
{
    (void)state;
    const int64_t h = 7, w = 21, oh = 3, ow = 10;
    tu_case c;
    conv_desc_t d;
    make_rows_case(&c, &d, h, w, 2, 0);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.x, plane * h * w + 2 * w + 20, INFINITY);
    check_rows_infinity(&c, d, "x, stride 2", 1 << 2 | 1 << 8);
    conv_desc_destroy(d);
    tu_case_free(&c);
    make_rows_case(&c, &d, h, w, 2, 0);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.y, plane * oh * ow + ow, INFINITY);
    check_rows_infinity(&c, d, "dy, stride 2", 0x1ff);
    conv_desc_destroy(d);
    tu_case_free(&c);
    /* Padding 1, dy rows of 40 (the last vector's 8 lanes): x's column 79
     * is kw = 2 of dy column 39 only, and row 1 kh = 2 of dy row 0 and
     * kh = 0 of dy row 1, so taps 2 and 8 are +inf. The AVX-512 plane
     * kernel makes tap 0 by moving the odd columns one lane up, which
     * carries column 79 into the lane past the row's last output. */
    make_rows_case(&c, &d, 7, 80, 2, 1);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.x, plane * 7 * 80 + 1 * 80 + 79, INFINITY);
    check_rows_infinity(&c, d, "x, stride 2, padding 1", 1 << 2 | 1 << 8);
    conv_desc_destroy(d);
    tu_case_free(&c);
    /* x's row 2, column 15: kh = 1 of dy row 1, kw = 0 of dy column 8 and
     * kw = 2 of column 7 (taps 3 and 5). The AVX-512 plane kernel's last
     * vector column of row 1 reads it as a lane past the row (whole vectors
     * in the middle channels): no FMA may add that lane. */
    make_rows_case(&c, &d, 7, 80, 2, 1);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.x, plane * 7 * 80 + 2 * 80 + 15, INFINITY);
    check_rows_infinity(&c, d, "x row 2 column 15, stride 2, padding 1", 1 << 3 | 1 << 5);
    conv_desc_destroy(d);
    tu_case_free(&c);
    /* The same plane, an infinity in dy at row 1, column 0: it meets x's
     * columns 0 and 1 (kw = 1, 2) of rows 1-3; kw = 0 is padding. The AVX-512
     * plane kernel makes tap 0 from dy read a column on: row 0's last
     * vector must not reach past the row into row 1's column 0. */
    make_rows_case(&c, &d, 7, 80, 2, 1);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.y, plane * 4 * 40 + 1 * 40, INFINITY);
    check_rows_infinity(&c, d, "dy, stride 2, padding 1", 0x1b6);
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* Stride-1 backward-filter, padding 1, an infinity in channel 4's dy at its
 * plane's first and last position: the other channels' dw stay finite. A
 * kernel whose vectors reach past a plane into the next channel's dy (the
 * flat sweeps read a row of dy above and below each vector; the AVX-512
 * row kernels read whole vectors away from the tensor's ends) must clear
 * those lanes in dy too, or leave them out of its FMAs: inf * 0 is NaN.
 * Every ISA. */
static void test_filter_dy_infinity_neighbours(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{14, 14}, {12, 20}, {7, 7}, {28, 28}, {9, 12}, {3, 32}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t h = shapes[i][0], w = shapes[i][1];
        tu_case c;
        conv_desc_t d;
        make_rows_case(&c, &d, h, w, 1, 1);
        tu_set(&c.y, 4 * h * w, INFINITY);
        tu_set(&c.y, 5 * h * w - 1, INFINITY);
        if (tu_case_run(&c, tu_contexts[0], d, CONV_OP_BACKWARD_FILTER, NULL) != CONV_STATUS_SUCCESS)
            fail_msg("%lldx%lld: %s", (long long)h, (long long)w, conv_last_error());
        for (int64_t ch = 0; ch < ROWS_CHANNELS; ch++)
            for (int t = 0; t < 9 && ch != 4; t++)
                if (!isfinite(tu_get(&c.w, ch * 9 + t)))
                    fail_msg("%lldx%lld: channel %lld tap %d: dw = %g", (long long)h, (long long)w, (long long)ch, t,
                             tu_get(&c.w, ch * 9 + t));
        conv_desc_destroy(d);
        tu_case_free(&c);
    }
}

/* A float32 2-D depthwise 3x3 problem on 1-3 threads: `batch` images of
 * c channels of in[0] x in[1], stride s, the given padding, bias or not,
 * its pass `op` checked against the reference (within rounding on real
 * data, the draw's 30%; else exact on integers). */
static void check_plane_problem(uint64_t seed, tu_rng *r, const int64_t in[2], int64_t batch, int64_t c, int64_t s,
                                const int64_t pad_begin[2], const int64_t pad_end[2], int bias, conv_op_t op)
{
    int64_t kernel[2] = {3, 3};
    tu_problem tp;
    tu_problem_init(&tp, 2, batch, c, c, in, kernel);
    tp.p.groups = c;
    tp.dtype = CONV_DTYPE_FLOAT32;
    tp.bias = bias;
    for (int a = 0; a < 2; a++) {
        tp.p.stride[a] = s;
        tp.desc_pad_begin[a] = pad_begin[a];
        tp.desc_pad_end[a] = pad_end[a];
    }
    tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
    if (!tu_resolve(&tp))
        return;
    tu_check_random_pass(tu_contexts, seed, &tp, op, r, tu_chance(r, 30));
}

/* Channels-first forward and backward-data whose output is 8 MiB or more,
 * rows whole lines: the AVX-512 kernels stream their whole vectors past
 * the caches (the plane sweeps at stride 1, stride 2's padding-1 blocks,
 * with bias and ReLU), and the last plane's stores are fenced before the
 * call returns. Rows of 120 columns (not whole lines) store as before.
 * 1-3 threads, the output against a guard page before or after, exact
 * workspaces, every element checked. */
static void test_streamed_outputs(void **state)
{
    (void)state;
    static const struct {
        int64_t h, w, c, n, s;
        int op, bias;
    } cases[] = {{128, 128, 64, 2, 1, CONV_OP_FORWARD, 1},       {128, 128, 136, 1, 1, CONV_OP_FORWARD, 0},
                 {256, 256, 64, 2, 2, CONV_OP_FORWARD, 1},       {128, 128, 64, 2, 1, CONV_OP_BACKWARD_DATA, 0},
                 {128, 120, 72, 2, 1, CONV_OP_FORWARD, 0}};
    tu_rng r;
    tu_seed(&r, 8181);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].c, in, kernel);
        tp.p.groups = cases[i].c;
        tp.bias = cases[i].bias;
        tp.p.relu = cases[i].bias;
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = cases[i].s;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = 1;
        }
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        assert_true(tu_resolve(&tp));
        char what[256];
        snprintf(what, sizeof what, "%s %lldx%lld stride %lld %lld channels batch %lld%s",
                 cases[i].op == CONV_OP_FORWARD ? "fwd" : "bwd_data", (long long)cases[i].h, (long long)cases[i].w,
                 (long long)cases[i].s, (long long)cases[i].c, (long long)cases[i].n, cases[i].bias ? " bias relu" : "");
        tu_check_guarded_threads(&tp, (conv_op_t)cases[i].op, &r, (int)(i % 2), what);
    }
}

/* Stride-1 backward-filter with padding 1 on rows of 11-32 columns
 * (depthwise_avx2_flat.cpp on AVX2: a plane swept as one run of positions,
 * column masks repeating every lcm(W, 8) / 8 vectors, the vectors near the
 * plane's ends clearing dy's missing rows): 1-12 rows (planes smaller than
 * a vector's reach of a row above and below), 1-20 channels, batch 1-3
 * (the tensor's first and last planes read through copies), bias, exact on
 * integers and within rounding on reals, on 1-3 threads. */
static void test_flat(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(8000);
    int n = tu_env_count(120);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 1, 12), tu_range(&r, 11, 32)};
        int64_t c = tu_range(&r, 1, 20), batch = tu_range(&r, 1, 3);
        const int64_t one[2] = {1, 1};
        check_plane_problem(seed, &r, in, batch, c, 1, one, one, tu_chance(&r, 30), CONV_OP_BACKWARD_FILTER);
    }
}

/* Stride-2 backward-data on rows of 56-96 columns
 * (depthwise_avx2_spread.cpp on AVX2: 16 dx columns from 8 dy columns at
 * a time, the last 16 stored in part): leading padding 0-2 (dy vectors one
 * column before or after the step's), trailing 0-2, odd and even widths,
 * 1-9 rows, 1-6 channels, batch 1-2 (the tensor's first and last planes
 * read through copies), exact on integers and within rounding on reals, on
 * 1-3 threads. */
static void test_spread(void **state)
{
    (void)state;
    uint64_t first = tu_env_seed(7000);
    int n = tu_env_count(120);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 1, 9), tu_range(&r, 56, 96)};
        int64_t c = tu_range(&r, 1, 6), batch = tu_range(&r, 1, 2);
        int64_t pad_begin[2], pad_end[2];
        for (int a = 0; a < 2; a++) {
            pad_begin[a] = tu_range(&r, 0, 2);
            pad_end[a] = tu_range(&r, 0, 2);
        }
        check_plane_problem(seed, &r, in, batch, c, 2, pad_begin, pad_end, 0, CONV_OP_BACKWARD_DATA);
    }
}

/* Stride-2 backward-data on 3 channels of 5 x 60 with leading padding
 * `pad`: dy all ones but +inf in each plane's first and last column of
 * row 1, weights 1..9. Where a dx column reads an infinity it is +inf;
 * elsewhere it is finite -- not NaN from a vector lane past dy's row that
 * read the infinity and was cleared by a multiply. */
static void check_spread_infinity(int64_t pad)
{
    const int64_t h = 5, w = 60, planes = 3;
    int64_t in[2] = {h, w}, kernel[2] = {3, 3};
    tu_problem tp;
    tu_problem_init(&tp, 2, 1, planes, planes, in, kernel);
    tp.p.groups = planes;
    for (int a = 0; a < 2; a++) {
        tp.p.stride[a] = 2;
        tp.desc_pad_begin[a] = tp.desc_pad_end[a] = pad;
    }
    tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
    assert_true(tu_resolve(&tp));
    tu_case c;
    conv_desc_t d;
    tu_rng r;
    tu_seed(&r, 7);
    assert_ok(tu_case_make(&c, tu_contexts[0], &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_BACKWARD_DATA, &d));
    tu_case_fill(&c, CONV_OP_BACKWARD_DATA, &r, 0);
    const int64_t oh = (h + 2 * pad - 3) / 2 + 1, ow = (w + 2 * pad - 3) / 2 + 1;
    assert_int_equal(c.y.elems, planes * oh * ow);
    for (int64_t i = 0; i < c.w.elems; i++)
        tu_set(&c.w, i, (double)(i % 9 + 1));
    for (int64_t i = 0; i < c.y.elems; i++)
        tu_set(&c.y, i, i % (oh * ow) / ow == 1 && (i % ow == 0 || i % ow == ow - 1) ? INFINITY : 1.0);
    if (tu_case_run(&c, tu_contexts[0], d, CONV_OP_BACKWARD_DATA, NULL) != CONV_STATUS_SUCCESS)
        fail_msg("pad %lld: %s", (long long)pad, conv_last_error());
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) {
                /* Whether dx(i, j) reads dy(1, 0) or dy(1, ow - 1). */
                int reads = 0;
                for (int kh = 0; kh < 3; kh++)
                    for (int kw = 0; kw < 3; kw++) {
                        int64_t rr = i + pad - kh, cc = j + pad - kw;
                        if (rr == 2 && (cc == 0 || cc == 2 * (ow - 1)))
                            reads = 1;
                    }
                double v = tu_get(&c.x, (p * h + i) * w + j);
                if (reads ? !(isinf(v) && v > 0) : !isfinite(v))
                    fail_msg("pad %lld: plane %lld dx(%lld, %lld) = %g", (long long)pad, (long long)p, (long long)i,
                             (long long)j, v);
            }
    conv_desc_destroy(d);
    tu_case_free(&c);
}

static void test_spread_infinity(void **state)
{
    (void)state;
    for (int64_t pad = 0; pad <= 2; pad++)
        check_spread_infinity(pad);
}

/* Stride-2 backward-filter on dy rows of 7-64 columns (AVX2's plane
 * sweeps, depthwise_avx2_planes.cpp: with leading padding, tap kw = 0 taken
 * as kw = 2 of the column before against dy one column on, so a vector's
 * last lane meets the next vector's first column, and dy is read one float
 * further): leading padding 0-2 in either dimension, trailing 0-2, odd and
 * even x widths, 1-20 rows, 1-20 channels, batch 1-3 (the tensor's first
 * and last planes read through copies), exact on integers and within
 * rounding on reals, on 1-3 threads with exact workspaces against guard
 * pages. */
static void test_filter_stride2_planes(void **state)
{
    (void)state;
    static const int64_t widths[] = {7, 8, 9, 14, 15, 16, 17, 24, 28, 31, 32, 33, 56, 64};
    uint64_t first = tu_env_seed(9000);
    int n = tu_env_count(200);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t out_w = widths[tu_range(&r, 0, (int64_t)(sizeof widths / sizeof widths[0]) - 1)];
        int64_t pad_begin[2], pad_end[2];
        for (int a = 0; a < 2; a++) {
            pad_begin[a] = tu_range(&r, 0, 2);
            pad_end[a] = tu_range(&r, 0, 2);
        }
        /* x as wide as out_w dy columns with that padding: out = (in + pb + pe - 3) / 2 + 1. */
        int64_t in_w = 2 * (out_w - 1) + 3 - pad_begin[1] - pad_end[1] + tu_range(&r, 0, 1);
        int64_t in[2] = {tu_range(&r, 1, 20), in_w < 1 ? 1 : in_w};
        int64_t c = tu_range(&r, 1, 20), batch = tu_range(&r, 1, 3);
        check_plane_problem(seed, &r, in, batch, c, 2, pad_begin, pad_end, tu_chance(&r, 30), CONV_OP_BACKWARD_FILTER);
    }
}

/* Stride-2 backward-filter, padding 1, dy rows of 16 columns (two whole
 * vectors). An infinity in x's row 1, column 15: row 1 is kh = 2 of dy row
 * 0 and kh = 0 of dy row 1, column 15 kw = 2 of dy column 7 and kw = 0 of
 * column 8 -- which the plane sweeps take as kw = 2 of column 7 against dy
 * one column on, the first vector's last lane meeting the second vector's
 * first column -- so dw is +inf at taps 0, 2, 6 and 8, finite elsewhere.
 * Then an infinity in dy at row 1, column 0, which row 0's last vector
 * reads, one column on, in its last lane (past the row): dw is +inf at the
 * taps kw >= 1 (x all ones), and the kw = 0 taps, whose only product with
 * it reads padding, are finite on AVX2 (its plane sweeps leave padding
 * out; elsewhere NaN is allowed, from kernels that multiply zero padding,
 * but never +inf). Every ISA. */
static void test_filter_stride2_shifted_infinity(void **state)
{
    (void)state;
    const int64_t h = 6, w = 32, oh = 3, ow = 16;
    tu_case c;
    conv_desc_t d;
    make_rows_case(&c, &d, h, w, 2, 1);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.x, plane * h * w + 1 * w + 15, INFINITY);
    check_rows_infinity(&c, d, "x row 1 column 15, stride 2", 1 << 0 | 1 << 2 | 1 << 6 | 1 << 8);
    conv_desc_destroy(d);
    tu_case_free(&c);
    make_rows_case(&c, &d, h, w, 2, 1);
    for (int64_t plane = 0; plane < ROWS_CHANNELS; plane++)
        tu_set(&c.y, plane * oh * ow + ow, INFINITY);
    /* AVX2's plane sweeps leave the padding out: finite there. */
    const int padding_nan_ok = tu_cpu_isa(tu_contexts[0]) != TU_ISA_AVX2;
    if (tu_case_run(&c, tu_contexts[0], d, CONV_OP_BACKWARD_FILTER, NULL) != CONV_STATUS_SUCCESS)
        fail_msg("%s", conv_last_error());
    for (int64_t ch = 0; ch < ROWS_CHANNELS; ch++)
        for (int t = 0; t < 9; t++) {
            double v = tu_get(&c.w, ch * 9 + t);
            if (t % 3 != 0 ? !(isinf(v) && v > 0) : padding_nan_ok ? isinf(v) && v > 0 : !isfinite(v))
                fail_msg("dy row 1 column 0, stride 2: channel %lld tap %d: dw = %g", (long long)ch, t, v);
        }
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* The fused ReLU passes a NaN on (the reference's "v < 0 ? 0 : v"): one
 * NaN in x makes exactly the outputs whose windows read it NaN. Shapes for
 * each forward kernel: a channel multiplier (4 channels of a plane at a
 * time), planes in registers (14x14, 7x7), flat planes, whole planes in
 * row blocks, stride 2, and channels-last; and a NaN in a middle channel
 * where the rows kernels beside it read whole vectors. */
static void test_relu_keeps_nan(void **state)
{
    (void)state;
    /* where: the NaN in the last channel (0), or in channel c / 2 at its
     * plane's first (1) or last (2) position, which the whole-vector loads
     * of the channels beside it read (AVX-512 row kernels, 7x7 to 56x56,
     * both strides). */
    static const struct {
        int64_t c, m, h, w, pad, stride, last, where;
    } layers[] = {{1, 32, 28, 28, 0, 1, 0, 0}, {2, 8, 20, 21, 1, 1, 0, 0}, {3, 1, 14, 14, 1, 1, 0, 0},
                  {5, 1, 7, 7, 1, 1, 0, 0},    {2, 1, 10, 12, 1, 1, 0, 0}, {3, 1, 40, 37, 1, 1, 0, 0},
                  {2, 1, 40, 38, 1, 2, 0, 0},  {20, 1, 9, 9, 1, 1, 1, 0},  {17, 2, 12, 30, 1, 2, 1, 0},
                  {9, 1, 7, 7, 1, 1, 0, 1},    {9, 1, 7, 7, 1, 1, 0, 2},   {9, 1, 14, 14, 1, 2, 0, 1},
                  {9, 1, 14, 14, 1, 2, 0, 2},  {7, 1, 28, 28, 1, 1, 0, 2}, {7, 1, 56, 56, 1, 2, 0, 1},
                  {7, 1, 56, 56, 1, 2, 0, 2}};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        const int64_t c = layers[i].c, h = layers[i].h, w = layers[i].w, s = layers[i].stride;
        const int64_t pad = layers[i].pad;
        int64_t in[2] = {h, w}, kernel[2] = {3, 3};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1, c, c * layers[i].m, in, kernel);
        tp.p.groups = c;
        tp.p.channels_last = (int)layers[i].last;
        tp.p.relu = 1;
        tp.bias = 1;
        for (int a = 0; a < 2; a++) {
            tp.p.stride[a] = s;
            tp.desc_pad_begin[a] = tp.desc_pad_end[a] = pad;
        }
        tp.algo = CONV_ALGO_DEPTHWISE_DIRECT;
        assert_true(tu_resolve(&tp));
        tu_case cs;
        conv_desc_t d;
        tu_rng r;
        tu_seed(&r, 77 + i);
        assert_ok(tu_case_make(&cs, tu_contexts[0], &tp, 0));
        assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
        tu_case_fill(&cs, CONV_OP_FORWARD, &r, 0);
        /* the NaN's channel, row, column */
        const int64_t where = layers[i].where, nc = where ? c / 2 : c - 1;
        const int64_t nh = where == 0 ? h / 2 : where == 1 ? 0 : h - 1, nw = where == 0 ? w - 2 : where == 1 ? 0 : w - 1;
        tu_set(&cs.x, layers[i].last ? (nh * w + nw) * c + nc : (nc * h + nh) * w + nw, NAN);
        assert_ok(tu_case_run(&cs, tu_contexts[0], d, CONV_OP_FORWARD, NULL));
        /* Output rows (columns) whose window covers the NaN's row (column). */
        const int64_t oh = (h + 2 * pad - 3) / s + 1, ow = (w + 2 * pad - 3) / s + 1;
        int64_t rows = 0, cols = 0;
        for (int64_t o = 0; o < oh; o++) rows += o * s - pad <= nh && nh < o * s - pad + 3;
        for (int64_t o = 0; o < ow; o++) cols += o * s - pad <= nw && nw < o * s - pad + 3;
        int64_t nans = 0;
        for (int64_t e = 0; e < cs.y.elems; e++) nans += isnan(tu_get(&cs.y, e)) != 0;
        if (nans != layers[i].m * rows * cols)
            fail_msg("layer %zu: %lld NaN outputs, expected %lld", i, (long long)nans,
                     (long long)(layers[i].m * rows * cols));
        conv_desc_destroy(d);
        tu_case_free(&cs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_shapes_exact),
        cmocka_unit_test(test_any_shape_exact),
        cmocka_unit_test(test_many_channels_exact),
        cmocka_unit_test(test_real_data),
        cmocka_unit_test(test_mobilenet_like),
        cmocka_unit_test(test_s2_backward_data_pads),
        cmocka_unit_test(test_channel_multiplier),
        cmocka_unit_test(test_sums_by_threads),
        cmocka_unit_test(test_filter_unread_infinity),
        cmocka_unit_test(test_filter_infinity_in_dy),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_filter_rows_infinity),
        cmocka_unit_test(test_filter_x_infinity),
        cmocka_unit_test(test_filter_stride2_infinity),
        cmocka_unit_test(test_filter_stride2_planes),
        cmocka_unit_test(test_filter_stride2_shifted_infinity),
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_streamed_outputs),
        cmocka_unit_test(test_filter_dy_infinity_neighbours),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_spread_infinity),
        cmocka_unit_test(test_relu_keeps_nan),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
