/*
 * test_threads.c -- one context (computing with 2 threads) used by 8
 * threads at once for about a second, each running its own random problems
 * of all three passes: half pass one shared workspace (calls take turns on
 * it), half pass none (the context's pool). Every result must match the
 * reference exactly. Worker threads record failures; the main thread asserts.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "test_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define WORKERS 8
#define SECONDS 1.0

typedef struct worker {
    conv_context_t ctx;
    conv_workspace_t ws; /* shared, or NULL */
    uint64_t seed;
    int problems;
    char failure[2048]; /* first failure, "" if none */
} worker;

/* One problem; returns 0 or describes the failure in w->failure. Any
 * algorithm may be forced, AUTO where it does not apply (these small
 * problems never reach an inexact one). */
static int run_one(worker *w, uint64_t seed, conv_op_t op)
{
    return tu_run_random_exact(w->ctx, w->ws, seed, op, CONV_ALGO_AUTO, CONV_ALGO_AUTO,
                               w->failure, sizeof w->failure);
}

static void *work(void *arg)
{
    worker *w = arg;
    double end = tu_now() + SECONDS;
    for (uint64_t i = 0; tu_now() < end; i++) {
        if (run_one(w, w->seed + i, (conv_op_t)(i % 3)))
            break;
        w->problems++;
    }
    return NULL;
}

static void test_shared_context(void **state)
{
    (void)state;
    conv_context_t ctx;
    conv_workspace_t shared;
    worker workers[WORKERS];
    pthread_t threads[WORKERS];
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    assert_ok(conv_context_set_threads(ctx, 2));
    assert_ok(conv_workspace_create(ctx, &shared));
    uint64_t base = tu_env_seed(700000);
    for (int i = 0; i < WORKERS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].ctx = ctx;
        workers[i].ws = i % 2 ? shared : NULL;
        workers[i].seed = base + (uint64_t)i * 1000000;
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
        total += workers[i].problems;
    }
    print_message("%d threads ran %d problems\n", WORKERS, total);
    for (int i = 0; i < WORKERS; i++) {
        if (workers[i].failure[0])
            fail_msg("thread %d (%s workspace): %s", i, workers[i].ws ? "shared" : "no",
                     workers[i].failure);
        if (workers[i].problems < 3)
            fail_msg("thread %d ran only %d problems", i, workers[i].problems);
    }
    conv_workspace_destroy(shared);
    conv_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
