/*
 * test_output_dims.c -- shape and cost inference: a table of hand-computed
 * output sizes (explicit, asymmetric, dilated, strided, VALID, SAME_UPPER,
 * SAME_LOWER; 1-D to 3-D), refusals that name their numbers, where SAME
 * puts the odd padding element (checked through forward results), and
 * conv_cost.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dims_case {
    const char *name;
    int spatial;
    int64_t x[5], w[5];
    int64_t stride[3], dilation[3], pad_b[3], pad_e[3];
    conv_auto_pad_t auto_pad;
    int64_t groups;
    int64_t y[5]; /* expected, worked out by hand in the comment */
} dims_case;

/* Zero stride/dilation entries mean 1 (see desc_for). */
static const dims_case cases[] = {
    /* 32 + 1 + 1 - 3 + 1 = 32 */
    {"symmetric pad", 2, {1, 3, 32, 32}, {8, 3, 3, 3}, {0}, {0}, {1, 1}, {1, 1},
     CONV_AUTO_PAD_NOTSET, 1, {1, 8, 32, 32}},
    /* H: 10 + 0 + 2 - 3 + 1 = 10; W: 11 + 1 + 0 - 2 + 1 = 11 */
    {"asymmetric pad", 2, {2, 4, 10, 11}, {6, 4, 3, 2}, {0}, {0}, {0, 1}, {2, 0},
     CONV_AUTO_PAD_NOTSET, 1, {2, 6, 10, 11}},
    /* H: (7 + 2 - 3) / 2 + 1 = 4; W: (8 + 2 - 3) / 2 + 1 = 4 (floor 3.5) */
    {"stride 2", 2, {1, 1, 7, 8}, {1, 1, 3, 3}, {2, 2}, {0}, {1, 1}, {1, 1},
     CONV_AUTO_PAD_NOTSET, 1, {1, 1, 4, 4}},
    /* dilated kernel 5: 9 - 5 + 1 = 5 */
    {"dilation 2", 2, {1, 2, 9, 9}, {3, 2, 3, 3}, {0}, {2, 2}, {0}, {0}, CONV_AUTO_PAD_NOTSET,
     1, {1, 3, 5, 5}},
    /* dilated kernel 10: (20 + 2 + 1 - 10) / 3 + 1 = 4 + 1 = 5 */
    {"1-D dilation stride asymmetric", 1, {1, 1, 20}, {1, 1, 4}, {3}, {3}, {2}, {1},
     CONV_AUTO_PAD_NOTSET, 1, {1, 1, 5}},
    /* kernel 5 over 2 inputs padded by 2 each side: 2 + 4 - 5 + 1 = 2 */
    {"kernel larger than input", 1, {1, 1, 2}, {1, 1, 5}, {0}, {0}, {2}, {2},
     CONV_AUTO_PAD_NOTSET, 1, {1, 1, 2}},
    /* VALID ignores the explicit padding: H (10 - 3) / 2 + 1 = 4, W (7 - 4) / 3 + 1 = 2 */
    {"VALID", 2, {1, 1, 10, 7}, {1, 1, 3, 4}, {2, 3}, {0}, {5, 5}, {5, 5}, CONV_AUTO_PAD_VALID,
     1, {1, 1, 4, 2}},
    /* VALID, dilated kernel 7 (3 taps, dilation 3): (9 - 7) / 1 + 1 = 3 */
    {"VALID dilated", 1, {2, 3, 9}, {4, 3, 3}, {0}, {3}, {0}, {0}, CONV_AUTO_PAD_VALID, 1,
     {2, 4, 3}},
    /* SAME: ceil(10 / 1) = 10 (pads 1 + 2) */
    {"SAME_UPPER", 1, {1, 1, 10}, {1, 1, 4}, {0}, {0}, {0}, {0}, CONV_AUTO_PAD_SAME_UPPER, 1,
     {1, 1, 10}},
    /* SAME: ceil(7 / 2) = 4, ceil(8 / 2) = 4 */
    {"SAME_UPPER stride 2", 2, {1, 1, 7, 8}, {1, 1, 3, 3}, {2, 2}, {0}, {0}, {0},
     CONV_AUTO_PAD_SAME_UPPER, 1, {1, 1, 4, 4}},
    /* SAME: ceil(5/1) = 5, ceil(6/2) = 3, ceil(7/3) = 3 */
    {"SAME_LOWER 3-D", 3, {1, 1, 5, 6, 7}, {2, 1, 2, 3, 4}, {1, 2, 3}, {1, 1, 2}, {0}, {0},
     CONV_AUTO_PAD_SAME_LOWER, 1, {1, 2, 5, 3, 3}},
    /* SAME with no padding needed (total would be -1): ceil(10 / 4) = 3 */
    {"SAME stride > kernel", 1, {1, 1, 10}, {1, 1, 1}, {4}, {0}, {0}, {0},
     CONV_AUTO_PAD_SAME_LOWER, 1, {1, 1, 3}},
    /* groups 3: C 6 = 2 x 3, K 9 */
    {"groups", 2, {2, 6, 5, 5}, {9, 2, 3, 3}, {0}, {0}, {0}, {0}, CONV_AUTO_PAD_NOTSET, 3,
     {2, 9, 3, 3}},
    /* depthwise, multiplier 2, pad 1 */
    {"depthwise", 2, {1, 4, 6, 6}, {8, 1, 3, 3}, {0}, {0}, {1, 1}, {1, 1},
     CONV_AUTO_PAD_NOTSET, 4, {1, 8, 6, 6}},
    {"1-D pointwise", 1, {3, 2, 11}, {5, 2, 1}, {0}, {0}, {0}, {0}, CONV_AUTO_PAD_NOTSET, 1,
     {3, 5, 11}},
    /* 3-D: D (4 + 1 - 2) / 1 + 1 = 4, H (9 + 0 + 2 - 3) / 2 + 1 = 5, W (5 - 5) / 1 + 1 = 1
     * with dilation 2 on W (kernel 3 spans 5) */
    {"3-D mixed", 3, {2, 2, 4, 9, 5}, {3, 2, 2, 3, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 0},
     {0, 2, 0}, CONV_AUTO_PAD_NOTSET, 1, {2, 3, 4, 5, 1}},
    /* an empty batch passes through */
    {"batch 0", 2, {0, 3, 8, 8}, {4, 3, 3, 3}, {0}, {0}, {0}, {0}, CONV_AUTO_PAD_NOTSET, 1,
     {0, 4, 6, 6}},
};

