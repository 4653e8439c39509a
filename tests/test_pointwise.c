/*
 * test_pointwise.c -- CONV_ALGO_GEMM_1X1 against the naive reference on
 * pointwise problems shaped to reach every branch of its register-tile
 * kernel (src/cpu/pointwise_avx512.cpp) and of the OpenBLAS path it falls
 * back to (which this test also runs under CONV_CPU_ISA=baseline):
 * channel counts around the 8-row tile and the 48-column panel (1, 7, 8, 9,
 * 47, 48, 49, ...), position counts around them too, planes large enough to
 * be split into several blocks per image and small enough that the rows are
 * split instead, batch 0..3, no channels on one side, both layouts, 1-3
 * spatial dims, strides 1-3, groups (the fallback), bias and ReLU, all three passes, 1-3
 * threads, and workspaces of exactly the size the library asks for.
 *
 * Integer data in [-3, 3] makes every sum exact in fp32, so most checks
 * are exact; some problems use real data within a rounding tolerance.
 * A failure prints its seed; CONV_TEST_SEED=<seed> CONV_TEST_COUNT=1 reruns it.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>

/* Channel counts that straddle the 8-row tile and the 48-column panel. */
static int64_t random_channels(tu_rng *r, int64_t most)
{
    static const int64_t edges[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 47, 48, 49, 64, 95, 97};
    if (tu_chance(r, 60))
        return edges[tu_range(r, 0, (int64_t)(sizeof edges / sizeof edges[0]) - 1)];
    return tu_range(r, 1, most);
}

/* A pointwise problem: `wide` draws planes of up to 48x48 positions (split
 * into blocks over threads) and channels up to 200 (several row tiles and
 * panels); otherwise small ones around the tile edges. */
static void random_pointwise(tu_rng *r, tu_problem *tp, int wide)
{
    int spatial = tu_chance(r, 70) ? 2 : tu_chance(r, 50) ? 1 : 3;
    int64_t in[3], kernel[3] = {1, 1, 1};
    int64_t side = wide ? 48 : 12; /* 12x12: past the 128 positions some paths need */
    for (int a = 0; a < spatial; a++)
        in[a] = spatial == 1 ? tu_range(r, 1, side * side / 4) : tu_range(r, 1, spatial == 3 ? 6 : side);
    int64_t c = random_channels(r, wide ? 200 : 70), k = random_channels(r, wide ? 200 : 70);
    /* now and then no channels on one side: what the outputs still define
     * (y = act(bias), dx = 0, db) must be written */
    if (tu_chance(r, 4))
        *(tu_chance(r, 50) ? &c : &k) = 0;
    int64_t groups = tu_chance(r, 15) ? tu_range(r, 2, 3) : 1;
    c *= groups;
    k *= groups;
    /* batch 0 now and then: an empty pass, which must not touch the (then
     * empty) workspace */
    tu_problem_init(tp, spatial, tu_chance(r, 5) ? 0 : tu_range(r, 1, 3), c, k, in, kernel);
    tp->p.groups = groups;
    /* now and then strided, as ResNet's 1x1 shortcuts: the positions read
     * copied out (forward, backward-filter) or spread back with zeros
     * between them (backward-data) */
    if (tu_chance(r, 25))
        for (int a = 0; a < spatial; a++)
            tp->p.stride[a] = tu_range(r, 1, 3);
    tp->p.channels_last = tu_chance(r, 50);
    tp->dtype = tu_chance(r, 85) ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64;
    tp->bias = tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = CONV_ALGO_GEMM_1X1;
}

static void run_many(uint64_t base, int problems, int wide, int real)
{
    uint64_t first = tu_env_seed(base);
    int n = tu_env_count(problems);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        tu_problem tp;
        random_pointwise(&r, &tp, wide);
        assert_true(tu_resolve(&tp));
        for (int op = 0; op < 3; op++)
            tu_check_random_pass(tu_contexts, seed, &tp, (conv_op_t)op, &r, real);
    }
}

static void test_small_exact(void **state)
{
    (void)state;
    run_many(5000, 1000, 0, 0);
}

static void test_wide_exact(void **state)
{
    (void)state;
    run_many(6000, 40, 1, 0);
}

static void test_real_data(void **state)
{
    (void)state;
    run_many(7000, 100, 0, 1);
}

