/*
 * test_numerics.c -- the numerical guard (conv_context_set_check_numerics,
 * CONV_CHECK_NUMERICS). Off by default: NaN flows through silently. On:
 * every pass whose output holds a NaN or an infinity fails with
 * CONV_STATUS_NUMERICAL_ERROR, the message naming the pass, the tensor and
 * the first bad index (checked against a scan of the output, which -- the one
 * documented exception -- has been written). Finite results pass untouched.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int64_t first_bad(const tu_tensor *t)
{
    for (int64_t i = 0; i < t->elems; i++)
        if (!isfinite(tu_get(t, i)))
            return i;
    return -1;
}

/* "<tensor> (<dims>): first at element <i>" in the message. */
static void expect_named(const char *pass, const char *tensor, int64_t index)
{
    const char *m = conv_last_error();
    char want[64];
    if (!strstr(m, pass))
        fail_msg("message \"%s\" does not name the pass %s", m, pass);
    snprintf(want, sizeof want, " in %s (", tensor);
    if (!strstr(m, want))
        fail_msg("message \"%s\" does not name the tensor %s", m, tensor);
    snprintf(want, sizeof want, "element %lld ", (long long)index);
    if (!strstr(m, want))
        fail_msg("message \"%s\" does not name the index %lld", m, (long long)index);
}

static void make_case(tu_case *c, conv_desc_t *d, conv_dtype_t dtype, int layout_last,
                      conv_algo_t algo)
{
    tu_problem tp;
    const int64_t in[2] = {7, 6}, k[2] = {3, 3};
    tu_problem_init(&tp, 2, 2, 3, 4, in, k);
    tp.dtype = dtype;
    tp.p.channels_last = layout_last;
    tp.bias = 1;
    tp.algo = algo;
    assert_true(tu_resolve(&tp));
    assert_ok(tu_case_make(c, ctx, &tp, 1));
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, d));
    assert_ok(conv_desc_set_algorithm(*d, CONV_OP_BACKWARD_DATA, algo));
    assert_ok(conv_desc_set_algorithm(*d, CONV_OP_BACKWARD_FILTER, algo));
}

static void test_default_off_and_env(void **state)
{
    (void)state;
    int on = -1;
    conv_context_t c;
    unsetenv("CONV_CHECK_NUMERICS");
    assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
    assert_ok(conv_context_get_check_numerics(c, &on));
    assert_int_equal(on, 0);
    assert_ok(conv_context_set_check_numerics(c, 7)); /* any non-zero is on */
    assert_ok(conv_context_get_check_numerics(c, &on));
    assert_int_equal(on, 1);
    assert_ok(conv_context_set_check_numerics(c, 0));
    assert_ok(conv_context_get_check_numerics(c, &on));
    assert_int_equal(on, 0);
    conv_context_destroy(c);
    const char *values[] = {"1", "yes", "0", ""};
    const int want[] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        setenv("CONV_CHECK_NUMERICS", values[i], 1);
        assert_ok(conv_context_create(CONV_DEVICE_CPU, 0, &c));
        assert_ok(conv_context_get_check_numerics(c, &on));
        if (on != want[i])
            fail_msg("CONV_CHECK_NUMERICS=\"%s\": guard %d, want %d", values[i], on, want[i]);
        conv_context_destroy(c);
    }
    unsetenv("CONV_CHECK_NUMERICS");
    assert_int_equal(conv_status_string(CONV_STATUS_NUMERICAL_ERROR)[0] != '\0', 1);
    assert_true(strcmp(conv_status_string(CONV_STATUS_NUMERICAL_ERROR), "unknown status") != 0);
}

/* Each pass, each dtype and layout, each algorithm that applies: a NaN or an
 * infinity in an input reaches the output and is reported; clean data
 * passes; with the guard off the same call succeeds. */
static void test_each_pass(void **state)
{
    (void)state;
    const conv_algo_t algos[2] = {CONV_ALGO_IM2COL_GEMM, CONV_ALGO_AUTO};
    const char *pass_names[3] = {"forward", "backward-data", "backward-filter"};
    const char *out_names[3] = {"y", "dx", "dw"};
    int reported = 0;
    for (int dt = 0; dt < 2; dt++)
        for (int last = 0; last < 2; last++)
            for (int a = 0; a < 2; a++)
                for (int op = 0; op < 3; op++)
                    for (int poison = 0; poison < 3; poison++) { /* none, NaN, -inf */
                        tu_case c;
                        conv_desc_t d;
                        tu_rng r;
                        tu_seed(&r, (uint64_t)(dt * 100 + last * 10 + a + op * 1000));
                        make_case(&c, &d, dt ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32, last,
                                  algos[a]);
                        tu_case_fill(&c, (conv_op_t)op, &r, 0);
                        /* the input that is always read: x for forward and
                         * backward-filter, dy for backward-data */
                        tu_tensor *in = op == CONV_OP_BACKWARD_DATA ? &c.y : &c.x;
                        int64_t at = in->elems / 3;
                        if (poison)
                            tu_set(in, at, poison == 1 ? NAN : -INFINITY);
                        assert_ok(conv_context_set_check_numerics(ctx, 0));
                        assert_ok(tu_case_run(&c, ctx, d, (conv_op_t)op, NULL));
                        assert_ok(conv_context_set_check_numerics(ctx, 1));
                        conv_status_t s = tu_case_run(&c, ctx, d, (conv_op_t)op, NULL);
                        tu_tensor *outs[2];
                        tu_case_outputs(&c, (conv_op_t)op, outs);
                        int64_t bad = first_bad(outs[0]);
                        if (!poison) {
                            assert_int_equal(bad, -1);
                            assert_ok(s);
                        } else {
                            assert_true(bad >= 0); /* the output was written */
                            assert_status(s, CONV_STATUS_NUMERICAL_ERROR);
                            expect_named(pass_names[op], out_names[op], bad);
                            reported++;
                        }
                        conv_desc_destroy(d);
                        tu_case_free(&c);
                    }
    assert_ok(conv_context_set_check_numerics(ctx, 0));
    print_message("%d non-finite outputs reported\n", reported);
}