static conv_desc_t desc_for(const dims_case *c)
{
    conv_desc_t d;
    int64_t s[3], dl[3];
    for (int a = 0; a < 3; a++) {
        s[a] = c->stride[a] ? c->stride[a] : 1;
        dl[a] = c->dilation[a] ? c->dilation[a] : 1;
    }
    assert_ok(conv_desc_create(c->spatial, &d));
    assert_ok(conv_desc_set_strides(d, s));
    assert_ok(conv_desc_set_dilations(d, dl));
    assert_ok(conv_desc_set_padding(d, c->pad_b, c->pad_e));
    assert_ok(conv_desc_set_auto_pad(d, c->auto_pad));
    assert_ok(conv_desc_set_groups(d, c->groups));
    return d;
}

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const dims_case *c = &cases[i];
        conv_desc_t d = desc_for(c);
        int64_t y[5] = {-9, -9, -9, -9, -9};
        int nd = c->spatial + 2;
        conv_status_t s = conv_output_dims(d, nd, c->x, c->w, y);
        if (s != CONV_STATUS_SUCCESS)
            fail_msg("%s: status %d: %s", c->name, (int)s, conv_last_error());
        for (int a = 0; a < nd; a++)
            if (y[a] != c->y[a])
                fail_msg("%s: dim %d is %lld, want %lld", c->name, a, (long long)y[a],
                         (long long)c->y[a]);
        if (nd < 5) /* wrote ndim dims, no more */
            assert_int_equal(y[nd], -9);
        conv_desc_destroy(d);
    }
}

/* conv_cost: 2 * N * K * prod(out) * C/G * prod(kernel) flops for each pass;
 * bytes cover x, w and y once (a bias may add K elements) and scale with
 * the element size. */
