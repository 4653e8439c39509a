// The float GEMM every GEMM-lowered CPU pass calls (src/cpu/blas.h's
// gemm()) and libconv's SGEMMs behind it (src/cpu/sgemm_avx512.h on
// AVX-512 CPUs, sgemm_avx2.h on AVX2 ones, and on AVX-512 ones as well),
// against a double-precision reference: all four transpose combinations,
// sizes from 1 to a few hundred (primes, the register tile and the packing
// blocks +-1), leading dimensions above the minimum, alpha and beta
// (beta == 0 over a C full of NaN must not leak it), k == 0. Run as well
// with CONV_CPU_SGEMM=openblas and CONV_CPU_ISA=baseline (tests/cpu/CMakeLists.txt),
// so the same cases check OpenBLAS's path.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "cpu/blas.h"
#include "cpu/isa.h"
#include "cpu/sgemm_avx2.h"
#include "cpu/sgemm_avx512.h"

using namespace conv::cpu;

static int failures = 0;

struct Case {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
};

// Runs one case through `run` and compares every element of C (and the
// padding between rows, which must not be touched) with the reference.
// The bound is a dot product's: (k + 2) units of rounding of the sum of
// magnitudes, doubled for the blocked summation.
template <class Run>
static void check(const char *what, const Case &t, std::mt19937 &rng, Run &&run) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const int64_t arows = t.ta ? t.k : t.m, brows = t.tb ? t.n : t.k;
    std::vector<float> a(size_t(std::max<int64_t>(arows, 1) * t.lda));
    std::vector<float> b(size_t(std::max<int64_t>(brows, 1) * t.ldb));
    std::vector<float> c(size_t(std::max<int64_t>(t.m, 1) * t.ldc));
    for (auto &x : a) x = u(rng);
    for (auto &x : b) x = u(rng);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (auto &x : c) x = t.beta == 0.f ? nan : u(rng);
    const std::vector<float> c0 = c;
    run(t, a.data(), b.data(), c.data());

    const double eps = std::ldexp(1.0, -24);
    int bad = 0;
    for (int64_t i = 0; i < t.m && bad < 3; ++i) {
        for (int64_t j = 0; j < t.ldc && bad < 3; ++j) {
            const float got = c[size_t(i * t.ldc + j)];
            if (j >= t.n) {  // between rows: untouched
                const float was = c0[size_t(i * t.ldc + j)];
                if (!(got == was || (std::isnan(got) && std::isnan(was)))) {
                    std::fprintf(stderr, "FAIL %s: C[%lld][%lld] beyond n was written\n", what,
                                 (long long)i, (long long)j);
                    ++bad;
                }
                continue;
            }
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < t.k; ++p) {
                const double x = t.ta ? a[size_t(p * t.lda + i)] : a[size_t(i * t.lda + p)];
                const double y = t.tb ? b[size_t(j * t.ldb + p)] : b[size_t(p * t.ldb + j)];
                ref += x * y;
                mag += std::fabs(x * y);
            }
            ref *= t.alpha;
            mag *= std::fabs(t.alpha);
            if (t.beta != 0.f) {
                ref += double(t.beta) * c0[size_t(i * t.ldc + j)];
                mag += std::fabs(double(t.beta) * c0[size_t(i * t.ldc + j)]);
            }
            const double bound = 2 * (double(t.k) + 2) * eps * mag + 1e-30;
            if (!(std::fabs(got - ref) <= bound)) {
                std::fprintf(stderr,
                             "FAIL %s: ta=%d tb=%d m=%lld n=%lld k=%lld lda=%lld ldb=%lld "
                             "ldc=%lld alpha=%g beta=%g: C[%lld][%lld] = %.9g, expected %.9g "
                             "(bound %.3g)\n",
                             what, t.ta, t.tb, (long long)t.m, (long long)t.n, (long long)t.k,
                             (long long)t.lda, (long long)t.ldb, (long long)t.ldc, t.alpha,
                             t.beta, (long long)i, (long long)j, got, ref, bound);
                ++bad;
            }
        }
    }
    failures += bad > 0;
}

