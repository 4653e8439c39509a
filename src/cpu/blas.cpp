#include "cpu/blas.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "core/error.h"

namespace conv::cpu {

void blas_use_single_thread() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

// k == 0 or an empty C is handled here: BLAS implementations disagree on
// degenerate sizes (and reject lda == 0), while the meaning is plain.
template <class T>
static bool gemm_degenerate(int64_t m, int64_t n, int64_t k, T beta, T *c, int64_t ldc) {
    if (m == 0 || n == 0) return true;
    if (k != 0) return false;
    for (int64_t i = 0; i < m; ++i) {
        T *row = c + i * ldc;
        if (beta == T(0))
            std::fill(row, row + n, T(0));
        else
            for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
    return true;
}

static void check_blas_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                             int64_t ldc) {
    if (std::max({m, n, k, lda, ldb, ldc}) > kBlasMaxIndex)
        fail(CONV_STATUS_OVERFLOW,
             "GEMM of %lld x %lld x %lld (leading dims %lld, %lld, %lld) exceeds what OpenBLAS "
             "can index (2^31 - 1)",
             (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb,
             (long long)ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (gemm_degenerate(m, n, k, beta, c, ldc)) return;
    check_blas_sizes(m, n, k, lda, ldb, ldc);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta,
                c, (blasint)ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    if (gemm_degenerate(m, n, k, beta, c, ldc)) return;
    check_blas_sizes(m, n, k, lda, ldb, ldc);
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta,
                c, (blasint)ldc);
}

}  // namespace conv::cpu
