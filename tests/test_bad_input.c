/*
 * test_bad_input.c -- the rows of docs/errors.md that test_api.c and
 * test_errors.c do not already cover: destroyed and stray handles, handles
 * of every wrong kind in every position, unknown enum values at every entry
 * point that takes one, sizes that overflow int64_t, sizes beyond what the
 * CPU engine can index, output sizes < 1 through the computing calls, and
 * the refusal of failed calls to write any output argument.
 *
 * Every failing call is checked for its status, a non-empty message (naming
 * the numbers where the row says so) and for having changed nothing.
 */
#include "test_util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failing call: its status and a non-empty message. */
#define assert_fails(expr, want)                                                     \
    do {                                                                             \
        assert_status((expr), (want));                                               \
        const char *e_ = conv_last_error();                                          \
        if (!e_ || !e_[0])                                                           \
            fail_msg("%s failed with an empty conv_last_error()", #expr);           \
    } while (0)

/* ... and its message contains `text`. */
#define assert_fails_saying(expr, want, text)                                          \
    do {                                                                               \
        assert_fails((expr), (want));                                                  \
        if (!strstr(conv_last_error(), (text)))                                        \
            fail_msg("%s: message \"%s\" does not say \"%s\"", #expr, conv_last_error(), \
                     (text));                                                          \
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

/* x (1, 3, 8, 8), w (4, 3, 3, 3), y (1, 4, 6, 6): a valid 3x3 problem. */
static const int64_t X4[4] = {1, 3, 8, 8}, W4[4] = {4, 3, 3, 3}, Y4[4] = {1, 4, 6, 6};

typedef struct trio {
    tu_tensor x, w, y;
} trio;

static void trio_make(trio *t, int wrap)
{
    tu_rng r;
    tu_seed(&r, 5);
    assert_ok(tu_tensor_make(&t->x, ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, X4,
                             wrap));
    assert_ok(tu_tensor_make(&t->w, ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, W4,
                             wrap));
    assert_ok(tu_tensor_make(&t->y, ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, Y4,
                             wrap));
    tu_fill_int(&t->x, &r, -3, 3);
    tu_fill_int(&t->w, &r, -3, 3);
    tu_fill_pattern(&t->y, 0x5A);
}

static void trio_free(trio *t)
{
    tu_tensor_free(&t->x);
    tu_tensor_free(&t->w);
    tu_tensor_free(&t->y);
}

/* Bytes of the three tensors, to show a failed call changed none of them. */
typedef struct trio_bytes {
    void *b[3];
} trio_bytes;

static void trio_keep(trio_bytes *k, const trio *t)
{
    const tu_tensor *all[3] = {&t->x, &t->w, &t->y};
    for (int i = 0; i < 3; i++) {
        k->b[i] = malloc(all[i]->bytes + 1);
        tu_copy(k->b[i], all[i]->data, all[i]->bytes);
    }
}

static void trio_unchanged(trio_bytes *k, const trio *t, const char *what)
{
    const tu_tensor *all[3] = {&t->x, &t->w, &t->y};
    for (int i = 0; i < 3; i++) {
        if (!tu_same(k->b[i], all[i]->data, all[i]->bytes))
            fail_msg("%s: tensor %d was changed by a failed call", what, i);
        free(k->b[i]);
    }
}

/* ---------------------------------------------- destroyed and stray handles */

static void test_use_after_destroy(void **state)
{
    (void)state;
    trio t;
    trio_make(&t, 0);
    conv_desc_t d;
    conv_workspace_t ws;
    conv_context_t c;
    int64_t groups = 7;
    size_t bytes = 7;
    int threads = 7;
    trio_bytes keep;

    /* a destroyed tensor, in every tensor position of a pass */
    conv_tensor_t dead;
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, X4,
                                 &dead));
    conv_tensor_destroy(dead);
    assert_ok(conv_desc_create(2, &d));
    trio_keep(&keep, &t);
    assert_fails_saying(conv_forward(ctx, d, dead, t.w.t, NULL, t.y.t, NULL),
                        CONV_STATUS_INVALID_HANDLE, "not a live");
    assert_fails_saying(conv_forward(ctx, d, t.x.t, t.w.t, dead, t.y.t, NULL),
                        CONV_STATUS_INVALID_HANDLE, "not a live");
    assert_fails(conv_forward(ctx, d, t.x.t, t.w.t, NULL, dead, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_data(ctx, d, t.w.t, t.y.t, dead, NULL), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_backward_filter(ctx, d, t.x.t, t.y.t, dead, NULL, NULL),
                 CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_get_bytes(dead, &bytes), CONV_STATUS_INVALID_HANDLE);
    assert_int_equal(bytes, 7);
    trio_unchanged(&keep, &t, "destroyed tensor");
    conv_tensor_destroy(dead); /* twice: a no-op */

    /* a destroyed descriptor */
    conv_desc_t dead_d;
    assert_ok(conv_desc_create(2, &dead_d));
    conv_desc_destroy(dead_d);
    trio_keep(&keep, &t);
    assert_fails_saying(conv_forward(ctx, dead_d, t.x.t, t.w.t, NULL, t.y.t, NULL),
                        CONV_STATUS_INVALID_HANDLE, "desc");
    assert_fails(conv_desc_get_groups(dead_d, &groups), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_desc_set_groups(dead_d, 2), CONV_STATUS_INVALID_HANDLE);
    assert_int_equal(groups, 7);
    trio_unchanged(&keep, &t, "destroyed descriptor");
    conv_desc_destroy(dead_d);

    /* a destroyed workspace */
    assert_ok(conv_workspace_create(ctx, &ws));
    conv_workspace_destroy(ws);
    trio_keep(&keep, &t);
    assert_fails_saying(conv_forward(ctx, d, t.x.t, t.w.t, NULL, t.y.t, ws),
                        CONV_STATUS_INVALID_HANDLE, "ws");
    assert_fails(conv_workspace_get_size(ws, &bytes), CONV_STATUS_INVALID_HANDLE);
    trio_unchanged(&keep, &t, "destroyed workspace");
    conv_workspace_destroy(ws);

    /* a destroyed context */
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    conv_context_destroy(c);
    trio_keep(&keep, &t);
    assert_fails_saying(conv_forward(c, d, t.x.t, t.w.t, NULL, t.y.t, NULL),
                        CONV_STATUS_INVALID_HANDLE, "ctx");
    assert_fails(conv_context_get_threads(c, &threads), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_tensor_create(c, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, X4,
                                    &dead),
                 CONV_STATUS_INVALID_HANDLE);
    assert_int_equal(threads, 7);
    trio_unchanged(&keep, &t, "destroyed context");
    conv_context_destroy(c);

    conv_desc_destroy(d);
    trio_free(&t);
}

/* Pointers libconv never handed out are refused without being read: the
 * address of a local, a heap block of garbage, a misaligned pointer. */
static void test_stray_pointers(void **state)
{
    (void)state;
    uint64_t local[8];
    memset(local, 0xFF, sizeof local);
    unsigned char *heap = malloc(256);
    memset(heap, 0x43, 256); /* "CCCC": not any magic */
    void *stray[4] = {local, heap, heap + 1, (void *)(uintptr_t)0x10};
    int64_t groups;
    size_t bytes;
    for (int i = 0; i < 4; i++) {
        assert_fails_saying(conv_desc_get_groups((conv_desc_t)stray[i], &groups),
                            CONV_STATUS_INVALID_HANDLE, "not a live");
        assert_fails(conv_tensor_get_bytes((conv_tensor_t)stray[i], &bytes),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_workspace_get_size((conv_workspace_t)stray[i], &bytes),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_context_set_threads((conv_context_t)stray[i], 1),
                     CONV_STATUS_INVALID_HANDLE);
        /* destroy of a foreign pointer is ignored, not freed */
        conv_tensor_destroy((conv_tensor_t)stray[i]);
        conv_desc_destroy((conv_desc_t)stray[i]);
        conv_workspace_destroy((conv_workspace_t)stray[i]);
        conv_context_destroy((conv_context_t)stray[i]);
    }
    for (int i = 0; i < 256; i++)
        assert_int_equal(heap[i], 0x43);
    free(heap);
}

/* -------------------------------------------------- handles of the wrong kind */

static void test_wrong_kinds(void **state)
{
    (void)state;
    trio t;
    trio_make(&t, 1);
    conv_desc_t d;
    conv_workspace_t ws;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_workspace_create(ctx, &ws));
    /* each kind, seen as each of the other kinds */
    conv_context_t as_ctx[3] = {(conv_context_t)(void *)t.x.t, (conv_context_t)(void *)d,
                                (conv_context_t)(void *)ws};
    conv_desc_t as_desc[3] = {(conv_desc_t)(void *)t.x.t, (conv_desc_t)(void *)ctx,
                              (conv_desc_t)(void *)ws};
    conv_tensor_t as_tensor[3] = {(conv_tensor_t)(void *)ctx, (conv_tensor_t)(void *)d,
                                  (conv_tensor_t)(void *)ws};
    conv_workspace_t as_ws[3] = {(conv_workspace_t)(void *)ctx, (conv_workspace_t)(void *)d,
                                 (conv_workspace_t)(void *)t.x.t};
    const char *ctx_is[3] = {"is a tensor", "is a descriptor", "is a workspace"};
    const char *desc_is[3] = {"is a tensor", "is a context", "is a workspace"};
    const char *tensor_is[3] = {"is a context", "is a descriptor", "is a workspace"};
    const char *ws_is[3] = {"is a context", "is a descriptor", "is a tensor"};
    trio_bytes keep;
    int64_t dims[4] = {-9, -9, -9, -9}, groups = -9;
    size_t bytes = 9;
    conv_algo_t algo = (conv_algo_t)-9;
    int count = -9, on = -9;
    conv_tensor_t out = NULL;
    conv_workspace_t out_ws = NULL;
    double f = -9, b = -9;
    for (int k = 0; k < 3; k++) {
        trio_keep(&keep, &t);
        /* context positions */
        assert_fails_saying(conv_forward(as_ctx[k], d, t.x.t, t.w.t, NULL, t.y.t, NULL),
                            CONV_STATUS_INVALID_HANDLE, ctx_is[k]);
        assert_fails(conv_backward_data(as_ctx[k], d, t.w.t, t.y.t, t.x.t, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_backward_filter(as_ctx[k], d, t.x.t, t.y.t, t.w.t, NULL, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_workspace_size(as_ctx[k], d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t,
                                         &bytes),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_tensor_create(as_ctx[k], CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST,
                                        4, X4, &out),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_workspace_create(as_ctx[k], &out_ws), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_context_set_check_numerics(as_ctx[k], 1), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_context_get_check_numerics(as_ctx[k], &on), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_context_set_allocator(as_ctx[k], NULL, NULL, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_context_clear_tuning(as_ctx[k]), CONV_STATUS_INVALID_HANDLE);
        /* descriptor positions */
        assert_fails_saying(conv_forward(ctx, as_desc[k], t.x.t, t.w.t, NULL, t.y.t, NULL),
                            CONV_STATUS_INVALID_HANDLE, desc_is[k]);
        assert_fails(conv_output_dims(as_desc[k], 4, X4, W4, dims), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_cost(as_desc[k], CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, 4, X4, W4, &f,
                               &b),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_desc_get_groups(as_desc[k], &groups), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_desc_set_groups(as_desc[k], 1), CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_chosen_algorithm(ctx, as_desc[k], CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t,
                                           &algo),
                     CONV_STATUS_INVALID_HANDLE);
        /* tensor positions, each role */
        assert_fails_saying(conv_forward(ctx, d, as_tensor[k], t.w.t, NULL, t.y.t, NULL),
                            CONV_STATUS_INVALID_HANDLE, tensor_is[k]);
        assert_fails(conv_forward(ctx, d, t.x.t, as_tensor[k], NULL, t.y.t, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_forward(ctx, d, t.x.t, t.w.t, as_tensor[k], t.y.t, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_forward(ctx, d, t.x.t, t.w.t, NULL, as_tensor[k], NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_backward_data(ctx, d, as_tensor[k], t.y.t, t.x.t, NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_backward_filter(ctx, d, t.x.t, t.y.t, t.w.t, as_tensor[k], NULL),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, as_tensor[k],
                                          NULL, 4, NULL, NULL, NULL, &count),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_tensor_copy_to(as_tensor[k], &f, sizeof f), CONV_STATUS_INVALID_HANDLE);
        /* workspace positions */
        assert_fails_saying(conv_forward(ctx, d, t.x.t, t.w.t, NULL, t.y.t, as_ws[k]),
                            CONV_STATUS_INVALID_HANDLE, ws_is[k]);
        assert_fails(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, as_ws[k],
                                          4, NULL, NULL, NULL, &count),
                     CONV_STATUS_INVALID_HANDLE);
        assert_fails(conv_workspace_get_size(as_ws[k], &bytes), CONV_STATUS_INVALID_HANDLE);
        trio_unchanged(&keep, &t, "wrong kind");
        /* a wrong-kind destroy is ignored: the handle stays alive */
        conv_context_destroy(as_ctx[k]);
        conv_desc_destroy(as_desc[k]);
        conv_tensor_destroy(as_tensor[k]);
        conv_workspace_destroy(as_ws[k]);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(dims[i], -9);
    assert_true(groups == -9 && bytes == 9 && algo == (conv_algo_t)-9 && count == -9 && on == -9);
    assert_true(f == -9 && b == -9 && out == NULL && out_ws == NULL);
    /* ... and every handle still works */
    assert_ok(conv_forward(ctx, d, t.x.t, t.w.t, NULL, t.y.t, ws));
    assert_ok(conv_desc_get_groups(d, &groups));
    conv_workspace_destroy(ws);
    conv_desc_destroy(d);
    trio_free(&t);
}

/* ------------------------------------------------------ unknown enum values */

static void test_unknown_enums(void **state)
{
    (void)state;
    trio t;
    trio_make(&t, 0);
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    const int bad[] = {-1, 5, 1000, INT_MAX, INT_MIN};
    size_t bytes = 9;
    conv_algo_t algo = (conv_algo_t)-9;
    int count = -9;
    double f = -9, b = -9;
    conv_tensor_t out = NULL;
    conv_context_t c = NULL;
    trio_bytes keep;
    trio_keep(&keep, &t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int v = bad[i];
        /* op */
        assert_fails_saying(conv_workspace_size(ctx, d, (conv_op_t)v, t.x.t, t.w.t, t.y.t,
                                                &bytes),
                            CONV_STATUS_INVALID_ARGUMENT, "op");
        assert_fails(conv_chosen_algorithm(ctx, d, (conv_op_t)v, t.x.t, t.w.t, t.y.t, &algo),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_find_algorithms(ctx, d, (conv_op_t)v, t.x.t, t.w.t, t.y.t, NULL, 4, NULL,
                                          NULL, NULL, &count),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_cost(d, (conv_op_t)v, CONV_DTYPE_FLOAT32, 4, X4, W4, &f, &b),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_desc_set_algorithm(d, (conv_op_t)v, CONV_ALGO_AUTO),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_desc_get_algorithm(d, (conv_op_t)v, &algo),
                     CONV_STATUS_INVALID_ARGUMENT);
        /* dtype, layout, device, algorithm, auto pad, activation, mode */
        assert_fails_saying(conv_cost(d, CONV_OP_FORWARD, (conv_dtype_t)v, 4, X4, W4, &f, &b),
                            CONV_STATUS_INVALID_ARGUMENT, "dtype");
        assert_fails(conv_tensor_create(ctx, (conv_dtype_t)v, CONV_LAYOUT_CHANNELS_FIRST, 4, X4,
                                        &out),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_tensor_wrap(ctx, (conv_dtype_t)v, CONV_LAYOUT_CHANNELS_FIRST, 4, X4,
                                      keep.b[0], &out),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, (conv_layout_t)v, 4, X4, &out),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_device_count((conv_device_t)v, &count), CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_context_create((conv_device_t)v, 0, &c), CONV_STATUS_INVALID_ARGUMENT);
        /* 5 is an algorithm now and 1000 a solver's private id: only the
         * values no solver has */
        if (strcmp(conv_algo_name((conv_algo_t)v), "unknown") == 0)
            assert_fails(conv_desc_set_algorithm(d, CONV_OP_FORWARD, (conv_algo_t)v),
                         CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_desc_set_auto_pad(d, (conv_auto_pad_t)v), CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_desc_set_activation(d, (conv_activation_t)v),
                     CONV_STATUS_INVALID_ARGUMENT);
        assert_fails(conv_desc_set_mode(d, (conv_mode_t)v), CONV_STATUS_INVALID_ARGUMENT);
        assert_non_null(conv_algo_name((conv_algo_t)v));
        assert_non_null(conv_status_string((conv_status_t)v));
    }
    assert_true(bytes == 9 && algo == (conv_algo_t)-9 && count == -9 && f == -9 && b == -9);
    assert_null(out);
    assert_null(c);
    trio_unchanged(&keep, &t, "unknown enums");
    /* the descriptor kept its defaults */
    conv_algo_t a;
    conv_auto_pad_t ap;
    conv_mode_t m;
    conv_activation_t act;
    assert_ok(conv_desc_get_algorithm(d, CONV_OP_FORWARD, &a));
    assert_ok(conv_desc_get_auto_pad(d, &ap));
    assert_ok(conv_desc_get_mode(d, &m));
    assert_ok(conv_desc_get_activation(d, &act));
    assert_true(a == CONV_ALGO_AUTO && ap == CONV_AUTO_PAD_NOTSET && m == CONV_MODE_CONVOLUTION &&
                act == CONV_ACTIVATION_NONE);
    conv_desc_destroy(d);
    trio_free(&t);
}

/* ----------------------------------------------- sizes that overflow int64_t */

/* conv_output_dims and conv_cost refuse with `want`, writing nothing. */
static void expect_dims_refused(const char *what, conv_desc_t d, int nd, const int64_t *x,
                                const int64_t *w, conv_status_t want)
{
    int64_t y[5] = {-9, -9, -9, -9, -9};
    double f = -9, b = -9;
    conv_status_t s = conv_output_dims(d, nd, x, w, y);
    if (s != want)
        fail_msg("%s: conv_output_dims status %d (%s), want %d: %s", what, (int)s,
                 conv_status_string(s), (int)want, conv_last_error());
    if (!conv_last_error()[0])
        fail_msg("%s: empty message", what);
    for (int i = 0; i < 5; i++)
        assert_int_equal(y[i], -9);
    for (int op = 0; op < 3; op++) {
        s = conv_cost(d, (conv_op_t)op, CONV_DTYPE_FLOAT32, nd, x, w, &f, &b);
        if (s != want)
            fail_msg("%s: conv_cost status %d, want %d: %s", what, (int)s, (int)want,
                     conv_last_error());
    }
    assert_true(f == -9 && b == -9);
}

static void test_overflow(void **state)
{
    (void)state;
    const int64_t big = INT64_MAX, half = INT64_MAX / 2 + 1; /* 2^62 */
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));

    /* dilation: (3 - 1) * 2^62 overflows */
    assert_ok(conv_desc_set_dilations(d, (int64_t[]){1, half}));
    expect_dims_refused("dilation", d, 4, X4, W4, CONV_STATUS_OVERFLOW);
    if (!tu_error_mentions(half))
        fail_msg("message does not name the dilation: %s", conv_last_error());
    assert_ok(conv_desc_set_dilations(d, (int64_t[]){1, 1}));

    /* padding: in 8 + INT64_MAX overflows */
    assert_ok(conv_desc_set_padding(d, (int64_t[]){0, big}, (int64_t[]){0, 0}));
    expect_dims_refused("padding begin", d, 4, X4, W4, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_padding(d, (int64_t[]){0, half}, (int64_t[]){0, half}));
    expect_dims_refused("padding begin + end", d, 4, X4, W4, CONV_STATUS_OVERFLOW);

    /* each size fits, the output's element count does not: 2^40 x 2^40 */
    const int64_t p40 = (int64_t)1 << 40;
    assert_ok(conv_desc_set_padding(d, (int64_t[]){p40, p40}, (int64_t[]){0, 0}));
    expect_dims_refused("output elements", d, 4, X4, W4, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_padding(d, (int64_t[]){0, 0}, (int64_t[]){0, 0}));

    /* huge dims: N x K x spatial overflows; groups x filter channels overflows */
    const int64_t xh[4] = {half, 3, 8, 8}, wh[4] = {4, 3, 3, 3};
    expect_dims_refused("batch x channels", d, 4, xh, wh, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_groups(d, half));
    const int64_t xg[4] = {1, half, 8, 8}, wg[4] = {half, 4, 3, 3};
    expect_dims_refused("filter channels x groups", d, 4, xg, wg, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_groups(d, 1));

    /* SAME padding near INT64_MAX: ceil(in / stride) must not overflow */
    int64_t y[4];
    assert_ok(conv_desc_set_auto_pad(d, CONV_AUTO_PAD_SAME_UPPER));
    assert_ok(conv_desc_set_strides(d, (int64_t[]){1, big}));
    const int64_t xs[4] = {1, 1, 1, big}, ws_[4] = {1, 1, 1, 1};
    assert_ok(conv_output_dims(d, 4, xs, ws_, y));
    assert_int_equal(y[3], 1);
    assert_ok(conv_desc_set_strides(d, (int64_t[]){1, 1}));
    assert_ok(conv_desc_set_auto_pad(d, CONV_AUTO_PAD_NOTSET));

    /* transposed: (in - 1) * stride overflows, and so do huge paddings */
    assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
    assert_ok(conv_desc_set_strides(d, (int64_t[]){1, half}));
    const int64_t xt[4] = {1, 4, 8, 8}, wt[4] = {4, 3, 3, 3};
    expect_dims_refused("transposed stride", d, 4, xt, wt, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_strides(d, (int64_t[]){1, 1}));
    assert_ok(conv_desc_set_padding(d, (int64_t[]){0, big}, (int64_t[]){0, big}));
    expect_dims_refused("transposed padding", d, 4, xt, wt, CONV_STATUS_OVERFLOW);
    assert_ok(conv_desc_set_padding(d, (int64_t[]){0, 0}, (int64_t[]){0, 0}));
    assert_ok(conv_desc_set_mode(d, CONV_MODE_CONVOLUTION));

    /* through the computing calls: real tensors, an overflowing descriptor */
    trio t;
    trio_make(&t, 0);
    trio_bytes keep;
    size_t bytes = 9;
    assert_ok(conv_desc_set_dilations(d, (int64_t[]){half, 1}));
    trio_keep(&keep, &t);
    assert_fails(conv_forward(ctx, d, t.x.t, t.w.t, NULL, t.y.t, NULL), CONV_STATUS_OVERFLOW);
    assert_fails(conv_backward_data(ctx, d, t.w.t, t.y.t, t.x.t, NULL), CONV_STATUS_OVERFLOW);
    assert_fails(conv_backward_filter(ctx, d, t.x.t, t.y.t, t.w.t, NULL, NULL),
                 CONV_STATUS_OVERFLOW);
    assert_fails(conv_workspace_size(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, &bytes),
                 CONV_STATUS_OVERFLOW);
    trio_unchanged(&keep, &t, "overflowing descriptor");
    assert_int_equal(bytes, 9);
    trio_free(&t);

    /* tensors whose element or byte count overflows */
    conv_tensor_t out = NULL;
    const int64_t e1[4] = {half, 2, 1, 1}, e2[4] = {(int64_t)1 << 31, (int64_t)1 << 31, 2, 1};
    assert_fails(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, e1,
                                    &out),
                 CONV_STATUS_OVERFLOW);
    assert_fails(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 4, e2,
                                  &bytes, &out),
                 CONV_STATUS_OVERFLOW);
    assert_null(out);
    conv_desc_destroy(d);
}

/* ------------------------------------ beyond what the CPU engine can index */

/* Tensors wrapped over addresses far apart that are never mapped: if the
 * library touched them the test would crash; it must refuse first. */
static void *fake(int slot) { return (void *)(uintptr_t)(((uint64_t)0x100 + slot) << 36); }

static void expect_too_big(const char *what, int spatial, const int64_t *x, const int64_t *w,
                           const int64_t *y, int64_t number)
{
    conv_desc_t d;
    conv_tensor_t tx, tw, ty;
    int nd = spatial + 2;
    size_t bytes = 9;
    conv_algo_t algo = (conv_algo_t)-9;
    assert_ok(conv_desc_create(spatial, &d));
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, nd, x, fake(0),
                               &tx));
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, nd, w, fake(1),
                               &tw));
    assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, nd, y, fake(2),
                               &ty));
    int64_t got[5];
    assert_ok(conv_output_dims(d, nd, x, w, got)); /* a valid shape... */
    for (int i = 0; i < nd; i++)
        assert_int_equal(got[i], y[i]);
    for (int op = 0; op < 3; op++) { /* ... that the engine cannot index */
        conv_status_t s;
        if (op == CONV_OP_FORWARD)
            s = conv_forward(ctx, d, tx, tw, NULL, ty, NULL);
        else if (op == CONV_OP_BACKWARD_DATA)
            s = conv_backward_data(ctx, d, tw, ty, tx, NULL);
        else
            s = conv_backward_filter(ctx, d, tx, ty, tw, NULL, NULL);
        if (s != CONV_STATUS_OVERFLOW)
            fail_msg("%s (%s): status %d, want OVERFLOW: %s", what, tu_op_name((conv_op_t)op),
                     (int)s, conv_last_error());
        if (!tu_error_mentions(number, 2147483647))
            fail_msg("%s: message does not name %" PRId64 " and 2^31 - 1: %s", what, number,
                     conv_last_error());
        assert_fails(conv_workspace_size(ctx, d, (conv_op_t)op, tx, tw, ty, &bytes),
                     CONV_STATUS_OVERFLOW);
        assert_fails(conv_chosen_algorithm(ctx, d, (conv_op_t)op, tx, tw, ty, &algo),
                     CONV_STATUS_OVERFLOW);
    }
    assert_true(bytes == 9 && algo == (conv_algo_t)-9);
    conv_tensor_destroy(tx);
    conv_tensor_destroy(tw);
    conv_tensor_destroy(ty);
    conv_desc_destroy(d);
}

