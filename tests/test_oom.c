/*
 * test_oom.c -- allocation failure, at every allocation a scenario makes.
 *
 * 1. A caller-supplied allocator (conv_context_set_allocator) that fails
 *    every allocation after the first N, for every N from 0 to the number
 *    the scenario makes when nothing fails: each call succeeds (and is then
 *    checked against the reference) or returns OUT_OF_MEMORY having written
 *    nothing (outputs byte for byte as before, no handle returned); after
 *    the scenario every block the allocator handed out has been given back,
 *    through the allocator that made it.
 * 2. The same with C++ operator new failing (bad_alloc anywhere inside
 *    libconv: handles, thread pools, messages, tuning tables, files): every
 *    call returns its status or OUT_OF_MEMORY, nothing crashes, failed
 *    passes leave their outputs alone, and the number of live operator-new
 *    blocks returns to where it was -- nothing leaked.
 * 3. The allocator's own contract: both functions or neither, misaligned
 *    memory refused, blocks freed through the allocator they came from after
 *    it is replaced, the pool emptied when it is replaced.
 * Under AddressSanitizer, LeakSanitizer checks the process at exit as well.
 */
#define _GNU_SOURCE
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failing_new.h"

/* ------------------------------------------------- a counting allocator */

#define MAX_BLOCKS 256

typedef struct counting {
    pthread_mutex_t lock;
    long calls;      /* alloc calls */
    long fail_after; /* calls past this many fail; < 0: none fail */
    long failed;
    int misalign;    /* return memory 16 bytes off alignment */
    void *blocks[MAX_BLOCKS]; /* live blocks (as handed out) */
    void *raw[MAX_BLOCKS];    /* what to free for each */
    int live;
    int foreign_frees; /* frees of pointers we never handed out */
} counting;

static void counting_init(counting *a, long fail_after)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->fail_after = fail_after;
}

