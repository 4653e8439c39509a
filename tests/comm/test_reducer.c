/*
 * test_reducer.c -- the gradient reducer over the in-process backend: the
 * bucket layout for known parameter sizes (PyTorch DDP's and NVCaffe's
 * rules), averaged gradients bit-exact for every mark order (reverse,
 * forward, random, two threads) and N = 1..4, reductions starting before
 * finish, unused and never-marked parameters, layouts that differ between
 * ranks, abort and timeout ending every rank with an error, the parameter
 * broadcast, the fused SGD step and the API's refusals.
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

#define MAXR 8
#define MAXP 8

/* One rank's reducer over the parameters `sizes` (forward order). */
typedef struct net {
    int nparams;
    int64_t sizes[MAXP];
    conv_dtype_t dtype;
    size_t first_cap, cap; /* 0: defaults */
    int bucket_count;      /* 0: byte caps */
    double timeout;
    conv_comm_t comms[MAXR];
    conv_reducer_t red[MAXR];
    void *weights[MAXR][MAXP];
    int mode;
    char message[MAXR][512];
    double elapsed[MAXR];
} net;

static void net_comms(net *n, int ranks)
{
    assert_ok(conv_comm_create_local(ranks, n->comms));
    ct_reset();
}

static void net_free(net *n, int ranks)
{
    for (int r = 0; r < ranks; ++r) {
        conv_reducer_destroy(n->red[r]);
        n->red[r] = NULL;
        conv_comm_destroy(n->comms[r]);
        for (int p = 0; p < n->nparams; ++p) {
            free(n->weights[r][p]);
            n->weights[r][p] = NULL;
        }
    }
}

/* Creates and sets up rank r's reducer (in a rank thread). Returns status. */
static conv_status_t rank_setup(net *n, int r)
{
    conv_status_t s;
    if (n->timeout > 0) conv_comm_set_timeout(n->comms[r], n->timeout);
    s = conv_reducer_create(n->comms[r], n->dtype, &n->red[r]);
    if (s) return s;
    if (n->first_cap) {
        s = conv_reducer_set_bucket_bytes(n->red[r], n->first_cap, n->cap);
        if (s) return s;
    }
    if (n->bucket_count) {
        s = conv_reducer_set_bucket_count(n->red[r], n->bucket_count);
        if (s) return s;
    }
    for (int p = 0; p < n->nparams; ++p) {
        int index = -1;
        n->weights[r][p] = calloc((size_t)n->sizes[p], 8);
        if (!n->weights[r][p]) return CONV_STATUS_OUT_OF_MEMORY;
        s = conv_reducer_add_param(n->red[r], n->weights[r][p], n->sizes[p], &index);
        if (s) return s;
        if (index != p) return CONV_STATUS_INTERNAL_ERROR;
    }
    return conv_reducer_setup(n->red[r]);
}

/* --------------------------------------------------------------- layout */

typedef struct want_bucket {
    int64_t offset, elements;
    int params;
} want_bucket;

static void check_layout(net *n, int nb, const want_bucket *wb, const int *pb,
                         const int64_t *poff)
{
    net_comms(n, 1);
    assert_ok(rank_setup(n, 0));
    int count = -1;
    assert_ok(conv_reducer_get_param_count(n->red[0], &count));
    assert_int_equal(count, n->nparams);
    assert_ok(conv_reducer_get_bucket_count(n->red[0], &count));
    assert_int_equal(count, nb);
    for (int b = 0; b < nb; ++b) {
        int64_t off = -1, el = -1;
        int np = -1;
        assert_ok(conv_reducer_get_bucket(n->red[0], b, &off, &el, &np));
        if (off != wb[b].offset || el != wb[b].elements || np != wb[b].params)
            fail_msg("bucket %d: offset %lld elements %lld params %d, want %lld %lld %d", b,
                     (long long)off, (long long)el, np, (long long)wb[b].offset,
                     (long long)wb[b].elements, wb[b].params);
    }
    void *base, *g;
    int64_t total;
    assert_ok(conv_reducer_get_buffer(n->red[0], &base, &total));
    for (int p = 0; p < n->nparams; ++p) {
        int b = -1;
        int64_t off = -1;
        assert_ok(conv_reducer_get_param_slot(n->red[0], p, &b, &off));
        if (b != pb[p] || off != poff[p])
            fail_msg("parameter %d: bucket %d offset %lld, want %d %lld", p, b, (long long)off,
                     pb[p], (long long)poff[p]);
        assert_ok(conv_reducer_get_grad(n->red[0], p, &g));
        assert_ptr_equal(g, (char *)base + off * (int64_t)ct_size(n->dtype));
        assert_true(((uintptr_t)g % 64) == 0);
        assert_true(off + n->sizes[p] <= total);
    }
    assert_status(conv_reducer_get_bucket(n->red[0], nb, NULL, NULL, NULL),
                  CONV_STATUS_INVALID_ARGUMENT);
    net_free(n, 1);
}

