/* Kernels generated at run time (src/cpu/jit): direct_avx512's tiles, of
 * every pass, and direct_narrow's blocks (positions in the vector).
 *
 * - The generated tiles give the compiled tiles' bits: every output of
 *   random forward, backward-data and backward-filter problems (strides,
 *   dilation, groups, both layouts, strict and default math, 1-3 threads)
 *   is compared bit for bit with the same run in a child process with
 *   CONV_CPU_JIT=0.
 *   (Both are also checked against the reference by test_direct, which
 *   ctest runs with and without CONV_CPU_JIT.)
 * - W^X: no mapping of the process is ever writable and executable.
 * - Generated once: the first call of a problem maps new code, repeated
 *   calls (one-shot and plans) map none.
 * Skipped where no kernels are generated (no AVX-512 or AVX2, a build without
 * Xbyak, CONV_CPU_ISA=baseline or CONV_CPU_JIT=0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"

enum {
    kProblems = 180,
    kNarrowProblems = 40,
    kManyTapProblems = 30,
    kAllProblems = kProblems + kNarrowProblems + kManyTapProblems
};

static int generating(void)
{
    conv_context_t ctx;
    char name[256] = "";
    if (conv_context_create(CONV_DEVICE_CPU, 0, &ctx) != CONV_STATUS_SUCCESS) return 0;
    conv_context_get_device_name(ctx, name, sizeof name);
    conv_context_destroy(ctx);
    return strstr(name, "+jit)") != NULL;
}

/* Every pass of direct_avx512: kernels 1..7, strides 1..3,
 * dilation, padding, groups, channel counts around 16-64 (every tile width
 * and remainder), both layouts. */
static void draw(tu_rng *r, tu_problem *tp, conv_op_t *op)
{
    conv_algo_t algo;
    assert_int_equal(conv_algo_from_name("direct_avx512", &algo), CONV_STATUS_SUCCESS);
    do {
        int spatial = tu_chance(r, 20) ? 1 : 2;
        int64_t in[2], kernel[2];
        for (int a = 0; a < spatial; a++) {
            kernel[a] = tu_range(r, 1, 7);
            in[a] = tu_range(r, 1, 30);
        }
        int64_t groups = tu_chance(r, 20) ? 2 : 1;
        tu_problem_init(tp, spatial, tu_range(r, 1, 2), groups * tu_range(r, 1, 70),
                        groups * tu_range(r, 1, 70), in, kernel);
        tp->p.groups = groups;
        for (int a = 0; a < spatial; a++) {
            tp->p.stride[a] = tu_range(r, 1, 3);
            tp->p.dilation[a] = tu_chance(r, 20) ? 2 : 1;
            tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a]);
            tp->desc_pad_end[a] = tu_range(r, 0, kernel[a]);
        }
        tp->p.channels_last = tu_chance(r, 40);
        tp->bias = tu_chance(r, 50);
        tp->p.relu = tu_chance(r, 30);
        tp->algo = algo;
        int64_t pick = tu_range(r, 0, 2);
        *op = pick == 0 ? CONV_OP_FORWARD : pick == 1 ? CONV_OP_BACKWARD_DATA : CONV_OP_BACKWARD_FILTER;
        if (*op != CONV_OP_FORWARD) tp->bias = 0, tp->p.relu = 0;
        /* Backward-filter generates its tiles for up to 16 filters a group. */
        if (*op == CONV_OP_BACKWARD_FILTER && tu_chance(r, 75)) tp->p.k = groups * tu_range(r, 1, 16);
    } while (!tu_resolve(tp));
}

/* direct_narrow's passes (src/cpu/jit/narrow_tile.h): forward onto 1-8
 * channels or from 2-4 onto 9-64, backward-data onto 1-8, channels-first
 * at stride 1, windows of 1-7 columns (what the generator takes) and 1-5
 * rows, 1-40 source channels (past 32: two blocks summed apart), rows of
 * 16-80 columns, so blocks whose rows lie in the source and blocks that
 * overhang it. */