static void *c_alloc(void *user, size_t bytes, size_t alignment)
{
    counting *a = user;
    pthread_mutex_lock(&a->lock);
    void *p = NULL, *raw = NULL;
    int refuse = a->fail_after >= 0 && a->calls >= a->fail_after;
    a->calls++;
    if (refuse || a->live == MAX_BLOCKS || alignment < 64 || bytes % alignment != 0) {
        a->failed++;
    } else {
        raw = aligned_alloc(alignment, bytes + (a->misalign ? alignment : 0));
        p = raw && a->misalign ? (char *)raw + 16 : raw;
        if (p) {
            a->blocks[a->live] = p;
            a->raw[a->live] = raw;
            a->live++;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return p;
}

static void c_free(void *user, void *p)
{
    counting *a = user;
    pthread_mutex_lock(&a->lock);
    int i = 0;
    while (i < a->live && a->blocks[i] != p)
        i++;
    if (i == a->live) {
        a->foreign_frees++;
    } else {
        free(a->raw[i]);
        a->live--;
        a->blocks[i] = a->blocks[a->live];
        a->raw[i] = a->raw[a->live];
    }
    pthread_mutex_unlock(&a->lock);
}

/* ------------------------------------------------------------ a scenario */

/* x (2, 4, 9, 9), w (6, 4, 3, 3), b (1, 6, 1, 1), y (2, 6, 7, 7). */
static void make_problem(tu_problem *tp)
{
    const int64_t in[2] = {9, 9}, k[2] = {3, 3};
    tu_problem_init(tp, 2, 2, 4, 6, in, k);
    tp->bias = 1;
    tp->algo = CONV_ALGO_IM2COL_GEMM; /* unfolds: needs a workspace */
    assert_true(tu_resolve(tp));
}

/* x (2, 4, 9, 9), w (6, 4, 1, 1): a search tries GEMM_1X1 (no workspace,
 * or with AVX-512 a small packing buffer) before IM2COL_GEMM (its own
 * workspace), so a fresh workspace can grow after the first trial has run. */
static void make_problem_1x1(tu_problem *tp)
{
    const int64_t in[2] = {9, 9}, k[2] = {1, 1};
    tu_problem_init(tp, 2, 2, 4, 6, in, k);
    assert_true(tu_resolve(tp));
}

static int g_oom_seen; /* OUT_OF_MEMORY results in the current run */

/* Runs `op`: success must match the reference; OUT_OF_MEMORY must leave the
 * outputs byte for byte as they were. */
static conv_status_t run_checked(tu_case *full, conv_context_t ctx, conv_desc_t d, conv_op_t op,
                                 conv_workspace_t ws, int find, const char *what)
{
    tu_case nobias, *c = full;
    if (find) { /* the search takes no bias */
        nobias = *full;
        nobias.tp.bias = 0;
        memset(&nobias.b, 0, sizeof nobias.b);
        c = &nobias;
    }
    tu_rng r;
    tu_seed(&r, 99);
    tu_snapshot snap;
    tu_case_fill(c, op, &r, 0);
    tu_snapshot_take(&snap, c, op);
    conv_status_t s;
    int count = -7;
    conv_algo_t algos[4];
    if (find) {
        s = conv_find_algorithms(ctx, d, op, c->x.t, c->w.t, c->y.t, ws, 4, algos, NULL, NULL,
                                 &count);
    } else {
        conv_tensor_t b = (op == CONV_OP_BACKWARD_DATA) ? NULL : c->b.t;
        if (op == CONV_OP_FORWARD)
            s = conv_forward(ctx, d, c->x.t, c->w.t, b, c->y.t, ws);
        else if (op == CONV_OP_BACKWARD_DATA)
            s = conv_backward_data(ctx, d, c->w.t, c->y.t, c->x.t, ws);
        else
            s = conv_backward_filter(ctx, d, c->x.t, c->y.t, c->w.t, b, ws);
    }
    char msg[512];
    if (s == CONV_STATUS_OUT_OF_MEMORY) {
        g_oom_seen++;
        if (!tu_snapshot_same(&snap, c, op))
            fail_msg("%s %s: OUT_OF_MEMORY but the outputs were written", what, tu_op_name(op));
        if (find && count != -7)
            fail_msg("%s: failed search wrote count", what);
    } else if (s == CONV_STATUS_SUCCESS) {
        if (tu_case_check(c, op, !find, msg, sizeof msg))
            fail_msg("%s %s: %s", what, tu_op_name(op), msg);
    } else {
        tu_copy_last_error(msg, sizeof msg);
        fail_msg("%s %s: status %d (%s): %s", what, tu_op_name(op), (int)s, conv_status_string(s),
                 msg);
    }
    tu_snapshot_free(&snap);
    return s;
}

static void expect_ok_or_oom(conv_status_t s, const char *what)
{
    if (s == CONV_STATUS_OUT_OF_MEMORY) {
        g_oom_seen++;
        return;
    }
    if (s != CONV_STATUS_SUCCESS)
        fail_msg("%s: status %d (%s): %s", what, (int)s, conv_status_string(s), conv_last_error());
}

/* The passes, with the pool's workspace and with one of the caller's. */
static void run_passes(conv_context_t ctx, tu_case *c, conv_desc_t d, conv_desc_t d_auto,
                       const char *what)
{
    for (int op = 0; op < 3; op++)
        run_checked(c, ctx, d, (conv_op_t)op, NULL, 0, what);
    for (int op = 0; op < 3; op++) /* again: the pool's workspace is reused */
        run_checked(c, ctx, d, (conv_op_t)op, NULL, 0, what);
    conv_workspace_t ws = (conv_workspace_t)(uintptr_t)1; /* sentinel */
    conv_status_t s = conv_workspace_create(ctx, &ws);
    expect_ok_or_oom(s, "conv_workspace_create");
    if (s != CONV_STATUS_SUCCESS) {
        if (ws != (conv_workspace_t)(uintptr_t)1)
            fail_msg("%s: failed conv_workspace_create wrote its handle", what);
        ws = NULL;
    }
    if (ws) {
        for (int op = 2; op >= 0; op--) /* largest first, then no growth */
            run_checked(c, ctx, d, (conv_op_t)op, ws, 0, what);
        run_checked(c, ctx, d_auto, CONV_OP_FORWARD, ws, 1, what);
        conv_workspace_destroy(ws);
    }
    run_checked(c, ctx, d_auto, CONV_OP_FORWARD, NULL, 1, what);
    run_checked(c, ctx, d_auto, CONV_OP_BACKWARD_FILTER, NULL, 1, what);

    /* a search whose candidates need more and more workspace, on a fresh one */
    tu_problem tp1;
    tu_case c1;
    make_problem_1x1(&tp1);
    conv_status_t made = tu_case_make(&c1, ctx, &tp1, 1);
    expect_ok_or_oom(made, "tu_case_make");
    if (made == CONV_STATUS_SUCCESS) {
        for (int op = 0; op < 3; op++) {
            conv_workspace_t fresh = NULL;
            s = conv_workspace_create(ctx, &fresh);
            expect_ok_or_oom(s, "conv_workspace_create");
            if (s == CONV_STATUS_SUCCESS)
                run_checked(&c1, ctx, d_auto, (conv_op_t)op, fresh, 1, what);
            conv_workspace_destroy(fresh);
        }
        tu_case_free(&c1);
    }
}

/* -------------------------------------------- 1. the caller's allocator */

/* The scenario with an allocator failing past `fail_after` allocations;
 * returns how many it was asked for. */
static long allocator_scenario(long fail_after)
{
    counting a;
    counting_init(&a, fail_after);
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_ok(conv_context_set_threads(ctx, 2));
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &a));
    char what[64];
    snprintf(what, sizeof what, "allocator failing after %ld", fail_after);

    /* a lone tensor: a failed create returns no handle */
    conv_tensor_t lone = (conv_tensor_t)(uintptr_t)1;
    const int64_t dims[4] = {2, 3, 5, 5};
    conv_status_t s = conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                         dims, &lone);
    expect_ok_or_oom(s, "conv_tensor_create");
    if (s != CONV_STATUS_SUCCESS)
        assert_ptr_equal(lone, (conv_tensor_t)(uintptr_t)1);
    else
        conv_tensor_destroy(lone);

    tu_problem tp;
    tu_case c;
    conv_desc_t d, d_auto;
    make_problem(&tp);
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_BACKWARD_DATA, tp.algo));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_BACKWARD_FILTER, tp.algo));
    tu_problem auto_tp = tp;
    auto_tp.algo = CONV_ALGO_AUTO;
    assert_ok(tu_make_desc(&auto_tp, CONV_OP_FORWARD, &d_auto));
    s = tu_case_make(&c, ctx, &tp, 0); /* four conv_tensor_create */
    expect_ok_or_oom(s, "tu_case_make");
    if (s == CONV_STATUS_SUCCESS) {
        run_passes(ctx, &c, d, d_auto, what);
        tu_case_free(&c);
    }
    /* restoring the default frees the pool's idle workspaces at once */
    assert_ok(conv_context_set_allocator(ctx, NULL, NULL, NULL));
    if (a.live != 0)
        fail_msg("%s: %d blocks still live after every tensor was destroyed and the allocator "
                 "replaced", what, a.live);
    conv_desc_destroy(d);
    conv_desc_destroy(d_auto);
    conv_context_destroy(ctx);
    if (a.foreign_frees)
        fail_msg("%s: %d frees of blocks the allocator never handed out", what, a.foreign_frees);
    long calls = a.calls;
    pthread_mutex_destroy(&a.lock);
    return calls;
}