/* Finite inputs whose result overflows fp32 (3 x 1e38 x 1): +inf in y; the
 * bias gradient alone non-finite names db. */
static void test_overflow_and_db(void **state)
{
    (void)state;
    tu_case c;
    conv_desc_t d;
    tu_rng r;
    tu_seed(&r, 3);
    make_case(&c, &d, CONV_DTYPE_FLOAT32, 0, CONV_ALGO_AUTO);
    assert_ok(conv_context_set_check_numerics(ctx, 1));
    tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
    for (int64_t i = 0; i < c.x.elems; i++)
        tu_set(&c.x, i, 1e38);
    for (int64_t i = 0; i < c.w.elems; i++)
        tu_set(&c.w, i, 1.0);
    assert_status(tu_case_run(&c, ctx, d, CONV_OP_FORWARD, NULL), CONV_STATUS_NUMERICAL_ERROR);
    expect_named("forward", "y", 0);
    assert_non_null(strstr(conv_last_error(), "inf"));

    /* backward-filter with x = 0: dw is 0 whatever dy is, while db, the sum
     * of dy's 2 x 5 x 4 huge values, overflows */
    tu_case_fill(&c, CONV_OP_BACKWARD_FILTER, &r, 0);
    for (int64_t i = 0; i < c.x.elems; i++)
        tu_set(&c.x, i, 0.0); /* dw = 0 whatever dy is */
    for (int64_t i = 0; i < c.y.elems; i++)
        tu_set(&c.y, i, 3e38 / 8); /* 40 x 3.75e37 > FLT_MAX: +inf */
    assert_status(tu_case_run(&c, ctx, d, CONV_OP_BACKWARD_FILTER, NULL),
                  CONV_STATUS_NUMERICAL_ERROR);
    assert_int_equal(first_bad(&c.w), -1);
    expect_named("backward-filter", "db", first_bad(&c.b));
    assert_ok(conv_context_set_check_numerics(ctx, 0));
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* Transposed convolutions and the algorithm search are guarded too. */
static void test_transposed_and_search(void **state)
{
    (void)state;
    conv_desc_t d;
    assert_ok(conv_desc_create(1, &d));
    assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
    const int64_t xd[3] = {1, 2, 5}, wd[3] = {2, 3, 3};
    int64_t yd[3];
    assert_ok(conv_output_dims(d, 3, xd, wd, yd));
    tu_tensor x, w, y;
    assert_ok(tu_tensor_make(&x, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, xd, 0));
    assert_ok(tu_tensor_make(&w, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, wd, 0));
    assert_ok(tu_tensor_make(&y, ctx, CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, yd, 0));
    tu_rng r;
    tu_seed(&r, 8);
    tu_fill_int(&x, &r, -3, 3);
    tu_fill_int(&w, &r, -3, 3);
    tu_set(&x, 7, NAN);
    assert_ok(conv_context_set_check_numerics(ctx, 1));
    assert_status(conv_forward(ctx, d, x.t, w.t, NULL, y.t, NULL), CONV_STATUS_NUMERICAL_ERROR);
    expect_named("forward", "y", first_bad(&y));
    int count = -1;
    conv_algo_t algo;
    assert_status(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, x.t, w.t, y.t, NULL, 1, &algo,
                                       NULL, NULL, &count),
                  CONV_STATUS_NUMERICAL_ERROR);
    expect_named("algorithm search", "y", first_bad(&y));
    assert_int_equal(count, -1);
    tu_set(&x, 7, 1.0);
    assert_ok(conv_forward(ctx, d, x.t, w.t, NULL, y.t, NULL));
    assert_ok(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, x.t, w.t, y.t, NULL, 1, &algo, NULL,
                                   NULL, &count));
    assert_int_equal(count, 1);
    assert_ok(conv_context_set_check_numerics(ctx, 0));
    tu_tensor_free(&x);
    tu_tensor_free(&w);
    tu_tensor_free(&y);
    conv_desc_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_off_and_env),
        cmocka_unit_test(test_each_pass),
        cmocka_unit_test(test_overflow_and_db),
        cmocka_unit_test(test_transposed_and_search),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
