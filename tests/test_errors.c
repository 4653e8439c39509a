/*
 * test_errors.c -- every inconsistent call returns its status, names the
 * numbers involved in conv_last_error(), and leaves every tensor byte for
 * byte as it was (outputs are filled with a pattern, then compared).
 * Each case is checked for each pass it applies to.
 */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X, W, B, Y, SLOTS }; /* tensor slots, as in tu_case */

/* One call: the descriptor, the four tensors and the workspace. */
typedef struct spec {
    int spatial;
    int64_t groups;
    conv_algo_t algo;
    int nd[SLOTS]; /* 0: pass NULL */
    int64_t dims[SLOTS][5];
    conv_dtype_t dtype[SLOTS];
    conv_layout_t layout[SLOTS];
    int desc_in_slot;   /* slot given the descriptor's handle instead, or -1 */
    int small_ws;       /* wrap a workspace one byte smaller than needed */
} spec;

/* x (2, 12, 9, 8), w (10, 6, 3, 3), groups 2, b (1, 10, 1, 1), y (2, 10, 7, 6):
 * sizes chosen so each number in a message is recognisable. */
static spec base(void)
{
    spec s;
    memset(&s, 0, sizeof s);
    s.spatial = 2;
    s.groups = 2;
    s.algo = CONV_ALGO_AUTO;
    const int64_t d[SLOTS][4] = {{2, 12, 9, 8}, {10, 6, 3, 3}, {1, 10, 1, 1}, {2, 10, 7, 6}};
    for (int i = 0; i < SLOTS; i++) {
        s.nd[i] = 4;
        memcpy(s.dims[i], d[i], sizeof d[i]);
        s.dtype[i] = CONV_DTYPE_FLOAT32;
        s.layout[i] = CONV_LAYOUT_CHANNELS_FIRST;
    }
    s.desc_in_slot = -1;
    return s;
}

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

/* Whether a pass takes a tensor in slot i. */
static int uses(conv_op_t op, int i)
{
    return !(op == CONV_OP_BACKWARD_DATA && i == B);
}

static conv_status_t call(conv_op_t op, conv_desc_t d, conv_tensor_t *t, conv_workspace_t ws)
{
    switch (op) {
    case CONV_OP_FORWARD: return conv_forward(ctx, d, t[X], t[W], t[B], t[Y], ws);
    case CONV_OP_BACKWARD_DATA: return conv_backward_data(ctx, d, t[W], t[Y], t[X], ws);
    case CONV_OP_BACKWARD_FILTER:
        return conv_backward_filter(ctx, d, t[X], t[Y], t[W], t[B], ws);
    }
    return CONV_STATUS_INTERNAL_ERROR;
}

/* Runs the call `s` describes as pass `op`; it must fail with `want`, its
 * message must name every number in `nums`, and no tensor may change. */