static void draw_narrow(tu_rng *r, tu_problem *tp, conv_op_t *op)
{
    conv_algo_t algo;
    assert_int_equal(conv_algo_from_name("direct_avx512", &algo), CONV_STATUS_SUCCESS);
    do {
        *op = tu_chance(r, 70) ? CONV_OP_FORWARD : CONV_OP_BACKWARD_DATA;
        int64_t in[2] = {tu_range(r, 4, 30), tu_range(r, 16, 80)}, kernel[2] = {tu_range(r, 1, 5), tu_range(r, 1, 7)};
        const int64_t few = tu_range(r, 1, 8), many = tu_range(r, 1, 40);
        int64_t c = *op == CONV_OP_FORWARD ? many : few, k = *op == CONV_OP_FORWARD ? few : many;
        if (*op == CONV_OP_FORWARD && tu_chance(r, 40)) c = tu_range(r, 2, 4), k = tu_range(r, 9, 64);
        tu_problem_init(tp, 2, tu_range(r, 1, 2), c, k, in, kernel);
        for (int a = 0; a < 2; a++) {
            tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a] - 1);
            tp->desc_pad_end[a] = tu_range(r, 0, kernel[a] - 1);
        }
        tp->bias = *op == CONV_OP_FORWARD && tu_chance(r, 50);
        tp->p.relu = *op == CONV_OP_FORWARD && tu_chance(r, 30);
        tp->algo = algo;
    } while (!tu_resolve(tp));
}

/* direct_avx512's tiles over more taps a channel than their code takes
 * unrolled (src/cpu/jit/direct_tile.cpp): 3-D kernels of 50-245 taps
 * (ResNet3D's 3x7x7 conv1 among them), which the generator runs as a loop
 * over the kernel's slices or rows where the taps and the positions that
 * read the source repeat, padding in every dimension (tiles on the
 * borders, slices whose depth taps read padding), forward and
 * backward-data, few source channels onto up to 70. */
/* (Whether a draw loops depends on the tile chosen for it; test_direct_tile
 * calls such tiles directly and fails where none is generated.) */
static void draw_many_taps(tu_rng *r, tu_problem *tp, conv_op_t *op)
{
    conv_algo_t algo;
    assert_int_equal(conv_algo_from_name("direct_avx512", &algo), CONV_STATUS_SUCCESS);
    do {
        *op = tu_chance(r, 70) ? CONV_OP_FORWARD : CONV_OP_BACKWARD_DATA;
        int64_t kernel[3] = {tu_range(r, 2, 5), tu_range(r, 5, 7), tu_range(r, 5, 7)};
        int64_t in[3] = {tu_range(r, 2, 6), tu_range(r, 6, 20), tu_range(r, 6, 24)};
        const int64_t few = tu_range(r, 1, 4), many = tu_range(r, 1, 70);
        tu_problem_init(tp, 3, tu_range(r, 1, 2), *op == CONV_OP_FORWARD ? few : many,
                        *op == CONV_OP_FORWARD ? many : few, in, kernel);
        for (int a = 0; a < 3; a++) {
            tp->p.stride[a] = a > 0 && tu_chance(r, 50) ? 2 : 1;
            tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a] / 2 + 1);
            tp->desc_pad_end[a] = tu_range(r, 0, kernel[a] / 2 + 1);
        }
        tp->p.channels_last = tu_chance(r, 25);
        tp->bias = *op == CONV_OP_FORWARD && tu_chance(r, 50);
        tp->algo = algo;
    } while (!tu_resolve(tp));
}

/* Problem i of the fixed sequence: direct_avx512's, direct_narrow's, then
 * direct_avx512's over many taps. */
static void draw_problem(int i, tu_rng *r, tu_problem *tp, conv_op_t *op)
{
    tu_seed(r, 0x717 + (uint64_t)i);
    if (i < kProblems)
        draw(r, tp, op);
    else if (i < kProblems + kNarrowProblems)
        draw_narrow(r, tp, op);
    else
        draw_many_taps(r, tp, op);
}

/* Runs problem i of the fixed sequence and returns its output's bytes
 * (malloc'd, *bytes long). */
static void *run_problem(conv_context_t ctxs[3], int i, size_t *bytes)
{
    tu_rng r;
    tu_problem tp;
    conv_op_t op;
    draw_problem(i, &r, &tp, &op);
    conv_context_t ctx = ctxs[i % 3];
    assert_ok(conv_context_set_math(ctx, i % 2 ? CONV_MATH_STRICT : CONV_MATH_DEFAULT));
    tu_case c;
    assert_ok(tu_case_make(&c, ctx, &tp, TU_OWNED));
    tu_case_fill(&c, op, &r, 1);
    conv_desc_t desc;
    assert_ok(tu_make_desc(&tp, op, &desc));
    assert_ok(tu_case_run(&c, ctx, desc, op, NULL));
    tu_tensor *outs[2];
    tu_case_outputs(&c, op, outs);
    *bytes = outs[0]->bytes;
    void *copy = malloc(*bytes ? *bytes : 1);
    assert_non_null(copy);
    tu_copy(copy, outs[0]->data, *bytes);
    conv_desc_destroy(desc);
    tu_case_free(&c);
    return copy;
}