static void test_engine_limits(void **state)
{
    (void)state;
    const int64_t p31 = (int64_t)1 << 31;
    /* 2^31 positions in one image */
    expect_too_big("positions", 1, (int64_t[]){1, 1, p31}, (int64_t[]){1, 1, 1},
                   (int64_t[]){1, 1, p31}, p31);
    /* 2^31 input channels */
    expect_too_big("channels", 1, (int64_t[]){1, p31, 1}, (int64_t[]){1, p31, 1},
                   (int64_t[]){1, 1, 1}, p31);
    /* C/G x kernel = 65536 x 32769 > 2^31 - 1 */
    expect_too_big("reduction", 1, (int64_t[]){1, 65536, 40000}, (int64_t[]){1, 65536, 32769},
                   (int64_t[]){1, 1, 40000 - 32769 + 1}, (int64_t)65536 * 32769);
}

/* --------------------------------- output size < 1 through the computing calls */

static void test_output_too_small(void **state)
{
    (void)state;
    /* x 5x5 with a 3x3 kernel dilated by 3 (span 7): output 5 - 7 + 1 = -1 */
    const int64_t x[4] = {1, 3, 5, 5}, w[4] = {4, 3, 3, 3}, y[4] = {1, 4, 1, 1};
    tu_tensor tx, tw, ty;
    assert_ok(tu_tensor_make(&tx, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, x, 1));
    assert_ok(tu_tensor_make(&tw, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, w, 1));
    assert_ok(tu_tensor_make(&ty, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_LAST, 4, y, 1));
    trio t = {tx, tw, ty};
    tu_fill_pattern(&t.x, 1);
    tu_fill_pattern(&t.w, 2);
    tu_fill_pattern(&t.y, 3);
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_desc_set_dilations(d, (int64_t[]){3, 1}));
    trio_bytes keep;
    trio_keep(&keep, &t);
    assert_fails(conv_forward(ctx, d, t.x.t, t.w.t, NULL, t.y.t, NULL), CONV_STATUS_SHAPE_MISMATCH);
    if (!tu_error_mentions(-1, 5, 7))
        fail_msg("message does not name the sizes: %s", conv_last_error());
    assert_fails(conv_backward_data(ctx, d, t.w.t, t.y.t, t.x.t, NULL),
                 CONV_STATUS_SHAPE_MISMATCH);
    assert_fails(conv_backward_filter(ctx, d, t.x.t, t.y.t, t.w.t, NULL, NULL),
                 CONV_STATUS_SHAPE_MISMATCH);
    /* transposed: (1 - 1) * 1 - 2 - 2 + 3 = -1 */
    assert_ok(conv_desc_set_dilations(d, (int64_t[]){1, 1}));
    assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
    assert_ok(conv_desc_set_padding(d, (int64_t[]){2, 2}, (int64_t[]){2, 2}));
    int64_t out[4] = {-9, -9, -9, -9};
    const int64_t xt[4] = {1, 4, 1, 1}, wt[4] = {4, 3, 3, 3};
    assert_fails(conv_output_dims(d, 4, xt, wt, out), CONV_STATUS_SHAPE_MISMATCH);
    assert_true(out[0] == -9 && out[3] == -9);
    trio_unchanged(&keep, &t, "output < 1");
    conv_desc_destroy(d);
    trio_free(&t);
}

