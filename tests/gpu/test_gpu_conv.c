/*
 * test_gpu_conv.c -- the CUDA engine against the CPU engine (fp64) on
 * random problems: every pass (forward with bias and ReLU, backward-data,
 * backward-filter with the bias gradient), transposed convolutions, ranks
 * 1-3, both layouts, groups and depthwise, strides, dilations, asymmetric
 * and automatic padding, zero batches; fp32, fp64, fp16 and bf16. At least
 * 500 problems per pass and dtype (CONV_TEST_COUNT overrides, CONV_TEST_SEED
 * reruns one). The bound is gpu_util.h's. The context is CONV_MATH_STRICT so
 * that only direct-summation algorithms run and the bound is a dot
 * product's; test_gpu_api.c covers DEFAULT and FAST. Exits 77 without a GPU.
 * CONV_TEST_GPU_ALGO=<solver> forces one solver on the GPU (ctest runs it
 * with cudnn_graph): problems it declines (UNSUPPORTED) are counted and
 * listed, not failed, but at least one problem of each suite must run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

static conv_context_t g_gpu, g_cpu;

static int count(void)
{
    const char *v = getenv("CONV_TEST_COUNT");
    return v && atoi(v) > 0 ? atoi(v) : 500;
}

static uint64_t base_seed(void)
{
    const char *v = getenv("CONV_TEST_SEED");
    return v ? strtoull(v, NULL, 0) : 0x6e1c0de5ull;
}

static void run_suite(conv_op_t op, conv_dtype_t dt)
{
    static const char *const ops[] = {"forward", "backward-data", "backward-filter"};
    static const char *const dts[] = {"f32", "f64", "f16", "bf16"};
    int n = count(), failures = 0, declined = 0;
    double worst = 0;
    gu_tolerance tol = gu_tol(dt, CONV_MATH_STRICT);
    for (int i = 0; i < n; i++) {
        uint64_t seed = base_seed() + (uint64_t)i * 7919u + (uint64_t)op * 104729u + (uint64_t)dt * 1299709u;
        uint64_t s = seed;
        gu_problem p;
        gu_random_problem(&s, dt, 1, &p);
        gu_check c;
        conv_status_t st = gu_compare(g_gpu, g_cpu, &p, op, seed, tol, &c);
        if (st == CONV_STATUS_UNSUPPORTED && gu_gpu_algo() != CONV_ALGO_AUTO) {
            if (declined++ < 5)
                printf("  declined, seed %llu: %s\n", (unsigned long long)seed, c.msg);
            continue;
        }
        if (c.worst > worst)
            worst = c.worst;
        if (!c.ok) {
            char d[512];
            gu_describe(&p, d, sizeof d);
            if (failures++ < 10)
                print_error("%s %s seed %llu: %s\n  problem: %s\n", ops[op], dts[dt],
                            (unsigned long long)seed, c.msg, d);
        }
    }
    printf("[ gpu vs cpu ] %-15s %-4s %d problems, %d failed, %d declined by the forced solver, "
           "worst error/bound %.3g\n", ops[op], dts[dt], n, failures, declined, worst);
    if (failures)
        fail_msg("%d of %d %s %s problems out of bounds", failures, n, ops[op], dts[dt]);
    if (declined == n)
        fail_msg("the forced solver declined all %d %s %s problems", n, ops[op], dts[dt]);
}

#define SUITE(op, dt, name) \
    static void name(void **state) { (void)state; run_suite(op, dt); }
SUITE(CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, fwd_f32)
SUITE(CONV_OP_FORWARD, CONV_DTYPE_FLOAT64, fwd_f64)
SUITE(CONV_OP_FORWARD, CONV_DTYPE_FLOAT16, fwd_f16)
SUITE(CONV_OP_FORWARD, CONV_DTYPE_BFLOAT16, fwd_bf16)
SUITE(CONV_OP_BACKWARD_DATA, CONV_DTYPE_FLOAT32, bwd_data_f32)
SUITE(CONV_OP_BACKWARD_DATA, CONV_DTYPE_FLOAT64, bwd_data_f64)
SUITE(CONV_OP_BACKWARD_DATA, CONV_DTYPE_FLOAT16, bwd_data_f16)
SUITE(CONV_OP_BACKWARD_DATA, CONV_DTYPE_BFLOAT16, bwd_data_bf16)
SUITE(CONV_OP_BACKWARD_FILTER, CONV_DTYPE_FLOAT32, bwd_filter_f32)
SUITE(CONV_OP_BACKWARD_FILTER, CONV_DTYPE_FLOAT64, bwd_filter_f64)
SUITE(CONV_OP_BACKWARD_FILTER, CONV_DTYPE_FLOAT16, bwd_filter_f16)
SUITE(CONV_OP_BACKWARD_FILTER, CONV_DTYPE_BFLOAT16, bwd_filter_bf16)

static int setup(void **state)
{
    (void)state;
    if (conv_context_create(CONV_DEVICE_CUDA, 0, &g_gpu) != CONV_STATUS_SUCCESS ||
        conv_context_create(CONV_DEVICE_CPU, 0, &g_cpu) != CONV_STATUS_SUCCESS) {
        print_error("context: %s\n", conv_last_error());
        return -1;
    }
    conv_context_set_math(g_gpu, CONV_MATH_STRICT);
    conv_context_set_math(g_cpu, CONV_MATH_STRICT);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conv_context_destroy(g_gpu);
    conv_context_destroy(g_cpu);
    return 0;
}

int main(void)
{
    gu_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fwd_f32),        cmocka_unit_test(fwd_f64),
        cmocka_unit_test(fwd_f16),        cmocka_unit_test(fwd_bf16),
        cmocka_unit_test(bwd_data_f32),   cmocka_unit_test(bwd_data_f64),
        cmocka_unit_test(bwd_data_f16),   cmocka_unit_test(bwd_data_bf16),
        cmocka_unit_test(bwd_filter_f32), cmocka_unit_test(bwd_filter_f64),
        cmocka_unit_test(bwd_filter_f16), cmocka_unit_test(bwd_filter_bf16),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
