/*
 * test_comm_local.c -- the in-process communicator (N ranks = N threads):
 * all-reduce (sum, average) and broadcast bit-exact on integer-valued data
 * for N = 1, 2, 3, 4, 8 and the four dtypes, barriers, the fp16/bf16
 * rounding over every 16-bit pattern, cross-rank argument checks, timeout,
 * abort and destroyed peers ending every rank with an error (never a hang),
 * and the API's refusals. Worker threads record failures (ct_fail); the
 * main thread asserts.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_test_util.h"

#define assert_no_failure()                                    \
    do {                                                       \
        const char *f_ = ct_failure();                         \
        if (f_) fail_msg("%s", f_);                            \
    } while (0)

typedef struct group {
    int n;
    conv_comm_t comms[8];
} group;

static void group_make(group *g, int n)
{
    g->n = n;
    assert_ok(conv_comm_create_local(n, g->comms));
    ct_reset();
}

static void group_free(group *g)
{
    for (int r = 0; r < g->n; ++r) conv_comm_destroy(g->comms[r]);
}

/* --------------------------------------------------------- collectives */

static const int64_t kCounts[] = {0, 1, 17, 1000, 65539};

static void collectives_rank(int rank, int n, void *user)
{
    group *g = (group *)user;
    conv_comm_t c = g->comms[rank];
    int got = -1;
    CT_OK(conv_comm_get_rank(c, &got));
    CT_TRUE(got == rank, "rank %d reports rank %d", rank, got);
    CT_OK(conv_comm_get_size(c, &got));
    CT_TRUE(got == n, "rank %d reports size %d, want %d", rank, got, n);

    const int64_t maxc = 65539;
    void *send = malloc((size_t)maxc * 8), *recv = malloc((size_t)maxc * 8);
    if (!send || !recv) {
        ct_fail("out of memory");
        free(send);
        free(recv);
        return;
    }
    int salt = 0;
    for (int d = 0; d < 4; ++d) {
        conv_dtype_t dt = ct_dtypes[d];
        for (size_t k = 0; k < sizeof kCounts / sizeof kCounts[0]; ++k) {
            int64_t count = kCounts[k];
            for (int avg = 0; avg < 2; ++avg)
                for (int inplace = 0; inplace < 2; ++inplace) {
                    ++salt;
                    ct_fill(dt, send, count, rank, salt);
                    memset(recv, 0xA5, (size_t)maxc * 8);
                    void *out = inplace ? send : recv;
                    conv_status_t s = conv_comm_all_reduce(
                        c, send, out, count, dt, avg ? CONV_REDUCE_AVERAGE : CONV_REDUCE_SUM);
                    if (s != CONV_STATUS_SUCCESS) {
                        ct_fail("n %d rank %d %s count %lld: %s", n, rank, ct_dtype_name(dt),
                                (long long)count, conv_last_error());
                        goto out;
                    }
                    int64_t bad = ct_check(dt, out, count, n, salt, avg);
                    if (bad) {
                        ct_fail("n %d rank %d %s count %lld %s %s: element %lld is %g, want %g",
                                n, rank, ct_dtype_name(dt), (long long)count,
                                avg ? "average" : "sum", inplace ? "in place" : "out of place",
                                (long long)(bad - 1), ct_get(dt, out, bad - 1),
                                ct_expected(dt, n, bad - 1, salt, avg));
                        goto out;
                    }
                }
        }
        /* broadcast from every root: a bit-for-bit copy */
        for (int root = 0; root < n; ++root) {
            int64_t count = 4099;
            size_t bytes = (size_t)count * ct_size(dt);
            unsigned char *b = (unsigned char *)recv;
            for (size_t i = 0; i < bytes; ++i)
                b[i] = rank == root ? (unsigned char)(i * 31 + (size_t)root * 7) : 0xEE;
            conv_status_t s = conv_comm_broadcast(c, recv, count, dt, root);
            if (s != CONV_STATUS_SUCCESS) {
                ct_fail("n %d rank %d broadcast root %d: %s", n, rank, root, conv_last_error());
                goto out;
            }
            for (size_t i = 0; i < bytes; ++i)
                if (b[i] != (unsigned char)(i * 31 + (size_t)root * 7)) {
                    ct_fail("n %d rank %d broadcast %s root %d: byte %zu differs", n, rank,
                            ct_dtype_name(dt), root, i);
                    goto out;
                }
        }
    }
out:
    free(send);
    free(recv);
}

