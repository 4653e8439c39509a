/*
 * test_plans.c -- the plan API, the plan cache behind the one-shot calls,
 * solvers by name, the verbose trace, and the workspace bound of AUTO:
 *  - a plan computes exactly what the one-shot call computes, on random
 *    problems of every pass (same solver, same threads: bit-identical);
 *  - 8 threads executing one plan at once get the right results;
 *  - prepared weights are used until refreshed (the documented rule), and
 *    released on request;
 *  - a plan refuses tensors that are not its shapes, and runs no more once
 *    its context is destroyed;
 *  - every solver name round-trips through conv_algo_from_name;
 *  - the trace names the solver that ran (so a solver whose applicability
 *    check always said no would fail here), with plan-cache hit and miss;
 *  - AUTO never takes a solver whose workspace exceeds 8x the smallest
 *    applicable one's, 8x the pass's tensors and 4 MiB, e.g. for a
 *    padding of 2^28; it still takes Winograd on wide layers;
 *  - a plan takes no more threads than give each 128 KFLOP, unless
 *    CONV_CPU_THREAD_KFLOPS=0.
 */
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static conv_context_t ctx;

static int setup(void **state)
{
    (void)state;
    return conv_context_create(CONV_DEVICE_CPU, 0, &ctx) == CONV_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    conv_context_destroy(ctx);
    return 0;
}

static conv_status_t plan_of(const tu_problem *tp, conv_op_t op, conv_plan_t *plan)
{
    return tu_plan_of(ctx, tp, op, plan);
}

static conv_status_t execute(conv_plan_t plan, tu_case *c, conv_op_t op)
{
    conv_tensor_t b = op == CONV_OP_BACKWARD_DATA ? NULL : c->b.t;
    return conv_plan_execute(plan, c->x.t, c->w.t, b, c->y.t, NULL);
}

/* --------------------------------------------------- plan == one-shot */

static void test_plan_equals_one_shot(void **state)
{
    (void)state;
    uint64_t seed = tu_env_seed(0x91a7);
    int count = tu_env_count(150);
    for (int i = 0; i < count; i++) {
        tu_rng r;
        tu_seed(&r, seed + (uint64_t)i);
        tu_problem tp;
        tu_random_problem(&r, &tp);
        for (int op = 0; op < 3; op++) {
            tu_case c;
            assert_ok(tu_case_make(&c, ctx, &tp, 0));
            tu_case_fill(&c, (conv_op_t)op, &r, 1);
            conv_desc_t d;
            assert_ok(tu_make_desc(&tp, (conv_op_t)op, &d));
            assert_ok(tu_case_run(&c, ctx, d, (conv_op_t)op, NULL));
            conv_desc_destroy(d);
            tu_tensor *outs[2];
            int n = tu_case_outputs(&c, (conv_op_t)op, outs);
            void *saved[2] = {NULL, NULL};
            for (int k = 0; k < n; k++) {
                saved[k] = malloc(outs[k]->bytes + 1);
                tu_copy(saved[k], outs[k]->data, outs[k]->bytes);
                tu_fill_nan(outs[k]);
            }
            conv_plan_t plan;
            assert_ok(plan_of(&tp, (conv_op_t)op, &plan));
            assert_ok(execute(plan, &c, (conv_op_t)op));
            for (int k = 0; k < n; k++) {
                if (!tu_same(saved[k], outs[k]->data, outs[k]->bytes)) {
                    char desc[512];
                    tu_describe(&tp, desc, sizeof desc);
                    fail_msg("seed %" PRIu64 " %s: plan output %d differs from the one-shot call's: %s",
                             seed + (uint64_t)i, tu_op_name((conv_op_t)op), k, desc);
                }
                free(saved[k]);
            }
            conv_plan_destroy(plan);
            tu_case_free(&c);
        }
    }
}

/* A 3x3 problem both Winograd and implicit GEMM apply to. */
static void layer(tu_problem *tp, int64_t n, int64_t ch, int64_t hw)
{
    int64_t in[2] = {hw, hw}, kernel[2] = {3, 3};
    tu_problem_init(tp, 2, n, ch, ch, in, kernel);
    for (int a = 0; a < 2; a++)
        tp->desc_pad_begin[a] = tp->desc_pad_end[a] = 1;
    assert_int_equal(tu_resolve(tp), 1);
}