static void test_allocator_failures(void **state)
{
    (void)state;
    g_oom_seen = 0;
    long total = allocator_scenario(-1);
    assert_int_equal(g_oom_seen, 0);
    assert_true(total >= 6); /* five tensors, pool and caller workspaces */
    int runs = 0, ooms = 0;
    for (long n = 0; n <= total; n++) {
        g_oom_seen = 0;
        allocator_scenario(n);
        if (n < total && g_oom_seen == 0)
            fail_msg("failing after %ld of %ld allocations produced no OUT_OF_MEMORY", n, total);
        ooms += g_oom_seen;
        runs++;
    }
    print_message("%d runs, allocator failing after 0..%ld allocations: %d OUT_OF_MEMORY, "
                  "all clean\n",
                  runs, total, ooms);
}

/* ------------------------------------------------ 2. operator new failing */

static char tuning_path[256];

/* Every step of a context's life with operator new failing past `budget`
 * allocations (< 0: never). Returns the allocations made while armed. */
static long new_scenario(long budget)
{
    char what[64];
    snprintf(what, sizeof what, "operator new failing after %ld", budget);
    conv_context_t ctx = (conv_context_t)(uintptr_t)1;
    conv_desc_t d = NULL, d_auto = NULL;
    tu_case c;
    int have_case = 0;
    memset(&c, 0, sizeof c);
    tu_problem tp;
    make_problem(&tp);

    if (budget >= 0)
        tu_new_arm(budget);
    conv_status_t s = conv_context_create(CONV_DEVICE_CPU, 0, &ctx);
    expect_ok_or_oom(s, "conv_context_create");
    if (s != CONV_STATUS_SUCCESS) {
        assert_ptr_equal(ctx, (conv_context_t)(uintptr_t)1);
        ctx = NULL;
        goto done;
    }
    s = conv_context_set_threads(ctx, 3);
    expect_ok_or_oom(s, "conv_context_set_threads");
    int threads = 0;
    assert_ok(conv_context_get_threads(ctx, &threads));
    assert_true(threads == 3 || s != CONV_STATUS_SUCCESS);

    s = conv_desc_create(2, &d);
    expect_ok_or_oom(s, "conv_desc_create");
    if (s != CONV_STATUS_SUCCESS) {
        d = NULL;
        goto done;
    }
    s = conv_desc_create(2, &d_auto);
    expect_ok_or_oom(s, "conv_desc_create");
    if (s != CONV_STATUS_SUCCESS) {
        d_auto = NULL;
        goto done;
    }
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_FORWARD, tp.algo));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_BACKWARD_DATA, tp.algo));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_BACKWARD_FILTER, tp.algo));
    s = tu_case_make(&c, ctx, &tp, budget % 2);
    expect_ok_or_oom(s, "tu_case_make");
    if (s != CONV_STATUS_SUCCESS)
        goto done;
    have_case = 1;
    run_passes(ctx, &c, d, d_auto, what);

    /* shape inference and a refused call (its message may not fit either) */
    int64_t ydims[4] = {-1, -1, -1, -1}, xd[4], wd[4];
    tu_x_dims(&tp, xd);
    tu_w_dims(&tp, wd);
    assert_ok(conv_output_dims(d, 4, xd, wd, ydims));
    s = conv_desc_set_groups(d, 0);
    if (s != CONV_STATUS_INVALID_ARGUMENT && s != CONV_STATUS_OUT_OF_MEMORY)
        fail_msg("%s: refused setter returned %d", what, (int)s);

    /* the tuning file: save, clear, load */
    s = conv_context_save_tuning(ctx, tuning_path);
    expect_ok_or_oom(s, "conv_context_save_tuning");
    if (s == CONV_STATUS_SUCCESS) {
        expect_ok_or_oom(conv_context_clear_tuning(ctx), "conv_context_clear_tuning");
        expect_ok_or_oom(conv_context_load_tuning(ctx, tuning_path), "conv_context_load_tuning");
    }
    expect_ok_or_oom(conv_context_set_check_numerics(ctx, 1), "conv_context_set_check_numerics");
    run_checked(&c, ctx, d, CONV_OP_FORWARD, NULL, 0, what);

