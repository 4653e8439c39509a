/*
 * test_conv_random.c -- every pass against the naive reference on random
 * problems: rank 1/2/3, both layouts, groups (depthwise too), stride and
 * dilation 1-3, asymmetric and automatic padding, batch 0/1/more, bias and
 * relu on/off, fp32/fp64, forced algorithms (refused where they do not
 * apply, output untouched) and AUTO, contexts with 1, 2 and 3 threads,
 * workspaces of every kind. Outputs start as NaN so an element
 * never written fails. Integer data in [-3, 3] keeps every sum exact in
 * fp32, so those comparisons are exact; a smaller set uses real data with a
 * rounding tolerance.
 *
 * A failure prints its seed; CONV_TEST_SEED=<seed> CONV_TEST_COUNT=1 reruns
 * just that problem.
 */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_PROBLEMS 1000 /* per pass */
#define REAL_PROBLEMS 120  /* per pass */

static conv_context_t contexts[3]; /* 1, 2 and 3 threads */
static conv_workspace_t shared_ws; /* library-owned, reused by many calls */

/* What the problems covered, so a generator change cannot silently drop a case. */
typedef struct coverage {
    int problems, refused, rank[4], layout[2], grouped, depthwise, multiplier, auto_pad[4];
    int batch0, batch1, batch_many, bias, relu, dtype[2], algo[4], threads[3], ws_mode[4];
    int stride_gt1, dilation_gt1, asymmetric, kernel_gt_stride, kernel_lt_stride, wrapped;
} coverage;

static void count(coverage *cv, const tu_problem *tp, int threads, int ws_mode, int wrap)
{
    const ref_problem *p = &tp->p;
    cv->problems++;
    cv->rank[p->spatial]++;
    cv->layout[p->channels_last]++;
    cv->grouped += p->groups > 1 && p->groups < p->c;
    cv->depthwise += p->groups == p->c && p->c > 1;
    cv->multiplier += p->groups == p->c && p->k > p->c;
    cv->auto_pad[tp->auto_pad]++;
    cv->batch0 += p->n == 0;
    cv->batch1 += p->n == 1;
    cv->batch_many += p->n > 1;
    cv->bias += tp->bias;
    cv->relu += p->relu;
    cv->dtype[tp->dtype == CONV_DTYPE_FLOAT64]++;
    cv->algo[tp->algo]++;
    cv->threads[threads - 1]++;
    cv->ws_mode[ws_mode]++;
    cv->wrapped += wrap;
    for (int a = 0; a < p->spatial; a++) {
        cv->stride_gt1 += p->stride[a] > 1;
        cv->dilation_gt1 += p->dilation[a] > 1;
        cv->asymmetric += p->pad_begin[a] != tp->pad_end[a];
        cv->kernel_gt_stride += p->kernel[a] > p->stride[a];
        cv->kernel_lt_stride += p->kernel[a] < p->stride[a];
    }
}

static void assert_covered(coverage cv_copy, conv_op_t op)
{
    coverage *cv = &cv_copy;
    if (op == CONV_OP_BACKWARD_DATA)
        cv->bias = 1; /* that pass takes no bias */
#define ITEM(field) {#field, cv->field}
    const struct {
        const char *name;
        int count;
    } every[] = {
        ITEM(rank[1]),     ITEM(rank[2]),     ITEM(rank[3]),      ITEM(layout[0]),
        ITEM(layout[1]),   ITEM(grouped),     ITEM(depthwise),    ITEM(multiplier),
        ITEM(auto_pad[0]), ITEM(auto_pad[1]), ITEM(auto_pad[2]),  ITEM(auto_pad[3]),
        ITEM(batch0),      ITEM(batch1),      ITEM(batch_many),   ITEM(bias),
        ITEM(relu),        ITEM(dtype[0]),    ITEM(dtype[1]),     ITEM(algo[0]),
        ITEM(algo[1]),     ITEM(algo[2]),     ITEM(algo[3]),      ITEM(threads[0]),
        ITEM(threads[1]),  ITEM(threads[2]),  ITEM(ws_mode[0]),   ITEM(ws_mode[1]),
        ITEM(ws_mode[2]),  ITEM(ws_mode[3]),  ITEM(stride_gt1),   ITEM(dilation_gt1),
        ITEM(asymmetric),  ITEM(kernel_gt_stride), ITEM(kernel_lt_stride), ITEM(wrapped),
        ITEM(refused),
    };
#undef ITEM
    for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
        if (every[i].count == 0)
            fail_msg("%s: no problem drew %s in %d problems", tu_op_name(op), every[i].name,
                     cv->problems);
}