static void test_layout_ddp_default(void **state)
{
    (void)state;
    /* fp32, default caps (1 MiB first, 25 MiB after), backward order p4..p0:
     * p4 400 B + p3 768 KiB < 1 MiB, + p2 256 KiB >= 1 MiB: bucket 0 = p4 p3 p2;
     * bucket 1 = p1 p0 (1.2 MB < 25 MiB). Slots on 16-element boundaries. */
    net n = {.nparams = 5, .sizes = {10, 300000, 65536, 196608, 100}, .dtype = CONV_DTYPE_FLOAT32};
    want_bucket wb[] = {{0, 262256, 3}, {262256, 300010, 2}};
    int pb[] = {1, 1, 0, 0, 0};
    int64_t po[] = {562256, 262256, 196720, 112, 0};
    check_layout(&n, 2, wb, pb, po);
}

static void test_layout_ddp_small_caps(void **state)
{
    (void)state;
    /* caps 64 B then 128 B over 10, 40, 3, 50, 20, 8 floats (backward: 8, 20 | 50 | 3, 40 | 10) */
    net n = {.nparams = 6, .sizes = {10, 40, 3, 50, 20, 8}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 64, .cap = 128};
    want_bucket wb[] = {{0, 36, 2}, {48, 50, 1}, {112, 56, 2}, {176, 10, 1}};
    int pb[] = {3, 2, 2, 1, 0, 0};
    int64_t po[] = {176, 128, 112, 48, 16, 0};
    check_layout(&n, 4, wb, pb, po);

    /* the same in fp64: slots on 8-element boundaries, caps in bytes */
    net d = {.nparams = 6, .sizes = {10, 40, 3, 50, 20, 8}, .dtype = CONV_DTYPE_FLOAT64,
             .first_cap = 64, .cap = 128};
    want_bucket wd[] = {{0, 8, 1}, {8, 20, 1}, {32, 50, 1}, {88, 48, 2}, {136, 10, 1}};
    int pd[] = {4, 3, 3, 2, 1, 0};
    int64_t od[] = {136, 96, 88, 32, 8, 0};
    check_layout(&d, 5, wd, pd, od);
}

static void test_layout_nvcaffe(void **state)
{
    (void)state;
    /* NVCaffe: cap = ceil(total / buckets) = 2400 / 3 = 800 B: two 400-B parameters a bucket */
    net n = {.nparams = 6, .sizes = {100, 100, 100, 100, 100, 100},
             .dtype = CONV_DTYPE_FLOAT32, .bucket_count = 3};
    want_bucket wb[] = {{0, 212, 2}, {224, 212, 2}, {448, 212, 2}};
    int pb[] = {2, 2, 1, 1, 0, 0};
    int64_t po[] = {560, 448, 336, 224, 112, 0};
    check_layout(&n, 3, wb, pb, po);
    /* a bucket closes once it reaches the cap, the parameter that reaches it
     * included: fp16, cap ceil(2040 / 3) = 680 B; 20 B + 2000 B close bucket 0 */
    net m = {.nparams = 3, .sizes = {10, 1000, 10}, .dtype = CONV_DTYPE_FLOAT16,
             .bucket_count = 3};
    want_bucket wm[] = {{0, 1032, 2}, {1056, 10, 1}};
    int pm[] = {1, 0, 0};
    int64_t om[] = {1056, 32, 0};
    check_layout(&m, 2, wm, pm, om);
}

/* -------------------------------------------------------- averaged gradients */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct marker {
    net *n;
    int rank, parity, step;
} marker;

static void *mark_half(void *p)
{
    marker *m = (marker *)p;
    for (int q = m->n->nparams - 1; q >= 0; --q)
        if (q % 2 == m->parity && conv_reducer_mark_ready(m->n->red[m->rank], q))
            ct_fail("rank %d parity %d mark %d: %s", m->rank, m->parity, q, conv_last_error());
    return NULL;
}

