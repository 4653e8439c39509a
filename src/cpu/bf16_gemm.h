// A bfloat16 GEMM with float accumulation, for CPUs with AVX-512. The
// operands are packed widened to float -- exact: a bf16 value is the top
// half of a float -- into panels of kMR rows of A (broadcast) and kNR
// columns of B (two vectors), and the micro-kernel is an FMA one: a product
// of two bf16 values (8-bit significands) is exact in float, so every FMA
// rounds only its sum, as a dot-product instruction would.
//
// Why not vdpbf16ps (AVX512_BF16, 32 bf16 products per instruction): on the
// Sapphire-Rapids-class CPU this was written on it sustains 86 GFLOP/s on one
// core, the FMA 176 (12-24 independent chains each); it also treats
// subnormal inputs as zero. Widening costs one shift per element at packing,
// which the GEMM then reuses across a whole panel.
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

// The end of a GEMM that rounds its result: y[i * ldy + j] =
// bf16(act(C(i, j) + bias)), bias (nullable) per row or per column, ReLU
// keeping a NaN a NaN.
struct Bf16Epilogue {
    bf16_t *y;
    int64_t ldy;
    const bf16_t *bias;
    bool bias_per_row, relu;
};

// C(m x n, row stride ldc, float) = op(A) * op(B), or += when `accumulate`.
// With `epi`, the sums go to epi's bf16 y instead, rounded once as they
// leave the registers (C is then only scratch for reductions longer than a
// packed block). `pack` holds gemm_bf16_pack_bytes(), 64-byte aligned. Only
// on a CPU with AVX-512 (cpu_isa() == Isa::avx512).
void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float *c, int64_t ldc,
               bool accumulate, void *pack, const Bf16Epilogue *epi = nullptr);

// y[r * ldy + j] = bf16(act(c[r * ldc + j] + bias)) for r < rows, j < cols,
// rounded to nearest, ties to even; bias (nullable) per row or per column.
// ReLU keeps a NaN a NaN.
void store_bf16(const float *c, int64_t ldc, int64_t rows, int64_t cols, bf16_t *y, int64_t ldy,
                const bf16_t *bias, bool bias_per_row, bool relu);

// dst[i] = src[i] as float (exact), for i < n.
void widen_bf16(const bf16_t *src, float *dst, int64_t n);

// y[j * ldy + i] = bf16(c[i * ldc + j]) for i < rows, j < cols: a float
// block rounded into its transpose.
void store_bf16_transposed(const float *c, int64_t ldc, int64_t rows, int64_t cols, bf16_t *y,
                           int64_t ldy);

}  // namespace conv::cpu