static int g_barrier_counter;

static void barrier_rank(int rank, int n, void *user)
{
    group *g = (group *)user;
    for (int it = 0; it < 20; ++it) {
        __atomic_add_fetch(&g_barrier_counter, 1, __ATOMIC_SEQ_CST);
        CT_OK(conv_comm_barrier(g->comms[rank]));
        int seen = __atomic_load_n(&g_barrier_counter, __ATOMIC_SEQ_CST);
        CT_TRUE(seen >= n * (it + 1), "rank %d iteration %d: counter %d < %d after the barrier",
                rank, it, seen, n * (it + 1));
        CT_OK(conv_comm_barrier(g->comms[rank])); /* nobody runs ahead into the next add */
    }
}

static void run_collectives(int n)
{
    group g;
    group_make(&g, n);
    assert_int_equal(ct_run_ranks(n, collectives_rank, &g), 0);
    assert_no_failure();
    g_barrier_counter = 0;
    assert_int_equal(ct_run_ranks(n, barrier_rank, &g), 0);
    assert_no_failure();
    group_free(&g);
}

static void test_collectives_1(void **state) { (void)state; run_collectives(1); }
static void test_collectives_2(void **state) { (void)state; run_collectives(2); }
static void test_collectives_3(void **state) { (void)state; run_collectives(3); }
static void test_collectives_4(void **state) { (void)state; run_collectives(4); }
static void test_collectives_8(void **state) { (void)state; run_collectives(8); }

/* ------------------------------------------------ 16-bit rounding, exhaustive */

typedef struct rounding {
    group g;
    conv_dtype_t dtype;
    int op;
    uint16_t *buf[2];
} rounding;

static void rounding_rank(int rank, int n, void *user)
{
    rounding *r = (rounding *)user;
    (void)n;
    CT_OK(conv_comm_all_reduce(r->g.comms[rank], r->buf[rank], r->buf[rank], 65536, r->dtype,
                               (conv_reduce_op_t)r->op));
}

/* Rank 0 holds every 16-bit pattern x, rank 1 the pattern x ^ 0x0101 (a
 * nearby value): their sum is exact in float, so the result must be the
 * reference rounding of that float sum (or its half, for AVERAGE). */
static void test_half_rounding(void **state)
{
    (void)state;
    for (int d = 2; d < 4; ++d)
        for (int op = 0; op < 2; ++op) {
            rounding r;
            r.dtype = ct_dtypes[d];
            r.op = op;
            group_make(&r.g, 2);
            r.buf[0] = malloc(65536 * 2);
            r.buf[1] = malloc(65536 * 2);
            assert_non_null(r.buf[0]);
            assert_non_null(r.buf[1]);
            for (int i = 0; i < 65536; ++i) {
                r.buf[0][i] = (uint16_t)i;
                r.buf[1][i] = (uint16_t)(i ^ 0x0101);
            }
            assert_int_equal(ct_run_ranks(2, rounding_rank, &r), 0);
            assert_no_failure();
            for (int i = 0; i < 65536; ++i) {
                double a = ct_get(r.dtype, &(uint16_t){(uint16_t)i}, 0);
                double b = ct_get(r.dtype, &(uint16_t){(uint16_t)(i ^ 0x0101)}, 0);
                float s = (float)a + (float)b;
                if (op == 1) s = s / 2.0f;
                uint16_t want = r.dtype == CONV_DTYPE_FLOAT16 ? ct_to_half(s) : ct_to_bf16(s);
                for (int k = 0; k < 2; ++k) {
                    uint16_t got = r.buf[k][i];
                    if (isnan(s)) {
                        double v = ct_get(r.dtype, &got, 0);
                        if (!isnan(v))
                            fail_msg("%s %s of pattern 0x%04x: got 0x%04x, want a NaN",
                                     ct_dtype_name(r.dtype), op ? "average" : "sum", i, got);
                    } else if (got != want) {
                        fail_msg("%s %s of pattern 0x%04x (%g + %g): rank %d got 0x%04x, want "
                                 "0x%04x",
                                 ct_dtype_name(r.dtype), op ? "average" : "sum", i, a, b, k, got,
                                 want);
                    }
                }
            }
            free(r.buf[0]);
            free(r.buf[1]);
            group_free(&r.g);
        }
}

