// libconv's own single-precision GEMM for AVX-512 CPUs (BLIS-style:
// packed panels, a register-tile micro-kernel). blas.cpp's float gemm()
// routes here when cpu_isa() is avx512: the GEMM under every CPU pass that
// lowers to one then runs at the speed of libconv's own kernels whatever
// BLAS build and per-CPU kernel choice the machine has.
#pragma once

#include <cstdint>

namespace conv::cpu {

// Row-major C(m x n) = alpha * op(A)(m x k) * op(B)(k x n) + beta * C, with
// BLAS semantics (beta == 0 overwrites C without reading it), on the
// calling thread. Each element of C is a dot product summed in k order in
// blocks of kSgemmKc, each block added to C in turn. Packing uses a buffer
// per calling thread, allocated on its first call and freed at thread exit;
// returns false, having written nothing, when that buffer cannot be had.
// Call only where cpu_isa() == Isa::avx512. `write_once`: C is final and
// not read again soon (see gemm_write_once in blas.h).
bool sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc, bool write_once = false);

// The depth of one packed block: the summation's block length.
constexpr int64_t kSgemmKc = 256;

}  // namespace conv::cpu