/* ResNet-50's pointwise shapes, scaled down where the reference would be
 * slow: wide planes with few channels (split by positions), 7x7 planes
 * with many (split by rows), expansion and reduction; 40->57 channels-first
 * reads x (dy) in place, 8 row tiles the last of one row, both ways. */
static void test_resnet_like(void **state)
{
    (void)state;
    static const struct {
        int64_t c, k, hw;
    } layers[] = {{64, 192, 36}, {256, 64, 30}, {128, 200, 20}, {512, 96, 14},
                  {2048, 64, 7}, {96, 2048, 7}, {3, 50, 33}, {40, 57, 23}};
    tu_rng r;
    tu_seed(&r, 5050);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        for (int last = 0; last < 2; last++) {
            int64_t in[2] = {layers[i].hw, layers[i].hw}, kernel[2] = {1, 1};
            tu_problem tp;
            tu_problem_init(&tp, 2, 1 + (int64_t)(i % 2), layers[i].c, layers[i].k, in, kernel);
            tp.p.channels_last = last;
            tp.bias = (int)(i % 2);
            tp.p.relu = (int)(i % 3 == 0);
            tp.algo = CONV_ALGO_GEMM_1X1;
            assert_true(tu_resolve(&tp));
            for (int op = 0; op < 3; op++)
                tu_check_random_pass(tu_contexts, i, &tp, (conv_op_t)op, &r, 0);
        }
}

/* A channels-first plane's size and channels (test_dealt_panels,
 * test_wide_plane_in_place). */
typedef struct {
    int64_t h, w, c, k;
} pw_plane;

/* Every plane at batch 1 and 2, passes [0, ops) on each of 1, 2 and 3
 * threads, the tensors against a guard page (before on 2 threads, after
 * on 1 and 3), exact workspaces, every element checked; with `bias`, the
 * odd planes' forward adds one. */
static void check_planes(const pw_plane *planes, size_t count, int ops, uint64_t seed, int bias)
{
    tu_rng r;
    tu_seed(&r, seed);
    for (size_t i = 0; i < count; i++)
        for (int64_t n = 1; n <= 2; n++) {
            int64_t in[2] = {planes[i].h, planes[i].w}, kernel[2] = {1, 1};
            tu_problem tp;
            tu_problem_init(&tp, 2, n, planes[i].c, planes[i].k, in, kernel);
            tp.algo = CONV_ALGO_GEMM_1X1;
            tp.bias = bias && i % 2;
            assert_true(tu_resolve(&tp));
            for (int op = 0; op < ops; op++)
                for (int threads = 1; threads <= 3; threads++) {
                    char what[256], failure[2048];
                    snprintf(what, sizeof what, "%s %lldx%lld %lld->%lld batch %lld threads=%d",
                             tu_op_name((conv_op_t)op), (long long)planes[i].h, (long long)planes[i].w,
                             (long long)planes[i].c, (long long)planes[i].k, (long long)n, threads);
                    const int flags = TU_RUN_WRAP | TU_RUN_EXACT_WORKSPACE |
                                      (threads == 2 ? TU_RUN_GUARD_BEFORE : TU_RUN_GUARD_AFTER);
                    if (tu_run_checked(tu_contexts[threads - 1], NULL, &tp, (conv_op_t)op, &r, 0, flags, what, failure,
                                       sizeof failure))
                        fail_msg("%s", failure);
                }
        }
}

/* Channels-first per image, a row's whole panels (48 columns, 16 with
 * AVX2) dealt out over its column blocks, as many each or one more, a last
 * panel of a dot-product tail's width (1-4 columns) joined to the last
 * block, or with fewer images than threads its rows shared by the blocks:
 * 784 positions (16 panels and part of one: 8 + 9 at 2 threads, 5 + 6 + 6
 * at 3), 196 (4 and a tail of 4: 2 + 2 and the tail at 2 threads), 97 (2
 * and a tail of 1), 50 (1 and 2), 52 (1 and 4), 756 (15 and 36 columns),
 * batch 1 and 2, every pass on each of 1, 2 and 3 threads (the forward
 * splits its rows instead where each thread would get fewer than 192
 * positions: 14x14 and smaller from up to 256 channels; 300->45 14x14 keeps
 * its blocks), the tensors against a guard page; enough channels that the
 * panels are packed, not read in place (28x28 is on 2 and 3 threads). */