/* ------------------------------------------------ 8 threads, one plan */

typedef struct {
    conv_plan_t plan;
    const tu_problem *tp;
    const tu_case *model;   /* inputs to copy, and the wanted output */
    int failures;
    char what[256];
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    tu_case c;
    if (tu_case_make(&c, ctx, a->tp, 0) != CONV_STATUS_SUCCESS) {
        a->failures++;
        snprintf(a->what, sizeof a->what, "tensors: %s", conv_last_error());
        return NULL;
    }
    memcpy(c.x.data, a->model->x.data, c.x.bytes);
    memcpy(c.w.data, a->model->w.data, c.w.bytes);
    for (int round = 0; round < 25; round++) {
        tu_fill_nan(&c.y);
        conv_status_t s = conv_plan_execute(a->plan, c.x.t, c.w.t, NULL, c.y.t, NULL);
        if (s != CONV_STATUS_SUCCESS || memcmp(c.y.data, a->model->y.data, c.y.bytes) != 0) {
            a->failures++;
            snprintf(a->what, sizeof a->what, "round %d: status %d %s", round, (int)s,
                     s ? conv_last_error() : "(wrong values)");
            break;
        }
    }
    tu_case_free(&c);
    return NULL;
}

static void test_eight_threads_one_plan(void **state)
{
    (void)state;
    tu_problem tp;
    layer(&tp, 2, 16, 12);
    tu_rng r;
    tu_seed(&r, 7);
    tu_case model;
    assert_ok(tu_case_make(&model, ctx, &tp, 0));
    tu_case_fill(&model, CONV_OP_FORWARD, &r, 1);
    conv_desc_t d;
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    assert_ok(tu_case_run(&model, ctx, d, CONV_OP_FORWARD, NULL));
    conv_desc_destroy(d);
    conv_plan_t plan;
    assert_ok(plan_of(&tp, CONV_OP_FORWARD, &plan));

    pthread_t threads[8];
    worker_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (worker_arg){plan, &tp, &model, 0, ""};
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        if (args[i].failures)
            fail_msg("thread %d: %s", i, args[i].what);
    }
    conv_plan_destroy(plan);
    tu_case_free(&model);
}

/* ---------------------------------------------------- prepared weights */

static void forward_once(tu_case *c, conv_algo_t algo, tu_problem *tp)
{
    conv_desc_t d;
    tp->algo = algo;
    assert_ok(tu_make_desc(tp, CONV_OP_FORWARD, &d));
    assert_ok(conv_forward(ctx, d, c->x.t, c->w.t, NULL, c->y.t, NULL));
    conv_desc_destroy(d);
}