static void test_cost(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const dims_case *c = &cases[i];
        conv_desc_t d = desc_for(c);
        int nd = c->spatial + 2;
        double want = 2.0 * (double)c->y[0] * (double)c->y[1] * (double)(c->w[1]);
        double nx = 1, nw = 1, ny = 1;
        for (int a = 0; a < nd; a++) {
            nx *= (double)c->x[a];
            nw *= (double)c->w[a];
            ny *= (double)c->y[a];
        }
        for (int a = 2; a < nd; a++)
            want *= (double)(c->y[a] * c->w[a]);
        for (int op = 0; op < 3; op++) {
            double flops = -1, bytes32 = -1, flops64 = -1, bytes64 = -1;
            assert_ok(conv_cost(d, (conv_op_t)op, CONV_DTYPE_FLOAT32, nd, c->x, c->w, &flops,
                                &bytes32));
            assert_ok(conv_cost(d, (conv_op_t)op, CONV_DTYPE_FLOAT64, nd, c->x, c->w, &flops64,
                                &bytes64));
            if (flops != want || flops64 != want)
                fail_msg("%s op %d: flops %g / %g, want %g", c->name, op, flops, flops64, want);
            double lo = 4.0 * (nx + nw + ny), hi = lo + 4.0 * (double)c->w[0];
            if (bytes32 < lo || bytes32 > hi || bytes64 != 2.0 * bytes32)
                fail_msg("%s op %d: bytes %g (f64 %g), want %g..%g", c->name, op, bytes32,
                         bytes64, lo, hi);
        }
        conv_desc_destroy(d);
    }
}

/* A refused shape: its status, y_dims untouched, and the message names the
 * numbers given in `must` (and at least one of `any` when any_count > 0). */
static void expect_refusal(const char *name, conv_desc_t d, int nd, const int64_t *x,
                           const int64_t *w, conv_status_t want, const int64_t *must,
                           int must_count, const int64_t *any, int any_count)
{
    int64_t y[5] = {-9, -9, -9, -9, -9};
    conv_status_t s = conv_output_dims(d, nd, x, w, y);
    if (s != want)
        fail_msg("%s: status %d (%s), want %d: %s", name, (int)s, conv_status_string(s),
                 (int)want, conv_last_error());
    for (int a = 0; a < 5; a++)
        assert_int_equal(y[a], -9);
    if (must_count && !tu_error_mentions_n(must, must_count))
        fail_msg("%s: message \"%s\" does not name the numbers", name, conv_last_error());
    int found = any_count == 0;
    for (int i = 0; i < any_count; i++)
        found |= tu_error_mentions_n(&any[i], 1);
    if (!found)
        fail_msg("%s: message \"%s\" does not name the sizes", name, conv_last_error());
}

static void test_refusals(void **state)
{
    (void)state;
    conv_desc_t d1, d2;
    assert_ok(conv_desc_create(1, &d1));
    assert_ok(conv_desc_create(2, &d2));

    /* output < 1: input 13, kernel 8 dilated by 2 spans 15 */
    const int64_t dil[1] = {2};
    assert_ok(conv_desc_set_dilations(d1, dil));
    const int64_t x1[3] = {1, 1, 13}, w1[3] = {1, 1, 8}, n13[1] = {13}, e15[2] = {15, 8};
    expect_refusal("output < 1", d1, 3, x1, w1, CONV_STATUS_SHAPE_MISMATCH, n13, 1, e15, 2);

    /* input channels 64 vs filter 32 x groups 1 */
    const int64_t x2[4] = {1, 64, 8, 8}, w2[4] = {32, 32, 3, 3}, n64[2] = {64, 32};
    expect_refusal("channels", d2, 4, x2, w2, CONV_STATUS_SHAPE_MISMATCH, n64, 2, NULL, 0);

    /* K 10 not divisible by groups 4 (C 12 = 3 x 4 fine) */
    assert_ok(conv_desc_set_groups(d2, 4));
    const int64_t x3[4] = {1, 12, 8, 8}, w3[4] = {10, 3, 3, 3}, n10[2] = {10, 4};
    expect_refusal("K % groups", d2, 4, x3, w3, CONV_STATUS_SHAPE_MISMATCH, n10, 2, NULL, 0);

    /* C 12 != 5 x groups 2 */
    assert_ok(conv_desc_set_groups(d2, 2));
    const int64_t w4[4] = {8, 5, 3, 3}, n12[2] = {12, 5};
    expect_refusal("grouped channels", d2, 4, x3, w4, CONV_STATUS_SHAPE_MISMATCH, n12, 2, NULL,
                   0);

    /* rank: 2 spatial dims in the descriptor, 3-dim arrays given */
    const int64_t x5[3] = {1, 12, 8}, w5[3] = {8, 6, 3};
    expect_refusal("rank", d2, 3, x5, w5, CONV_STATUS_SHAPE_MISMATCH, NULL, 0, NULL, 0);

    /* negative sizes are invalid arguments */
    assert_ok(conv_desc_set_groups(d2, 1));
    const int64_t x6[4] = {1, 3, -8, 8}, w6[4] = {4, 3, 3, 3};
    expect_refusal("negative dim", d2, 4, x6, w6, CONV_STATUS_INVALID_ARGUMENT, NULL, 0, NULL, 0);
    conv_desc_destroy(d1);
    conv_desc_destroy(d2);
}

