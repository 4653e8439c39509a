// Row-major GEMM for float and double: float on AVX-512 and AVX2 CPUs by
// libconv's own SGEMMs (sgemm_avx512.h, sgemm_avx2.h), everything else over
// OpenBLAS's CBLAS, with int64 sizes checked against what OpenBLAS can
// index (32-bit blasint).
#pragma once

#include <cstdint>

namespace conv::cpu {

// C(m x n) = alpha * op(A)(m x k) * op(B)(k x n) + beta * C.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc);

// As gemm, for a C that is final and not read again soon (a weight
// gradient's block written from one image): where the own SGEMM computes it
// in one pass, C goes to memory by non-temporal stores instead of each line
// being read into the caches before it is overwritten.
void gemm_write_once(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc);
void gemm_write_once(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                     const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                     double *c, int64_t ldc);

// libconv threads its own work and calls OpenBLAS single-threaded from each
// of its threads; this makes OpenBLAS's own pool single-threaded, once.
void blas_use_single_thread();

// The largest size or leading dimension a GEMM call may take.
constexpr int64_t kBlasMaxIndex = 0x7fffffff;

}  // namespace conv::cpu