static int setup(void **state)
{
    (void)state;
    if (tu_thread_contexts_create(contexts, 3) != CONV_STATUS_SUCCESS)
        return -1;
    return conv_workspace_create(contexts[0], &shared_ws) == CONV_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    conv_workspace_destroy(shared_ws);
    tu_thread_contexts_destroy(contexts, 3);
    return 0;
}

/* The workspace a call gets: none (the context's pool), the shared one, one
 * wrapping exactly conv_workspace_size() bytes, or a fresh library-owned one. */
typedef struct ws_choice {
    conv_workspace_t ws;
    int owned;
    void *memory;
} ws_choice;

static conv_status_t choose_workspace(ws_choice *w, int mode, conv_context_t ctx,
                                      conv_desc_t d, conv_op_t op, tu_case *c)
{
    memset(w, 0, sizeof *w);
    if (mode == 1) {
        w->ws = shared_ws;
    } else if (mode == 2) {
        size_t bytes = 0;
        conv_status_t s = conv_workspace_size(ctx, d, op, c->x.t, c->w.t, c->y.t, &bytes);
        if (s != CONV_STATUS_SUCCESS)
            return s;
        w->memory = malloc(bytes + 1);
        w->owned = 1;
        return conv_workspace_wrap(ctx, w->memory, bytes, &w->ws);
    } else if (mode == 3) {
        w->owned = 1;
        return conv_workspace_create(ctx, &w->ws);
    }
    return CONV_STATUS_SUCCESS;
}

static void release_workspace(ws_choice *w)
{
    if (w->owned)
        conv_workspace_destroy(w->ws);
    free(w->memory);
}

/* Forces a random algorithm (or AUTO), usually reshaping the problem so the
 * forced one applies, sometimes not so its refusal is tested. */
static void force_random_algorithm(tu_rng *r, tu_problem *tp)
{
    int64_t pick = tu_range(r, 0, 19);
    tp->algo = pick < 7    ? CONV_ALGO_AUTO
               : pick < 13 ? CONV_ALGO_IM2COL_GEMM
               : pick < 16 ? CONV_ALGO_GEMM_1X1
                           : CONV_ALGO_DEPTHWISE_DIRECT;
    if (tp->algo == CONV_ALGO_GEMM_1X1) {
        /* dilation of a 1-tap kernel is moot; keep it 1 so eligibility is unambiguous */
        for (int a = 0; a < tp->p.spatial; a++)
            tp->p.dilation[a] = 1;
        tu_resolve(tp);
        if (tu_chance(r, 60)) {
            tu_make_1x1(tp);
            if (tu_chance(r, 30)) { /* a strided 1x1 layer, as ResNet's shortcuts */
                for (int a = 0; a < tp->p.spatial; a++)
                    tp->p.stride[a] = tu_range(r, 1, 3);
                tu_resolve(tp);
            }
        }
    } else if (tp->algo == CONV_ALGO_DEPTHWISE_DIRECT && tu_chance(r, 60)) {
        tp->p.groups = tp->p.c;
        tp->p.k = tp->p.c * tu_range(r, 1, 3);
    }
}

/* Runs problem tp (drawn from `seed`) as pass `op`, with threads, workspace
 * and tensor memory drawn from r; fails the test naming seed and problem. */