static void test_prepared_weights(void **state)
{
    (void)state;
    tu_problem tp;
    layer(&tp, 1, 32, 10);
    tp.algo = CONV_ALGO_WINOGRAD_4X4_3X3;
    tu_rng r;
    tu_seed(&r, 11);
    tu_case c;
    assert_ok(tu_case_make(&c, ctx, &tp, 0));
    tu_case_fill(&c, CONV_OP_FORWARD, &r, 1);
    size_t bytes = c.y.bytes;
    void *old_result = malloc(bytes), *new_result = malloc(bytes);

    forward_once(&c, CONV_ALGO_WINOGRAD_4X4_3X3, &tp);
    memcpy(old_result, c.y.data, bytes);

    conv_plan_t plan;
    assert_ok(plan_of(&tp, CONV_OP_FORWARD, &plan));
    int prepared = -1;
    assert_ok(conv_plan_prepare_weights(plan, c.w.t, &prepared));
    /* The AVX-512 path prepares its Winograd-domain filters; the portable
     * one (CONV_CPU_ISA=baseline) has nothing to prepare and reads w. */
    char device[256];
    assert_ok(conv_context_get_device_name(ctx, device, sizeof device));
    assert_int_equal(prepared, strstr(device, "(avx512") ? 1 : 0);

    tu_fill_nan(&c.y);
    assert_ok(execute(plan, &c, CONV_OP_FORWARD));
    assert_memory_equal(c.y.data, old_result, bytes);

    /* New weights, not prepared again. */
    tu_fill_real(&c.w, &r);
    forward_once(&c, CONV_ALGO_WINOGRAD_4X4_3X3, &tp);
    memcpy(new_result, c.y.data, bytes);
    assert_memory_not_equal(new_result, old_result, bytes);
    tu_fill_nan(&c.y);
    assert_ok(execute(plan, &c, CONV_OP_FORWARD));
    assert_memory_equal(c.y.data, prepared ? old_result : new_result, bytes);  /* stale by the rule */

    assert_ok(conv_plan_prepare_weights(plan, c.w.t, &prepared));  /* refreshed */
    tu_fill_nan(&c.y);
    assert_ok(execute(plan, &c, CONV_OP_FORWARD));
    assert_memory_equal(c.y.data, new_result, bytes);

    assert_ok(conv_plan_release_weights(plan));  /* back to reading w */
    tu_fill_real(&c.w, &r);
    forward_once(&c, CONV_ALGO_WINOGRAD_4X4_3X3, &tp);
    memcpy(new_result, c.y.data, bytes);
    tu_fill_nan(&c.y);
    assert_ok(execute(plan, &c, CONV_OP_FORWARD));
    assert_memory_equal(c.y.data, new_result, bytes);

    /* A filter of other dims is refused. */
    tu_problem other;
    layer(&other, 1, 16, 10);
    tu_case o;
    assert_ok(tu_case_make(&o, ctx, &other, 0));
    assert_int_equal(conv_plan_prepare_weights(plan, o.w.t, &prepared), CONV_STATUS_SHAPE_MISMATCH);
    tu_case_free(&o);

    conv_plan_destroy(plan);
    tu_case_free(&c);
    free(old_result);
    free(new_result);
}

/* ------------------------------------------- refusals and the context */

static void test_plan_refusals(void **state)
{
    (void)state;
    tu_problem tp, other;
    layer(&tp, 1, 8, 6);
    layer(&other, 1, 8, 7);
    tu_case c, o;
    assert_ok(tu_case_make(&c, ctx, &tp, 0));
    assert_ok(tu_case_make(&o, ctx, &other, 0));
    conv_plan_t plan;
    assert_ok(plan_of(&tp, CONV_OP_FORWARD, &plan));

    size_t ws = 0;
    assert_ok(conv_plan_get_workspace_size(plan, &ws));
    const char *name = NULL;
    assert_ok(conv_plan_get_solver_name(plan, &name));
    conv_algo_t algo;
    assert_ok(conv_plan_get_algorithm(plan, &algo));
    assert_string_equal(conv_algo_name(algo), name);

    /* Other shapes: SHAPE_MISMATCH naming both dims, y untouched. */
    tu_fill_nan(&o.y);
    assert_int_equal(conv_plan_execute(plan, o.x.t, o.w.t, NULL, o.y.t, NULL),
                     CONV_STATUS_SHAPE_MISMATCH);
    assert_non_null(strstr(conv_last_error(), "1x8x7x7"));
    assert_non_null(strstr(conv_last_error(), "1x8x6x6"));
    for (int64_t i = 0; i < o.y.elems; i++)
        assert_true(tu_get(&o.y, i) != tu_get(&o.y, i));  /* still NaN */
    /* A bias the plan was not made for. */
    assert_int_equal(conv_plan_execute(plan, c.x.t, c.w.t, c.x.t, c.y.t, NULL),
                     CONV_STATUS_SHAPE_MISMATCH);
    /* The output as an input. */
    assert_int_not_equal(conv_plan_execute(plan, c.x.t, c.w.t, NULL, c.x.t, NULL),
                         CONV_STATUS_SUCCESS);
    /* A backward-filter plan has no weights to prepare. */
    conv_plan_t bf;
    assert_ok(plan_of(&tp, CONV_OP_BACKWARD_FILTER, &bf));
    int prepared;
    assert_int_equal(conv_plan_prepare_weights(bf, c.w.t, &prepared), CONV_STATUS_INVALID_ARGUMENT);
    conv_plan_destroy(bf);

    /* A plan outlives its context only as a handle to destroy. */
    conv_context_t own;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &own));
    conv_desc_t d;
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    int64_t xd[5], wd[5];
    int ndim = tu_x_dims(&tp, xd);
    tu_w_dims(&tp, wd);
    conv_plan_t orphan;
    assert_ok(conv_plan_create(own, d, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST,
                        ndim, xd, wd, 0, &orphan));
    conv_context_destroy(own);
    assert_int_equal(conv_plan_execute(orphan, c.x.t, c.w.t, NULL, c.y.t, NULL),
                     CONV_STATUS_INVALID_HANDLE);
    assert_non_null(strstr(conv_last_error(), "destroyed"));
    conv_plan_destroy(orphan);
    conv_plan_destroy(orphan);  /* twice: a no-op */
    conv_plan_destroy(NULL);

    /* Creation refuses what the pass would: a forced solver that does not apply. */
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_FORWARD, CONV_ALGO_GEMM_1X1));
    conv_plan_t bad = NULL;
    assert_int_equal(conv_plan_create(ctx, d, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32,
                                      CONV_LAYOUT_CHANNELS_FIRST, ndim, xd, wd, 0, &bad),
                     CONV_STATUS_UNSUPPORTED);
    assert_null(bad);
    assert_int_equal(conv_plan_create(ctx, d, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32,
                                      CONV_LAYOUT_CHANNELS_FIRST, ndim, xd, wd, 2, &bad),
                     CONV_STATUS_INVALID_ARGUMENT);
    conv_desc_destroy(d);
    conv_plan_destroy(plan);
    tu_case_free(&c);
    tu_case_free(&o);
}