/* SAME pads (total odd) put the extra element at the end (UPPER) or the
 * beginning (LOWER): the forward result equals an explicit-pad forward with
 * the hand-derived padding, and the reference with that padding. */
static void test_same_padding_placement(void **state)
{
    (void)state;
    conv_context_t ctx;
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    /* x (2, 2, 8, 8), w (3, 2, 3, 4), stride (2, 1):
     * H: out ceil(8/2) = 4, total 3*2 + 3 - 8 = 1;  W: out 8, total 7 + 4 - 8 = 3 */
    const int64_t in[2] = {8, 8}, kernel[2] = {3, 4};
    const int64_t upper_b[2] = {0, 1}, upper_e[2] = {1, 2}, lower_b[2] = {1, 2},
                  lower_e[2] = {0, 1};
    const conv_auto_pad_t modes[2] = {CONV_AUTO_PAD_SAME_UPPER, CONV_AUTO_PAD_SAME_LOWER};
    const int64_t *pads_b[2] = {upper_b, lower_b}, *pads_e[2] = {upper_e, lower_e};
    tu_rng r;
    tu_seed(&r, 3);
    void *upper_y = NULL; /* channels-first SAME_UPPER result */
    for (int m = 0; m < 2; m++) {
        for (int layout = 0; layout < 2; layout++) {
            tu_problem tp;
            tu_problem_init(&tp, 2, 2, 2, 3, in, kernel);
            tp.p.stride[0] = 2;
            tp.p.channels_last = layout;
            tp.auto_pad = modes[m];
            assert_true(tu_resolve(&tp));
            /* the test's own rule agrees with the hand derivation */
            for (int a = 0; a < 2; a++) {
                assert_int_equal(tp.p.pad_begin[a], pads_b[m][a]);
                assert_int_equal(tp.pad_end[a], pads_e[m][a]);
            }
            assert_int_equal(tp.p.out[0], 4);
            assert_int_equal(tp.p.out[1], 8);

            tu_problem explicit_tp = tp;
            explicit_tp.auto_pad = CONV_AUTO_PAD_NOTSET;
            memcpy(explicit_tp.desc_pad_begin, pads_b[m], 2 * sizeof(int64_t));
            memcpy(explicit_tp.desc_pad_end, pads_e[m], 2 * sizeof(int64_t));

            tu_case c;
            conv_desc_t da, de;
            assert_ok(tu_case_make(&c, ctx, &tp, 1));
            assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &da));
            assert_ok(tu_make_desc(&explicit_tp, CONV_OP_FORWARD, &de));
            tu_seed(&r, 3); /* the same data for both modes */
            tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
            assert_ok(tu_case_run(&c, ctx, da, CONV_OP_FORWARD, NULL));
            char msg[512];
            if (tu_case_check(&c, CONV_OP_FORWARD, 1, msg, sizeof msg))
                fail_msg("auto pad %d layout %d: %s", m, layout, msg);
            void *auto_y = malloc(c.y.bytes);
            tu_copy(auto_y, c.y.data, c.y.bytes);
            tu_fill_nan(&c.y);
            assert_ok(tu_case_run(&c, ctx, de, CONV_OP_FORWARD, NULL));
            assert_memory_equal(auto_y, c.y.data, c.y.bytes);
            /* the two placements really differ on this data */
            if (layout == 0 && m == 0)
                upper_y = auto_y;
            else if (layout == 0 && m == 1)
                assert_true(memcmp(upper_y, auto_y, c.y.bytes) != 0);
            if (auto_y != upper_y)
                free(auto_y);
            conv_desc_destroy(da);
            conv_desc_destroy(de);
            tu_case_free(&c);
        }
    }
    free(upper_y);
    conv_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_same_padding_placement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
