/*
 * gpu_util.h -- helpers of the GPU tests: random convolution problems, the
 * CPU engine (fp64) as the reference, host <-> dtype conversions, and the
 * comparison of a GPU pass with it under a per-dtype bound (docs/gpu.md):
 *
 *   |gpu - ref| <= eps_out * |ref| + 2 (L + 1) eps_acc * abs + k eps_out * abs
 *
 * ref: the CPU engine in fp64 on the same (dtype-rounded) inputs; abs: the
 * same pass on |inputs| (the sum of |products|, bias included); L: the
 * longest reduction of the problem; eps_out: the output dtype's unit
 * roundoff (2^-53, 2^-24, 2^-11, 2^-8); eps_acc: the accumulator's (fp64:
 * 2^-53, else fp32 2^-24; 2^-11 under TF32); k = 8 for fp16/bf16 (partial
 * sums cuDNN may round to the dtype), else 0. The first term is the output's
 * own rounding, the second any summation order's worst case.
 */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "conv.h"

/* Exits with 77 (ctest's skip code) when no GPU is usable. */
void gu_require_gpu(void);

typedef struct gu_problem {
    int spatial, channels_last, transposed, relu, bias;
    int64_t n, c, k, groups; /* transposed: w is (c, k/groups, kernel) */
    int64_t in[3], kernel[3], stride[3], dil[3], pad_begin[3], pad_end[3], out_pad[3];
    conv_auto_pad_t auto_pad;
    conv_dtype_t dtype;
    int64_t x_dims[5], w_dims[5], y_dims[5], b_elems; /* resolved */
} gu_problem;

uint64_t gu_rand(uint64_t *state);
/* A random valid problem (dims resolved through conv_output_dims). */
void gu_random_problem(uint64_t *state, conv_dtype_t dtype, int allow_transposed, gu_problem *p);
conv_desc_t gu_desc(const gu_problem *p, int with_relu);
void gu_describe(const gu_problem *p, char *buf, size_t size);
int64_t gu_elems(const int64_t *dims, int ndim);

/* value <-> the dtype's bits (round to nearest even) */
void gu_to_dtype(conv_dtype_t dt, const double *src, void *dst, int64_t n);
void gu_from_dtype(conv_dtype_t dt, const void *src, double *dst, int64_t n);
double gu_round(conv_dtype_t dt, double v);
size_t gu_size(conv_dtype_t dt);

/* The result of one comparison. */
typedef struct gu_check {
    int ok;
    double worst; /* max err / tol */
    char msg[512];
} gu_check;

typedef struct gu_tolerance {
    double eps_out, eps_acc, k_mid;
    /* + k_norm * L * eps_acc * max(abs): algorithms that transform their
     * operands (FFT, Winograd: CONV_MATH_DEFAULT) err relative to the
     * largest magnitudes, not each element's; 0 under STRICT. */
    double k_norm;
} gu_tolerance;
gu_tolerance gu_tol(conv_dtype_t dt, conv_math_t math);

/* The algorithm the GPU runs in gu_compare: CONV_ALGO_AUTO (default), or
 * the one named by CONV_TEST_GPU_ALGO (e.g. cudnn_graph), forced. */
conv_algo_t gu_gpu_algo(void);

/* Runs pass `op` of p on the GPU context (its dtype) and on the CPU
 * context (fp64) and compares every output element. Returns 0, or the
 * failing status of a GPU call (msg says which). */
int gu_compare(conv_context_t gpu, conv_context_t cpu, const gu_problem *p, conv_op_t op,
               uint64_t seed, gu_tolerance tol, gu_check *out);

#endif