/* --------------------------------------------------------------- names */

static void test_names(void **state)
{
    (void)state;
    /* AUTO, and every solver of both engines as conv_algo_list gives them:
     * each with its own name, which maps back to its id. */
    conv_algo_t all[2 * TU_MAX_ALGOS];
    int n = tu_cpu_algos(all, TU_MAX_ALGOS, 1), ncuda = 0;
    assert_ok(conv_algo_list(CONV_DEVICE_CUDA, TU_MAX_ALGOS, all + n, &ncuda));
    assert_in_range(ncuda, 8, TU_MAX_ALGOS); /* cuDNN's families, listed in every build */
    n += ncuda;
    for (int i = 0; i < n; i++) {
        const char *name = conv_algo_name(all[i]);
        assert_string_not_equal(name, "unknown");
        conv_algo_t back;
        assert_ok(conv_algo_from_name(name, &back));
        assert_int_equal(back, all[i]);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(all[j], all[i]);
    }
    for (conv_algo_t e = CONV_ALGO_IM2COL_GEMM; e <= CONV_ALGO_IMPLICIT_GEMM; e++)
        assert_true(tu_is_cpu_solver(e)); /* conv.h's CPU values are listed */
    /* conv_algo_list: the count alone with capacity 0, a prefix with less,
     * and its refusals. */
    conv_algo_t some[2] = {CONV_ALGO_AUTO, CONV_ALGO_AUTO};
    int count = -1;
    assert_ok(conv_algo_list(CONV_DEVICE_CPU, 0, NULL, &count));
    assert_int_equal(count + ncuda + 1, n);
    assert_ok(conv_algo_list(CONV_DEVICE_CPU, 1, some, &count));
    assert_int_equal(some[0], all[1]);
    assert_int_equal(some[1], CONV_ALGO_AUTO); /* beyond the capacity: untouched */
    assert_int_equal(conv_algo_list(CONV_DEVICE_CPU, -1, some, &count), CONV_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(conv_last_error(), "-1"));
    assert_int_equal(conv_algo_list((conv_device_t)7, 2, some, &count), CONV_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(conv_last_error(), "7"));
    assert_int_equal(conv_algo_list(CONV_DEVICE_CPU, 2, NULL, &count), CONV_STATUS_INVALID_ARGUMENT);
    assert_int_equal(conv_algo_list(CONV_DEVICE_CPU, 2, some, NULL), CONV_STATUS_INVALID_ARGUMENT);
    conv_algo_t a = CONV_ALGO_GEMM_1X1;
    assert_int_equal(conv_algo_from_name("winograd", &a), CONV_STATUS_INVALID_ARGUMENT);
    assert_int_equal(a, CONV_ALGO_GEMM_1X1);  /* unchanged */
    assert_non_null(strstr(conv_last_error(), "winograd_4x4_3x3"));  /* lists the known ones */
    assert_int_equal(conv_algo_from_name(NULL, &a), CONV_STATUS_INVALID_ARGUMENT);
    assert_string_equal(conv_algo_name((conv_algo_t)999), "unknown");
    /* A name forces like the enum value. */
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_algo_from_name("implicit_gemm", &a));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_FORWARD, a));
    conv_algo_t got;
    assert_ok(conv_desc_get_algorithm(d, CONV_OP_FORWARD, &got));
    assert_int_equal(got, CONV_ALGO_IMPLICIT_GEMM);
    conv_desc_destroy(d);
}