/* ------------------------------------------------ cross-rank argument checks */

typedef struct mismatch {
    group g;
    int mode;
    char message[3][512];
} mismatch;

static void mismatch_rank(int rank, int n, void *user)
{
    mismatch *m = (mismatch *)user;
    conv_comm_t c = m->g.comms[rank];
    float a[64] = {0}, b[64];
    int64_t count = 16;
    conv_dtype_t dt = CONV_DTYPE_FLOAT32;
    conv_reduce_op_t op = CONV_REDUCE_SUM;
    conv_status_t s;
    (void)n;
    if (rank == 1) {
        if (m->mode == 0) count = 17;
        if (m->mode == 1) dt = CONV_DTYPE_FLOAT64;
        if (m->mode == 2) op = CONV_REDUCE_AVERAGE;
    }
    if (m->mode == 3 && rank == 2)
        s = conv_comm_barrier(c);
    else if (m->mode == 4)
        s = conv_comm_broadcast(c, a, 16, CONV_DTYPE_FLOAT32, rank == 1 ? 1 : 0);
    else if (m->mode == 5)
        s = conv_comm_all_reduce(c, m->message[0], m->message[0], 16, dt, op); /* one buffer */
    else
        s = conv_comm_all_reduce(c, a, b, count, dt, op);
    if (m->mode != 5) snprintf(m->message[rank], sizeof m->message[rank], "%s", conv_last_error());
    CT_TRUE(s == CONV_STATUS_INVALID_ARGUMENT, "mode %d rank %d: status %s (%s), want invalid "
            "argument", m->mode, rank, conv_status_string(s), conv_last_error());
    /* the communicator is still healthy: a matching call succeeds */
    for (int i = 0; i < 16; ++i) a[i] = (float)(rank + 1);
    CT_OK(conv_comm_all_reduce(c, a, b, 16, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM));
    CT_TRUE(b[0] == 6.0f, "rank %d: sum after a mismatch %g, want 6", rank, b[0]);
    CT_OK(conv_comm_get_error(c, NULL));
}

static void test_mismatch(void **state)
{
    (void)state;
    const char *want[] = {"count 17", "dtype", "op", "barrier", "root 1", "overlaps"};
    for (int mode = 0; mode < 6; ++mode) {
        mismatch m;
        memset(&m, 0, sizeof m);
        m.mode = mode;
        group_make(&m.g, 3);
        assert_int_equal(ct_run_ranks(3, mismatch_rank, &m), 0);
        assert_no_failure();
        if (mode != 5)
            for (int r = 0; r < 3; ++r)
                if (!strstr(m.message[r], want[mode]))
                    fail_msg("mode %d rank %d: message \"%s\" lacks \"%s\"", mode, r,
                             m.message[r], want[mode]);
        group_free(&m.g);
    }
}

/* ----------------------------------------------------- timeout and abort */

typedef struct failing {
    group g;
    double elapsed[8];
    conv_comm_state_t state[8];
    char message[8][512];
} failing;