static void test_dealt_panels(void **state)
{
    (void)state;
    static const pw_plane planes[] = {{28, 28, 96, 40}, {14, 14, 200, 72}, {1, 97, 80, 66},  {5, 10, 80, 40},
                                      {4, 13, 72, 33},  {27, 28, 96, 72},  {14, 14, 300, 45}};
    check_planes(planes, sizeof planes / sizeof planes[0], 3, 5151, 0);
}

/* Channels-first forward and backward-data on planes of 2048+ positions
 * (with 2+ threads 784+) read x (dy) in place whatever the channels
 * (AVX-512): a reduction past 64 steps onto more than 64 channels, rows of
 * x a plane apart, a last panel of 4 or 6 columns read in place too (46x46:
 * 44 panels and 4 columns; 45x46: 43 and 6; 48x48: whole panels; 28x29 in
 * place on 2 and 3 threads, packed on 1), batch 1 and 2, 1-3 threads, the
 * tensors against a guard page before or after, every element checked.
 * Then on real data the same bits on 1, 2 and 3 threads, 31x31 too (961
 * positions: a dot-product tail, so packed on every thread count). */
static void test_wide_plane_in_place(void **state)
{
    (void)state;
    static const pw_plane planes[] = {
        {46, 46, 80, 72}, {45, 46, 130, 20}, {48, 48, 72, 97}, {28, 29, 130, 70}, {31, 31, 96, 80}};
    const size_t count = sizeof planes / sizeof planes[0];
    check_planes(planes, count, 2, 5252, 1);
    for (size_t i = 0; i < count; i++) {
        int64_t in[2] = {planes[i].h, planes[i].w}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1, planes[i].c, planes[i].k, in, kernel);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_bits_by_threads(&tp, CONV_OP_FORWARD, 5300 + i, "wide plane forward");
        tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_DATA, 5400 + i, "wide plane backward-data");
    }
}

/* Backward-filter whose dW (1 MiB and more) comes from one chunk of
 * positions at batch 1: its whole aligned vectors are stored
 * non-temporally (Gemm::stream), the rest (rows not 64 bytes apart, a
 * tensor that starts off a line, a last partial vector) as before; batch 2
 * adds into dW and streams nothing. Both layouts, 1-3 threads, dW against
 * a guard page before (line-aligned) and after (off a line where its size
 * is not whole lines), exact workspaces, every element checked. */
static void test_streamed_filter(void **state)
{
    (void)state;
    static const struct {
        int64_t h, w, c, k, n;
        int last;
    } cases[] = {{7, 7, 512, 512, 1, 0}, {7, 7, 1024, 256, 1, 0}, {4, 4, 504, 520, 1, 0},
                 {3, 5, 520, 505, 1, 0}, {7, 7, 512, 512, 2, 0}, {7, 7, 512, 528, 1, 1}};
    tu_rng r;
    tu_seed(&r, 5252);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        tp.p.channels_last = cases[i].last;
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        char what[256];
        snprintf(what, sizeof what, "bwd_filter %lldx%lld %lld->%lld batch %lld %s", (long long)cases[i].h,
                 (long long)cases[i].w, (long long)cases[i].c, (long long)cases[i].k, (long long)cases[i].n,
                 cases[i].last ? "nhwc" : "nchw");
        tu_check_guarded_threads(&tp, CONV_OP_BACKWARD_FILTER, &r, (int)(i % 2), what);
    }
}

/* Channels-first backward-filter on planes of up to 64 positions reduces
 * over chunks of several images' whole planes (AVX-512: up to 512
 * positions, A's steps in segments of a plane): 7x7 at batch 9 (one chunk),
 * 11 and 21 (a last chunk of one image, or of a few), 8x8 at batch 9 (8 and
 * one), 1x1 and 2x3 planes (many images a chunk), 100 channels (a last
 * panel of 4 columns: dot products where a chunk is one image), each on 1,
 * 2 and 3 threads against a guard page, and the same bits on each (not
 * on OpenBLAS's path, CONV_CPU_ISA=baseline). */