static void fill_grads(net *n, int r, int step)
{
    for (int p = 0; p < n->nparams; ++p) {
        void *g;
        if (conv_reducer_get_grad(n->red[r], p, &g) == CONV_STATUS_SUCCESS)
            ct_fill(n->dtype, g, n->sizes[p], r, step * 16 + p);
    }
}

static void orders_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    for (int step = 0; step < 3; ++step) {
        fill_grads(n, r, step);
        int order[MAXP];
        for (int p = 0; p < n->nparams; ++p) order[p] = n->nparams - 1 - p; /* reverse */
        if (n->mode == 1)
            for (int p = 0; p < n->nparams; ++p) order[p] = p; /* forward: nothing early */
        if (n->mode == 2) {                                     /* random, per rank and step */
            uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(r * 7 + step + 1);
            for (int p = n->nparams - 1; p > 0; --p) {
                int k = (int)(rng_next(&s) % (uint64_t)(p + 1));
                int t = order[p];
                order[p] = order[k];
                order[k] = t;
            }
        }
        if (n->mode == 3) { /* two backward threads marking at once */
            pthread_t t[2];
            marker m[2] = {{n, r, 0, step}, {n, r, 1, step}};
            for (int k = 0; k < 2; ++k) pthread_create(&t[k], NULL, mark_half, &m[k]);
            for (int k = 0; k < 2; ++k) pthread_join(t[k], NULL);
        } else {
            for (int k = 0; k < n->nparams; ++k) CT_OK(conv_reducer_mark_ready(n->red[r], order[k]));
        }
        CT_OK(conv_reducer_finish(n->red[r]));
        for (int p = 0; p < n->nparams; ++p) {
            void *g;
            CT_OK(conv_reducer_get_grad(n->red[r], p, &g));
            int64_t bad = ct_check(n->dtype, g, n->sizes[p], ranks, step * 16 + p, 1);
            CT_TRUE(!bad, "mode %d %s N=%d rank %d step %d parameter %d element %lld: %g, want %g",
                    n->mode, ct_dtype_name(n->dtype), ranks, r, step, p, (long long)(bad - 1),
                    ct_get(n->dtype, g, bad - 1),
                    ct_expected(n->dtype, ranks, bad - 1, step * 16 + p, 1));
        }
        double comm = -1, exposed = -1;
        CT_OK(conv_reducer_get_step_times(n->red[r], &comm, &exposed));
        CT_TRUE(comm >= 0 && exposed >= 0, "step times %g %g", comm, exposed);
    }
}

static void test_mark_orders(void **state)
{
    (void)state;
    for (int ranks = 1; ranks <= 4; ++ranks)
        for (int mode = 0; mode < 4; ++mode) {
            net n = {.nparams = 6, .sizes = {1000, 70000, 3, 30000, 17, 5000},
                     .dtype = CONV_DTYPE_FLOAT32, .first_cap = 4096, .cap = 65536,
                     .mode = mode};
            net_comms(&n, ranks);
            assert_int_equal(ct_run_ranks(ranks, orders_rank, &n), 0);
            assert_no_failure();
            net_free(&n, ranks);
        }
    /* every dtype, reverse order, NVCaffe's rule */
    for (int d = 0; d < 4; ++d) {
        net n = {.nparams = 5, .sizes = {33, 4000, 1, 777, 12345}, .dtype = ct_dtypes[d],
                 .bucket_count = 3};
        net_comms(&n, 3);
        assert_int_equal(ct_run_ranks(3, orders_rank, &n), 0);
        assert_no_failure();
        net_free(&n, 3);
    }
}

/* A bucket's reduction starts when its parameters are marked, before
 * finish: bucket 0 (the last parameter) becomes averaged while the others
 * are still unmarked. */
static void early_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    fill_grads(n, r, 0);
    int last = n->nparams - 1;
    void *g;
    CT_OK(conv_reducer_get_grad(n->red[r], last, &g));
    CT_OK(conv_reducer_mark_ready(n->red[r], last));