static void expect(const char *name, const spec *s, conv_op_t op, conv_status_t want,
                   const int64_t *nums, int nnums)
{
    char what[256];
    snprintf(what, sizeof what, "%s (%s)", name, tu_op_name(op));
    conv_desc_t d;
    assert_ok(conv_desc_create(s->spatial, &d));
    assert_ok(conv_desc_set_groups(d, s->groups));
    assert_ok(conv_desc_set_algorithm(d, op, s->algo));

    tu_tensor tt[SLOTS];
    conv_tensor_t handles[SLOTS];
    void *before[SLOTS];
    memset(tt, 0, sizeof tt);
    for (int i = 0; i < SLOTS; i++) {
        handles[i] = NULL;
        before[i] = NULL;
        if (!s->nd[i] || !uses(op, i))
            continue;
        assert_ok(tu_tensor_make(&tt[i], ctx, s->dtype[i], s->layout[i], s->nd[i], s->dims[i],
                                 i % 2));
        tu_fill_pattern(&tt[i], (unsigned char)(0xA5 + i));
        before[i] = malloc(tt[i].bytes + 1);
        tu_copy(before[i], tt[i].data, tt[i].bytes);
        handles[i] = tt[i].t;
    }
    if (s->desc_in_slot >= 0)
        handles[s->desc_in_slot] = (conv_tensor_t)(void *)d; /* the wrong kind of handle */

    conv_workspace_t ws = NULL;
    unsigned char *mem = NULL;
    int64_t sizes[2] = {0, 0}; /* needed and given workspace bytes */
    if (s->small_ws) {
        size_t need = 0;
        assert_ok(conv_workspace_size(ctx, d, op, handles[X], handles[W], handles[Y], &need));
        if (need == 0) {
            print_message("%s: needs no workspace, case skipped\n", what);
        } else {
            mem = malloc(need);
            assert_ok(conv_workspace_wrap(ctx, mem, need - 1, &ws));
            sizes[0] = (int64_t)need;
            sizes[1] = (int64_t)need - 1;
            nums = sizes;
            nnums = 2;
        }
    }

    if (!s->small_ws || mem) {
        conv_status_t got = call(op, d, handles, ws);
        char msg[512];
        tu_copy_last_error(msg, sizeof msg);
        if (got != want)
            fail_msg("%s: status %d (%s), want %d (%s); message \"%s\"", what, (int)got,
                     conv_status_string(got), (int)want, conv_status_string(want), msg);
        if (msg[0] == '\0')
            fail_msg("%s: empty conv_last_error()", what);
        if (nnums && !tu_error_mentions_n(nums, nnums)) {
            char list[128] = "";
            for (int i = 0, len = 0; i < nnums; i++)
                len += snprintf(list + len, sizeof list - (size_t)len, " %" PRId64, nums[i]);
            fail_msg("%s: message \"%s\" does not name%s", what, msg, list);
        }
        for (int i = 0; i < SLOTS; i++)
            if (before[i] && !tu_same(before[i], tt[i].data, tt[i].bytes))
                fail_msg("%s: tensor in slot %d was changed by the failed call", what, i);
    }
    for (int i = 0; i < SLOTS; i++) {
        free(before[i]);
        tu_tensor_free(&tt[i]);
    }
    conv_workspace_destroy(ws);
    free(mem);
    conv_desc_destroy(d);
}

/* expect() for every pass that takes the slots the case changed. */
static void expect_all(const char *name, const spec *s, int slot_needed, conv_status_t want,
                       const int64_t *nums, int nnums)
{
    for (int op = 0; op < 3; op++)
        if (slot_needed < 0 || uses((conv_op_t)op, slot_needed))
            expect(name, s, (conv_op_t)op, want, nums, nnums);
}

static void test_base_is_valid(void **state)
{
    (void)state;
    /* the unmodified call succeeds for every pass, so each case below fails
     * only for its own change */
    spec s = base();
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_desc_set_groups(d, 2));
    for (int op = 0; op < 3; op++) {
        tu_tensor tt[SLOTS];
        conv_tensor_t h[SLOTS];
        for (int i = 0; i < SLOTS; i++) {
            assert_ok(tu_tensor_make(&tt[i], ctx, s.dtype[i], s.layout[i], 4, s.dims[i], 1));
            tu_fill_pattern(&tt[i], 0);
            h[i] = tt[i].t;
        }
        assert_ok(call((conv_op_t)op, d, h, NULL));
        for (int i = 0; i < SLOTS; i++)
            tu_tensor_free(&tt[i]);
    }
    conv_desc_destroy(d);
}

static void test_shape_mismatches(void **state)
{
    (void)state;
    spec s = base();
    s.dims[X][1] = 14; /* input channels 14 != filter channels 6 x groups 2 */
    expect_all("channels", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){14, 6}, 2);

    s = base();
    s.dims[W][0] = s.dims[Y][1] = s.dims[B][1] = 9; /* K 9 not divisible by groups 2 */
    expect_all("K % groups", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){9, 2}, 2);

    s = base();
    s.groups = 4; /* C 12 = 3 x 4 would need filter channels 3, not 6 */
    expect_all("groups", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){12, 6}, 2);

    s = base();
    s.dims[Y][3] = 5; /* out W is 6 */
    expect_all("y width", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){5, 6}, 2);
    s = base();
    s.dims[Y][1] = 11; /* y channels != K 10 */
    expect_all("y channels", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){11, 10}, 2);
    s = base();
    s.dims[Y][0] = 3; /* y batch != x batch 2 */
    expect_all("y batch", &s, -1, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){3, 2}, 2);

    s = base();
    s.dims[B][1] = 9; /* bias / db must have K = 10 elements, no fewer */
    expect_all("bias elements", &s, B, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){9, 10}, 2);
    s.dims[B][1] = 11; /* and no more */
    expect_all("bias elements", &s, B, CONV_STATUS_SHAPE_MISMATCH, (int64_t[]){11, 10}, 2);

    /* ranks: a 2-D descriptor with 3-D tensors, and tensors of mixed rank */
    s = base();
    for (int i = 0; i < SLOTS; i++) {
        s.nd[i] = 5;
        s.dims[i][4] = 1;
    }
    expect_all("rank vs descriptor", &s, -1, CONV_STATUS_SHAPE_MISMATCH, NULL, 0);
    s = base();
    s.nd[W] = 5;
    s.dims[W][4] = 1;
    expect_all("filter rank", &s, -1, CONV_STATUS_SHAPE_MISMATCH, NULL, 0);
}