static void test_filter_image_chunks(void **state)
{
    (void)state;
    static const struct {
        int64_t h, w, c, k, n;
    } cases[] = {{7, 7, 100, 40, 9},  {7, 7, 64, 72, 11}, {7, 7, 100, 17, 21}, {8, 8, 96, 64, 9},
                 {1, 1, 100, 24, 40}, {2, 3, 52, 9, 30},  {7, 7, 150, 130, 2}};
    tu_rng r;
    tu_seed(&r, 5353);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        tp.bias = (int)(i % 2);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        char what[256];
        snprintf(what, sizeof what, "bwd_filter %lldx%lld %lld->%lld batch %lld", (long long)cases[i].h,
                 (long long)cases[i].w, (long long)cases[i].c, (long long)cases[i].k, (long long)cases[i].n);
        for (int real = 0; real < 2; real++)
            tu_check_guarded_threads(&tp, CONV_OP_BACKWARD_FILTER, &r, real, what);
        if (tu_cpu_isa(tu_contexts[0]) != TU_ISA_BASELINE) /* OpenBLAS blocks by threads */
            tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_FILTER, 5353 + i, what);
    }
}

/* Channels-first backward-filter onto at most 32 filters over planes of
 * 1024+ positions, or onto 33-64 where x and dy fit 8 MiB, runs as dot
 * products along the positions (src/cpu/pointwise_dot_filter.cpp): 6 x 4
 * tiles and every smaller edge tile (filters and channels 1-7, 13, 31, 32,
 * 33, 45, 64, 70), positions in
 * chunks of 2048 with a last partial vector (1089, 1100, 2070, 2209
 * positions) or none (1024, 4096), 1-8 images, db alongside. 1-3 threads
 * (split by filters, evenly, or by channels), dW against a guard page,
 * every element checked, one case on real data; on AVX-512 the same bits
 * at 1-3 threads (threads split dW, never the positions). */
static void test_dot_filter(void **state)
{
    (void)state;
    static const struct {
        int64_t h, w, c, k, n;
        int bias, real;
    } cases[] = {{32, 32, 5, 7, 1, 0, 0},   {33, 33, 33, 13, 2, 1, 0}, {47, 47, 4, 31, 3, 0, 0},
                 {45, 46, 9, 6, 1, 1, 0},   {1, 1100, 3, 2, 1, 0, 0},  {64, 64, 1, 1, 2, 1, 0},
                 {32, 32, 64, 32, 2, 0, 0}, {40, 40, 70, 3, 1, 0, 1},  {4, 1100, 40, 32, 8, 1, 0},
                 {32, 32, 16, 64, 1, 1, 0}, {36, 36, 5, 45, 2, 0, 0},  {33, 33, 33, 64, 3, 0, 1},
                 {32, 32, 70, 40, 2, 0, 0}};
    tu_rng r;
    tu_seed(&r, 6464);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        tp.bias = cases[i].bias;
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        char what[256];
        snprintf(what, sizeof what, "bwd_filter %lldx%lld %lld->%lld batch %lld%s", (long long)cases[i].h,
                 (long long)cases[i].w, (long long)cases[i].c, (long long)cases[i].k, (long long)cases[i].n,
                 cases[i].bias ? " bias" : "");
        tu_check_guarded_threads(&tp, CONV_OP_BACKWARD_FILTER, &r, cases[i].real, what);
        if (tu_cpu_isa(tu_contexts[0]) == TU_ISA_AVX512) /* the dot products' kernel (elsewhere the GEMM's blocks) */
            tu_check_bits_by_threads(&tp, CONV_OP_BACKWARD_FILTER, 6565 + i, what);
    }
}

/* Channels-first forward and backward-data whose output is 8 MiB or more
 * (kPastCacheBytes) store their whole aligned vectors non-temporally: the
 * tiles' plain path and, with bias and ReLU, their epilogue's; rows not 64
 * bytes apart (127x125 planes), a last partial vector and a tensor that
 * starts off a line store as before. 1-3 threads, the output against a
 * guard page before (line-aligned) or after, exact workspaces, every
 * element checked. */
