/* The batch-reduce GEMM solvers (src/cpu/brgemm_*.cpp): brgemm_forward,
 * brgemm_backward_data (every stride phase) and brgemm_backward_filter,
 * forced on random 1-3-D problems in both layouts -- groups, stride,
 * dilation, asymmetric padding, bias, ReLU, 1-3 threads, channel counts
 * around the 32-channel blocks and output rows around the 32-position
 * blocks -- against the reference, exactly on integer data:
 *   - fp32 on the AVX-512 backend (CONV_MATH_DEFAULT and STRICT);
 *   - bf16, and fp32 under CONV_MATH_FAST (bf16 products, fp32 sums), on
 *     the AMX tiles: the hardware's where the CPU has them, the emulated
 *     ones under CONV_CPU_AMX=emulate (ctest runs both), refused naming AMX
 *     where neither is there;
 * plans with prepared weights, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"

static conv_algo_t solver(conv_op_t op)
{
    static const char *const names[] = {"brgemm_forward", "brgemm_backward_data",
                                        "brgemm_backward_filter"};
    conv_algo_t a;
    assert_ok(conv_algo_from_name(names[op], &a));
    return a;
}

/* Whether this process runs the tile path: a bf16 forward either runs or is
 * refused naming AMX (or, on a CPU without it, AVX-512). */