static void test_type_mismatches(void **state)
{
    (void)state;
    static const int slots[3] = {W, Y, B};
    for (int j = 0; j < 3; j++) {
        spec s = base();
        s.dtype[slots[j]] = CONV_DTYPE_FLOAT64;
        expect_all("dtype", &s, slots[j], CONV_STATUS_TYPE_MISMATCH, NULL, 0);
        s = base();
        s.layout[slots[j]] = CONV_LAYOUT_CHANNELS_LAST;
        if (slots[j] != B) /* a (1, K, 1, 1) bias is the same either way */
            expect_all("layout", &s, slots[j], CONV_STATUS_TYPE_MISMATCH, NULL, 0);
    }
    /* float16 is storage only on the CPU (bfloat16: test_bf16) */
    {
        spec s = base();
        for (int i = 0; i < SLOTS; i++)
            s.dtype[i] = CONV_DTYPE_FLOAT16;
        expect_all("half precision", &s, -1, CONV_STATUS_UNSUPPORTED, NULL, 0);
    }
}

static void test_handles(void **state)
{
    (void)state;
    static const int slots[4] = {X, W, Y, B};
    for (int j = 0; j < 4; j++) {
        spec s = base();
        s.nd[slots[j]] = 0; /* NULL; only the bias slot may be NULL */
        if (slots[j] != B)
            expect_all("NULL tensor", &s, slots[j], CONV_STATUS_INVALID_HANDLE, NULL, 0);
        s = base();
        s.desc_in_slot = slots[j];
        expect_all("descriptor as tensor", &s, slots[j], CONV_STATUS_INVALID_HANDLE, NULL, 0);
    }

    /* other handle kinds in other positions */
    conv_tensor_t t;
    conv_desc_t d;
    conv_workspace_t ws;
    int64_t groups = 0;
    size_t bytes;
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                 base().dims[X], &t));
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_workspace_create(ctx, &ws));
    assert_status(conv_desc_get_groups((conv_desc_t)(void *)t, &groups),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_tensor_get_bytes((conv_tensor_t)(void *)d, &bytes),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_tensor_get_bytes((conv_tensor_t)(void *)ws, &bytes),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_workspace_get_size((conv_workspace_t)(void *)t, &bytes),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_context_set_threads((conv_context_t)(void *)d, 2),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_forward((conv_context_t)(void *)t, d, t, t, NULL, t, NULL),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_forward(ctx, (conv_desc_t)(void *)t, t, t, NULL, t, NULL),
                  CONV_STATUS_INVALID_HANDLE);
    assert_status(conv_forward(ctx, d, t, t, NULL, t, (conv_workspace_t)(void *)d),
                  CONV_STATUS_INVALID_HANDLE);
    conv_workspace_destroy(ws);
    conv_desc_destroy(d);
    conv_tensor_destroy(t);
}

static void test_workspace_too_small(void **state)
{
    (void)state;
    spec s = base();
    s.algo = CONV_ALGO_IM2COL_GEMM; /* 3x3: unfolds into the workspace */
    s.small_ws = 1;
    for (int op = 0; op < 3; op++) /* the message must name both sizes */
        expect("workspace one byte short", &s, (conv_op_t)op, CONV_STATUS_WORKSPACE_TOO_SMALL,
               NULL, 0);
}

static void test_algorithm_refused(void **state)
{
    (void)state;
    spec s = base();
    s.algo = CONV_ALGO_GEMM_1X1; /* a 3x3 kernel */
    expect_all("GEMM_1X1 on 3x3", &s, -1, CONV_STATUS_UNSUPPORTED, NULL, 0);
}