static void test_streamed_outputs(void **state)
{
    (void)state;
    static const struct {
        int64_t h, w, c, k, n;
        int op, bias;
    } cases[] = {{128, 128, 16, 64, 2, CONV_OP_FORWARD, 0},       {128, 128, 16, 64, 2, CONV_OP_FORWARD, 1},
                 {127, 125, 24, 136, 1, CONV_OP_FORWARD, 1},      {112, 112, 32, 88, 2, CONV_OP_FORWARD, 0},
                 {128, 128, 64, 16, 2, CONV_OP_BACKWARD_DATA, 0}, {127, 125, 136, 24, 1, CONV_OP_BACKWARD_DATA, 0}};
    tu_rng r;
    tu_seed(&r, 8080);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].h, cases[i].w}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, cases[i].n, cases[i].c, cases[i].k, in, kernel);
        tp.bias = cases[i].bias;
        tp.p.relu = cases[i].bias;
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        char what[256];
        snprintf(what, sizeof what, "%s %lldx%lld %lld->%lld batch %lld%s",
                 cases[i].op == CONV_OP_FORWARD ? "fwd" : "bwd_data", (long long)cases[i].h, (long long)cases[i].w,
                 (long long)cases[i].c, (long long)cases[i].k, (long long)cases[i].n, cases[i].bias ? " bias relu" : "");
        tu_check_guarded_threads(&tp, (conv_op_t)cases[i].op, &r, (int)(i % 2), what);
    }
}

/* Channels-first backward-data on planes under 100 positions onto 256+
 * channels runs dx transposed (dy^T W, sums scattered into dx's rows):
 * channel counts around the panel edges past 256, planes of 1 to 99
 * positions in 1-3 dims (row tiles of uneven height), batch 1-3 (on
 * AVX-512 W read in place 256 reduction steps at a time, its last panel's
 * columns under a mask, the sums kept between blocks), and filters up to
 * 300 or (a quarter) 683-800: one to four blocks, a last short one. */
static void test_transposed_backward_data(void **state)
{
    (void)state;
    static const int64_t channels[] = {256, 257, 287, 288, 289, 300, 383, 512, 527};
    uint64_t first = tu_env_seed(8000);
    int n = tu_env_count(40);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int spatial = tu_chance(&r, 60) ? 2 : tu_chance(&r, 50) ? 1 : 3;
        int64_t in[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
        int64_t most = tu_range(&r, 1, 99), positions = 1;
        for (int a = 0; a < spatial; a++) {
            in[a] = tu_range(&r, 1, spatial == 1 ? most : spatial == 2 ? 9 : 4);
            positions *= in[a];
        }
        assert_true(positions < 100);
        int64_t c = channels[tu_range(&r, 0, (int64_t)(sizeof channels / sizeof channels[0]) - 1)];
        tu_problem tp;
        int64_t k = tu_chance(&r, 25) ? tu_range(&r, 683, 800) : random_channels(&r, 300);
        tu_problem_init(&tp, spatial, tu_range(&r, 1, 3), c, k, in, kernel);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_DATA, &r, tu_chance(&r, 30));
    }
}

/* Channels-first backward-data from 100 positions on reads W in strips of
 * 16 of its columns (AVX-512; on 14x14-sized planes from two images and
 * 256 x 256 filters): channel counts off the strip and tile edges, planes
 * of 100-783 positions (a last block of a few columns), batch 2-3. */
static void test_strips_backward_data(void **state)
{
    (void)state;
    static const int64_t channels[] = {256, 257, 263, 271, 280, 300, 328, 512};
    uint64_t first = tu_env_seed(9000);
    int n = tu_env_count(16);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 10, 27), tu_range(&r, 10, 29)}, kernel[2] = {1, 1};
        int64_t c = channels[tu_range(&r, 0, (int64_t)(sizeof channels / sizeof channels[0]) - 1)];
        int64_t k = channels[tu_range(&r, 0, (int64_t)(sizeof channels / sizeof channels[0]) - 1)];
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 2, 3), c, k, in, kernel);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_DATA, &r, tu_chance(&r, 30));
    }
}

/* Channels-first backward-data makes W's strips (16 dx channels each) under
 * its tiles, a strip while the row tile before the first that reads it
 * runs, and the rest after the tiles where no whole panel ran: dx channels
 * 17-250 (several strips, a last partial one), planes of 4 positions (a
 * dot-product tail alone), 15-47 (one partial panel), 49-52 (a panel and a
 * tail) and 60-120 (several panels), batch 1-3, and filters enough (65 and
 * up) that these planes take the strips rather than the GEMM (2^21
 * multiply-adds under 100 positions, pw_avx512_covers). */