static int have_tiles(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    tu_problem tp;
    int64_t in[2] = {4, 4}, kernel[2] = {3, 3};
    tu_problem_init(&tp, 2, 1, 2, 2, in, kernel);
    tp.dtype = CONV_DTYPE_BFLOAT16;
    tp.algo = solver(CONV_OP_FORWARD);
    assert_true(tu_resolve(&tp));
    tu_case c;
    conv_desc_t d;
    assert_ok(tu_case_make(&c, tu_contexts[0], &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    tu_rng r;
    tu_seed(&r, 1);
    tu_case_fill(&c, CONV_OP_FORWARD, &r, 0);
    conv_status_t s = tu_case_run(&c, tu_contexts[0], d, CONV_OP_FORWARD, NULL);
    if (s == CONV_STATUS_UNSUPPORTED && !strstr(conv_last_error(), "AMX") &&
        !strstr(conv_last_error(), "AVX-512"))
        fail_msg("bf16 refused without naming AMX or AVX-512: %s", conv_last_error());
    known = s == CONV_STATUS_SUCCESS;
    conv_desc_destroy(d);
    tu_case_free(&c);
    print_message("brgemm: AMX tiles %s\n", known ? "in use (hardware or CONV_CPU_AMX=emulate)"
                                                  : "not available: bf16 refused");
    return known;
}

static conv_dtype_t g_dtype = CONV_DTYPE_FLOAT32;

/* Rank 1-3, kernels 1-5 (3-D: 1-3), strides 1-3, dilation 1-2, asymmetric
 * padding, groups 1-3 (never depthwise), channel counts up to 40 per group
 * (wide: up to 70, rows up to 45: two blocks), batch 1-2. */
static void draw(tu_rng *r, tu_problem *tp, conv_op_t *op, int wide)
{
    *op = (conv_op_t)tu_range(r, 0, 2);
    const int spatial = (int)tu_range(r, 1, 3);
    int64_t in[3], kernel[3];
    for (int a = 0; a < spatial; a++) {
        kernel[a] = tu_range(r, 1, spatial == 3 ? 3 : 5);
        in[a] = tu_range(r, 1, spatial == 3 ? 6 : a == spatial - 1 && wide ? 45 : 12);
    }
    const int64_t groups = tu_chance(r, 25) ? tu_range(r, 2, 3) : 1;
    const int64_t cmax = wide ? 70 : 40;
    tu_problem_init(tp, spatial, tu_range(r, 1, 2), groups * tu_range(r, 2, cmax),
                    groups * tu_range(r, 1, cmax), in, kernel);
    tp->p.groups = groups;
    for (int a = 0; a < spatial; a++) {
        tp->p.stride[a] = tu_range(r, 1, 3);
        tp->p.dilation[a] = tu_chance(r, 25) ? 2 : 1;
        tp->desc_pad_begin[a] = tu_range(r, 0, kernel[a]);
        tp->desc_pad_end[a] = tu_range(r, 0, kernel[a]);
    }
    tp->p.channels_last = tu_chance(r, 50);
    tp->dtype = g_dtype;
    tp->bias = *op != CONV_OP_BACKWARD_DATA && tu_chance(r, 50);
    tp->p.relu = tu_chance(r, 30);
    tp->algo = solver(*op);
}

/* fp32 on the AVX-512 backend: exact on integers, within rounding on reals.
 * Skipped where the CPU (or CONV_CPU_ISA=baseline) has no AVX-512. */
static void test_float_avx512(void **state)
{
    (void)state;
    conv_algo_t chosen;
    tu_problem tp;
    int64_t in[1] = {4}, kernel[1] = {3};
    tu_problem_init(&tp, 1, 1, 2, 2, in, kernel);
    tp.algo = solver(CONV_OP_FORWARD);
    assert_true(tu_resolve(&tp));
    tu_case c;
    conv_desc_t d;
    assert_ok(tu_case_make(&c, tu_contexts[0], &tp, 0));
    assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
    conv_status_t s = conv_chosen_algorithm(tu_contexts[0], d, CONV_OP_FORWARD, c.x.t, c.w.t, c.y.t,
                                            &chosen);
    conv_desc_destroy(d);
    tu_case_free(&c);
    if (s == CONV_STATUS_UNSUPPORTED && strstr(conv_last_error(), "AVX-512"))
        skip();
    assert_ok(s);
    g_dtype = CONV_DTYPE_FLOAT32;
    tu_check_solver_random(draw, 0, 0, 0xb9e1, 300, CONV_MATH_DEFAULT);
    tu_check_solver_random(draw, 1, 0, 0xb9e2, 60, CONV_MATH_STRICT);
    tu_check_solver_random(draw, 1, 1, 0xb9e3, 40, CONV_MATH_DEFAULT);
}

/* On the tiles (skipped without them): small and wide problems, exactly
 * on integer data. */
static void check_tiles(conv_dtype_t dtype, conv_math_t math, uint64_t seed, int small, int wide)
{
    if (!have_tiles())
        skip();
    g_dtype = dtype;
    tu_check_solver_random(draw, 0, 0, seed, small, math);
    tu_check_solver_random(draw, 1, 0, seed + 1, wide, math);
}

/* bf16: integer data in [-3, 3] is exact in bf16 and its sums in fp32, so
 * every output is the bf16 nearest the exact result. */
static void test_bf16_tiles(void **state)
{
    (void)state;
    check_tiles(CONV_DTYPE_BFLOAT16, CONV_MATH_DEFAULT, 0xb9f1, 150, 30);
}

/* fp32 under CONV_MATH_FAST: integer inputs survive the bf16 conversion,
 * so the results are still exact. */
static void test_float_fast_tiles(void **state)
{
    (void)state;
    check_tiles(CONV_DTYPE_FLOAT32, CONV_MATH_FAST, 0xb9f5, 120, 30);
}

/* Forward and backward-data plans with prepared weights give the one-shot
 * result; stale weights stay in use until prepared again. */
static void test_prepared_weights(void **state)
{
    (void)state;
    if (tu_cpu_isa(tu_contexts[0]) != TU_ISA_AVX512) /* every brgemm backend needs it, fp32 too */
        skip();
    const conv_dtype_t dtypes[2] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_BFLOAT16};
    for (int di = 0; di < 2; di++) {
        if (dtypes[di] == CONV_DTYPE_BFLOAT16 && !have_tiles())
            continue;
        for (int op = CONV_OP_FORWARD; op <= CONV_OP_BACKWARD_DATA; op++)
            for (int last = 0; last < 2; last++) {
                tu_problem tp;
                int64_t in[2] = {9, 35}, kernel[2] = {3, 3};
                tu_problem_init(&tp, 2, 2, 36, 40, in, kernel);
                tp.p.stride[1] = 2;
                tp.desc_pad_begin[0] = tp.desc_pad_end[1] = 1;
                tp.p.channels_last = last;
                tp.dtype = dtypes[di];
                tp.bias = op == CONV_OP_FORWARD;
                tp.algo = solver((conv_op_t)op);
                assert_true(tu_resolve(&tp));
                tu_case c;
                conv_desc_t d;
                conv_plan_t plan;
                assert_ok(tu_case_make(&c, tu_contexts[1], &tp, 0));
                assert_ok(tu_make_desc(&tp, (conv_op_t)op, &d));
                int64_t xd[5], wd[5];
                int nd = tu_x_dims(&tp, xd);
                tu_w_dims(&tp, wd);
                assert_ok(conv_plan_create(tu_contexts[1], d, (conv_op_t)op, tp.dtype,
                                           last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST,
                                           nd, xd, wd, tp.bias, &plan));
                tu_rng r;
                tu_seed(&r, 77 + (uint64_t)op);
                tu_case_fill(&c, (conv_op_t)op, &r, 0);
                int prepared = 0;
                assert_ok(conv_plan_prepare_weights(plan, c.w.t, &prepared));
                assert_int_equal(prepared, 1);
                conv_tensor_t b = op == CONV_OP_FORWARD ? c.b.t : NULL;
                assert_ok(conv_plan_execute(plan, c.x.t, c.w.t, b, c.y.t, NULL));
                char msg[600];
                if (tu_case_check(&c, (conv_op_t)op, 1, msg, sizeof msg))
                    fail_msg("prepared %s: %s", tu_op_name((conv_op_t)op), msg);
                /* w changes; the plan keeps the prepared copy until prepared again */
                tu_tensor *out = op == CONV_OP_FORWARD ? &c.y : &c.x;
                void *before = malloc(out->bytes);
                memcpy(before, out->data, out->bytes);
                tu_fill_int(&c.w, &r, -3, 3);
                tu_fill_nan(out);
                assert_ok(conv_plan_execute(plan, c.x.t, c.w.t, b, c.y.t, NULL));
                assert_memory_equal(before, out->data, out->bytes);
                assert_ok(conv_plan_prepare_weights(plan, c.w.t, &prepared));
                tu_fill_nan(out);
                assert_ok(conv_plan_execute(plan, c.x.t, c.w.t, b, c.y.t, NULL));
                if (tu_case_check(&c, (conv_op_t)op, 1, msg, sizeof msg))
                    fail_msg("prepared again %s: %s", tu_op_name((conv_op_t)op), msg);
                free(before);
                conv_plan_destroy(plan);
                conv_desc_destroy(d);
                tu_case_free(&c);
            }
    }
}

/* Where the solvers decline: the other passes, float64, depthwise, bf16
 * without tiles, and fp32 without AVX-512 -- UNSUPPORTED naming the solver,
 * outputs untouched (bf16 without AVX-512 the engine itself refuses). */
static void test_declines(void **state)
{
    (void)state;
    tu_problem tp;
    int64_t in[2] = {6, 6}, kernel[2] = {3, 3};
    char failure[1024];
    for (int op = CONV_OP_FORWARD; op <= CONV_OP_BACKWARD_FILTER; op++) {
        const conv_algo_t mine = solver((conv_op_t)op);
        const char *name = conv_algo_name(mine);
        tu_problem_init(&tp, 2, 1, 4, 4, in, kernel);
        tp.algo = solver((conv_op_t)((op + 1) % 3)); /* another pass's solver */
        assert_true(tu_resolve(&tp));
        if (tu_check_declined(tu_contexts[0], &tp, (conv_op_t)op, 1, conv_algo_name(tp.algo),
                              failure, sizeof failure))
            fail_msg("%s", failure);
        tp.algo = mine;
        tp.dtype = CONV_DTYPE_FLOAT64;
        if (tu_check_declined(tu_contexts[0], &tp, (conv_op_t)op, 2, name, failure, sizeof failure))
            fail_msg("float64: %s", failure);
        tp.dtype = CONV_DTYPE_FLOAT32;
        tp.p.groups = tp.p.c = tp.p.k = 4; /* depthwise */
        if (tu_check_declined(tu_contexts[0], &tp, (conv_op_t)op, 3, name, failure, sizeof failure))
            fail_msg("depthwise: %s", failure);
        if (tu_cpu_isa(tu_contexts[0]) != TU_ISA_AVX512) {
            tu_problem_init(&tp, 2, 1, 4, 4, in, kernel);
            tp.algo = mine;
            assert_true(tu_resolve(&tp));
            if (tu_check_declined(tu_contexts[0], &tp, (conv_op_t)op, 5, name, failure,
                                  sizeof failure))
                fail_msg("float32 without AVX-512: %s", failure);
        } else if (!have_tiles()) {
            tu_problem_init(&tp, 2, 1, 4, 4, in, kernel);
            tp.dtype = CONV_DTYPE_BFLOAT16;
            tp.algo = mine;
            assert_true(tu_resolve(&tp));
            if (tu_check_declined(tu_contexts[0], &tp, (conv_op_t)op, 4, name, failure,
                                  sizeof failure))
                fail_msg("bf16 without tiles: %s", failure);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_avx512),     cmocka_unit_test(test_bf16_tiles),
        cmocka_unit_test(test_float_fast_tiles), cmocka_unit_test(test_prepared_weights),
        cmocka_unit_test(test_declines),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
