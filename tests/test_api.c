/*
 * test_api.c -- the contract of conv.h that is not arithmetic: NULL
 * arguments, destroy(NULL), status strings, versions, per-thread error
 * messages, tensor getters and copies, workspaces, descriptor setters that
 * refuse bad values without changing anything, devices.
 */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failing call: its status, and a non-empty message naming the problem. */
#define assert_fails(expr, want)                                                     \
    do {                                                                             \
        assert_status((expr), (want));                                               \
        const char *e_ = conv_last_error();                                          \
        if (!e_ || !e_[0])                                                           \
            fail_msg("%s failed with an empty conv_last_error()", #expr);           \
    } while (0)

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

static const int64_t dims4[4] = {2, 3, 4, 5};

static void test_version(void **state)
{
    (void)state;
    char want[32];
    assert_int_equal(conv_version(), CONV_VERSION_NUMBER);
    snprintf(want, sizeof want, "%d.%d.%d", CONV_VERSION_MAJOR, CONV_VERSION_MINOR,
             CONV_VERSION_PATCH);
    assert_non_null(conv_version_string());
    assert_string_equal(conv_version_string(), want);
}

static void test_status_strings(void **state)
{
    (void)state;
    const char *seen[14];
    for (int s = 0; s <= 13; s++) {
        seen[s] = conv_status_string((conv_status_t)s);
        assert_non_null(seen[s]);
        assert_true(seen[s][0] != '\0');
        for (int t = 0; t < s; t++)
            if (strcmp(seen[s], seen[t]) == 0)
                fail_msg("statuses %d and %d share the string \"%s\"", t, s, seen[s]);
    }
    const int unknown[] = {14, 100, -1, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *u = conv_status_string((conv_status_t)unknown[i]);
        assert_non_null(u);
        assert_true(u[0] != '\0');
    }
}

static void test_algo_names(void **state)
{
    (void)state;
    const char *a = conv_algo_name(CONV_ALGO_AUTO), *b = conv_algo_name(CONV_ALGO_IM2COL_GEMM),
               *c = conv_algo_name(CONV_ALGO_GEMM_1X1), *u = conv_algo_name((conv_algo_t)999);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(u);
    assert_string_equal(b, "im2col_gemm");
    assert_string_equal(u, "unknown");
    assert_true(strcmp(a, b) && strcmp(a, c) && strcmp(b, c) && strcmp(a, u) && strcmp(c, u));
}

static void test_destroy_null(void **state)
{
    (void)state;
    conv_context_destroy(NULL);
    conv_workspace_destroy(NULL);
    conv_tensor_destroy(NULL);
    conv_desc_destroy(NULL);
}

static void test_null_arguments(void **state)
{
    (void)state;
    conv_tensor_t t;
    conv_desc_t d;
    conv_workspace_t ws;
    conv_device_t dev;
    int i;
    int64_t v[3] = {1, 1, 1}, dims[4];
    size_t bytes;
    double flops, traffic;
    void *p;
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims4,
                                 &t));
    assert_ok(conv_desc_create(2, &d));

    assert_fails(conv_device_count(CONV_DEVICE_CPU, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_create(CONV_DEVICE_CPU, 0, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_get_device(NULL, &dev, &i), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_get_device(ctx, NULL, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_set_threads(NULL, 2), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_get_threads(NULL, &i), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_get_threads(ctx, NULL), CONV_STATUS_INVALID_ARGUMENT);

    assert_fails(conv_workspace_create(NULL, &ws), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_workspace_create(ctx, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_workspace_wrap(NULL, v, sizeof v, &ws), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_workspace_wrap(ctx, NULL, 64, &ws), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_workspace_wrap(ctx, v, sizeof v, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_workspace_get_size(NULL, &bytes), CONV_STATUS_INVALID_HANDLE);

    assert_fails(conv_tensor_create(NULL, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                    dims4, &t),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, NULL,
                                    &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                    dims4, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims4,
                                  NULL, &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_dtype(NULL, &(conv_dtype_t){0}), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_dtype(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_layout(NULL, &(conv_layout_t){0}), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_layout(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_ndim(NULL, &i), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_ndim(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_dim(NULL, 0, dims), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_dim(t, 0, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_elements(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_bytes(NULL, &bytes), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_bytes(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_get_data(NULL, &p), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_data(t, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_copy_from(NULL, v, 8), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_copy_from(t, NULL, 480), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_copy_to(t, NULL, 480), CONV_STATUS_INVALID_ARGUMENT);

    assert_fails(conv_desc_create(2, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_spatial_dims(NULL, &i), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_desc_get_spatial_dims(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_strides(NULL, v), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_desc_set_strides(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_dilations(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_padding(d, NULL, v), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_padding(d, v, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_strides(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_padding(d, NULL, v), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_groups(NULL, 1), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_desc_get_groups(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_auto_pad(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_activation(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_algorithm(d, CONV_OP_FORWARD, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);

    const int64_t x4[4] = {1, 3, 8, 8}, w4[4] = {4, 3, 3, 3};
    assert_fails(conv_output_dims(NULL, 4, x4, w4, dims), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_output_dims(d, 4, NULL, w4, dims), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_output_dims(d, 4, x4, NULL, dims), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_output_dims(d, 4, x4, w4, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_cost(d, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, 4, x4, w4, NULL, &traffic),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_cost(d, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, 4, x4, w4, &flops, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_cost(NULL, CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, 4, x4, w4, &flops,
                           &traffic),
                 CONV_STATUS_INVALID_HANDLE);

    /* the computing calls: every handle position, and the size query */
    conv_tensor_t x, w, y;
    const int64_t y4[4] = {1, 4, 6, 6};
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, x4, &x));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, w4, &w));
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, y4, &y));
    assert_fails(conv_workspace_size(ctx, d, CONV_OP_FORWARD, x, w, y, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_workspace_size(NULL, d, CONV_OP_FORWARD, x, w, y, &bytes),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_workspace_size(ctx, d, CONV_OP_FORWARD, NULL, w, y, &bytes),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_forward(NULL, d, x, w, NULL, y, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_forward(ctx, NULL, x, w, NULL, y, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_forward(ctx, d, x, w, NULL, NULL, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_data(NULL, d, w, y, x, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_data(ctx, NULL, w, y, x, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_filter(NULL, d, x, y, w, NULL, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_filter(ctx, NULL, x, y, w, NULL, NULL), CONV_STATUS_INVALID_HANDLE);

    /* algorithm choice and tuning */
    conv_algo_t algo;
    int count;
    assert_fails(conv_chosen_algorithm(NULL, d, CONV_OP_FORWARD, x, w, y, &algo),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_chosen_algorithm(ctx, d, CONV_OP_FORWARD, x, w, y, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_find_algorithms(NULL, d, CONV_OP_FORWARD, x, w, y, NULL, 4, NULL, NULL,
                                      NULL, &count),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, x, w, y, NULL, 4, NULL, NULL,
                                      NULL, NULL),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_save_tuning(NULL, "tuning.txt"), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_save_tuning(ctx, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_load_tuning(ctx, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_clear_tuning(NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_desc_get_mode(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_output_padding(d, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_output_padding(d, NULL), CONV_STATUS_INVALID_ARGUMENT);

    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(y);
    conv_tensor_destroy(t);
    conv_desc_destroy(d);
}

static void test_last_error_cleared(void **state)
{
    (void)state;
    int64_t groups;
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_fails(conv_desc_set_groups(d, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_desc_get_groups(d, &groups));
    assert_non_null(conv_last_error());
    assert_string_equal(conv_last_error(), "");
    conv_desc_destroy(d);
}

/* Thread A fails and keeps its message while thread B, which only succeeds,
 * keeps seeing "". They take turns through a barrier. */
typedef struct two_threads {
    pthread_barrier_t barrier;
    char a_before[256], a_after[256], b_first[256], b_after_a[256], b_after_ok[256];
} two_threads;

static void *thread_a(void *arg)
{
    two_threads *s = arg;
    conv_desc_t d = NULL;
    conv_desc_create(5, &d); /* fails: 5 spatial dims */
    tu_copy_last_error(s->a_before, sizeof s->a_before);
    pthread_barrier_wait(&s->barrier); /* 1: A has failed */
    pthread_barrier_wait(&s->barrier); /* 2: B has looked and succeeded */
    tu_copy_last_error(s->a_after, sizeof s->a_after);
    return NULL;
}

static void *thread_b(void *arg)
{
    two_threads *s = arg;
    int count = 0;
    tu_copy_last_error(s->b_first, sizeof s->b_first);
    pthread_barrier_wait(&s->barrier); /* 1 */
    tu_copy_last_error(s->b_after_a, sizeof s->b_after_a);
    conv_device_count(CONV_DEVICE_CPU, &count);
    tu_copy_last_error(s->b_after_ok, sizeof s->b_after_ok);
    pthread_barrier_wait(&s->barrier); /* 2 */
    return NULL;
}

static void test_last_error_per_thread(void **state)
{
    (void)state;
    two_threads s;
    pthread_t a, b;
    memset(&s, 0, sizeof s);
    pthread_barrier_init(&s.barrier, NULL, 2);
    assert_int_equal(pthread_create(&a, NULL, thread_a, &s), 0);
    assert_int_equal(pthread_create(&b, NULL, thread_b, &s), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&s.barrier);
    assert_true(s.a_before[0] != '\0');
    assert_string_equal(s.a_after, s.a_before);
    assert_string_equal(s.b_first, "");
    assert_string_equal(s.b_after_a, "");
    assert_string_equal(s.b_after_ok, "");
}

static void test_tensor_getters(void **state)
{
    (void)state;
    const conv_layout_t layouts[2] = {CONV_LAYOUT_CHANNELS_FIRST, CONV_LAYOUT_CHANNELS_LAST};
    const conv_dtype_t dtypes[2] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_FLOAT64};
    double host[120];
    for (int i = 0; i < 2; i++) {
        for (int wrap = 0; wrap < 2; wrap++) {
            conv_tensor_t t;
            conv_dtype_t dt;
            conv_layout_t lay;
            int nd;
            int64_t d, elems;
            size_t bytes;
            void *data;
            if (wrap)
                assert_ok(conv_tensor_wrap(ctx, dtypes[i], layouts[i], 4, dims4, host, &t));
            else
                assert_ok(conv_tensor_create(ctx, dtypes[i], layouts[i], 4, dims4, &t));
            assert_ok(conv_tensor_get_dtype(t, &dt));
            assert_int_equal(dt, dtypes[i]);
            assert_ok(conv_tensor_get_layout(t, &lay));
            assert_int_equal(lay, layouts[i]);
            assert_ok(conv_tensor_get_ndim(t, &nd));
            assert_int_equal(nd, 4);
            for (int axis = 0; axis < 4; axis++) {
                assert_ok(conv_tensor_get_dim(t, axis, &d));
                assert_int_equal(d, dims4[axis]);
            }
            d = -7;
            assert_fails(conv_tensor_get_dim(t, 4, &d), CONV_STATUS_INVALID_ARGUMENT);
            assert_fails(conv_tensor_get_dim(t, -1, &d), CONV_STATUS_INVALID_ARGUMENT);
            assert_int_equal(d, -7);
            assert_ok(conv_tensor_get_elements(t, &elems));
            assert_int_equal(elems, 120);
            assert_ok(conv_tensor_get_bytes(t, &bytes));
            assert_int_equal(bytes, 120 * tu_dtype_size(dtypes[i]));
            assert_ok(conv_tensor_get_data(t, &data));
            if (wrap) {
                assert_ptr_equal(data, host);
            } else {
                /* owned memory: 64-byte aligned and zero-filled */
                assert_non_null(data);
                assert_int_equal((uintptr_t)data % 64, 0);
                for (size_t b = 0; b < bytes; b++)
                    assert_int_equal(((unsigned char *)data)[b], 0);
            }
            conv_tensor_destroy(t);
        }
    }
}

static void test_tensor_bad_create(void **state)
{
    (void)state;
    conv_tensor_t t = NULL;
    const int64_t neg[4] = {2, -3, 4, 5}, six[6] = {1, 1, 1, 1, 1, 1}, empty[4] = {0, 3, 4, 5};
    float one;
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 2, dims4,
                                    &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 6, six,
                                    &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, neg,
                                    &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_create(ctx, (conv_dtype_t)1000, CONV_LAYOUT_CHANNELS_FIRST, 4, dims4,
                                    &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, (conv_layout_t)1000, 4, dims4, &t),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_null(t); /* a failed create writes no handle */
    /* empty tensors are fine, wrapped with NULL data too */
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, empty, NULL,
                               &t));
    conv_tensor_destroy(t);
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_LAST, 4, empty, &one,
                               &t));
    conv_tensor_destroy(t);
    /* memory at an address that is no multiple of the element size: refused
     * (every kernel loads whole elements; UBSan saw misaligned loads) */
    double store[16];
    char *base = (char *)store;
    const int64_t small[3] = {1, 1, 4};
    for (int off = 1; off < 8; off++) {
        t = NULL;
        conv_dtype_t dt = off % 4 ? CONV_DTYPE_FLOAT32 : CONV_DTYPE_FLOAT64; /* 4: fp64 only */
        assert_fails(conv_tensor_wrap(ctx, dt, CONV_LAYOUT_CHANNELS_FIRST, 3, small, base + off,
                                      &t),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(conv_last_error(), "not aligned"));
        assert_null(t);
    }
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 3, small,
                               base + 4, &t)); /* 4-byte floats at 4 bytes: fine */
    conv_tensor_destroy(t);
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, small,
                               base + 2, &t));
    conv_tensor_destroy(t);
}

static void test_tensor_copies(void **state)
{
    (void)state;
    conv_tensor_t t;
    double in[120], out[120], keep[120];
    tu_rng r;
    tu_seed(&r, 7);
    for (int i = 0; i < 120; i++) {
        in[i] = tu_uniform(&r);
        out[i] = keep[i] = -1.0;
    }
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, dims4, &t));
    assert_ok(conv_tensor_copy_from(t, in, sizeof in));
    /* wrong sizes are refused and copy nothing */
    assert_fails(conv_tensor_copy_from(t, keep, sizeof keep - 1), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_copy_from(t, keep, sizeof keep + 8), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_tensor_copy_to(t, out, sizeof out - 8), CONV_STATUS_INVALID_ARGUMENT);
    assert_memory_equal(out, keep, sizeof out);
    assert_ok(conv_tensor_copy_to(t, out, sizeof out));
    assert_memory_equal(out, in, sizeof in);
    void *data;
    assert_ok(conv_tensor_get_data(t, &data));
    assert_memory_equal(data, in, sizeof in);
    conv_tensor_destroy(t);
}

/* A 3x3 forward that (with im2col) needs scratch memory. */
static void make_3x3(tu_problem *tp)
{
    const int64_t in[2] = {9, 7}, k[2] = {3, 3};
    tu_problem_init(tp, 2, 2, 3, 4, in, k);
    tp->algo = CONV_ALGO_IM2COL_GEMM;
    tu_resolve(tp);
}

static void test_workspaces(void **state)
{
    (void)state;
    tu_problem tp;
    tu_case c;
    conv_desc_t d;
    conv_workspace_t ws;
    size_t need, size, too_small_size;
    tu_rng r;
    tu_seed(&r, 11);
    make_3x3(&tp);
    assert_ok(tu_case_make(&c, ctx, &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    assert_ok(conv_workspace_size(ctx, d, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t, &need));

    /* a library-owned workspace starts empty, grows to what the call needs
     * (conv_workspace_size may add slack for aligning caller memory) and
     * then keeps its size: a steady state allocates nothing */
    size_t grown;
    char msg[512];
    assert_ok(conv_workspace_create(ctx, &ws));
    assert_ok(conv_workspace_get_size(ws, &size));
    assert_int_equal(size, 0);
    for (int run = 0; run < 3; run++) {
        tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
        assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, ws));
        if (tu_case_check(&c, CONV_OP_FORWARD, 1, msg, sizeof msg))
            fail_msg("%s", msg);
        assert_ok(conv_workspace_get_size(ws, run ? &size : &grown));
    }
    assert_int_equal(size, grown);
    assert_true(grown <= need);
    assert_true(need == 0 || grown > 0);
    conv_workspace_destroy(ws);

    /* a wrapped one of exactly the size works and keeps its size */
    unsigned char *mem = malloc(need + 1);
    assert_ok(conv_workspace_wrap(ctx, mem, need, &ws));
    tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
    assert_ok(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, ws));
    assert_ok(conv_workspace_get_size(ws, &size));
    assert_int_equal(size, need);
    if (tu_case_check(&c, CONV_OP_FORWARD, 1, msg, sizeof msg))
        fail_msg("%s", msg);
    conv_workspace_destroy(ws);

    /* one byte less is refused, naming both sizes, output untouched */
    if (need > 0) {
        tu_snapshot snap;
        too_small_size = need - 1;
        assert_ok(conv_workspace_wrap(ctx, mem, too_small_size, &ws));
        tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
        tu_snapshot_take(&snap, &c, CONV_OP_FORWARD);
        assert_fails(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, ws),
                     CONV_STATUS_WORKSPACE_TOO_SMALL);
        if (!tu_error_mentions((int64_t)need, (int64_t)too_small_size))
            fail_msg("message does not name %zu and %zu: %s", need, too_small_size,
                     conv_last_error());
        assert_true(tu_snapshot_same(&snap, &c, CONV_OP_FORWARD));
        tu_snapshot_free(&snap);
        conv_workspace_destroy(ws);
    }
    /* a zero-byte wrap is valid */
    assert_ok(conv_workspace_wrap(ctx, mem, 0, &ws));
    assert_ok(conv_workspace_get_size(ws, &size));
    assert_int_equal(size, 0);
    conv_workspace_destroy(ws);
    free(mem);
    conv_desc_destroy(d);
    tu_case_free(&c);
    if (need == 0)
        skip(); /* nothing to make too small with this build's algorithm */
}

/* Reads every descriptor value so a failed set can be shown to change nothing. */
typedef struct desc_values {
    int64_t strides[3], dilations[3], pad_b[3], pad_e[3], out_pad[3], groups;
    conv_auto_pad_t auto_pad;
    conv_activation_t act;
    conv_mode_t mode;
    conv_algo_t algo[3];
} desc_values;

static void read_desc(conv_desc_t d, desc_values *v)
{
    memset(v, 0, sizeof *v);
    assert_ok(conv_desc_get_strides(d, v->strides));
    assert_ok(conv_desc_get_dilations(d, v->dilations));
    assert_ok(conv_desc_get_padding(d, v->pad_b, v->pad_e));
    assert_ok(conv_desc_get_groups(d, &v->groups));
    assert_ok(conv_desc_get_auto_pad(d, &v->auto_pad));
    assert_ok(conv_desc_get_activation(d, &v->act));
    assert_ok(conv_desc_get_mode(d, &v->mode));
    assert_ok(conv_desc_get_output_padding(d, v->out_pad));
    for (int op = 0; op < 3; op++)
        assert_ok(conv_desc_get_algorithm(d, (conv_op_t)op, &v->algo[op]));
}

static void test_desc_defaults_and_setters(void **state)
{
    (void)state;
    conv_desc_t d;
    desc_values v, after;
    int sd;
    assert_ok(conv_desc_create(3, &d));
    assert_ok(conv_desc_get_spatial_dims(d, &sd));
    assert_int_equal(sd, 3);
    read_desc(d, &v);
    for (int a = 0; a < 3; a++) {
        assert_int_equal(v.strides[a], 1);
        assert_int_equal(v.dilations[a], 1);
        assert_int_equal(v.pad_b[a], 0);
        assert_int_equal(v.pad_e[a], 0);
        assert_int_equal(v.out_pad[a], 0);
        assert_int_equal(v.algo[a], CONV_ALGO_AUTO);
    }
    assert_int_equal(v.groups, 1);
    assert_int_equal(v.auto_pad, CONV_AUTO_PAD_NOTSET);
    assert_int_equal(v.act, CONV_ACTIVATION_NONE);
    assert_int_equal(v.mode, CONV_MODE_CONVOLUTION);

    /* good values stick */
    const int64_t s[3] = {2, 3, 1}, dl[3] = {1, 2, 3}, pb[3] = {0, 1, 2}, pe[3] = {3, 0, 1};
    const int64_t op_[3] = {1, 2, 0}; /* each below its axis' stride */
    assert_ok(conv_desc_set_strides(d, s));
    assert_ok(conv_desc_set_dilations(d, dl));
    assert_ok(conv_desc_set_padding(d, pb, pe));
    assert_ok(conv_desc_set_groups(d, 4));
    assert_ok(conv_desc_set_auto_pad(d, CONV_AUTO_PAD_SAME_LOWER));
    assert_ok(conv_desc_set_activation(d, CONV_ACTIVATION_RELU));
    assert_ok(conv_desc_set_algorithm(d, CONV_OP_BACKWARD_DATA, CONV_ALGO_GEMM_1X1));
    assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
    assert_ok(conv_desc_set_output_padding(d, op_));
    read_desc(d, &v);
    assert_memory_equal(v.out_pad, op_, sizeof op_);
    assert_int_equal(v.mode, CONV_MODE_TRANSPOSED);
    assert_memory_equal(v.strides, s, sizeof s);
    assert_memory_equal(v.dilations, dl, sizeof dl);
    assert_memory_equal(v.pad_b, pb, sizeof pb);
    assert_memory_equal(v.pad_e, pe, sizeof pe);
    assert_int_equal(v.groups, 4);
    assert_int_equal(v.auto_pad, CONV_AUTO_PAD_SAME_LOWER);
    assert_int_equal(v.act, CONV_ACTIVATION_RELU);
    assert_int_equal(v.algo[CONV_OP_FORWARD], CONV_ALGO_AUTO);
    assert_int_equal(v.algo[CONV_OP_BACKWARD_DATA], CONV_ALGO_GEMM_1X1);

    /* bad values are refused, each leaving every value as it was; the bad
     * entry is last so a setter that stores as it checks is caught. Unknown
     * enum values are far out of range: new values are only appended. */
    const int64_t zero_last[3] = {2, 2, 0}, neg_last[3] = {2, 2, -1}, ok3[3] = {1, 1, 1};
    assert_fails(conv_desc_set_strides(d, zero_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_strides(d, neg_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_dilations(d, zero_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_dilations(d, neg_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_padding(d, neg_last, ok3), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_padding(d, ok3, neg_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_output_padding(d, neg_last), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_mode(d, (conv_mode_t)1000), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_groups(d, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_groups(d, -2), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_auto_pad(d, (conv_auto_pad_t)1000), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_auto_pad(d, (conv_auto_pad_t)-1), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_activation(d, (conv_activation_t)1000), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_algorithm(d, CONV_OP_FORWARD, (conv_algo_t)999), /* no solver's */
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_set_algorithm(d, (conv_op_t)1000, CONV_ALGO_AUTO),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_get_algorithm(d, (conv_op_t)7, &after.algo[0]),
                 CONV_STATUS_INVALID_ARGUMENT);
    read_desc(d, &after);
    assert_memory_equal(&after, &v, sizeof v);

    conv_desc_t bad = NULL;
    assert_fails(conv_desc_create(0, &bad), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_desc_create(4, &bad), CONV_STATUS_INVALID_ARGUMENT);
    assert_null(bad);
    conv_desc_destroy(d);
}

static void test_devices_and_contexts(void **state)
{
    (void)state;
    int count = -1, threads = 0, index = -1;
    conv_device_t dev;
    conv_context_t c = NULL;
    assert_ok(conv_device_count(CONV_DEVICE_CPU, &count));
    assert_int_equal(count, 1);
    assert_fails(conv_device_count((conv_device_t)1000, &count), CONV_STATUS_INVALID_ARGUMENT);

    assert_ok(conv_context_get_device(ctx, &dev, &index));
    assert_int_equal(dev, CONV_DEVICE_CPU);
    assert_int_equal(index, 0);
    assert_ok(conv_context_get_threads(ctx, &threads));
    assert_in_range(threads, 1, 64);
    /* "cpu <model> (<isa>)"; CONV_CPU_ISA=baseline caps the ISA, and
     * CONV_CPU_JIT=0 turns off the generated kernels ("+jit"). */
    char name[256];
    assert_ok(conv_context_get_device_name(ctx, name, sizeof name));
    assert_int_equal(strncmp(name, "cpu ", 4), 0);
    const char *cap = getenv("CONV_CPU_ISA"), *jit = getenv("CONV_CPU_JIT");
    const char *isa = strrchr(name, '(');
    assert_non_null(isa);
    if (cap && strcmp(cap, "baseline") == 0) {
        assert_string_equal(isa, "(baseline)");
    } else if (strcmp(isa, "(baseline)") != 0) {
        const char *const forms[] = {"(avx2)", "(avx2+jit)", "(avx512)", "(avx512+jit)", "(avx512+amx)", "(avx512+amx+jit)",
                                     "(avx512+amx-emulated)", "(avx512+amx-emulated+jit)"};
        int known = 0;
        for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) known |= strcmp(isa, forms[i]) == 0;
        assert_true(known);
        if (jit && strcmp(jit, "0") == 0) assert_null(strstr(isa, "+jit"));
    }
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    assert_ok(conv_context_set_threads(c, 3));
    assert_fails(conv_context_set_threads(c, 0), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_set_threads(c, 1025), CONV_STATUS_INVALID_ARGUMENT);
    assert_ok(conv_context_get_threads(c, &threads));
    assert_int_equal(threads, 3);
    conv_context_destroy(c);

    c = NULL;
    assert_fails(conv_context_create((conv_device_t)1000, 0, &c), CONV_STATUS_INVALID_ARGUMENT);
    assert_null(c);
    /* docs/errors.md: an index past the devices is NOT_AVAILABLE (a device
     * that is not there), a negative one INVALID_ARGUMENT (no device at all),
     * for either kind; the message names the index */
    assert_fails(conv_context_create(CONV_DEVICE_CPU, 1, &c), CONV_STATUS_NOT_AVAILABLE);
    assert_true(tu_error_mentions(1, 0));
    assert_null(c);
    assert_fails(conv_context_create(CONV_DEVICE_CPU, -1, &c), CONV_STATUS_INVALID_ARGUMENT);
    assert_true(tu_error_mentions(-1));
    assert_null(c);
    assert_fails(conv_context_create(CONV_DEVICE_CUDA, -1, &c), CONV_STATUS_INVALID_ARGUMENT);
    assert_null(c);

    /* CUDA: not available when no GPU is usable (or it is not compiled in) */
    assert_ok(conv_device_count(CONV_DEVICE_CUDA, &count));
    assert_true(count >= 0);
    assert_fails(conv_context_create(CONV_DEVICE_CUDA, count, &c), CONV_STATUS_NOT_AVAILABLE);
    assert_null(c);
    if (count == 0)
        assert_fails(conv_context_create(CONV_DEVICE_CUDA, 0, &c), CONV_STATUS_NOT_AVAILABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_algo_names),
        cmocka_unit_test(test_destroy_null),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_last_error_cleared),
        cmocka_unit_test(test_last_error_per_thread),
        cmocka_unit_test(test_tensor_getters),
        cmocka_unit_test(test_tensor_bad_create),
        cmocka_unit_test(test_tensor_copies),
        cmocka_unit_test(test_workspaces),
        cmocka_unit_test(test_desc_defaults_and_setters),
        cmocka_unit_test(test_devices_and_contexts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
