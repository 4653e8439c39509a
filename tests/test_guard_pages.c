/* Guard pages (issue 28): every CPU solver the engine lists
 * (conv_algo_list), forced on every pass, in both layouts and every dtype
 * it computes, with every buffer it touches placed against a PROT_NONE
 * page -- after its end, and in a second run before its start:
 *   - the caller's tensors (wrapped) and an exact-size caller workspace;
 *   - the library's own tensors, pool workspaces and plans' prepared
 *     weights, through a guarded allocator (conv_context_set_allocator).
 * A vector access that reaches one byte past a buffer (or one masked lane
 * the CPU does not suppress) crashes the test. Output widths are never
 * multiples of 4, 8 or 16, channel counts straddle a vector, outputs are
 * NaN-filled first and then compared with the reference (loosely: the
 * point is that every element was written, accuracy is the kernel tests'),
 * and each solver must have run somewhere: a solver that declines every
 * problem here fails the test instead of passing it untested. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "guard_memory.h"
#include "test_util.h"

/* A problem template: a layer shape a family of solvers takes, with the
 * output width left to the run (in[last] is the extra input width). */
typedef struct shape {
    const char *name;
    int spatial;
    int64_t n, c, k, groups;
    int64_t in_h, kernel, stride, dilation, pad;
} shape;

static const shape kShapes[] = {
    {"3x3 pad 1", 2, 2, 20, 24, 1, 5, 3, 1, 1, 1},          /* winograd, direct, implicit */
    {"3x3 valid wide", 2, 1, 40, 36, 1, 6, 3, 1, 1, 0},     /* two vectors of channels */
    {"1x1", 2, 2, 19, 33, 1, 3, 1, 1, 1, 0},                /* gemm_1x1, pointwise */
    {"1x1 onto 257", 2, 1, 257, 20, 1, 3, 1, 1, 1, 0},      /* gemm_1x1's transposed dx: masked scatters */
    {"depthwise 3x3", 2, 2, 24, 24, 24, 5, 3, 1, 1, 1},     /* depthwise_direct */
    {"depthwise 3x3 s2", 2, 1, 20, 20, 20, 7, 3, 2, 1, 1},  /* its stride-2 kernels */
    {"3x3 s2", 2, 2, 17, 40, 1, 7, 3, 2, 1, 1},             /* strided (phases) */
    {"7x7 s2 conv1", 2, 1, 3, 20, 1, 9, 7, 2, 1, 3},        /* few input channels */
    {"1-D k5 d2", 1, 2, 21, 18, 1, 1, 5, 1, 2, 4},          /* dilation */
    {"3-D 3x3x3", 3, 1, 5, 7, 1, 3, 3, 1, 1, 1},            /* 3-D */
    {"groups 2", 2, 2, 24, 20, 2, 4, 3, 1, 1, 1},           /* grouped */
};
enum { SHAPES = sizeof kShapes / sizeof kShapes[0] };

/* Output widths: none a multiple of 4, 8 or 16. */
static const int64_t kWidths[] = {1, 3, 5, 7, 9, 13, 15, 17, 30, 31, 33};
enum { WIDTHS = sizeof kWidths / sizeof kWidths[0] };

static const conv_dtype_t kDtypes[] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_FLOAT64, CONV_DTYPE_BFLOAT16};
static const conv_op_t kOps[] = {CONV_OP_FORWARD, CONV_OP_BACKWARD_DATA, CONV_OP_BACKWARD_FILTER};

/* The tolerance factor of the loose check (see the file comment): room for
 * Winograd's error (docs/algorithms.md) in float and double; bf16's
 * tolerance already holds its output rounding. */
static double loose(conv_dtype_t dtype)
{
    return dtype == CONV_DTYPE_BFLOAT16 ? 2.0 : 64.0;
}

static guard_side g_side; /* the allocator's side, read by guard_alloc_fn */

/* The problem of shape `s` whose output is `out_w` wide. */
static int make_problem(const shape *s, int64_t out_w, conv_dtype_t dtype, int channels_last,
                        conv_algo_t algo, int bias, int relu, tu_problem *tp)
{
    const int64_t span = s->dilation * (s->kernel - 1) + 1;
    const int64_t in_w = (out_w - 1) * s->stride + span - 2 * s->pad;
    if (in_w < 1)
        return 0;
    int64_t in[3] = {s->in_h, s->in_h, in_w}, kernel[3] = {s->kernel, s->kernel, s->kernel};
    in[s->spatial - 1] = in_w;
    tu_problem_init(tp, s->spatial, s->n, s->c, s->k, in, kernel);
    tp->p.groups = s->groups;
    for (int a = 0; a < s->spatial; a++) {
        tp->p.stride[a] = s->stride;
        tp->p.dilation[a] = s->dilation;
        tp->desc_pad_begin[a] = tp->desc_pad_end[a] = s->pad;
    }
    tp->p.channels_last = channels_last;
    tp->dtype = dtype;
    tp->bias = bias;
    tp->p.relu = relu;
    tp->algo = algo;
    return tu_resolve(tp);
}