static void timeout_rank(int rank, int n, void *user)
{
    failing *f = (failing *)user;
    conv_comm_t c = f->g.comms[rank];
    float a[8] = {0};
    CT_OK(conv_comm_set_timeout(c, 0.25));
    if (rank == n - 1) ct_sleep(0.8); /* the late rank */
    double t0 = ct_now();
    conv_status_t s = conv_comm_all_reduce(c, a, a, 8, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM);
    f->elapsed[rank] = ct_now() - t0;
    CT_STATUS(s, CONV_STATUS_BACKEND_ERROR);
    CT_STATUS(conv_comm_get_error(c, &f->state[rank]), CONV_STATUS_BACKEND_ERROR);
    snprintf(f->message[rank], sizeof f->message[rank], "%s", conv_last_error());
    CT_STATUS(conv_comm_barrier(c), CONV_STATUS_BACKEND_ERROR); /* sticky */
}

static void test_timeout(void **state)
{
    (void)state;
    failing f;
    memset(&f, 0, sizeof f);
    group_make(&f.g, 4);
    assert_int_equal(ct_run_ranks(4, timeout_rank, &f), 0);
    assert_no_failure();
    for (int r = 0; r < 4; ++r) {
        assert_int_equal(f.state[r], CONV_COMM_STATE_TIMED_OUT);
        if (r < 3 && (f.elapsed[r] < 0.2 || f.elapsed[r] > 0.25 + 2.0))
            fail_msg("rank %d failed after %.3f s, want about the 0.25 s timeout", r,
                     f.elapsed[r]);
        if (!strstr(f.message[r], "timed out") || !strstr(f.message[r], "rank 3"))
            fail_msg("rank %d: message \"%s\" should say the timeout and name rank 3", r,
                     f.message[r]);
    }
    assert_true(f.elapsed[3] < 0.5); /* the late rank fails at once */
    group_free(&f.g);
}

static void abort_rank(int rank, int n, void *user)
{
    failing *f = (failing *)user;
    conv_comm_t c = f->g.comms[rank];
    float a[8] = {0};
    (void)n;
    CT_OK(conv_comm_set_timeout(c, 60.0));
    double t0 = ct_now();
    conv_status_t s;
    if (rank == 2) {
        ct_sleep(0.1);
        CT_OK(conv_comm_abort(c));
        CT_OK(conv_comm_abort(c)); /* twice: nothing more */
        s = conv_comm_all_reduce(c, a, a, 8, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM);
    } else {
        s = conv_comm_all_reduce(c, a, a, 8, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM);
    }
    f->elapsed[rank] = ct_now() - t0;
    CT_STATUS(s, CONV_STATUS_BACKEND_ERROR);
    CT_STATUS(conv_comm_get_error(c, &f->state[rank]), CONV_STATUS_BACKEND_ERROR);
    snprintf(f->message[rank], sizeof f->message[rank], "%s", conv_last_error());
}

static void test_abort(void **state)
{
    (void)state;
    failing f;
    memset(&f, 0, sizeof f);
    group_make(&f.g, 3);
    assert_int_equal(ct_run_ranks(3, abort_rank, &f), 0);
    assert_no_failure();
    for (int r = 0; r < 3; ++r) {
        assert_int_equal(f.state[r], CONV_COMM_STATE_ABORTED);
        if (f.elapsed[r] > 5.0) fail_msg("rank %d took %.2f s to fail", r, f.elapsed[r]);
        if (!strstr(f.message[r], "conv_comm_abort was called on rank 2"))
            fail_msg("rank %d: message \"%s\"", r, f.message[r]);
    }
    group_free(&f.g);
}

/* A rank whose call fails (its timeout, or an abort) while the others still
 * reduce must not return before they are done with its buffers: the caller
 * frees them at once, and AddressSanitizer (or, for these 4 MB blocks that
 * malloc unmaps, a SIGSEGV) sees any later touch. The last of 4 ranks
 * arrives last with a timeout of 1e-9 s, so it starts its share first and
 * times out at the closing barrier when any other rank is still at work
 * (or, with an abort from another thread, every rank done early returns).
 * Whatever the verdict, a rank that returns SUCCESS holds the exact sum. */
enum { kFreedRanks = 4, kFreedCount = 1 << 20 };

typedef struct freeing {
    group g;
    int mode;       /* 0: timeout; 1: conv_comm_abort from another thread */
    int started;    /* atomic: ranks inside the call */
} freeing;