static void test_strips_made_under_tiles(void **state)
{
    (void)state;
    static const int64_t sides[][2] = {{2, 2}, {1, 4}, {3, 5}, {5, 9}, {7, 7}, {7, 8}, {4, 13}, {6, 11}, {9, 9}, {10, 12}};
    uint64_t first = tu_env_seed(9700);
    int n = tu_env_count(24);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        const int64_t *side = sides[tu_range(&r, 0, (int64_t)(sizeof sides / sizeof sides[0]) - 1)];
        int64_t in[2] = {side[0], side[1]}, kernel[2] = {1, 1};
        int64_t batch = tu_range(&r, 1, 3), c = tu_range(&r, 17, 250), k = tu_range(&r, 65, 300);
        int64_t macs = batch * c * side[0] * side[1];
        if (k * macs < ((int64_t)1 << 21))
            k = ((int64_t)1 << 21) / macs + 1;
        tu_problem tp;
        tu_problem_init(&tp, 2, batch, c, k, in, kernel);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_DATA, &r, tu_chance(&r, 30));
    }
}

/* Channels-first backward-data on planes of 1024+ positions (where the
 * AVX2 tiles take it) reads W in strips of 6 of its columns (a row
 * tile's): dx channel counts off the strips' and tiles' edges (1-13, 64, up
 * to 70), filters 1-130, planes of 1024-2100 positions (last panels of a
 * few columns), batch 1-2. */
static void test_strips_backward_data_avx2(void **state)
{
    (void)state;
    static const int64_t channels[] = {1, 5, 6, 7, 11, 12, 13, 64};
    uint64_t first = tu_env_seed(9500);
    int n = tu_env_count(24);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t h = tu_range(&r, 20, 42), w = tu_range(&r, (1024 + h - 1) / h, 2100 / h);
        int64_t in[2] = {h, w}, kernel[2] = {1, 1};
        int64_t c = tu_chance(&r, 50) ? channels[tu_range(&r, 0, (int64_t)(sizeof channels / sizeof channels[0]) - 1)]
                                       : tu_range(&r, 1, 70);
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 2), c, tu_range(&r, 1, 130), in, kernel);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, CONV_OP_BACKWARD_DATA, &r, tu_chance(&r, 30));
    }
}

/* Channels-last over fewer than 256 positions (AVX-512): backward-data
 * with W of 2 MiB or more (dx of 1024+ channels, or two images) reads W
 * in place 256 reduction steps at a time, as the transposed one; the
 * forward from 1024+ channels (2048+ from 128 positions) runs per image as
 * y^T = W x^T, its sums (with bias and ReLU) scattered across y. Channel
 * counts off the panel and tile edges, filter counts off the 256-step blocks
 * and the row tiles, planes of 1-63 positions, batch 1-4. */
static void test_last_few_positions(void **state)
{
    (void)state;
    static const int64_t channels[] = {600, 1024, 1031, 1100, 2048};
    static const int64_t filters[] = {513, 520, 900, 1000, 37, 130};
    uint64_t first = tu_env_seed(9500);
    int n = tu_env_count(16);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 1, 7), tu_range(&r, 1, 9)}, kernel[2] = {1, 1};
        const conv_op_t op = i % 2 ? CONV_OP_FORWARD : CONV_OP_BACKWARD_DATA;
        int64_t c = channels[tu_range(&r, op == CONV_OP_FORWARD ? 1 : 0, 4)];
        int64_t k = filters[tu_range(&r, 0, op == CONV_OP_FORWARD ? 5 : 3)];
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, c < 1024 ? 2 : 1, 4), c, k, in, kernel);
        tp.p.channels_last = 1;
        tp.bias = op == CONV_OP_FORWARD && tu_chance(&r, 70);
        tp.p.relu = op == CONV_OP_FORWARD && tu_chance(&r, 50);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, tu_chance(&r, 30));
    }
}

/* Channels-last backward-filter from up to 64 channels onto 128+ filters
 * runs as dW^T = x^T dy (AVX-512), a block of dW^T summed over chunks of
 * positions and written into dW transposed: channel counts off the tile
 * edges, filter counts off the panel edges, 1-3 images of up to 30x30
 * positions (several chunks), on contexts of 1, 4 and 7 threads (from 4
 * threads, more than a 128-filter dW^T has panels, its channels are split
 * into row blocks too; "threads=2" and "=3" in a failure mean 4 and 7). */