static void run_problem(conv_op_t op, uint64_t seed, tu_problem *tp, tu_rng *r, int real,
                        coverage *cv)
{
    if (op == CONV_OP_BACKWARD_DATA)
        tp->bias = 0; /* no bias tensor in that pass */
    int threads = (int)tu_range(r, 1, 3), ws_mode = (int)tu_range(r, 0, 3);
    int wrap = tu_chance(r, 50);
    conv_context_t ctx = contexts[threads - 1];
    conv_status_t want = tu_algo_applies(tp) ? CONV_STATUS_SUCCESS : CONV_STATUS_UNSUPPORTED;
    count(cv, tp, threads, ws_mode, wrap);
    cv->refused += want != CONV_STATUS_SUCCESS;

    char what[1024], msg[512];
    int len = snprintf(what, sizeof what, "seed %" PRIu64 " %s threads=%d ws_mode=%d wrap=%d ",
                       seed, tu_op_name(op), threads, ws_mode, wrap);
    tu_describe(tp, what + len, sizeof what - (size_t)len);

    tu_case c;
    conv_desc_t d;
    conv_status_t s = tu_case_make(&c, ctx, tp, wrap);
    if (s == CONV_STATUS_SUCCESS)
        s = tu_make_desc(tp, op, &d);
    if (s != CONV_STATUS_SUCCESS)
        fail_msg("%s: setup status %d: %s", what, (int)s, conv_last_error());

    /* the library's shape inference agrees with the test's */
    int64_t xd[5], wd[5], yd[5], got[5];
    int nd = tu_x_dims(tp, xd);
    tu_w_dims(tp, wd);
    tu_y_dims(tp, yd);
    s = conv_output_dims(d, nd, xd, wd, got);
    if (s != CONV_STATUS_SUCCESS || memcmp(got, yd, sizeof(int64_t) * (size_t)nd) != 0)
        fail_msg("%s: conv_output_dims status %d: %s", what, (int)s, conv_last_error());

    tu_case_fill(&c, op, r, real);
    tu_snapshot snap;
    tu_snapshot_take(&snap, &c, op);
    ws_choice w;
    s = choose_workspace(&w, ws_mode, ctx, d, op, &c);
    if (s != CONV_STATUS_SUCCESS && !(s == want && ws_mode == 2))
        fail_msg("%s: workspace status %d: %s", what, (int)s, conv_last_error());
    if (s == CONV_STATUS_SUCCESS)
        s = tu_case_run(&c, ctx, d, op, w.ws);
    if (s != want)
        fail_msg("%s: status %d (%s), want %d: %s", what, (int)s, conv_status_string(s),
                 (int)want, conv_last_error());
    if (want != CONV_STATUS_SUCCESS) {
        if (!tu_snapshot_same(&snap, &c, op))
            fail_msg("%s: a refused call wrote its output", what);
        if (conv_last_error()[0] == '\0')
            fail_msg("%s: refused without a message", what);
    } else if (tu_case_check(&c, op, !real, msg, sizeof msg)) {
        fail_msg("%s: %s", what, msg);
    }
    tu_snapshot_free(&snap);
    release_workspace(&w);
    conv_desc_destroy(d);
    tu_case_free(&c);
}

static void run_one(conv_op_t op, uint64_t seed, int real, coverage *cv)
{
    tu_rng r;
    tu_problem tp;
    tu_seed(&r, seed);
    tu_random_problem(&r, &tp);
    force_random_algorithm(&r, &tp);
    run_problem(op, seed, &tp, &r, real, cv);
}

static void run_many(conv_op_t op, uint64_t base, int problems, int real)
{
    coverage cv;
    memset(&cv, 0, sizeof cv);
    uint64_t first = tu_env_seed(base);
    int n = tu_env_count(problems);
    for (int i = 0; i < n; i++)
        run_one(op, first + (uint64_t)i, real, &cv);
    print_message("%s %s: %d problems (seeds %" PRIu64 "..%" PRIu64 "), %d forced-algorithm refusals, "
                  "%d empty batches, %d/%d/%d of rank 1/2/3\n",
                  tu_op_name(op), real ? "real data" : "integer data", cv.problems, first,
                  first + (uint64_t)n - 1, cv.refused, cv.batch0, cv.rank[1], cv.rank[2],
                  cv.rank[3]);
    if (n == problems && !real)
        assert_covered(cv, op);
}

