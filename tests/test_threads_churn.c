/*
 * test_threads_churn.c -- one context used by 8 threads for about a second
 * while its settings change under them. Six workers run random problems of
 * all three passes (three share one workspace, three use the context's
 * pool; every result must match the reference exactly). Two churners keep
 * changing the context: its thread count, the numerical guard, its host
 * allocator (two counting allocators and the default, in turn), its tuning
 * table (algorithm searches, save, load, clear), and create, query and
 * destroy tensors and workspaces of their own. Afterwards every block either
 * allocator handed out has come back. Run under ThreadSanitizer by
 * scripts/sanitize.sh, with test_threads.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 6
#define CHURNERS 2
#define SECONDS 1.0

/* A thread-safe counting allocator. */
typedef struct counting {
    pthread_mutex_t lock;
    long calls, live;
} counting;

static void *c_alloc(void *user, size_t bytes, size_t alignment)
{
    counting *a = user;
    void *p = aligned_alloc(alignment, bytes);
    pthread_mutex_lock(&a->lock);
    a->calls++;
    if (p)
        a->live++;
    pthread_mutex_unlock(&a->lock);
    return p;
}

static void c_free(void *user, void *p)
{
    counting *a = user;
    pthread_mutex_lock(&a->lock);
    a->live--;
    pthread_mutex_unlock(&a->lock);
    free(p);
}

static counting allocators[2] = {{PTHREAD_MUTEX_INITIALIZER, 0, 0},
                                  {PTHREAD_MUTEX_INITIALIZER, 0, 0}};

typedef struct thread_state {
    conv_context_t ctx;
    conv_workspace_t ws; /* shared, or NULL */
    uint64_t seed;
    int index;
    int done;            /* problems or churn rounds */
    char failure[2048];  /* first failure, "" if none */
} thread_state;

/* One random problem with an exact algorithm forced (AUTO could pick an
 * inexact one, such as Winograd); 0 or a failure written into s->failure. */
static int run_one(thread_state *s, uint64_t seed, conv_op_t op)
{
    return tu_run_random_exact(s->ctx, s->ws, seed, op, CONV_ALGO_IM2COL_GEMM,
                               CONV_ALGO_IM2COL_GEMM, s->failure, sizeof s->failure);
}

static void *work(void *arg)
{
    thread_state *s = arg;
    double end = tu_now() + SECONDS;
    for (uint64_t i = 0; tu_now() < end; i++) {
        if (run_one(s, s->seed + i, (conv_op_t)(i % 3)))
            break;
        s->done++;
    }
    return NULL;
}

