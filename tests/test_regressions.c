/*
 * test_regressions.c -- bugs the fuzzer (fuzz/fuzz_conv.c) found, each as a
 * plain test that does not depend on how the fuzz target reads its input
 * (the inputs themselves are in fuzz/regressions and replayed by
 * test_fuzz_replay). A forced algorithm must either refuse a problem
 * (UNSUPPORTED, output untouched) or compute it right.
 */
#include "test_util.h"

#include <stdio.h>
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

/* Runs `op` of tp with its forced algorithm: refused, or equal to the
 * reference (within rounding). */
static void refused_or_right(const char *what, tu_problem *tp, conv_op_t op)
{
    tu_case c;
    conv_desc_t d;
    tu_rng r;
    char msg[512];
    tu_seed(&r, 1);
    assert_true(tu_resolve(tp));
    assert_ok(tu_case_make(&c, ctx, tp, 1));
    assert_ok(tu_make_desc(tp, op, &d));
    tu_case_fill(&c, op, &r, 0);
    tu_snapshot snap;
    tu_snapshot_take(&snap, &c, op);
    conv_status_t s = tu_case_run(&c, ctx, d, op, NULL);
    if (s == CONV_STATUS_UNSUPPORTED) {
        assert_true(tu_snapshot_same(&snap, &c, op));
    } else {
        if (s != CONV_STATUS_SUCCESS)
            fail_msg("%s (%s): status %d: %s", what, tu_op_name(op), (int)s, conv_last_error());
        if (tu_case_check(&c, op, 0, msg, sizeof msg))
            fail_msg("%s (%s): %s", what, tu_op_name(op), msg);
    }
    /* and with the algorithm left to the library: always right */
    tu_problem auto_tp = *tp;
    auto_tp.algo = CONV_ALGO_AUTO;
    conv_desc_t da;
    assert_ok(tu_make_desc(&auto_tp, op, &da));
    tu_case_fill(&c, op, &r, 0);
    assert_ok(tu_case_run(&c, ctx, da, op, NULL));
    if (tu_case_check(&c, op, 0, msg, sizeof msg))
        fail_msg("%s (%s, AUTO): %s", what, tu_op_name(op), msg);
    tu_snapshot_free(&snap);
    conv_desc_destroy(da);
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* fuzz/regressions/winograd-3d-depth-padding and depthwise-3d-depth-padding:
 * a 3-D problem whose depth axis has kernel 1 and input 1 but padding 2
 * (stride 3, dilation 2), so the one output depth reads only padding and
 * every output is the bias. Winograd (2-D 3x3 kernels) and then the AVX-512
 * depthwise kernels (fp32, 2-D 3x3) took it for the 2-D problem; implicit
 * GEMM (1-D and 2-D) asks the same question. Each pass, both dtypes, both
 * layouts. */
static void test_planar_algorithms_depth_padding(void **state)
{
    (void)state;
    const int64_t in[3] = {1, 3, 1}, kernel[3] = {1, 3, 3};
    const conv_algo_t algos[3] = {CONV_ALGO_WINOGRAD_4X4_3X3, CONV_ALGO_DEPTHWISE_DIRECT,
                                  CONV_ALGO_IMPLICIT_GEMM};
    for (int a = 0; a < 3; a++)
        for (int op = 0; op < 3; op++)
            for (int variant = 0; variant < 12; variant++) {
                int pad = variant % 3, fp64 = variant / 3 % 2, last = variant / 6;
                tu_problem tp;
                tu_problem_init(&tp, 3, 1, 2, 4, in, kernel);
                tp.p.groups = 2; /* depthwise: one input channel per group */
                tp.p.channels_last = last;
                tp.dtype = fp64 ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
                tp.bias = op != CONV_OP_BACKWARD_DATA;
                tp.p.stride[0] = 3;
                tp.p.dilation[0] = 2;
                tp.desc_pad_begin[0] = pad == 1 ? 2 : 0;
                tp.desc_pad_end[0] = pad == 2 ? 1 : 0;
                tp.desc_pad_begin[1] = tp.desc_pad_end[1] = 1;
                tp.desc_pad_begin[2] = tp.desc_pad_end[2] = 1;
                tp.algo = algos[a];
                char what[128];
                snprintf(what, sizeof what, "%s, %s, %s, depth padding %lld/%lld",
                         conv_algo_name(algos[a]), fp64 ? "fp64" : "fp32",
                         last ? "channels-last" : "channels-first",
                         (long long)tp.desc_pad_begin[0], (long long)tp.desc_pad_end[0]);
                refused_or_right(what, &tp, (conv_op_t)op);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planar_algorithms_depth_padding),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
