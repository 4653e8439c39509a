#include "cpu/blas.h"

#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "cpu/isa.h"
#include "cpu/sgemm_avx2.h"
#include "cpu/sgemm_avx512.h"

namespace conv::cpu {

// OpenBLAS's buffers, and why a GEMM may not go to OpenBLAS.
//
// Every OpenBLAS GEMM takes a packing buffer from OpenBLAS's own pool
// (BUFFER_SIZE, 128 MiB of address space on x86_64), mapped on first need
// and kept: per calling thread (its TLS allocator) or per concurrent call
// (its older shared pool). When that mmap fails -- under an address-space
// limit (ulimit -v) -- OpenBLAS retries forever: the call never returns.
// So before a call that may make OpenBLAS map a new buffer (this thread's
// first, or more calls in flight than ever before), libconv checks that
// the address space for one is there, and where it is not, computes that
// GEMM itself (below: slower, allocates nothing). One such cold call at a
// time, so that two threads do not count on the same free space. Known
// calls (a warm thread, no new peak) pay one atomic increment.
namespace {

constexpr size_t kBlasBufferBytes = (size_t(128) << 20) + (size_t(1) << 20);  // + slack

std::mutex g_cold_calls;
std::atomic<int> g_in_flight{0};
std::atomic<int> g_peak{0};  // most libconv GEMMs in OpenBLAS at once so far
thread_local bool t_warm = false;  // this thread has called OpenBLAS's GEMM

bool room_for_a_blas_buffer() {
    void *p = ::mmap(nullptr, kBlasBufferBytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    ::munmap(p, kBlasBufferBytes);
    return true;
}

// Runs `openblas` where OpenBLAS has (or can map) its buffer, else `own`.
template <class OpenBlas, class Own>
void with_blas_buffer(OpenBlas &&openblas, Own &&own) {
    const int now = g_in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
    struct Leave {
        ~Leave() { g_in_flight.fetch_sub(1, std::memory_order_acq_rel); }
    } leave;
    if (t_warm && now <= g_peak.load(std::memory_order_acquire)) {
        openblas();
        return;
    }
    std::lock_guard<std::mutex> cold(g_cold_calls);
    if (!room_for_a_blas_buffer()) {
        own();
        return;
    }
    openblas();  // maps its buffer now, while no other cold call can take the room
    t_warm = true;
    int peak = g_peak.load(std::memory_order_acquire);
    while (peak < now && !g_peak.compare_exchange_weak(peak, now, std::memory_order_acq_rel)) {
    }
}

// C = alpha op(A) op(B) + beta C, row-major, in plain loops that allocate
// nothing: the GEMM of last resort (beta == 0 overwrites, as BLAS does).
template <class T>
void own_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t lda,
              const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {
    for (int64_t i = 0; i < m; ++i) {
        T *row = c + i * ldc;
        for (int64_t j = 0; j < n; ++j) row[j] = beta == T(0) ? T(0) : row[j] * beta;
        for (int64_t p = 0; p < k; ++p) {
            const T aip = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
            if (tb)
                for (int64_t j = 0; j < n; ++j) row[j] += aip * b[j * ldb + p];
            else
                for (int64_t j = 0; j < n; ++j) row[j] += aip * b[p * ldb + j];
        }
    }
}

}  // namespace

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

// CBLAS by the element type.
static void cblas_gemm(bool ta, bool tb, blasint m, blasint n, blasint k, float alpha,
                       const float *a, blasint lda, const float *b, blasint ldb, float beta,
                       float *c, blasint ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static void cblas_gemm(bool ta, bool tb, blasint m, blasint n, blasint k, double alpha,
                       const double *a, blasint lda, const double *b, blasint ldb, double beta,
                       double *c, blasint ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
static void gemm_typed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
                       int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {
    if (gemm_degenerate(m, n, k, beta, c, ldc)) return;
    check_blas_sizes(m, n, k, lda, ldb, ldc);
    with_blas_buffer(
        [&] {
            cblas_gemm(ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b,
                       (blasint)ldb, beta, c, (blasint)ldc);
        },
        [&] { own_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

// Float GEMMs go to libconv's own SGEMM where the CPU has AVX2 or AVX-512:
// OpenBLAS's per-CPU kernel choice is outside libconv's control (on a
// Sapphire Rapids part it ran its SSE kernels, a third of the FMA peak; on
// Zen 3 its Haswell kernels reached 60-75% of the peak on 1x1 layers).
// CONV_CPU_SGEMM=openblas sends them to OpenBLAS, for comparison.
static bool own_sgemm() {
    static const bool own = [] {
        const char *choice = std::getenv("CONV_CPU_SGEMM");
        return cpu_isa() != Isa::baseline && !(choice && std::strcmp(choice, "openblas") == 0);
    }();
    return own;
}

// AVX2: C of at most this many rows goes to OpenBLAS.
constexpr int64_t kSgemmAvx2OpenblasRows = 96;

static bool sgemm_own(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                      bool write_once) {
    if (!own_sgemm()) return false;
    if (cpu_isa() == Isa::avx512)
        return sgemm_avx512(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, write_once);
    // AVX2: OpenBLAS where it measured faster, on C of 64 rows (1x1 layers
    // onto or from 64 channels, 56x56, 1 thread, in one process: 0.91-0.97x),
    // but not where the own SGEMM packs B a panel at a time (a 7x7 plane's
    // 49 rows of channels-last backward-data onto 256-512 channels:
    // 1.09-1.23x, 6 alternated runs; from 32 rows: the tiles are 6 high).
    if (m <= kSgemmAvx2OpenblasRows && !(m >= 32 && sgemm_avx2_few_rows(m, tb, ldb))) return false;
    return sgemm_avx2(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, write_once);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (sgemm_own(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, false)) return;
    gemm_typed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
    gemm_typed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_write_once(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc) {
    if (sgemm_own(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true)) return;
    gemm_typed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_write_once(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                     double *c, int64_t ldc) {
    gemm_typed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace conv::cpu