static void test_swapped_backward_filter(void **state)
{
    (void)state;
    static const int64_t channels[] = {1, 7, 8, 9, 16, 17, 33, 47, 48, 49, 63, 64};
    static const int64_t filters[] = {128, 129, 143, 144, 160, 200, 256, 300};
    static const int counts[3] = {1, 4, 7};
    conv_context_t ctxs[3];
    for (int i = 0; i < 3; i++) {
        assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctxs[i]));
        assert_ok(conv_context_set_threads(ctxs[i], counts[i]));
    }
    uint64_t first = tu_env_seed(9500);
    int n = tu_env_count(24);
    for (int i = 0; i < n; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        int64_t in[2] = {tu_range(&r, 1, 30), tu_range(&r, 1, 30)}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, tu_range(&r, 1, 3), channels[tu_range(&r, 0, 11)], filters[tu_range(&r, 0, 7)], in,
                        kernel);
        tp.p.channels_last = 1;
        tp.bias = tu_chance(&r, 50);
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_random_pass(ctxs, seed, &tp, CONV_OP_BACKWARD_FILTER, &r, tu_chance(&r, 30));
    }
    for (int i = 0; i < 3; i++)
        conv_context_destroy(ctxs[i]);
}

/* 1-D convolutions (stride 1, groups 1) forced to CONV_ALGO_IM2COL_GEMM,
 * which on AVX-512 unfolds their taps into this kernel's GEMM: channels-first
 * into its panels (forward and backward-data: B's rows; backward-filter:
 * its columns, over chunks of positions), channels-last forward and
 * backward-data as A's rows read tap by tap, in ranges of rows with the same
 * taps inside the source, backward-filter as dW^T = x^T dy, each tap's rows
 * over the positions its source lies in: both layouts, 1-6 taps (one tap padded), dilation 1-3 or far apart (up to 40, past a
 * panel), padding at either end from none to past the taps' reach (rows of
 * a panel all padding), lengths around the 48-column panel and a few
 * panels long (a last panel of dot-product columns), channel counts around
 * the tile and strip edges, bias and ReLU, batch 1-3. */
static void draw_taps(tu_rng *r, tu_problem *tp, conv_op_t *op, int wide)
{
    *op = (conv_op_t)tu_range(r, 0, 2);
    int64_t kernel[1] = {tu_range(r, 1, 6)}, in[1];
    const int64_t d = tu_chance(r, 20) ? tu_range(r, 4, 40) : tu_range(r, 1, 3);
    const int64_t reach = (kernel[0] - 1) * d;
    in[0] = tu_chance(r, 40) ? tu_range(r, 1, 60) : tu_range(r, 40, wide ? 400 : 160);
    tu_problem_init(tp, 1, tu_range(r, 1, 3), random_channels(r, wide ? 140 : 70),
                    random_channels(r, wide ? 140 : 70), in, kernel);
    tp->p.dilation[0] = d;
    tp->p.channels_last = tu_chance(r, 50);
    tp->desc_pad_begin[0] = tu_chance(r, 30) ? reach : tu_range(r, 0, reach + 3);
    tp->desc_pad_end[0] = tu_chance(r, 30) ? 0 : tu_range(r, 0, reach + 3);
    tp->bias = *op != CONV_OP_BACKWARD_DATA && tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = CONV_ALGO_IM2COL_GEMM;
}

static void test_unfolded_1d(void **state)
{
    (void)state;
    tu_check_solver_random(draw_taps, 0, 0, 0x1d00, 300, CONV_MATH_STRICT);
    tu_check_solver_random(draw_taps, 1, 0, 0x1d01, 40, CONV_MATH_STRICT);
    tu_check_solver_random(draw_taps, 1, 1, 0x1d02, 40, CONV_MATH_DEFAULT);
}

/* Prepared weights: W's panels where a pass packs all of W per call
 * (AVX-512: channels-first backward-data onto 256+ channels of a small
 * plane, channels-last forward and backward-data, strided too, with a last
 * panel of dot-product columns or a partial one), W^T for the other
 * channels-first backward-data (strided too); nothing to prepare where W is
 * read in place (channels-first forward) or on other CPUs. */