typedef struct tally {
    int ran, declined;
    int declined_for_cpu; /* refusals naming what the CPU (or CONV_CPU_ISA) lacks */
} tally;

/* Runs one pass of tp on guarded memory; RAN, DECLINED, DECLINED_FOR_CPU
 * (a refusal naming a CPU feature: AVX-512, or a CONV_CPU_ISA cap), or
 * fails the test. */
enum { RAN, DECLINED, DECLINED_FOR_CPU };
static int run_guarded(conv_context_t ctx, const tu_problem *tp, conv_op_t op, int wrapped,
                       uint64_t seed, const char *what)
{
    tu_case c;
    conv_desc_t d = NULL;
    conv_workspace_t ws = NULL;
    void *ws_memory = NULL;
    const int wrap = !wrapped ? TU_OWNED : g_side == GUARD_AFTER ? TU_WRAP_GUARD_AFTER
                                                                 : TU_WRAP_GUARD_BEFORE;
    assert_ok(tu_case_make(&c, ctx, tp, wrap));
    assert_ok(tu_make_desc(tp, op, &d));
    size_t bytes = 0;
    conv_status_t s = conv_workspace_size(ctx, d, op, c.x.t, c.w.t, c.y.t, &bytes);
    if (s == CONV_STATUS_SUCCESS && wrapped) { /* else the pool's, through the allocator */
        ws_memory = guard_alloc(bytes, 1, g_side);
        assert_non_null(ws_memory);
        assert_ok(conv_workspace_wrap(ctx, ws_memory, bytes, &ws));
    }
    int verdict = RAN;
    if (s == CONV_STATUS_SUCCESS) {
        tu_rng r;
        tu_seed(&r, seed);
        tu_case_fill(&c, op, &r, 1);
        s = tu_case_run(&c, ctx, d, op, ws);
    }
    char msg[600];
    if (s == CONV_STATUS_UNSUPPORTED)
        verdict = strstr(conv_last_error(), "AVX-512") || strstr(conv_last_error(), "AMX") ||
                          strstr(conv_last_error(), "CONV_CPU_ISA")
                      ? DECLINED_FOR_CPU
                      : DECLINED;
    else if (s != CONV_STATUS_SUCCESS)
        fail_msg("%s: status %d: %s", what, (int)s, conv_last_error());
    else if (tu_case_check_loose(&c, op, loose(tp->dtype), msg, sizeof msg))
        fail_msg("%s: %s", what, msg);
    conv_workspace_destroy(ws);
    guard_free(ws_memory);
    conv_desc_destroy(d);
    tu_case_free(&c);
    return verdict;
}

/* The same pass through a plan whose weights are prepared (where the solver
 * prepares any): the prepared copy comes from the guarded allocator. */
static void run_prepared_plan(conv_context_t ctx, const tu_problem *tp, conv_op_t op,
                              uint64_t seed, const char *what)
{
    if (op == CONV_OP_BACKWARD_FILTER)
        return; /* its weights are the output */
    tu_case c;
    conv_desc_t d = NULL;
    conv_plan_t plan = NULL;
    assert_ok(tu_case_make(&c, ctx, tp, g_side == GUARD_AFTER ? TU_WRAP_GUARD_AFTER
                                                              : TU_WRAP_GUARD_BEFORE));
    assert_ok(tu_make_desc(tp, op, &d));
    int64_t xd[5], wd[5];
    const int nd = tu_x_dims(tp, xd);
    tu_w_dims(tp, wd);
    conv_status_t s = conv_plan_create(ctx, d, op, tp->dtype,
                                       tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST
                                                           : CONV_LAYOUT_CHANNELS_FIRST,
                                       nd, xd, wd, tp->bias && op == CONV_OP_FORWARD, &plan);
    if (s == CONV_STATUS_SUCCESS) {
        tu_rng r;
        tu_seed(&r, seed);
        tu_case_fill(&c, op, &r, 1);
        int prepared = 0;
        s = conv_plan_prepare_weights(plan, c.w.t, &prepared);
        if (s == CONV_STATUS_SUCCESS)
            s = op == CONV_OP_FORWARD
                    ? conv_plan_execute(plan, c.x.t, c.w.t, c.b.t, c.y.t, NULL)
                    : conv_plan_execute(plan, c.x.t, c.w.t, NULL, c.y.t, NULL);
        char msg[600];
        if (s != CONV_STATUS_SUCCESS)
            fail_msg("%s (plan, prepared weights): status %d: %s", what, (int)s, conv_last_error());
        if (tu_case_check_loose(&c, op, loose(tp->dtype), msg, sizeof msg))
            fail_msg("%s (plan, prepared weights): %s", what, msg);
    } else if (s != CONV_STATUS_UNSUPPORTED) {
        fail_msg("%s: conv_plan_create status %d: %s", what, (int)s, conv_last_error());
    }
    conv_plan_destroy(plan);
    conv_desc_destroy(d);
    tu_case_free(&c);
}