#if !defined(__SANITIZE_THREAD__) /* the peek below races with the reduction, on purpose */
    double t0 = ct_now();
    while (ct_check(n->dtype, g, n->sizes[last], ranks, last, 1) && ct_now() - t0 < 10.0)
        ct_sleep(0.001);
    CT_TRUE(!ct_check(n->dtype, g, n->sizes[last], ranks, last, 1),
            "rank %d: bucket 0 was not reduced before finish", r);
#endif
    for (int p = last - 1; p >= 0; --p) CT_OK(conv_reducer_mark_ready(n->red[r], p));
    CT_OK(conv_reducer_finish(n->red[r]));
}

static void test_reduction_before_finish(void **state)
{
    (void)state;
    net n = {.nparams = 3, .sizes = {5000, 5000, 5000}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 1024, .cap = 1024};
    net_comms(&n, 2);
    assert_int_equal(ct_run_ranks(2, early_rank, &n), 0);
    assert_no_failure();
    net_free(&n, 2);
}

/* ------------------------------------------------ unused, unmarked, twice */

static void unused_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    fill_grads(n, r, 0);
    for (int p = n->nparams - 1; p >= 0; --p) {
        if (p == 1 && r == 0)
            CT_OK(conv_reducer_mark_unused(n->red[r], p));
        else
            CT_OK(conv_reducer_mark_ready(n->red[r], p));
    }
    CT_OK(conv_reducer_finish(n->red[r]));
    float *g;
    CT_OK(conv_reducer_get_grad(n->red[r], 1, (void **)&g));
    for (int64_t i = 0; i < n->sizes[1]; ++i) {
        float sum = 0;
        for (int k = 1; k < ranks; ++k) sum += (float)ct_value(k, i, 1);
        float want = sum / (float)ranks;
        CT_TRUE(g[i] == want, "rank %d element %lld: %g, want %g (rank 0 unused)", r,
                (long long)i, g[i], want);
    }
}

static void test_unused(void **state)
{
    (void)state;
    net n = {.nparams = 3, .sizes = {100, 200, 300}, .dtype = CONV_DTYPE_FLOAT32};
    net_comms(&n, 3);
    assert_int_equal(ct_run_ranks(3, unused_rank, &n), 0);
    assert_no_failure();
    net_free(&n, 3);
}

static void unmarked_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    (void)ranks;
    CT_OK(rank_setup(n, r));
    fill_grads(n, r, 0);
    for (int p = n->nparams - 1; p >= 0; --p)
        if (!(r == 1 && p == 1)) CT_OK(conv_reducer_mark_ready(n->red[r], p));
    double t0 = ct_now();
    CT_STATUS(conv_reducer_finish(n->red[r]), CONV_STATUS_INVALID_ARGUMENT);
    n->elapsed[r] = ct_now() - t0;
    snprintf(n->message[r], sizeof n->message[r], "%s", conv_last_error());
    /* the next step is a normal one */
    fill_grads(n, r, 1);
    for (int p = n->nparams - 1; p >= 0; --p) CT_OK(conv_reducer_mark_ready(n->red[r], p));
    CT_OK(conv_reducer_finish(n->red[r]));
    void *g;
    CT_OK(conv_reducer_get_grad(n->red[r], 0, &g));
    CT_TRUE(!ct_check(n->dtype, g, n->sizes[0], ranks, 16, 1), "rank %d: step after", r);
}

static void test_unmarked(void **state)
{
    (void)state;
    net n = {.nparams = 3, .sizes = {100, 200, 300}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 256, .cap = 256, .timeout = 30.0};
    net_comms(&n, 3);
    assert_int_equal(ct_run_ranks(3, unmarked_rank, &n), 0);
    assert_no_failure();
    for (int r = 0; r < 3; ++r) {
        if (n.elapsed[r] > 5.0) fail_msg("rank %d waited %.2f s", r, n.elapsed[r]);
        const char *want = r == 1 ? "parameter 1 (of 3) was neither marked" : "1 of 3 ranks";
        if (!strstr(n.message[r], want))
            fail_msg("rank %d: message \"%s\" lacks \"%s\"", r, n.message[r], want);
    }
    net_free(&n, 3);
}