static int64_t pick_size(std::mt19937 &rng) {
    // Primes, the register tiles (AVX-512 14 x 32, AVX2 6 x 16) and their
    // halves, the blocks (k: 256; m: 336 and 144) +-1, and anything up to 300.
    static const int64_t special[] = {1,  2,  3,  5,   6,   7,   8,   9,   13,  14,  15,  16,
                                      17, 28, 31, 32,  33,  47,  97,  143, 144, 145, 255, 256,
                                      257, 335, 336, 337, 127};
    std::uniform_int_distribution<int> coin(0, 1);
    if (coin(rng)) return special[std::uniform_int_distribution<size_t>(0, std::size(special) - 1)(rng)];
    return std::uniform_int_distribution<int64_t>(1, 300)(rng);
}

static Case random_case(std::mt19937 &rng, bool ta, bool tb) {
    static const float alphas[] = {1.f, -0.5f, 2.f};
    static const float betas[] = {0.f, 1.f, -1.5f};
    std::uniform_int_distribution<int> pad(0, 1), extra(1, 9), which(0, 2);
    Case t{};
    t.ta = ta;
    t.tb = tb;
    t.m = pick_size(rng);
    t.n = pick_size(rng);
    t.k = pick_size(rng);
    t.lda = (ta ? t.m : t.k) + (pad(rng) ? extra(rng) : 0);
    t.ldb = (tb ? t.k : t.n) + (pad(rng) ? extra(rng) : 0);
    t.ldc = t.n + (pad(rng) ? extra(rng) : 0);
    t.alpha = alphas[which(rng)];
    t.beta = betas[which(rng)];
    return t;
}

static void via_gemm(const Case &t, const float *a, const float *b, float *c) {
    gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a, t.lda, b, t.ldb, t.beta, c, t.ldc);
}

static void via_sgemm_avx2(const Case &t, const float *a, const float *b, float *c) {
    if (!sgemm_avx2(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a, t.lda, b, t.ldb, t.beta, c, t.ldc)) {
        std::fprintf(stderr, "FAIL sgemm_avx2 declined (no packing buffer)\n");
        ++failures;
    }
}

static void via_sgemm_avx512(const Case &t, const float *a, const float *b, float *c) {
    if (!sgemm_avx512(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a, t.lda, b, t.ldb, t.beta, c, t.ldc)) {
        std::fprintf(stderr, "FAIL sgemm_avx512 declined (no packing buffer)\n");
        ++failures;
    }
}

// gemm_write_once: C of 64-byte aligned rows, large enough to be streamed
// past the caches, must come out bit for bit as gemm's (the same sums in the
// same order), every element written over a C full of NaN and the padding
// between rows untouched; and so must the cases it does not stream (two
// blocks of k, rows not whole cache lines, beta != 0).
static void check_write_once(const Case &t, std::mt19937 &rng) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const int64_t arows = t.ta ? t.k : t.m, brows = t.tb ? t.n : t.k;
    std::vector<float> a(size_t(arows * t.lda)), b(size_t(brows * t.ldb));
    for (auto &x : a) x = u(rng);
    for (auto &x : b) x = u(rng);
    const size_t cn = size_t(t.m * t.ldc);
    float *c1 = static_cast<float *>(std::aligned_alloc(64, (cn * 4 + 63) / 64 * 64));
    float *c2 = static_cast<float *>(std::aligned_alloc(64, (cn * 4 + 63) / 64 * 64));
    for (size_t i = 0; i < cn; ++i) c1[i] = c2[i] = t.beta == 0.f ? std::nanf("") : u(rng);
    gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), t.lda, b.data(), t.ldb, t.beta, c1, t.ldc);
    gemm_write_once(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), t.lda, b.data(), t.ldb, t.beta,
                    c2, t.ldc);
    int64_t differ = 0;
    for (size_t i = 0; i < cn; ++i) {
        const bool in_row = int64_t(i) % t.ldc < t.n;
        const bool same = c1[i] == c2[i] || (std::isnan(c1[i]) && std::isnan(c2[i]));
        differ += !same || (in_row && std::isnan(c2[i])) || (!in_row && !std::isnan(c2[i]) && t.beta == 0.f);
    }
    if (differ) {
        std::fprintf(stderr, "FAIL gemm_write_once m=%lld n=%lld k=%lld ldc=%lld: %lld elements\n",
                     (long long)t.m, (long long)t.n, (long long)t.k, (long long)t.ldc, (long long)differ);
        ++failures;
    }
    std::free(c1);
    std::free(c2);
}