static void test_prepared_weights(void **state)
{
    (void)state;
    static const struct {
        int last;
        conv_op_t op;
        int64_t c, k, hw, stride;
        int packs;  /* on AVX-512 */
    } cases[] = {
        {0, CONV_OP_BACKWARD_DATA, 300, 40, 7, 1, 1}, {0, CONV_OP_BACKWARD_DATA, 257, 64, 9, 1, 1},
        {1, CONV_OP_FORWARD, 20, 50, 12, 1, 1},       {1, CONV_OP_FORWARD, 33, 101, 17, 2, 1},
        {1, CONV_OP_BACKWARD_DATA, 70, 24, 12, 1, 1}, {0, CONV_OP_BACKWARD_DATA, 70, 50, 28, 1, 1}, {0, CONV_OP_BACKWARD_DATA, 128, 200, 7, 1, 1},
        {0, CONV_OP_BACKWARD_DATA, 65, 90, 56, 2, 1},  {0, CONV_OP_FORWARD, 24, 40, 7, 1, 0},
        {1, CONV_OP_BACKWARD_DATA, 1030, 520, 7, 1, 1},
    };
    conv_context_t ctx = tu_contexts[1];
    const int avx512 = tu_cpu_isa(ctx) == TU_ISA_AVX512;
    tu_rng r;
    tu_seed(&r, 0x1a1a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t in[2] = {cases[i].hw, cases[i].hw}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, 2, cases[i].c, cases[i].k, in, kernel);
        tp.p.stride[0] = tp.p.stride[1] = cases[i].stride;
        tp.p.channels_last = cases[i].last;
        tp.bias = cases[i].op == CONV_OP_FORWARD;
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_check_prepared_weights(ctx, &tp, cases[i].op, &r, "gemm_1x1", avx512 && cases[i].packs);
    }
}

/* ReLU passes a NaN on (as the reference's "v < 0 ? 0 : v" does): one NaN
 * in x makes exactly the K outputs that read it NaN, in both layouts. */
static void test_relu_keeps_nan(void **state)
{
    (void)state;
    for (int last = 0; last < 2; last++) {
        int64_t in[2] = {5, 7}, kernel[2] = {1, 1};
        tu_problem tp;
        tu_problem_init(&tp, 2, 1, 16, 24, in, kernel);
        tp.p.channels_last = last;
        tp.p.relu = 1;
        tp.bias = 1;
        tp.algo = CONV_ALGO_GEMM_1X1;
        assert_true(tu_resolve(&tp));
        tu_case c;
        conv_desc_t d;
        tu_rng r;
        tu_seed(&r, 99);
        assert_ok(tu_case_make(&c, tu_contexts[0], &tp, 0));
        assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
        tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
        tu_set(&c.x, 3, NAN);
        assert_ok(tu_case_run(&c, tu_contexts[0], d, CONV_OP_FORWARD, NULL));
        int64_t nans = 0;
        for (int64_t i = 0; i < c.y.elems; i++)
            nans += isnan(tu_get(&c.y, i)) != 0;
        assert_int_equal(nans, 24);
        conv_desc_destroy(d);
        tu_case_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact),
        cmocka_unit_test(test_wide_exact),
        cmocka_unit_test(test_real_data),
        cmocka_unit_test(test_resnet_like),
        cmocka_unit_test(test_dealt_panels),
        cmocka_unit_test(test_wide_plane_in_place),
        cmocka_unit_test(test_streamed_filter),
        cmocka_unit_test(test_streamed_outputs),
        cmocka_unit_test(test_dot_filter),
        cmocka_unit_test(test_transposed_backward_data),
        cmocka_unit_test(test_strips_backward_data),
        cmocka_unit_test(test_strips_made_under_tiles),
        cmocka_unit_test(test_strips_backward_data_avx2),
        cmocka_unit_test(test_last_few_positions),
        cmocka_unit_test(test_unfolded_1d),
        cmocka_unit_test(test_filter_image_chunks),
        cmocka_unit_test(test_swapped_backward_filter),
        cmocka_unit_test(test_prepared_weights),
        cmocka_unit_test(test_relu_keeps_nan),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