static void freeing_rank(int rank, int n, void *user)
{
    freeing *f = (freeing *)user;
    conv_comm_t c = f->g.comms[rank];
    const int64_t count = kFreedCount;
    float *send = malloc((size_t)count * sizeof(float));
    float *recv = malloc((size_t)count * sizeof(float));
    CT_TRUE(send && recv, "rank %d: out of memory", rank);
    ct_fill(CONV_DTYPE_FLOAT32, send, count, rank, 5);
    const int last = rank == n - 1;
    CT_OK(conv_comm_set_timeout(c, last && f->mode == 0 ? 1e-9 : 60.0));
    if (last) ct_sleep(0.05); /* arrive last: the first barrier does not wait */
    __atomic_add_fetch(&f->started, 1, __ATOMIC_SEQ_CST);
    conv_status_t s =
        conv_comm_all_reduce(c, send, recv, count, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM);
    int64_t bad = s == CONV_STATUS_SUCCESS ? ct_check(CONV_DTYPE_FLOAT32, recv, count, n, 5, 0)
                                           : 0;
    free(send); /* at once: no other rank may touch these any more */
    free(recv);
    CT_TRUE(s == CONV_STATUS_SUCCESS || s == CONV_STATUS_BACKEND_ERROR,
            "rank %d: all_reduce -> %s: %s", rank, conv_status_string(s), conv_last_error());
    CT_TRUE(bad == 0, "rank %d: element %lld of a successful all_reduce is wrong", rank,
            (long long)bad - 1);
}

static void *freeing_aborter(void *p)
{
    freeing *f = (freeing *)p;
    while (__atomic_load_n(&f->started, __ATOMIC_SEQ_CST) < f->g.n) ct_sleep(0.0001);
    ct_sleep(0.05); /* the last rank's wait: then all reduce, with luck still */
    conv_comm_abort(f->g.comms[f->g.n - 1]);
    return NULL;
}

static void run_freeing(int mode)
{
    for (int round = 0; round < 6; ++round) {
        freeing f;
        memset(&f, 0, sizeof f);
        f.mode = mode;
        group_make(&f.g, kFreedRanks);
        pthread_t t;
        if (mode == 1) assert_int_equal(pthread_create(&t, NULL, freeing_aborter, &f), 0);
        assert_int_equal(ct_run_ranks(kFreedRanks, freeing_rank, &f), 0);
        if (mode == 1) pthread_join(t, NULL);
        assert_no_failure();
        group_free(&f.g);
    }
}

static void test_timeout_buffers_freed(void **state) { (void)state; run_freeing(0); }
static void test_abort_buffers_freed(void **state) { (void)state; run_freeing(1); }

/* conv_comm_abort from a thread that is no rank, while ranks wait. */
static void waiting_rank(int rank, int n, void *user)
{
    failing *f = (failing *)user;
    (void)n;
    if (rank == 2) return; /* never comes */
    CT_OK(conv_comm_set_timeout(f->g.comms[rank], 60.0));
    CT_STATUS(conv_comm_barrier(f->g.comms[rank]), CONV_STATUS_BACKEND_ERROR);
}

static void *aborter(void *p)
{
    failing *f = (failing *)p;
    ct_sleep(0.1);
    conv_comm_abort(f->g.comms[0]);
    return NULL;
}

static void test_abort_from_other_thread(void **state)
{
    (void)state;
    failing f;
    memset(&f, 0, sizeof f);
    group_make(&f.g, 3);
    pthread_t t;
    double t0 = ct_now();
    assert_int_equal(pthread_create(&t, NULL, aborter, &f), 0);
    assert_int_equal(ct_run_ranks(3, waiting_rank, &f), 0);
    pthread_join(t, NULL);
    assert_no_failure();
    assert_true(ct_now() - t0 < 5.0);
    conv_comm_state_t st;
    assert_status(conv_comm_get_error(f.g.comms[2], &st), CONV_STATUS_BACKEND_ERROR);
    assert_int_equal(st, CONV_COMM_STATE_ABORTED);
    group_free(&f.g);
}