/* --------------------------------------------------------------- trace */

/* Runs `fn` with stderr going to a file; returns what it printed (free it). */
static char *captured(void (*fn)(void *), void *arg)
{
    char path[] = "/tmp/conv_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    pread(fd, text, (size_t)size, 0);
    close(fd);
    unlink(path);
    return text;
}

typedef struct {
    tu_problem tp;
    int level;
    int calls;
} trace_arg;

static void run_traced(void *p)
{
    trace_arg *t = p;
    conv_context_t c;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    assert_ok(conv_context_set_verbose(c, t->level));
    int level = -1;
    assert_ok(conv_context_get_verbose(c, &level));
    assert_int_equal(level, t->level);
    tu_case k;
    assert_ok(tu_case_make(&k, c, &t->tp, 0));
    tu_rng r;
    tu_seed(&r, 3);
    tu_case_fill(&k, CONV_OP_FORWARD, &r, 0);
    conv_desc_t d;
    assert_ok(tu_make_desc(&t->tp, CONV_OP_FORWARD, &d));
    for (int i = 0; i < t->calls; i++)
        assert_ok(tu_case_run(&k, c, d, CONV_OP_FORWARD, NULL));
    conv_desc_destroy(d);
    tu_case_free(&k);
    conv_context_destroy(c);
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, what)) != NULL; at += strlen(what))
        n++;
    return n;
}

/* The solver the trace says ran for a problem. */
static void expect_solver(tu_problem *tp, const char *solver)
{
    trace_arg t = {*tp, 1, 2};
    char *text = captured(run_traced, &t);
    char want[96];
    snprintf(want, sizeof want, "solver=%s,plan=miss", solver);
    if (count_of(text, "conv_verbose,exec,cpu,fwd,") != 2 || !strstr(text, want))
        fail_msg("expected two exec lines, the first with %s; the trace was:\n%s", want, text);
    snprintf(want, sizeof want, "solver=%s,plan=hit", solver);
    if (!strstr(text, want))
        fail_msg("expected a plan-cache hit with %s; the trace was:\n%s", want, text);
    free(text);
}

