// libconv's own single-precision GEMM for CPUs with AVX2 and FMA but no
// AVX-512 (AMD Zen 1-3, Intel's desktop cores): sgemm_avx512's blocking
// (BLIS-style packed panels under a register-tile micro-kernel) at the
// 6 x 16 tile sixteen ymm registers hold. blas.cpp's float gemm() routes
// here when cpu_isa() is avx2.
#pragma once

#include <cstdint>

namespace conv::cpu {

// sgemm_avx512's contract (sgemm_avx512.h): row-major C(m x n) = alpha *
// op(A)(m x k) * op(B)(k x n) + beta * C, BLAS semantics, on the calling
// thread, each element summed in k order in blocks of kSgemmKc; false,
// nothing written, when the thread's packing buffer cannot be had. Call
// only where cpu_isa() is avx2 or above.
bool sgemm_avx2(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                int64_t ldc, bool write_once = false);

// Whether sgemm_avx2 takes C of m rows by packing B a panel at a time
// (sgemm_avx2.cpp, sgemm_few_rows): few rows, B not transposed, its rows
// less than a page apart.
bool sgemm_avx2_few_rows(int64_t m, bool trans_b, int64_t ldb);

}  // namespace conv::cpu