static void run_side(guard_side side)
{
    g_side = side;
    conv_algo_t algos[TU_MAX_ALGOS];
    const int nalgos = tu_cpu_algos(algos, TU_MAX_ALGOS, 0);
    tally tallies[TU_MAX_ALGOS] = {{0, 0, 0}};
    const long live_before = guard_live_blocks();
    for (int t = 0; t < 3; t++)
        assert_ok(conv_context_set_allocator(tu_contexts[t], guard_alloc_fn, guard_free_fn, &g_side));
    uint64_t seed = tu_env_seed(280000) + (side == GUARD_BEFORE ? 500000 : 0);
    for (int a = 0; a < nalgos; a++)
        for (size_t o = 0; o < sizeof kOps / sizeof kOps[0]; o++)
            for (size_t dt = 0; dt < sizeof kDtypes / sizeof kDtypes[0]; dt++)
                for (int layout = 0; layout < 2; layout++)
                    for (int sh = 0; sh < SHAPES; sh++, seed++) {
                        tu_rng r;
                        tu_seed(&r, seed);
                        const conv_op_t op = kOps[o];
                        const int bias = op != CONV_OP_BACKWARD_DATA && tu_chance(&r, 50);
                        const int relu = op == CONV_OP_FORWARD && tu_chance(&r, 30);
                        const int64_t width = kWidths[tu_range(&r, 0, WIDTHS - 1)];
                        tu_problem tp;
                        if (!make_problem(&kShapes[sh], width, kDtypes[dt], layout, algos[a], bias,
                                          relu, &tp))
                            continue;
                        conv_context_t ctx = tu_contexts[tu_range(&r, 0, 2)];
                        char what[700];
                        int len = snprintf(what, sizeof what, "guard %s, %s, seed %" PRIu64 ", %s: ",
                                           side == GUARD_AFTER ? "after" : "before",
                                           kShapes[sh].name, seed, tu_op_name(op));
                        tu_describe(&tp, what + len, sizeof what - (size_t)len);
                        /* odd seeds: the library's own tensors and pool workspace */
                        const int v = run_guarded(ctx, &tp, op, (seed & 1) == 0, seed, what);
                        if (v == RAN) {
                            tallies[a].ran++;
                            run_prepared_plan(ctx, &tp, op, seed, what);
                        } else {
                            tallies[a].declined++;
                            tallies[a].declined_for_cpu += v == DECLINED_FOR_CPU;
                        }
                    }
    for (int t = 0; t < 3; t++)
        assert_ok(conv_context_set_allocator(tu_contexts[t], NULL, NULL, NULL));
    /* A solver that ran nothing fails the test -- unless this CPU (or a
     * CONV_CPU_ISA cap) is why: bf16_gemm under CONV_CPU_ISA=baseline. */
    int untested = 0;
    for (int a = 0; a < nalgos; a++) {
        print_message("guard %-6s %-18s ran %4d, declined %4d (%d for this CPU)\n",
                      side == GUARD_AFTER ? "after" : "before", conv_algo_name(algos[a]),
                      tallies[a].ran, tallies[a].declined, tallies[a].declined_for_cpu);
        untested += tallies[a].ran == 0 && tallies[a].declined_for_cpu == 0;
    }
    if (untested)
        fail_msg("%d solver(s) ran no problem here: give them a shape (kShapes)", untested);
    /* Setting the default allocator released the idle pool workspaces. */
    assert_int_equal(guard_live_blocks(), live_before);
}

static void test_guard_after(void **state)
{
    (void)state;
    run_side(GUARD_AFTER);
}

static void test_guard_before(void **state)
{
    (void)state;
    run_side(GUARD_BEFORE);
}

/* Issue 28's reproducer: a 30x30 64->64 3x3 forward through AUTO (Winograd
 * where the CPU has AVX-512) with y ending at a page boundary. */
static void test_winograd_reproducer(void **state)
{
    (void)state;
    g_side = GUARD_AFTER;
    tu_problem tp;
    int64_t in[2] = {30, 30}, kernel[2] = {3, 3};
    tu_problem_init(&tp, 2, 1, 64, 64, in, kernel);
    tp.desc_pad_begin[0] = tp.desc_pad_begin[1] = tp.desc_pad_end[0] = tp.desc_pad_end[1] = 1;
    assert_true(tu_resolve(&tp));
    assert_int_equal(run_guarded(tu_contexts[0], &tp, CONV_OP_FORWARD, 1, 28, "issue 28"), RAN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_winograd_reproducer),
        cmocka_unit_test(test_guard_after),
        cmocka_unit_test(test_guard_before),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