static void test_mark_twice_and_misuse(void **state)
{
    (void)state;
    net n = {.nparams = 2, .sizes = {10, 20}, .dtype = CONV_DTYPE_FLOAT32};
    conv_reducer_t r;
    void *g;
    int idx;
    net_comms(&n, 1);
    assert_status(conv_reducer_create(n.comms[0], (conv_dtype_t)7, &r),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_create(NULL, CONV_DTYPE_FLOAT32, &r), CONV_STATUS_INVALID_HANDLE);
    assert_ok(conv_reducer_create(n.comms[0], CONV_DTYPE_FLOAT32, &r));
    assert_status(conv_reducer_setup(r), CONV_STATUS_INVALID_ARGUMENT); /* no parameter */
    assert_status(conv_reducer_add_param(r, NULL, 0, &idx), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_get_grad(r, 0, &g), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_mark_ready(r, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_set_bucket_bytes(r, 0, 10), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_set_bucket_count(r, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_set_stream(r, NULL), CONV_STATUS_UNSUPPORTED);
    assert_ok(conv_reducer_add_param(r, NULL, 10, NULL));
    assert_ok(conv_reducer_add_param(r, NULL, 20, &idx));
    assert_int_equal(idx, 1);
    assert_ok(conv_reducer_setup(r));
    assert_status(conv_reducer_setup(r), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_add_param(r, NULL, 5, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_get_grad(r, 2, &g), CONV_STATUS_INVALID_ARGUMENT);
    assert_true(tu_error_mentions(2));
    assert_status(conv_reducer_mark_ready(r, -1), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_reducer_mark_ready(r, 1));
    assert_status(conv_reducer_mark_ready(r, 1), CONV_STATUS_INVALID_ARGUMENT);
    assert_true(tu_error_mentions(1));
    assert_status(conv_reducer_broadcast_params(r, 0), CONV_STATUS_INVALID_ARGUMENT); /* mid-step */
    assert_ok(conv_reducer_mark_unused(r, 0));
    assert_ok(conv_reducer_finish(r));
    /* no weights: neither broadcast nor SGD */
    assert_status(conv_reducer_broadcast_params(r, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_apply_sgd(r, 0.1, 0.9, 0.0), CONV_STATUS_INVALID_ARGUMENT);
    assert_status(conv_reducer_mark_ready((conv_reducer_t)(void *)n.comms[0], 0),
                  CONV_STATUS_INVALID_HANDLE);
    conv_reducer_destroy(r);
    conv_reducer_destroy(r); /* twice: no-op */
    net_free(&n, 1);
}

/* The flat buffer's size in bytes is checked: parameters each accepted by
 * add_param (up to 2^62 / element bytes) can add up past int64, which once
 * wrapped to a tiny buffer that setup took as SUCCESS. Setup fails with
 * OVERFLOW naming the numbers, on every rank (also when only one rank's
 * parameters overflow: none waits), and leaves the reducer as it was. */
typedef struct huge {
    conv_comm_t comms[2];
    conv_dtype_t dtype;
    int bucket_count;
    char message[2][512];
} huge;

static void huge_rank(int r, int ranks, void *user)
{
    huge *h = (huge *)user;
    (void)ranks;
    conv_reducer_t red = NULL;
    int nparams = r == 0 && h->comms[1] ? 1 : 8; /* with 2 ranks, rank 0's are small */
    const int64_t largest = (INT64_MAX / 4) / (int64_t)ct_size(h->dtype); /* add_param's limit */
    const int64_t count = r == 0 && h->comms[1] ? 100 : largest;
    CT_OK(conv_comm_set_timeout(h->comms[r], 30.0));
    CT_OK(conv_reducer_create(h->comms[r], h->dtype, &red));
    if (h->bucket_count) CT_OK(conv_reducer_set_bucket_count(red, h->bucket_count));
    for (int p = 0; p < nparams; ++p) CT_OK(conv_reducer_add_param(red, NULL, count, NULL));
    conv_status_t s = conv_reducer_setup(red);
    snprintf(h->message[r], sizeof h->message[r], "%s", conv_last_error());
    void *buf = NULL;
    int got = -1;
    conv_status_t after = conv_reducer_get_buffer(red, &buf, NULL);
    conv_status_t added = conv_reducer_add_param(red, NULL, 1, &got); /* still configurable */
    conv_reducer_destroy(red);
    CT_STATUS(s, CONV_STATUS_OVERFLOW);
    CT_STATUS(after, CONV_STATUS_INVALID_ARGUMENT); /* not set up */
    CT_STATUS(added, CONV_STATUS_SUCCESS);
    CT_TRUE(got == nparams, "rank %d: the parameter after a failed setup is %d, want %d", r, got,
            nparams);
}

static void test_size_overflow(void **state)
{
    (void)state;
    for (int d = 0; d < 4; ++d)
        for (int ranks = 1; ranks <= 2; ++ranks) {
            huge h;
            memset(&h, 0, sizeof h);
            h.dtype = ct_dtypes[d];
            h.bucket_count = d % 2 ? 3 : 0; /* the even-bucket rule sums the bytes too */
            assert_ok(conv_comm_create_local(ranks, h.comms));
            ct_reset();
            double t0 = ct_now();
            assert_int_equal(ct_run_ranks(ranks, huge_rank, &h), 0);
            assert_no_failure();
            assert_true(ct_now() - t0 < 10.0); /* no rank waited for a timeout */
            /* the overflowing rank names its numbers; the other names it */
            const char *own = h.message[ranks - 1];
            if (!strstr(own, "8 parameters") || !strstr(own, "int64"))
                fail_msg("%s, %d rank(s): message \"%s\"", ct_dtype_name(h.dtype), ranks, own);
            if (ranks == 2 && !strstr(h.message[0], "rank 1"))
                fail_msg("%s: rank 0's message \"%s\" should name rank 1",
                         ct_dtype_name(h.dtype), h.message[0]);
            for (int r = 0; r < ranks; ++r) conv_comm_destroy(h.comms[r]);
        }
}

/* ------------------------------------------------ layouts that differ */

static void mismatch_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    (void)ranks;
    net mine = *n;
    if (r == 2 && n->mode == 0) { /* an extra parameter */
        mine.nparams = n->nparams + 1;
        mine.sizes[n->nparams] = 100;
    }
    if (r == 2 && n->mode == 1) {                              /* same totals, other sizes */
        mine.sizes[0] = n->sizes[1];
        mine.sizes[1] = n->sizes[0];
    }
    mine.comms[r] = n->comms[r];
    conv_status_t s = rank_setup(&mine, r);
    n->red[r] = mine.red[r];
    for (int p = 0; p < mine.nparams; ++p) n->weights[r][p] = mine.weights[r][p];
    snprintf(n->message[r], sizeof n->message[r], "%s", conv_last_error());
    CT_STATUS(s, CONV_STATUS_SHAPE_MISMATCH);
    CT_STATUS(conv_reducer_mark_ready(n->red[r], 0), CONV_STATUS_INVALID_ARGUMENT); /* not set up */
}

static void test_layout_mismatch(void **state)
{
    (void)state;
    for (int mode = 0; mode < 2; ++mode) {
        net n = {.nparams = 3, .sizes = {100, 200, 300}, .dtype = CONV_DTYPE_FLOAT32,
                 .mode = mode};
        net_comms(&n, 3);
        assert_int_equal(ct_run_ranks(3, mismatch_rank, &n), 0);
        assert_no_failure();
        for (int r = 0; r < 3; ++r) {
            const char *want = mode == 0 ? "rank 2: 4 parameters, 700 elements" : "rank 2: the same counts";
            if (!strstr(n.message[r], want) || !strstr(n.message[r], "rank 0: 3 parameters, 600"))
                fail_msg("mode %d rank %d: message \"%s\"", mode, r, n.message[r]);
        }
        n.nparams = 4; /* free the extra weights too */
        net_free(&n, 3);
    }
}

/* ---------------------------------------------------- abort and timeout */

static void abort_step_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    fill_grads(n, r, 0);
    double t0 = ct_now();
    if (r == ranks - 1) {
        CT_OK(conv_reducer_mark_ready(n->red[r], n->nparams - 1));
        ct_sleep(0.1);
        CT_OK(conv_comm_abort(n->comms[r]));
        CT_STATUS(conv_reducer_mark_ready(n->red[r], 0), CONV_STATUS_BACKEND_ERROR);
    } else {
        for (int p = n->nparams - 1; p >= 0; --p) CT_OK(conv_reducer_mark_ready(n->red[r], p));
    }
    CT_STATUS(conv_reducer_finish(n->red[r]), CONV_STATUS_BACKEND_ERROR);
    n->elapsed[r] = ct_now() - t0;
    snprintf(n->message[r], sizeof n->message[r], "%s", conv_last_error());
    conv_comm_state_t st;
    CT_STATUS(conv_comm_get_error(n->comms[r], &st), CONV_STATUS_BACKEND_ERROR);
    CT_TRUE(st == CONV_COMM_STATE_ABORTED, "rank %d: state %d", r, (int)st);
    /* sticky: the next step fails at once */
    CT_STATUS(conv_reducer_mark_ready(n->red[r], 0), CONV_STATUS_BACKEND_ERROR);
    CT_STATUS(conv_reducer_finish(n->red[r]), CONV_STATUS_BACKEND_ERROR);
}

static void test_abort_step(void **state)
{
    (void)state;
    net n = {.nparams = 4, .sizes = {1000, 1000, 1000, 1000}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 4000, .cap = 4000, .timeout = 60.0};
    net_comms(&n, 4);
    assert_int_equal(ct_run_ranks(4, abort_step_rank, &n), 0);
    assert_no_failure();
    for (int r = 0; r < 4; ++r)
        if (n.elapsed[r] > 5.0) fail_msg("rank %d took %.2f s to fail", r, n.elapsed[r]);
    net_free(&n, 4);
}

static void timeout_step_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    fill_grads(n, r, 0);
    if (r == ranks - 1) ct_sleep(1.0); /* a rank stuck in its backward */
    double t0 = ct_now();
    conv_status_t s = CONV_STATUS_SUCCESS;
    for (int p = n->nparams - 1; p >= 0 && s == CONV_STATUS_SUCCESS; --p)
        s = conv_reducer_mark_ready(n->red[r], p);
    if (s == CONV_STATUS_SUCCESS) s = conv_reducer_finish(n->red[r]);
    n->elapsed[r] = ct_now() - t0;
    CT_STATUS(s, CONV_STATUS_BACKEND_ERROR);
    conv_comm_state_t st;
    CT_STATUS(conv_comm_get_error(n->comms[r], &st), CONV_STATUS_BACKEND_ERROR);
    CT_TRUE(st == CONV_COMM_STATE_TIMED_OUT, "rank %d: state %d", r, (int)st);
    CT_STATUS(conv_reducer_finish(n->red[r]), CONV_STATUS_BACKEND_ERROR); /* sticky */
}

static void test_timeout_step(void **state)
{
    (void)state;
    net n = {.nparams = 4, .sizes = {1000, 1000, 1000, 1000}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 4000, .cap = 4000, .timeout = 0.3};
    net_comms(&n, 3);
    assert_int_equal(ct_run_ranks(3, timeout_step_rank, &n), 0);
    assert_no_failure();
    for (int r = 0; r < 2; ++r)
        if (n.elapsed[r] < 0.25 || n.elapsed[r] > 0.3 + 2.0)
            fail_msg("rank %d failed after %.3f s, want about the 0.3 s timeout", r, n.elapsed[r]);
    assert_true(n.elapsed[2] < 0.5); /* the late rank fails at once */
    net_free(&n, 3);
}

static void destroy_in_flight_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    (void)ranks;
    CT_OK(rank_setup(n, r));
    if (r == 0) {
        CT_OK(conv_reducer_mark_ready(n->red[r], 1));
        conv_reducer_destroy(n->red[r]);
        n->red[r] = NULL;
        return;
    }
    double t0 = ct_now();
    for (int p = n->nparams - 1; p >= 0; --p) conv_reducer_mark_ready(n->red[r], p);
    CT_STATUS(conv_reducer_finish(n->red[r]), CONV_STATUS_BACKEND_ERROR);
    CT_TRUE(ct_now() - t0 < 5.0, "rank 1 waited %.2f s", ct_now() - t0);
}