static void test_trace(void **state)
{
    (void)state;
    const tu_isa isa = tu_cpu_isa(ctx);
    tu_problem tp;

    /* Pointwise: the 1x1 solver. */
    int64_t in[2] = {5, 7}, one[2] = {1, 1}, three[2] = {3, 3};
    tu_problem_init(&tp, 2, 1, 8, 4, in, one);
    assert_int_equal(tu_resolve(&tp), 1);
    expect_solver(&tp, "gemm_1x1");

    /* Depthwise: groups == channels. */
    tu_problem_init(&tp, 2, 1, 8, 8, in, three);
    tp.p.groups = 8;
    assert_int_equal(tu_resolve(&tp), 1);
    expect_solver(&tp, "depthwise_direct");

    /* Every solver by force, where it applies. */
    layer(&tp, 1, 16, 8);
    tp.algo = CONV_ALGO_WINOGRAD_4X4_3X3;
    expect_solver(&tp, "winograd_4x4_3x3");
    tp.algo = CONV_ALGO_IMPLICIT_GEMM;
    expect_solver(&tp, "implicit_gemm");
    tp.algo = CONV_ALGO_IM2COL_GEMM;
    expect_solver(&tp, "im2col_gemm");

    /* The heuristic: 3x3 at batch 8 with 64 channels on 16x16 planes is
     * Winograd's ground with AVX-512 (>= 16 tiles, <= 64x64 channels), the
     * direct tiles' with AVX2 (whose Winograd is the portable one). */
    layer(&tp, 8, 64, 16);
    expect_solver(&tp, isa == TU_ISA_AVX512 ? "winograd_4x4_3x3"
                       : isa == TU_ISA_AVX2 ? "direct_avx512"
                                            : "im2col_gemm");

    /* Level 2 says why the others were passed over. */
    tu_problem_init(&tp, 2, 1, 8, 4, in, one);
    assert_int_equal(tu_resolve(&tp), 1);
    trace_arg t = {tp, 2, 1};
    char *text = captured(run_traced, &t);
    if (!strstr(text, "conv_verbose,skip,cpu,") || !strstr(text, "solver=winograd_4x4_3x3,it needs"))
        fail_msg("level 2 printed no reasons:\n%s", text);
    free(text);
    /* Level 0 prints nothing. */
    t.level = 0;
    text = captured(run_traced, &t);
    assert_string_equal(text, "");
    free(text);
    conv_context_t c;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    assert_int_equal(conv_context_set_verbose(c, 3), CONV_STATUS_INVALID_ARGUMENT);
    conv_context_destroy(c);
}

/* -------------------------------------------- AUTO's workspace is bounded */

static size_t workspace_of(const tu_problem *tp, conv_op_t op, conv_algo_t algo, int *applies)
{
    tu_problem forced = *tp;
    forced.algo = algo;
    conv_plan_t plan;
    conv_status_t s = plan_of(&forced, op, &plan);
    *applies = s == CONV_STATUS_SUCCESS;
    if (!*applies)
        return 0;
    size_t bytes = 0;
    assert_ok(conv_plan_get_workspace_size(plan, &bytes));
    conv_plan_destroy(plan);
    return bytes;
}

static void check_bound(const tu_problem *tp, conv_op_t op)
{
    conv_algo_t solvers[TU_MAX_ALGOS];
    const int nsolvers = tu_cpu_algos(solvers, TU_MAX_ALGOS, 0);
    size_t least = SIZE_MAX;
    for (int i = 0; i < nsolvers; i++) {
        int applies;
        size_t b = workspace_of(tp, op, solvers[i], &applies);
        if (applies && b < least)
            least = b;
    }
    int applies;
    size_t chosen = workspace_of(tp, op, CONV_ALGO_AUTO, &applies);
    assert_true(applies);
    /* The bound conv.h's AUTO keeps: 8x the leanest solver's, 8x the
     * pass's tensors, or 4 MiB, whichever is largest. */
    int64_t dims[5];
    double elems = 0;
    for (int t = 0; t < 3; t++) {
        int nd = t == 0 ? tu_x_dims(tp, dims) : t == 1 ? tu_w_dims(tp, dims) : tu_y_dims(tp, dims);
        double e = 1;
        for (int i = 0; i < nd; i++)
            e *= (double)dims[i];
        elems += e;
    }
    double tensors = elems * (double)tu_dtype_size(tp->dtype);
    size_t bound = 4u << 20;
    if (least * 8 > bound)
        bound = least * 8;
    if (tensors * 8 > (double)bound)
        bound = (size_t)(tensors * 8);
    if (chosen > bound + 64) {
        char desc[512];
        tu_describe(tp, desc, sizeof desc);
        fail_msg("%s: AUTO needs %zu bytes, the leanest solver %zu: %s", tu_op_name(op), chosen,
                 least, desc);
    }
}

/* ------------------------------------------------- threads by the work */

/* The workspace of a forced direct_avx512 forward plan of tp on a context
 * of `threads` threads (each thread packs its own copy of the filter there). */
static size_t direct_workspace(tu_problem *tp, int threads)
{
    conv_context_t c;
    conv_plan_t plan;
    size_t bytes = 0;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    assert_ok(conv_context_set_threads(c, threads));
    assert_ok(conv_algo_from_name("direct_avx512", &tp->algo));
    assert_ok(tu_plan_of(c, tp, CONV_OP_FORWARD, &plan));
    assert_ok(conv_plan_get_workspace_size(plan, &bytes));
    conv_plan_destroy(plan);
    conv_context_destroy(c);
    return bytes;
}