static void test_destroyed_peer(void **state)
{
    (void)state;
    conv_comm_t c[2];
    conv_comm_state_t st;
    assert_ok(conv_comm_create_local(2, c));
    conv_comm_destroy(c[1]);
    assert_ok(conv_comm_set_timeout(c[0], 60.0));
    double t0 = ct_now();
    assert_status(conv_comm_barrier(c[0]), CONV_STATUS_BACKEND_ERROR);
    assert_true(ct_now() - t0 < 1.0);
    assert_status(conv_comm_get_error(c[0], &st), CONV_STATUS_BACKEND_ERROR);
    assert_int_equal(st, CONV_COMM_STATE_ABORTED);
    assert_non_null(strstr(conv_last_error(), "rank 1"));
    conv_comm_destroy(c[0]);
}

/* A second call on a communicator in use is refused, not interleaved. */
typedef struct busy {
    conv_comm_t c[2];
    int entered; /* atomic */
} busy;

static void *busy_rank0(void *p)
{
    busy *b = (busy *)p;
    __atomic_store_n(&b->entered, 1, __ATOMIC_SEQ_CST);
    if (conv_comm_barrier(b->c[0]) != CONV_STATUS_SUCCESS) ct_fail("barrier: %s", conv_last_error());
    return NULL;
}

static void test_busy(void **state)
{
    (void)state;
    busy b;
    float x[4] = {0};
    ct_reset();
    b.entered = 0;
    assert_ok(conv_comm_create_local(2, b.c));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, busy_rank0, &b), 0);
    while (!__atomic_load_n(&b.entered, __ATOMIC_SEQ_CST)) ct_sleep(0.001);
    ct_sleep(0.05); /* rank 0 is now waiting in its barrier */
    assert_status(conv_comm_all_reduce(b.c[0], x, x, 4, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(conv_last_error(), "in use"));
    assert_ok(conv_comm_barrier(b.c[1]));
    pthread_join(t, NULL);
    assert_no_failure();
    conv_comm_destroy(b.c[0]);
    conv_comm_destroy(b.c[1]);
}

/* ------------------------------------------------------------------ API */