/* An output sharing memory with an input is refused before anything is
 * written (conv.h: outputs must not overlap inputs). */
static void test_overlap(void **state)
{
    (void)state;
    spec s = base();
    float *shared = calloc(4096, sizeof(float)), *before = malloc(4096 * sizeof(float));
    conv_tensor_t t[SLOTS];
    conv_desc_t d;
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_desc_set_groups(d, 2));
    for (int i = 0; i < 4096; i++)
        shared[i] = (float)(i % 7);
    memcpy(before, shared, 4096 * sizeof(float));
    /* every tensor starts inside the one buffer, offset by slot */
    for (int i = 0; i < SLOTS; i++)
        assert_ok(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4,
                                   s.dims[i], shared + 64 * i, &t[i]));
    for (int op = 0; op < 3; op++) {
        assert_status(call((conv_op_t)op, d, t, NULL), CONV_STATUS_INVALID_ARGUMENT);
        assert_memory_equal(shared, before, 4096 * sizeof(float));
    }
    for (int i = 0; i < SLOTS; i++)
        conv_tensor_destroy(t[i]);
    conv_desc_destroy(d);
    free(shared);
    free(before);
}

/* The same handle in an input role and an output role (or in both output
 * roles) is refused by role, whatever the shapes: each case below has shapes
 * under which the shared tensor is valid in both roles, so only the aliasing
 * check can refuse it. Before, the overlap check skipped a tensor identical
 * to the output, and these calls returned SUCCESS with wrong results (the
 * search even overwrote its input). The message names both roles; the
 * shared tensor is byte for byte as before. */
typedef struct alias_case {
    const char *what;
    conv_op_t op;
    int find;                  /* conv_find_algorithms instead of the pass */
    int64_t pad;               /* on every side */
    int64_t dims[SLOTS][4];    /* X, W, B, Y (0 dims: no bias) */
    int shared_a, shared_b;    /* slots given the same handle */
    const char *role_a, *role_b;
} alias_case;

static conv_tensor_t alias_tensor(const int64_t *dims, int salt)
{
    conv_tensor_t t;
    assert_ok(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims, &t));
    int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)((i * 3 + salt) % 7 - 3);
    assert_ok(conv_tensor_copy_from(t, v, (size_t)n * sizeof(float)));
    free(v);
    return t;
}

static void expect_alias(const alias_case *c)
{
    conv_desc_t d;
    const int64_t pad[2] = {c->pad, c->pad};
    assert_ok(conv_desc_create(2, &d));
    assert_ok(conv_desc_set_padding(d, pad, pad));
    conv_tensor_t t[SLOTS] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < SLOTS; i++)
        if (i != c->shared_b && c->dims[i][0]) t[i] = alias_tensor(c->dims[i], i);
    t[c->shared_b] = t[c->shared_a];
    const int64_t *sd = c->dims[c->shared_a];
    size_t bytes = (size_t)(sd[0] * sd[1] * sd[2] * sd[3]) * sizeof(float);
    float *before = malloc(bytes), *after = malloc(bytes);
    assert_ok(conv_tensor_copy_to(t[c->shared_a], before, bytes));
    conv_status_t st;
    if (c->find) {
        conv_algo_t algos[8];
        int count = -1;
        st = conv_find_algorithms(ctx, d, c->op, t[X], t[W], t[Y], NULL, 8, algos, NULL, NULL,
                                  &count); /* the roles of conv_workspace_size */
        if (count != -1) fail_msg("%s: *count written (%d)", c->what, count);
    } else {
        st = call(c->op, d, t, NULL);
    }
    if (st != CONV_STATUS_INVALID_ARGUMENT)
        fail_msg("%s: got %s, want INVALID_ARGUMENT (%s)", c->what, conv_status_string(st),
                 conv_last_error());
    const char *msg = conv_last_error();
    char a[16], b[16];
    snprintf(a, sizeof a, "%s ", c->role_a);
    snprintf(b, sizeof b, "%s ", c->role_b);
    if (!strstr(msg, "same tensor") || !strstr(msg, a) || !strstr(msg, b))
        fail_msg("%s: message \"%s\" should say the same tensor and name %s and %s", c->what,
                 msg, c->role_a, c->role_b);
    assert_ok(conv_tensor_copy_to(t[c->shared_a], after, bytes));
    if (memcmp(before, after, bytes) != 0) fail_msg("%s: the shared tensor changed", c->what);
    for (int i = 0; i < SLOTS; i++)
        if (i != c->shared_b) conv_tensor_destroy(t[i]);
    conv_desc_destroy(d);
    free(before);
    free(after);
}