#define CHECK(expr)                                                                          \
    do {                                                                                     \
        conv_status_t st_ = (expr);                                                          \
        if (st_ != CONV_STATUS_SUCCESS) {                                                    \
            snprintf(s->failure, sizeof s->failure, "churner %d round %d: %s: %d: %s",       \
                     s->index, s->done, #expr, (int)st_, conv_last_error());                 \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

/* Changes the context between and during the workers' calls. */
static void *churn(void *arg)
{
    thread_state *s = arg;
    char path[256];
    snprintf(path, sizeof path, "%s/conv-churn-%d-%d.tuning",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), s->index);
    tu_rng r;
    tu_seed(&r, s->seed);
    double end = tu_now() + SECONDS;
    int saved = 0;
    while (tu_now() < end) {
        conv_tensor_t t = NULL;
        conv_workspace_t ws = NULL;
        tu_case c;
        conv_desc_t d = NULL;
        int have_case = 0;
        int round = s->done;
        CHECK(conv_context_set_threads(s->ctx, 1 + (int)tu_range(&r, 0, 2)));
        CHECK(conv_context_set_check_numerics(s->ctx, round % 2));
        int which = (int)tu_range(&r, 0, 2); /* allocator 0, 1 or the default */
        if (which < 2)
            CHECK(conv_context_set_allocator(s->ctx, c_alloc, c_free, &allocators[which]));
        else
            CHECK(conv_context_set_allocator(s->ctx, NULL, NULL, NULL));
        const int64_t dims[4] = {2, 3, 4, 5};
        CHECK(conv_tensor_create(s->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_LAST, 4, dims,
                                 &t));
        CHECK(conv_workspace_create(s->ctx, &ws));
        /* a search on a problem of its own (batch 5: no worker's key), with
         * 1x1 or 3x1 kernels, for which every candidate is exact */
        tu_problem tp;
        const int64_t in[2] = {6, 5}, k[2] = {1 + 2 * (round % 2), 1};
        tu_problem_init(&tp, 2, 5, 3, 4, in, k);
        tu_resolve(&tp);
        CHECK(tu_case_make(&c, s->ctx, &tp, 0));
        have_case = 1;
        CHECK(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
        tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
        int count = 0;
        conv_algo_t best;
        CHECK(conv_find_algorithms(s->ctx, d, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t,
                                   round % 3 ? ws : NULL, 1, &best, NULL, NULL, &count));
        char msg[512];
        if (tu_case_check(&c, CONV_OP_FORWARD, 1, msg, sizeof msg)) {
            snprintf(s->failure, sizeof s->failure, "churner %d: search result: %s", s->index,
                     msg);
            goto out;
        }
        switch (round % 4) {
        case 0: CHECK(conv_context_save_tuning(s->ctx, path)); saved = 1; break;
        case 1: if (saved) CHECK(conv_context_load_tuning(s->ctx, path)); break;
        case 2: CHECK(conv_context_clear_tuning(s->ctx)); break;
        default: break;
        }
        size_t bytes;
        CHECK(conv_workspace_get_size(ws, &bytes));
        int threads;
        CHECK(conv_context_get_threads(s->ctx, &threads));
        s->done++;
    out:
        if (have_case)
            tu_case_free(&c);
        conv_desc_destroy(d);
        conv_workspace_destroy(ws);
        conv_tensor_destroy(t);
        if (s->failure[0])
            break;
    }
    remove(path);
    return NULL;
}

static void test_churning_context(void **state)
{
    (void)state;
    conv_context_t ctx;
    conv_workspace_t shared;
    thread_state st[WORKERS + CHURNERS];
    pthread_t threads[WORKERS + CHURNERS];
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_ok(conv_context_set_threads(ctx, 2));
    assert_ok(conv_workspace_create(ctx, &shared));
    uint64_t base = tu_env_seed(900000);
    for (int i = 0; i < WORKERS + CHURNERS; i++) {
        memset(&st[i], 0, sizeof st[i]);
        st[i].ctx = ctx;
        st[i].index = i;
        st[i].ws = i < WORKERS && i % 2 ? shared : NULL;
        st[i].seed = base + (uint64_t)i * 1000000;
        assert_int_equal(pthread_create(&threads[i], NULL, i < WORKERS ? work : churn, &st[i]),
                         0);
    }
    int problems = 0, rounds = 0;
    for (int i = 0; i < WORKERS + CHURNERS; i++) {
        pthread_join(threads[i], NULL);
        if (i < WORKERS)
            problems += st[i].done;
        else
            rounds += st[i].done;
    }
    print_message("%d workers ran %d problems while %d churners made %d rounds of changes\n",
                  WORKERS, problems, CHURNERS, rounds);
    for (int i = 0; i < WORKERS + CHURNERS; i++) {
        if (st[i].failure[0])
            fail_msg("thread %d: %s", i, st[i].failure);
        if (st[i].done < 2)
            fail_msg("thread %d made only %d rounds", i, st[i].done);
    }
    conv_workspace_destroy(shared);
    conv_context_destroy(ctx); /* the pool's workspaces go back to their allocators */
    for (int a = 0; a < 2; a++) {
        if (allocators[a].live != 0)
            fail_msg("allocator %d: %ld of %ld blocks never freed", a, allocators[a].live,
                     allocators[a].calls);
    }
    print_message("allocators handed out %ld and %ld blocks, all returned\n",
                  allocators[0].calls, allocators[1].calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_churning_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