done:;
    long calls = tu_new_calls();
    tu_new_disarm();
    if (have_case)
        tu_case_free(&c);
    conv_desc_destroy(d);
    conv_desc_destroy(d_auto);
    conv_context_destroy(ctx);
    return calls;
}

static void test_new_failures(void **state)
{
    (void)state;
    snprintf(tuning_path, sizeof tuning_path, "%s/conv-oom-%d.tuning",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    /* warm up: one-time allocations (the handle registry, this thread's
     * message buffer grown by a long message) before counting */
    conv_desc_t d;
    assert_status(conv_desc_create(99, &d), CONV_STATUS_INVALID_ARGUMENT);
    g_oom_seen = 0;
    tu_new_arm(-1);
    new_scenario(-1);
    new_scenario(-1);
    tu_new_arm(1L << 40);
    long total = new_scenario(1L << 40);
    assert_int_equal(g_oom_seen, 0);
    assert_true(total > 20);
    long live0 = tu_new_live();
    int ooms = 0;
    for (long n = 0; n <= total; n++) {
        g_oom_seen = 0;
        new_scenario(n);
        long live = tu_new_live();
        if (live != live0)
            fail_msg("operator new failing after %ld of %ld: %ld blocks leaked", n, total,
                     live - live0);
        if (n < total && g_oom_seen == 0 && tu_new_failed() > 0)
            print_message("failing after %ld: a refused allocation was absorbed\n", n);
        ooms += g_oom_seen;
    }
    remove(tuning_path);
    print_message("%ld runs, operator new failing after 0..%ld allocations: %d OUT_OF_MEMORY, "
                  "no leak\n",
                  total + 1, total, ooms);
    assert_true(ooms > total / 2);
}

/* -------------------------------------------- 3. the allocator contract */

static void test_allocator_contract(void **state)
{
    (void)state;
    conv_context_t ctx;
    counting a, b;
    counting_init(&a, -1);
    counting_init(&b, -1);
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_status(conv_context_set_allocator(ctx, c_alloc, NULL, &a), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_context_set_allocator(ctx, NULL, c_free, &a), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_context_set_allocator(NULL, c_alloc, c_free, &a),
                  CONV_STATUS_INVALID_HANDLE);

    /* tensors remember their allocator: made with a, b and the default */
    const int64_t dims[4] = {1, 2, 3, 3};
    conv_tensor_t ta, tb, td, empty;
    const int64_t none[4] = {0, 2, 3, 3};
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &a));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, dims, &ta));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_LAST, 4, none,
                                 &empty)); /* no elements: no allocation */
    assert_int_equal(a.calls, 1);
    void *data;
    assert_ok(conv_tensor_get_data(ta, &data));
    assert_ptr_equal(data, a.blocks[0]);
    for (int i = 0; i < 18; i++) /* zero-filled, as documented */
        assert_true(((double *)data)[i] == 0.0);
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &b));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, dims, &tb));
    assert_ok(conv_context_set_allocator(ctx, NULL, NULL, NULL));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, dims, &td));
    assert_true(a.live == 1 && b.live == 1 && a.calls == 1 && b.calls == 1);
    conv_tensor_destroy(ta);
    conv_tensor_destroy(tb);
    conv_tensor_destroy(td);
    conv_tensor_destroy(empty);
    assert_true(a.live == 0 && b.live == 0 && a.foreign_frees == 0 && b.foreign_frees == 0);

    /* the pool: grown with a, emptied when b replaces a */
    tu_problem tp;
    tu_case c;
    conv_desc_t d;
    make_problem(&tp);
    assert_ok(tu_case_make(&c, ctx, &tp, 1)); /* wrapped: no allocation */
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &a));
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, NULL));
    assert_int_equal(a.live, 1); /* the pool's workspace */
    long calls = a.calls;
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, NULL));
    assert_int_equal(a.calls, calls); /* reused */
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &b));
    assert_int_equal(a.live, 0);
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, NULL));
    assert_int_equal(b.live, 1);
    /* a library-owned workspace made with b keeps b when the context moves on */
    conv_workspace_t ws;
    assert_ok(conv_workspace_create(ctx, &ws));
    assert_ok(conv_context_set_allocator(ctx, NULL, NULL, NULL));
    assert_int_equal(b.live, 0);
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, ws));
    assert_int_equal(b.live, 1);
    conv_workspace_destroy(ws);
    assert_int_equal(b.live, 0);

    /* an allocator returning misaligned memory is refused, the block freed */
    counting m;
    counting_init(&m, -1);
    m.misalign = 1;
    conv_tensor_t t = NULL;
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &m));
    assert_status(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims,
                                     &t),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(conv_last_error(), "aligned"));
    assert_null(t);
    assert_true(m.calls == 1 && m.live == 0);
    /* a NULL from the allocator names it */
    counting z;
    counting_init(&z, 0);
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &z));
    assert_status(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims,
                                     &t),
                  CONV_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(conv_last_error(), "allocator"));
    assert_null(t);

    /* the context's destruction frees the pool through its allocator */
    assert_ok(conv_context_set_allocator(ctx, c_alloc, c_free, &a));
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, NULL));
    assert_int_equal(a.live, 1);
    tu_case_free(&c);
    conv_desc_destroy(d);
    conv_context_destroy(ctx);
    assert_int_equal(a.live, 0);
    assert_true(a.foreign_frees == 0 && b.foreign_frees == 0 && m.foreign_frees == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocator_contract),
        cmocka_unit_test(test_allocator_failures),
        cmocka_unit_test(test_new_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