static void test_destroy_in_flight(void **state)
{
    (void)state;
    net n = {.nparams = 2, .sizes = {100, 100}, .dtype = CONV_DTYPE_FLOAT32,
             .first_cap = 64, .cap = 64, .timeout = 60.0};
    net_comms(&n, 2);
    assert_int_equal(ct_run_ranks(2, destroy_in_flight_rank, &n), 0);
    assert_no_failure();
    net_free(&n, 2);
}

/* --------------------------------------------------- broadcast and SGD */

static void broadcast_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    (void)ranks;
    CT_OK(rank_setup(n, r));
    for (int p = 0; p < n->nparams; ++p) ct_fill(n->dtype, n->weights[r][p], n->sizes[p], r, p);
    CT_OK(conv_reducer_broadcast_params(n->red[r], 1));
    for (int p = 0; p < n->nparams; ++p)
        for (int64_t i = 0; i < n->sizes[p]; ++i)
            CT_TRUE(ct_get(n->dtype, n->weights[r][p], i) == ct_value(1, i, p),
                    "rank %d parameter %d element %lld: not rank 1's", r, p, (long long)i);
    CT_STATUS(conv_reducer_broadcast_params(n->red[r], 3), CONV_STATUS_INVALID_ARGUMENT);
}

static void test_broadcast_params(void **state)
{
    (void)state;
    net n = {.nparams = 4, .sizes = {100, 5000, 3, 700}, .dtype = CONV_DTYPE_FLOAT64,
             .first_cap = 1024, .cap = 8192};
    net_comms(&n, 3);
    assert_int_equal(ct_run_ranks(3, broadcast_rank, &n), 0);
    assert_no_failure();
    net_free(&n, 3);
}