int main() {
    std::mt19937 rng(20);
    const bool avx512 = cpu_isa() == Isa::avx512, avx2 = cpu_isa() >= Isa::avx2;
    std::printf("ISA %s\n", isa_name(cpu_isa()));
    for (int combo = 0; combo < 4; ++combo) {
        const bool ta = combo & 1, tb = combo & 2;
        for (int i = 0; i < 60; ++i) {
            const Case t = random_case(rng, ta, tb);
            check("gemm", t, rng, via_gemm);
            if (avx512) check("sgemm_avx512", t, rng, via_sgemm_avx512);
            if (avx2) check("sgemm_avx2", t, rng, via_sgemm_avx2);
        }
        // k == 0 (C = beta C), alpha == 0, and shapes past the n block (1024).
        for (float beta : {0.f, 1.f, -1.5f}) {
            Case t{ta, tb, 5, 37, 0, ta ? 5 : 1, tb ? 1 : 37, 40, 1.f, beta};
            check("gemm k=0", t, rng, via_gemm);
            if (avx512) check("sgemm_avx512 k=0", t, rng, via_sgemm_avx512);
            if (avx2) check("sgemm_avx2 k=0", t, rng, via_sgemm_avx2);
            t = Case{ta, tb, 9, 20, 11, ta ? 9 : 11, tb ? 11 : 20, 20, 0.f, beta};
            check("gemm alpha=0", t, rng, via_gemm);
            if (avx512) check("sgemm_avx512 alpha=0", t, rng, via_sgemm_avx512);
            if (avx2) check("sgemm_avx2 alpha=0", t, rng, via_sgemm_avx2);
        }
        const Case big{ta, tb, 30, 1100, 300, ta ? 30 : 300, tb ? 300 : 1100, 1103, 1.f, 0.f};
        check("gemm big", big, rng, via_gemm);
        if (avx512) check("sgemm_avx512 big", big, rng, via_sgemm_avx512);
        if (avx2) check("sgemm_avx2 big", big, rng, via_sgemm_avx2);
        // Few columns (a 7x7 plane's 49): the AVX2 SGEMM computes C^T, in
        // blocks of 1024 rows of C.
        for (float beta : {0.f, -1.5f}) {
            const Case narrow{ta, tb, 1100, 49, 300, ta ? 1103 : 300, tb ? 300 : 49, 50, -0.5f, beta};
            check("gemm narrow", narrow, rng, via_gemm);
            if (avx2) check("sgemm_avx2 narrow", narrow, rng, via_sgemm_avx2);
        }
    }
    // A weight gradient's shapes (dW = dy x^T: k = positions), streamed or not.
    for (const Case &t : {Case{false, true, 70, 4608, 49, 49, 49, 4608, 1.f, 0.f},
                          Case{true, false, 64, 4100, 196, 64, 4100, 4112, 1.f, 0.f},
                          Case{false, true, 300, 1000, 256, 256, 256, 1008, 1.f, 0.f},
                          Case{false, true, 300, 1000, 257, 257, 257, 1008, 1.f, 0.f},
                          Case{false, true, 70, 4608, 49, 49, 49, 4609, 1.f, 0.f},
                          Case{false, true, 70, 4608, 49, 49, 49, 4608, 1.f, 1.f},
                          Case{false, false, 5, 40, 3, 3, 40, 48, -0.5f, 0.f}})
        check_write_once(t, rng);
    if (failures) std::fprintf(stderr, "%d case(s) failed\n", failures);
    else std::printf("all cases passed\n");
    return failures ? 1 : 0;
}
