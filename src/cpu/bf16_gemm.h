// A bfloat16 GEMM with float accumulation for CPUs with AVX512_BF16: the
// reduction dimension is packed in pairs (vdpbf16ps sums two bf16 products
// into each of 16 float lanes), A into panels of kMR rows whose pairs are
// broadcast, B into panels of kNR columns loaded as two vectors. Packing
// reads either orientation of each operand, so the convolution passes need
// no transposed copies of their own.
//
// Like every AVX512_BF16 instruction, vdpbf16ps treats subnormal inputs as
// zero and flushes subnormal results; bf16 values of ordinary magnitude are
// multiplied exactly and summed in float.
#pragma once

#include <cstddef>
#include <cstdint>

namespace conv::cpu {

using bf16_t = uint16_t;  // bfloat16 bits

// An operand of op(A)(m x k) or op(B)(k x n): element (r, c) is
// p[r * ld + c], or p[c * ld + r] when `trans`.
struct Bf16Operand {
    const bf16_t *p;
    int64_t ld;
    bool trans;
};

// Bytes of the packing buffer gemm_bf16 needs (one per thread), 64-byte multiple.
size_t gemm_bf16_pack_bytes();

// C(m x n, row stride ldc, float) = op(A) * op(B), or += when `accumulate`.
// `pack` holds gemm_bf16_pack_bytes(), 64-byte aligned. Only on a CPU with
// AVX512_BF16 (cpu_has_avx512_bf16()).
void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float *c,
               int64_t ldc, bool accumulate, void *pack);

// y[r * ldy + j] = bf16(act(c[r * ldc + j] + bias)) for r < rows, j < cols,
// rounded to nearest, ties to even; bias (nullable) per row or per column.
// ReLU keeps a NaN a NaN.
void store_bf16(const float *c, int64_t ldc, int64_t rows, int64_t cols, bf16_t *y, int64_t ldy,
                const bf16_t *bias, bool bias_per_row, bool relu);

}  // namespace conv::cpu