/* Bigger problems that reach the library's blocking: several position tiles
 * per image, depthwise kernels wider than 32 taps, rows longer than 64,
 * long reductions over the batch. Integer data still sums exactly. */
static void large_problem(tu_rng *r, tu_problem *tp, int kind)
{
    int64_t in[3], kernel[3] = {3, 3, 3};
    switch (kind % 4) {
    case 0: /* 2-D with many input channels */
        in[0] = tu_range(r, 24, 36);
        in[1] = tu_range(r, 24, 36);
        tu_problem_init(tp, 2, tu_range(r, 1, 2), tu_range(r, 40, 64), tu_range(r, 2, 6), in,
                        kernel);
        break;
    case 1: /* 1-D depthwise, long rows, wide kernels */
        in[0] = tu_range(r, 150, 300);
        kernel[0] = tu_range(r, 33, 40);
        tu_problem_init(tp, 1, tu_range(r, 1, 3), tu_range(r, 2, 5), 1, in, kernel);
        tp->p.groups = tp->p.c;
        tp->p.k = tp->p.c * tu_range(r, 1, 2);
        tp->p.dilation[0] = tu_range(r, 1, 2);
        break;
    case 2: /* 3-D cube */
        in[0] = in[1] = in[2] = tu_range(r, 8, 12);
        tu_problem_init(tp, 3, 1, tu_range(r, 4, 8), tu_range(r, 2, 4), in, kernel);
        break;
    default: /* a batch of images for the filter gradient, maybe grouped */
        in[0] = tu_range(r, 20, 30);
        in[1] = tu_range(r, 20, 30);
        tu_problem_init(tp, 2, tu_range(r, 4, 6), 6, 6, in, kernel);
        tp->p.groups = tu_chance(r, 50) ? 3 : 1;
        break;
    }
    for (int a = 0; a < tp->p.spatial; a++) {
        tp->p.stride[a] = tu_range(r, 1, 2);
        tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a] / 2);
        tp->desc_pad_end[a] = tu_range(r, 0, kernel[a] / 2);
    }
    tp->p.channels_last = tu_chance(r, 50);
    tp->dtype = tu_chance(r, 50) ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
    tp->bias = tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = (conv_algo_t)tu_range(r, 0, 3);
    tu_resolve(tp);
    if (!tu_algo_applies(tp))
        tp->algo = CONV_ALGO_AUTO;
}

static void test_large_problems(void **state)
{
    (void)state;
    coverage cv;
    memset(&cv, 0, sizeof cv);
    uint64_t first = tu_env_seed(800000);
    int n = tu_env_count(8);
    for (int op = 0; op < 3; op++) {
        for (int i = 0; i < n; i++) {
            tu_rng r;
            tu_problem tp;
            uint64_t seed = first + (uint64_t)i;
            tu_seed(&r, seed);
            large_problem(&r, &tp, i);
            run_problem((conv_op_t)op, seed, &tp, &r, 0, &cv);
        }
    }
    print_message("large problems: %d (seeds %" PRIu64 "..%" PRIu64 " per pass)\n", cv.problems,
                  first, first + (uint64_t)n - 1);
}

static void test_forward_exact(void **state)
{
    (void)state;
    run_many(CONV_OP_FORWARD, 100000, EXACT_PROBLEMS, 0);
}

static void test_backward_data_exact(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_DATA, 200000, EXACT_PROBLEMS, 0);
}

static void test_backward_filter_exact(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_FILTER, 300000, EXACT_PROBLEMS, 0);
}

static void test_forward_real(void **state)
{
    (void)state;
    run_many(CONV_OP_FORWARD, 400000, REAL_PROBLEMS, 1);
}

static void test_backward_data_real(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_DATA, 500000, REAL_PROBLEMS, 1);
}

static void test_backward_filter_real(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_FILTER, 600000, REAL_PROBLEMS, 1);
}

/* Forced algorithms on problems they do not apply to: UNSUPPORTED with a
 * message, every tensor untouched, for every pass; and accepted (and right)
 * on problems they apply to. */