static void test_same_handle(void **state)
{
    (void)state;
    const alias_case cases[] = {
        /* forward w = y: x 2x2x3x3, w = y 2x2x2x2 */
        {"forward w = y", CONV_OP_FORWARD, 0, 0,
         {{2, 2, 3, 3}, {2, 2, 2, 2}, {0}, {2, 2, 2, 2}}, W, Y, "y", "w"},
        /* forward b = y: b of K = 2 elements, y 1x2x1x1 */
        {"forward b = y", CONV_OP_FORWARD, 0, 0,
         {{1, 3, 2, 2}, {2, 3, 2, 2}, {1, 2, 1, 1}, {1, 2, 1, 1}}, B, Y, "y", "b"},
        /* forward x = y: same dims with a 3x3 kernel, padding 1 */
        {"forward x = y", CONV_OP_FORWARD, 0, 1,
         {{2, 3, 5, 5}, {3, 3, 3, 3}, {0}, {2, 3, 5, 5}}, X, Y, "y", "x"},
        /* backward-data dx = dy */
        {"backward-data dx = dy", CONV_OP_BACKWARD_DATA, 0, 1,
         {{2, 3, 5, 5}, {3, 3, 3, 3}, {0}, {2, 3, 5, 5}}, X, Y, "dx", "dy"},
        /* backward-data dx = w: x 3x3x3x3 */
        {"backward-data dx = w", CONV_OP_BACKWARD_DATA, 0, 1,
         {{3, 3, 3, 3}, {3, 3, 3, 3}, {0}, {3, 3, 3, 3}}, X, W, "dx", "w"},
        /* backward-filter dw = x: x = w 2x2x3x3, dy 2x2x1x1 */
        {"backward-filter dw = x", CONV_OP_BACKWARD_FILTER, 0, 0,
         {{2, 2, 3, 3}, {2, 2, 3, 3}, {0}, {2, 2, 1, 1}}, W, X, "dw", "x"},
        /* backward-filter db = dy: dy 1x2x1x1, db 2 elements */
        {"backward-filter db = dy", CONV_OP_BACKWARD_FILTER, 0, 0,
         {{1, 2, 3, 3}, {2, 2, 3, 3}, {1, 2, 1, 1}, {1, 2, 1, 1}}, B, Y, "db", "dy"},
        /* backward-filter dw = db: dw 2x1x1x1 has K = 2 elements */
        {"backward-filter dw = db", CONV_OP_BACKWARD_FILTER, 0, 0,
         {{1, 1, 3, 3}, {2, 1, 1, 1}, {2, 1, 1, 1}, {1, 2, 3, 3}}, W, B, "dw", "db"},
        /* the search: forward y = x, backward-data dx = dy, backward-filter dw = x */
        {"find forward y = x", CONV_OP_FORWARD, 1, 1,
         {{2, 3, 5, 5}, {3, 3, 3, 3}, {0}, {2, 3, 5, 5}}, X, Y, "y", "x"},
        {"find backward-data dx = dy", CONV_OP_BACKWARD_DATA, 1, 1,
         {{2, 3, 5, 5}, {3, 3, 3, 3}, {0}, {2, 3, 5, 5}}, X, Y, "dx", "dy"},
        {"find backward-filter dw = x", CONV_OP_BACKWARD_FILTER, 1, 0,
         {{2, 2, 3, 3}, {2, 2, 3, 3}, {0}, {2, 2, 1, 1}}, W, X, "dw", "x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_alias(&cases[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_is_valid),    cmocka_unit_test(test_shape_mismatches),
        cmocka_unit_test(test_type_mismatches),  cmocka_unit_test(test_handles),
        cmocka_unit_test(test_workspace_too_small), cmocka_unit_test(test_algorithm_refused),
        cmocka_unit_test(test_overlap),          cmocka_unit_test(test_same_handle),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