static void sgd_rank(int r, int ranks, void *user)
{
    net *n = (net *)user;
    CT_OK(rank_setup(n, r));
    const double lr = 0.125, mom = 0.875, wd = 0.0625;
    const int64_t len = n->sizes[0];
    double *ref_w = calloc((size_t)len, sizeof *ref_w), *ref_h = calloc((size_t)len, sizeof *ref_h);
    CT_TRUE(ref_w && ref_h, "out of memory");
    for (int64_t i = 0; i < len; ++i) {
        ct_set(n->dtype, n->weights[r][0], i, (double)(i % 5) - 2.0);
        ref_w[i] = ct_get(n->dtype, n->weights[r][0], i);
    }
    for (int step = 0; step < 3; ++step) {
        fill_grads(n, r, step);
        for (int p = n->nparams - 1; p >= 0; --p) CT_OK(conv_reducer_mark_ready(n->red[r], p));
        CT_OK(conv_reducer_finish(n->red[r]));
        CT_OK(conv_reducer_apply_sgd(n->red[r], lr, mom, wd));
        /* the reference, in the dtype's arithmetic (float or double) */
        for (int64_t i = 0; i < len; ++i) {
            double g = ct_expected(n->dtype, ranks, i, step * 16, 1);
            if (n->dtype == CONV_DTYPE_FLOAT64) {
                ref_h[i] = mom * ref_h[i] + lr * (g + wd * ref_w[i]);
                ref_w[i] = ref_w[i] - ref_h[i];
            } else {
                float h = (float)mom * (float)ref_h[i] + (float)lr * ((float)g + (float)wd * (float)ref_w[i]);
                ref_h[i] = h;
                ref_w[i] = (float)ref_w[i] - h;
            }
            double got = ct_get(n->dtype, n->weights[r][0], i);
            if (got != ref_w[i]) {
                ct_fail("%s rank %d step %d element %lld: w %.9g, want %.9g",
                        ct_dtype_name(n->dtype), r, step, (long long)i, got, ref_w[i]);
                free(ref_w);
                free(ref_h);
                return;
            }
        }
    }
    free(ref_w);
    free(ref_h);
    CT_STATUS(conv_reducer_apply_sgd(n->red[r], NAN, 0, 0), CONV_STATUS_INVALID_ARGUMENT);
}

static void test_sgd(void **state)
{
    (void)state;
    for (int d = 0; d < 2; ++d) {
        net n = {.nparams = 2, .sizes = {1000, 10}, .dtype = ct_dtypes[d]};
        net_comms(&n, 2);
        assert_int_equal(ct_run_ranks(2, sgd_rank, &n), 0);
        assert_no_failure();
        net_free(&n, 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_ddp_default),
        cmocka_unit_test(test_layout_ddp_small_caps),
        cmocka_unit_test(test_layout_nvcaffe),
        cmocka_unit_test(test_mark_orders),
        cmocka_unit_test(test_reduction_before_finish),
        cmocka_unit_test(test_unused),
        cmocka_unit_test(test_unmarked),
        cmocka_unit_test(test_mark_twice_and_misuse),
        cmocka_unit_test(test_size_overflow),
        cmocka_unit_test(test_layout_mismatch),
        cmocka_unit_test(test_abort_step),
        cmocka_unit_test(test_timeout_step),
        cmocka_unit_test(test_destroy_in_flight),
        cmocka_unit_test(test_broadcast_params),
        cmocka_unit_test(test_sgd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