/* A CPU plan runs on no more threads than give each 128 KFLOP of the pass
 * (CONV_CPU_THREAD_KFLOPS; 0: the context's threads, as the other tests
 * run): an 8->8 8x8 3x3 forward (74 KFLOP) plans on 2 threads as on 1, a
 * 64->64 one (4.7 MFLOP) on 2, each thread then holding a copy of the
 * packed filter. Run both ways by CTest (test_plans, test_plans_thread_work). */
static void test_threads_by_work(void **state)
{
    (void)state;
    const char *e = getenv("CONV_CPU_THREAD_KFLOPS");
    const int capped = !(e && strcmp(e, "0") == 0);
    int64_t in[2] = {8, 8}, three[2] = {3, 3};
    tu_problem tiny, wide;
    tu_problem_init(&tiny, 2, 1, 8, 8, in, three);
    tu_problem_init(&wide, 2, 1, 64, 64, in, three);
    for (int a = 0; a < 2; a++)
        tiny.desc_pad_begin[a] = tiny.desc_pad_end[a] = wide.desc_pad_begin[a] = wide.desc_pad_end[a] = 1;
    assert_int_equal(tu_resolve(&tiny), 1);
    assert_int_equal(tu_resolve(&wide), 1);
    const size_t tiny1 = direct_workspace(&tiny, 1), tiny2 = direct_workspace(&tiny, 2);
    const size_t wide1 = direct_workspace(&wide, 1), wide2 = direct_workspace(&wide, 2);
    assert_true(wide2 > wide1);
    if (capped)
        assert_int_equal(tiny2, tiny1);
    else
        assert_true(tiny2 > tiny1);
}

static void test_auto_workspace_bound(void **state)
{
    (void)state;
    /* The outside finding: input 5, one output, stride, dilation and padding
     * 2^28 (implicit GEMM's padded copy would be gigabytes). */
    int64_t in[1] = {5}, kernel[1] = {2};
    tu_problem tp;
    tu_problem_init(&tp, 1, 1, 1, 1, in, kernel);
    tp.p.stride[0] = tp.p.dilation[0] = (int64_t)1 << 28;
    tp.desc_pad_begin[0] = tp.desc_pad_end[0] = (int64_t)1 << 28;
    assert_int_equal(tu_resolve(&tp), 1);
    for (int op = 0; op < 3; op++)
        check_bound(&tp, (conv_op_t)op);
    /* Winograd's transformed filters are data, not padding: a 256-channel
     * 3x3 layer keeps it where its thresholds say so. */
    const char *isa = getenv("CONV_CPU_ISA");
    tu_problem wide;
    layer(&wide, 8, 256, 14);
    int applies;
    workspace_of(&wide, CONV_OP_FORWARD, CONV_ALGO_AUTO, &applies);
    conv_plan_t plan;
    assert_ok(plan_of(&wide, CONV_OP_FORWARD, &plan));
    const char *name;
    assert_ok(conv_plan_get_solver_name(plan, &name));
    char device[256];
    assert_ok(conv_context_get_device_name(ctx, device, sizeof device));
    if (strstr(device, "(avx512") && !(isa && strcmp(isa, "baseline") == 0))
        assert_string_equal(name, "winograd_4x4_3x3");
    conv_plan_destroy(plan);
    /* And random problems, every pass. */
    uint64_t seed = tu_env_seed(0x5b0d);
    for (int i = 0; i < tu_env_count(120); i++) {
        tu_rng r;
        tu_seed(&r, seed + (uint64_t)i);
        tu_random_problem(&r, &tp);
        for (int op = 0; op < 3; op++)
            check_bound(&tp, (conv_op_t)op);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_equals_one_shot),
        cmocka_unit_test(test_eight_threads_one_plan),
        cmocka_unit_test(test_prepared_weights),
        cmocka_unit_test(test_plan_refusals),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_auto_workspace_bound),
        cmocka_unit_test(test_threads_by_work),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