static void contexts(conv_context_t ctxs[3])
{
    for (int t = 0; t < 3; t++) {
        assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctxs[t]));
        assert_ok(conv_context_set_threads(ctxs[t], t + 1));
    }
}

/* The child: every problem's output, in order, into `path`. */
static int emit(const char *path)
{
    conv_context_t ctxs[3];
    contexts(ctxs);
    FILE *f = fopen(path, "wb");
    if (!f) return 2;
    for (int i = 0; i < kAllProblems; i++) {
        size_t bytes;
        void *out = run_problem(ctxs, i, &bytes);
        if (fwrite(out, 1, bytes, f) != bytes) return 2;
        free(out);
    }
    for (int t = 0; t < 3; t++) conv_context_destroy(ctxs[t]);
    return fclose(f) == 0 ? 0 : 2;
}

static void test_same_bits_as_compiled(void **state)
{
    (void)state;
    if (!generating()) skip();
    char path[] = "/tmp/libconv_jit_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CONV_CPU_JIT", "0", 1);
        execl("/proc/self/exe", "test_jit", "--emit", path, (char *)NULL);
        _exit(3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    conv_context_t ctxs[3];
    contexts(ctxs);
    for (int i = 0; i < kAllProblems; i++) {
        size_t bytes;
        unsigned char *out = run_problem(ctxs, i, &bytes);
        unsigned char *compiled = malloc(bytes ? bytes : 1);
        assert_int_equal(fread(compiled, 1, bytes, f), bytes);
        if (memcmp(out, compiled, bytes) != 0) {
            tu_rng r;
            tu_problem tp;
            conv_op_t op;
            draw_problem(i, &r, &tp, &op);
            char what[512];
            tu_describe(&tp, what, sizeof what);
            fail_msg("problem %d (%s %s): generated and compiled tiles differ", i, tu_op_name(op), what);
        }
        free(out);
        free(compiled);
    }
    fclose(f);
    unlink(path);
    for (int t = 0; t < 3; t++) conv_context_destroy(ctxs[t]);
}

/* Mappings of the process: bytes mapped executable and anonymous (the
 * generated code's), and how many mappings are writable and executable. */
static void mappings(unsigned long *anonymous_exec, int *writable_exec)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    *anonymous_exec = 0;
    *writable_exec = 0;
    while (fgets(line, sizeof line, f)) {
        char perms[8] = "", path[512] = "";
        unsigned long lo, hi, off, inode;
        char dev[32];
        int n = sscanf(line, "%lx-%lx %7s %lx %31s %lu %511s", &lo, &hi, perms, &off, dev, &inode, path);
        if (n < 6) continue;
        if (perms[1] == 'w' && perms[2] == 'x') *writable_exec += 1;
        if (perms[2] == 'x' && inode == 0 && path[0] == '\0') *anonymous_exec += hi - lo;
    }
    fclose(f);
}

static void run_first(conv_context_t ctxs[3], int count)
{
    for (int i = 0; i < count; i++) {
        size_t bytes;
        free(run_problem(ctxs, i, &bytes));
    }
}

static void test_w_xor_x_and_generated_once(void **state)
{
    (void)state;
    if (!generating()) skip();
    conv_context_t ctxs[3];
    contexts(ctxs);
    unsigned long before, first, again;
    int wx;
    mappings(&before, &wx);
    assert_int_equal(wx, 0);
    run_first(ctxs, 20);
    mappings(&first, &wx);
    assert_int_equal(wx, 0);
    assert_true(first > before); /* code was generated */
    /* The same problems again, one-shot (through each context's plan
     * cache) and on fresh contexts: no new code. */
    for (int round = 0; round < 2; round++) run_first(ctxs, 20);
    for (int t = 0; t < 3; t++) conv_context_destroy(ctxs[t]);
    contexts(ctxs);
    run_first(ctxs, 20);
    mappings(&again, &wx);
    assert_int_equal(wx, 0);
    assert_int_equal(again, first);
    for (int t = 0; t < 3; t++) conv_context_destroy(ctxs[t]);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--emit") == 0) return emit(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_w_xor_x_and_generated_once),
        cmocka_unit_test(test_same_bits_as_compiled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