static void test_forced_algorithms(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        conv_algo_t algo;
        int64_t kernel, stride, pad_b, pad_e, c, groups;
        int ok;
    } cases[] = {
        {"1x1 on 3x1", CONV_ALGO_GEMM_1X1, 3, 1, 0, 0, 4, 1, 0},
        {"1x1 stride 2", CONV_ALGO_GEMM_1X1, 1, 2, 0, 0, 4, 1, 1},
        {"1x1 pad begin", CONV_ALGO_GEMM_1X1, 1, 1, 1, 0, 4, 1, 0},
        {"1x1 pad end", CONV_ALGO_GEMM_1X1, 1, 1, 0, 1, 4, 1, 0},
        {"1x1 pointwise", CONV_ALGO_GEMM_1X1, 1, 1, 0, 0, 4, 2, 1},
        {"depthwise on groups 1", CONV_ALGO_DEPTHWISE_DIRECT, 3, 1, 1, 1, 4, 1, 0},
        {"depthwise on groups 2 of 4", CONV_ALGO_DEPTHWISE_DIRECT, 3, 1, 1, 1, 4, 2, 0},
        {"depthwise on depthwise", CONV_ALGO_DEPTHWISE_DIRECT, 3, 2, 1, 0, 4, 4, 1},
        {"im2col on pointwise", CONV_ALGO_IM2COL_GEMM, 1, 1, 0, 0, 4, 4, 1},
    };
    tu_rng r;
    tu_seed(&r, 77);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int op = 0; op < 3; op++) {
            const int64_t in[2] = {6, 5}, k[2] = {cases[i].kernel, 1};
            char what[128];
            tu_problem tp;
            tu_problem_init(&tp, 2, 2, cases[i].c, 8, in, k);
            tp.p.groups = cases[i].groups;
            tp.p.stride[1] = cases[i].stride;
            tp.desc_pad_begin[1] = cases[i].pad_b;
            tp.desc_pad_end[1] = cases[i].pad_e;
            tp.bias = op != CONV_OP_BACKWARD_DATA;
            tp.algo = cases[i].algo;
            assert_true(tu_resolve(&tp));
            assert_int_equal(tu_algo_applies(&tp), cases[i].ok); /* the tests' own rule */
            snprintf(what, sizeof what, "%s (%s)", cases[i].name, tu_op_name((conv_op_t)op));
            tu_case c;
            conv_desc_t d;
            assert_ok(tu_case_make(&c, contexts[1], &tp, 0));
            assert_ok(tu_make_desc(&tp, (conv_op_t)op, &d));
            tu_case_fill(&c, (conv_op_t)op, &r, 0);
            tu_snapshot snap;
            tu_snapshot_take(&snap, &c, (conv_op_t)op);
            conv_status_t s = tu_case_run(&c, contexts[1], d, (conv_op_t)op, NULL);
            char msg[512];
            if (cases[i].ok) {
                if (s != CONV_STATUS_SUCCESS)
                    fail_msg("%s: status %d: %s", what, (int)s, conv_last_error());
                if (tu_case_check(&c, (conv_op_t)op, 1, msg, sizeof msg))
                    fail_msg("%s: %s", what, msg);
            } else {
                if (s != CONV_STATUS_UNSUPPORTED || conv_last_error()[0] == '\0')
                    fail_msg("%s: status %d, want UNSUPPORTED with a message", what, (int)s);
                if (!tu_snapshot_same(&snap, &c, (conv_op_t)op))
                    fail_msg("%s: the refused call wrote its output", what);
            }
            tu_snapshot_free(&snap);
            conv_desc_destroy(d);
            tu_case_free(&c);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_exact),
        cmocka_unit_test(test_backward_data_exact),
        cmocka_unit_test(test_backward_filter_exact),
        cmocka_unit_test(test_large_problems),
        cmocka_unit_test(test_forward_real),
        cmocka_unit_test(test_backward_data_real),
        cmocka_unit_test(test_backward_filter_real),
        cmocka_unit_test(test_forced_algorithms),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