/* ------------------------------------ failed calls write no output argument */

static void test_outputs_untouched(void **state)
{
    (void)state;
    trio t;
    trio_make(&t, 0);
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_desc_set_groups(d, 2)); /* 3 channels: not divisible */
    size_t bytes = 9;
    conv_algo_t algo = (conv_algo_t)-9;
    conv_algo_t algos[4] = {-9, -9, -9, -9};
    double ms[4] = {-9, -9, -9, -9};
    size_t wsb[4] = {9, 9, 9, 9};
    int count = -9, threads = -9, index = -9, on = -9;
    conv_device_t dev = (conv_device_t)-9;
    trio_bytes keep;
    trio_keep(&keep, &t);
    assert_fails(conv_workspace_size(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, &bytes),
                 CONV_STATUS_SHAPE_MISMATCH);
    assert_fails(conv_chosen_algorithm(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, &algo),
                 CONV_STATUS_SHAPE_MISMATCH);
    assert_fails(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, NULL, 4, algos,
                                      ms, wsb, &count),
                 CONV_STATUS_SHAPE_MISMATCH);
    assert_fails(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, t.x.t, t.w.t, t.y.t, NULL, -1,
                                      algos, ms, wsb, &count),
                 CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_get_device(NULL, &dev, &index), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_get_threads(NULL, &threads), CONV_STATUS_INVALID_HANDLE);
    assert_fails(conv_context_get_check_numerics(ctx, NULL), CONV_STATUS_INVALID_ARGUMENT);
    assert_fails(conv_context_get_check_numerics(NULL, &on), CONV_STATUS_INVALID_HANDLE);
    assert_true(bytes == 9 && algo == (conv_algo_t)-9 && count == -9 && threads == -9 &&
                index == -9 && on == -9 && dev == (conv_device_t)-9);
    for (int i = 0; i < 4; i++)
        assert_true(algos[i] == (conv_algo_t)-9 && ms[i] == -9 && wsb[i] == 9);
    trio_unchanged(&keep, &t, "failed queries");
    conv_desc_destroy(d);
    trio_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_use_after_destroy), cmocka_unit_test(test_stray_pointers),
        cmocka_unit_test(test_wrong_kinds),       cmocka_unit_test(test_unknown_enums),
        cmocka_unit_test(test_overflow),          cmocka_unit_test(test_engine_limits),
        cmocka_unit_test(test_output_too_small),  cmocka_unit_test(test_outputs_untouched),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