static void test_api(void **state)
{
    (void)state;
    conv_comm_t c[2], one;
    int v, avail;
    double t;
    conv_device_t dev;
    conv_comm_backend_t be;
    float x[4] = {0};

    conv_comm_destroy(NULL);
    conv_reducer_destroy(NULL);
    assert_status(conv_comm_create_local(0, c), CONV_STATUS_INVALID_ARGUMENT);
    assert_true(tu_error_mentions(0));
    assert_status(conv_comm_create_local(1025, c), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_create_local(2, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_comm_create_local(1, &one));
    assert_ok(conv_comm_create_local(2, c));

    assert_ok(conv_comm_backend_available(CONV_COMM_BACKEND_LOCAL, &avail));
    assert_int_equal(avail, 1);
    assert_ok(conv_comm_backend_available(CONV_COMM_BACKEND_MPI, &avail));
    assert_ok(conv_comm_backend_available(CONV_COMM_BACKEND_NCCL, &avail));
    assert_status(conv_comm_backend_available((conv_comm_backend_t)7, &avail),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_backend_available(CONV_COMM_BACKEND_LOCAL, NULL),
                  CONV_STATUS_INVALID_ARGUMENT);

    assert_ok(conv_comm_get_backend(c[1], &be));
    assert_int_equal(be, CONV_COMM_BACKEND_LOCAL);
    assert_ok(conv_comm_get_device(c[1], &dev, &v));
    assert_int_equal(dev, CONV_DEVICE_CPU);
    assert_int_equal(v, 0);
    assert_ok(conv_comm_get_timeout(c[0], &t));
    assert_true(t > 0);
    assert_ok(conv_comm_set_timeout(c[0], INFINITY));
    assert_ok(conv_comm_get_timeout(c[0], &t));
    assert_true(isinf(t));
    assert_status(conv_comm_set_timeout(c[0], 0.0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_set_timeout(c[0], -1.0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_set_timeout(c[0], NAN), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_set_stream(c[0], NULL), CONV_STATUS_UNSUPPORTED);
    assert_status(conv_comm_get_rank(NULL, &v), CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_comm_get_rank(c[0], NULL), CONV_STATUS_INVALID_ARGUMENT);

    /* a handle of another kind, and a destroyed one */
    conv_desc_t desc;
    assert_ok(conv_desc_create(2, &desc));
    assert_status(conv_comm_barrier((conv_comm_t)(void *)desc), CONV_STATUS_INVALID_HANDLE);
    conv_desc_destroy(desc);
    conv_comm_t dead;
    assert_ok(conv_comm_create_local(1, &dead));
    conv_comm_destroy(dead);
    assert_status(conv_comm_barrier(dead), CONV_STATUS_INVALID_HANDLE);
    conv_comm_destroy(dead); /* twice: no-op */

    /* argument checks, before any communication: one rank is enough */
    assert_status(conv_comm_all_reduce(one, x, x, -1, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_all_reduce(one, NULL, x, 4, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_all_reduce(one, x, x, 4, (conv_dtype_t)9, CONV_REDUCE_SUM),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_all_reduce(one, x, x, 4, CONV_DTYPE_FLOAT32, (conv_reduce_op_t)5),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_comm_all_reduce(one, x, x + 1, 2, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM),
                  CONV_STATUS_INVALID_ARGUMENT); /* overlapping, not equal */
    assert_status(conv_comm_broadcast(one, x, 4, CONV_DTYPE_FLOAT32, 1),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_true(tu_error_mentions(1));
    assert_ok(conv_comm_all_reduce(one, NULL, NULL, 0, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM));
    assert_ok(conv_comm_synchronize(one));
    assert_ok(conv_comm_barrier(one));
    conv_comm_state_t st = CONV_COMM_STATE_FAILED;
    assert_ok(conv_comm_get_error(one, &st));
    assert_int_equal(st, CONV_COMM_STATE_OK);

    /* NCCL: unavailable here, or refused arguments */
    char id[CONV_COMM_UNIQUE_ID_BYTES];
    assert_status(conv_comm_unique_id(id, 16), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_comm_backend_available(CONV_COMM_BACKEND_NCCL, &avail));
    if (!avail) {
        assert_status(conv_comm_unique_id(id, sizeof id), CONV_STATUS_NOT_AVAILABLE);
        assert_status(conv_comm_create_nccl(id, sizeof id, 1, 0, 0, &dead),
                      CONV_STATUS_NOT_AVAILABLE);
        assert_status(conv_comm_create_nccl_all(1, NULL, &dead), CONV_STATUS_NOT_AVAILABLE);
    }
    assert_status(conv_comm_create_nccl(id, sizeof id, 2, 2, 0, &dead),
                  CONV_STATUS_INVALID_ARGUMENT);
    /* MPI: not built, or not initialised by this program */
    assert_status(conv_comm_create_mpi_world(&dead), CONV_STATUS_NOT_AVAILABLE);
    assert_ok(conv_comm_backend_available(CONV_COMM_BACKEND_MPI, &avail));
    assert_status(conv_comm_create_mpi_world(&dead), CONV_STATUS_NOT_AVAILABLE);
    assert_non_null(strstr(conv_last_error(), avail ? "not initialised" : "without MPI"));

    conv_comm_destroy(one);
    conv_comm_destroy(c[0]);
    conv_comm_destroy(c[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_collectives_1),
        cmocka_unit_test(test_collectives_2),
        cmocka_unit_test(test_collectives_3),
        cmocka_unit_test(test_collectives_4),
        cmocka_unit_test(test_collectives_8),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_abort_from_other_thread),
        cmocka_unit_test(test_timeout_buffers_freed),
        cmocka_unit_test(test_abort_buffers_freed),
        cmocka_unit_test(test_destroyed_peer),
        cmocka_unit_test(test_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
