// The AVX2 SGEMM (sgemm_avx2.h). Why libconv's own: OpenBLAS (0.3.21, its
// Haswell kernels on Zen 3) packs both operands for every call and reached
// 60-75% of the FMA peak on ResNet-50's 1x1 layers, oneDNN 85-90%.
#include "cpu/sgemm_avx2.h"

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/sgemm_avx512.h"  // kSgemmKc: both SGEMMs sum in the same blocks
#include "cpu/sgemm_shared.h"

namespace conv::cpu {

#if CONV_HAVE_AVX512_KERNELS
namespace {

// The register tile: kMr rows of C by kNr columns (two ymm vectors): 12
// accumulators, the two vectors of B and a broadcast of A in 15 of the 16
// registers; 12 independent chains cover the FMA latency (4 cycles) of two
// ports.
constexpr int kMr = 6;
constexpr int kNr = 16;
// Blocks: a kKc x kNr panel of B (16 KiB) stays in L1 while the kMc rows of
// packed A (144 KiB) stream from L2 (Zen 3: 512 KiB); the kKc x kNc block of
// B (1 MiB) is read from L3.
constexpr int64_t kKc = kSgemmKc;
constexpr int64_t kMc = kMr * 24;
constexpr int64_t kNc = 1024;
// Rows of B ahead that pack_b asks for (rows ldb apart defeat the prefetcher).
constexpr int64_t kAhead = 8;
// Rows of B this many floats apart or more are packed row by row (pack_b).
constexpr int64_t kFarRows = 1024;

// C^T of up to kNarrow rows by kNc columns (transposed_pays).
constexpr int64_t kNarrow = 64;

using sgemm::Store;
// Packed A, packed B, then C^T.
thread_local sgemm::PackBuffer<kMc * kKc + kKc * kNc + kNarrow * kNc> t_pack;

// C[R rows x `cols` columns] (op)= alpha * Ap(R x kc) * Bp(kc x 8V): Ap holds
// R values per step of k, Bp kNr per step (zeros past `cols`).
template <int R, int V>
CONV_TARGET_AVX2 void micro_kernel(int64_t kc, const float *ap, const float *bp, float *c,
                                   int64_t ldc, int cols, float alpha, float beta, Store how) {
    __m256 acc[R * V];  // flat, every loop unrolled: kept in registers
#pragma GCC unroll 12
    for (int i = 0; i < R * V; ++i) acc[i] = _mm256_setzero_ps();
    if (how != Store::stream)
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);

#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; ++p) {
        __m256 bv[V];
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) bv[v] = _mm256_load_ps(bp + p * kNr + 8 * v);
#pragma GCC unroll 6
        for (int i = 0; i < R; ++i) {
            const __m256 ai = _mm256_broadcast_ss(ap + p * R + i);
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) acc[i * V + v] = _mm256_fmadd_ps(ai, bv[v], acc[i * V + v]);
        }
    }

    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) {
            const int lanes = v == V - 1 ? cols - 8 * (V - 1) : 8;
            float *cv = c + i * ldc + 8 * v;
            __m256 r = _mm256_mul_ps(va, acc[i * V + v]);
            if (how == Store::add)
                r = _mm256_add_ps(r, load_first_avx2(cv, lanes));
            else if (how == Store::scale)
                r = _mm256_fmadd_ps(vb, load_first_avx2(cv, lanes), r);
            if (how == Store::stream && lanes == 8)
                _mm256_stream_ps(cv, r);
            else
                store_first_avx2(cv, r, lanes);
        }
    }
}

using Kernel = void (*)(int64_t, const float *, const float *, float *, int64_t, int, float, float,
                        Store);

// kKernels.k[R - 1][V - 1]: every row count of a panel, one or two vectors.
template <size_t... I>
constexpr auto kernel_table(std::index_sequence<I...>) {
    struct Table {
        Kernel k[kMr][2];
    };
    return Table{{{micro_kernel<int(I) + 1, 1>, micro_kernel<int(I) + 1, 2>}...}};
}
constexpr auto kKernels = kernel_table(std::make_index_sequence<kMr>());

// t[j] = column j of the rows x q block at s (rows `ld` apart; rows, q <=
// 8), zeros past it: the rows loaded and transposed in registers.
CONV_TARGET_AVX2 inline void load_columns(__m256 t[8], const float *s, int64_t ld, int64_t rows,
                                          int64_t q) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
        t[i] = i >= rows ? _mm256_setzero_ps()
               : q == 8  ? _mm256_loadu_ps(s + i * ld)
                         : load_first_avx2(s + i * ld, q);
    transpose8(t);
}

// Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) into row panels
// (EvenPieces of at most kMr rows: 49 as 4 x 6 + 5 x 5), r values per step
// of k. Steps are stored as whole vectors, the lanes past r overwritten by
// the panel's next step; a panel's last step stores only its r values.
CONV_TARGET_AVX2 void pack_a(bool trans, const float *a, int64_t lda, int64_t m, int64_t k,
                             int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst) {
    if (trans) {
        // op(A)(i, p) = a[p * lda + i]: row p of `a` holds step p of every
        // panel, so rows are read once each, in order, and dealt out to the
        // panels (read panel by panel, rows lda apart re-fetched lines).
        // A whole vector where its 8 values lie inside A, whose last element
        // is a[(k - 1) * lda + m - 1].
        const int64_t end = (k - 1) * lda + m;
        const EvenPieces panels(mc, kMr);  // row panels
        for (int64_t p = 0; p < kc; ++p) {
            const float *row = a + (p0 + p) * lda + i0;
            if (p + kAhead < kc)
                for (int64_t i = 0; i < mc; i += 16) _mm_prefetch((const char *)(row + kAhead * lda + i), _MM_HINT_T0);
            for (int64_t t = 0; t < panels.count; ++t) {
                const int64_t ir = panels.start(t), r = panels.size(t);
                const float *at = row + ir;
                const __m256 v = (at - a) + 8 <= end ? _mm256_loadu_ps(at) : load_first_avx2(at, r);
                float *d = dst + ir * kc + p * r;
                if (p + 1 < kc)
                    _mm256_storeu_ps(d, v);
                else
                    store_first_avx2(d, v, r);
            }
        }
        return;
    }
    const EvenPieces panels(mc, kMr);  // row panels
    for (int64_t panel = 0; panel < panels.count; ++panel) {
        const int64_t ir = panels.start(panel), r = panels.size(panel);
        float *d = dst + ir * kc;
        // op(A)(i, p) = a[i * lda + p]: r rows transposed, 8 steps at a time
        const float *s = a + (i0 + ir) * lda + p0;
        for (int64_t p = 0; p < kc; p += 8) {
            const int64_t q = std::min<int64_t>(8, kc - p);
            __m256 t[8];
            load_columns(t, s + p, lda, r, q);
            for (int64_t j = 0; j < q; ++j) {
                if (p + j + 1 < kc)
                    _mm256_storeu_ps(d + (p + j) * r, t[j]);
                else
                    store_first_avx2(d + (p + j) * r, t[j], r);
            }
        }
    }
}

// Packs depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into panels of
// kNr columns, every step a whole 16 (zeros past the last column).
CONV_TARGET_AVX2 void pack_b(bool trans, const float *b, int64_t ldb, int64_t p0, int64_t kc,
                             int64_t j0, int64_t nc, float *dst) {
    if (!trans && ldb >= kFarRows) {
        // Rows a page or more apart (filters, with the C^T of transposed_pays):
        // each row read once, in order, and dealt out to the panels; panel by
        // panel the walk down rows that far apart waited on L3 (1.05-1.13x).
        for (int64_t p = 0; p < kc; ++p) {
            const float *row = b + (p0 + p) * ldb + j0;
            for (int64_t jr = 0; jr < nc; jr += kNr) copy_panel_step_avx2(dst + jr * kc + p * kNr, row + jr, nc - jr);
        }
        return;
    }
    for (int64_t jr = 0; jr < nc; jr += kNr) {
        const int64_t w = std::min<int64_t>(kNr, nc - jr);
        float *d = dst + jr * kc;
        if (!trans) {  // op(B)(p, j) = b[p * ldb + j]: rows of w values
            const float *s = b + p0 * ldb + j0 + jr;
            for (int64_t p = 0; p < kc; ++p) {
                const float *row = s + p * ldb;
                if (p + kAhead < kc) {
                    _mm_prefetch((const char *)(row + kAhead * ldb), _MM_HINT_T0);
                    _mm_prefetch((const char *)(row + kAhead * ldb + w - 1), _MM_HINT_T0);
                }
                copy_panel_step_avx2(d + p * kNr, row, w);
            }
        } else {  // op(B)(p, j) = b[j * ldb + p]: w rows transposed, 8 x 8 at a time
            const float *s = b + (j0 + jr) * ldb + p0;
            for (int64_t half = 0; half < 2; ++half) {
                const int64_t rows = std::clamp<int64_t>(w - 8 * half, 0, 8);
                for (int64_t p = 0; p < kc; p += 8) {
                    const int64_t q = std::min<int64_t>(8, kc - p);
                    __m256 t[8];
                    load_columns(t, s + 8 * half * ldb + p, ldb, rows, q);
                    for (int64_t u = 0; u < q; ++u) _mm256_store_ps(d + (p + u) * kNr + 8 * half, t[u]);
                }
            }
        }
    }
}

// C of at most kMc rows (a 7x7 plane's 49 as C^T, transposed_pays): A's
// rows are packed once per block of k, and B a panel at a time, right
// before its tiles, while the next panel's source lines are fetched into L2
// a share per tile; packed up front, the kc x nc block of B (up to 1 MiB)
// went out to L3 and came back. Where B's rows are a page or more apart
// (W of 1024+ channels) a panel's 256 lines lie on as many pages, and its
// rows are better read whole (pack_b). 1 thread, 6 alternated runs, ratio
// to oneDNN before -> after: channels-first backward-data 512->2048 7x7
// 0.65 -> 0.89, 512->1024 7x7 0.80 -> 0.90, 128->256 28x28 0.80 -> 0.90,
// 128->512 0.84 -> 0.94; with rows 4-8 KiB apart (1024->1024, 2048->512
// 7x7) 0.81x, left to sgemm_blocked.
bool few_rows_pays(int64_t m, bool tb, int64_t ldb) { return m <= kMc && !tb && ldb < kFarRows; }

CONV_TARGET_AVX2 void sgemm_few_rows(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                                     float *c, int64_t ldc, float *ap, float *bp, bool stream) {
    const EvenPieces panels(m, kMr);  // row panels
    for (int64_t pc = 0; pc < k; pc += kKc) {
        const int64_t kc = std::min(kKc, k - pc);
        const Store how = sgemm::store_for(pc, stream, beta);
        pack_a(ta, a, lda, m, k, 0, m, pc, kc, ap);
        for (int64_t jr = 0; jr < n; jr += kNr) {
            const int64_t w = std::min<int64_t>(kNr, n - jr);
            const int v = w > 8 ? 2 : 1;
            pack_b(tb, b, ldb, pc, kc, jr, w, bp);
            // The next panel's source, a line per step (B's rows), asked for
            // in shares across the tiles.
            const int64_t next = jr + kNr, lines = next < n ? kc : 0;
            const int64_t share = ceil_div(lines, panels.count);
            int64_t line = 0;
            for (int64_t t = 0; t < panels.count; ++t) {
                for (const int64_t end = std::min(lines, line + share); line < end; ++line)
                    _mm_prefetch((const char *)(b + (pc + line) * ldb + next), _MM_HINT_T1);
                const int64_t ir = panels.start(t), r = panels.size(t);
                kKernels.k[r - 1][v - 1](kc, ap + ir * kc, bp, c + ir * ldc + jr, ldc, (int)w, alpha, beta, how);
            }
        }
    }
}

CONV_TARGET_AVX2 void sgemm_blocked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                    const float *a, int64_t lda, const float *b, int64_t ldb,
                                    float beta, float *c, int64_t ldc, float *ap, float *bp,
                                    bool stream) {
    if (few_rows_pays(m, tb, ldb)) return sgemm_few_rows(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ap, bp, stream);
    for (int64_t jc = 0; jc < n; jc += kNc) {
        const int64_t nc = std::min(kNc, n - jc);
        for (int64_t pc = 0; pc < k; pc += kKc) {
            const int64_t kc = std::min(kKc, k - pc);
            const Store how = sgemm::store_for(pc, stream, beta);
            pack_b(tb, b, ldb, pc, kc, jc, nc, bp);
            for (int64_t ic = 0; ic < m; ic += kMc) {
                const int64_t mc = std::min(kMc, m - ic);
                pack_a(ta, a, lda, m, k, ic, mc, pc, kc, ap);
                for (int64_t jr = 0; jr < nc; jr += kNr) {
                    const int64_t w = std::min<int64_t>(kNr, nc - jr);
                    const int v = w > 8 ? 2 : 1;
                    const float *bpanel = bp + jr * kc;
                    const EvenPieces panels(mc, kMr);  // row panels
                    for (int64_t t = 0; t < panels.count; ++t) {
                        const int64_t ir = panels.start(t), r = panels.size(t);
                        kKernels.k[r - 1][v - 1](kc, ap + ir * kc, bpanel,
                                                 c + (ic + ir) * ldc + jc + jr, ldc, (int)w, alpha,
                                                 beta, how);
                    }
                }
            }
        }
    }
}


// C (rows [0, m) x columns [0, n)) = alpha * T^T + beta * C, T being n x m
// with rows ldt apart; 8 x 8 blocks transposed in registers.
CONV_TARGET_AVX2 void store_transposed(const float *t, int64_t ldt, int64_t m, int64_t n, float alpha,
                                       float beta, float *c, int64_t ldc) {
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        const int64_t cols = std::min<int64_t>(8, n - j0);
        for (int64_t i0 = 0; i0 < m; i0 += 8) {
            const int64_t rows = std::min<int64_t>(8, m - i0);
            __m256 v[8];
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j)
                v[j] = j < cols ? load_first_avx2(t + (j0 + j) * ldt + i0, rows) : _mm256_setzero_ps();
            transpose8(v);
            for (int64_t i = 0; i < rows; ++i) {
                float *at = c + (i0 + i) * ldc + j0;
                __m256 r = _mm256_mul_ps(va, v[i]);
                if (beta != 0.f) r = _mm256_fmadd_ps(vb, load_first_avx2(at, cols), r);
                store_first_avx2(at, r, cols);
            }
        }
    }
}

// Whether C (m x n) is computed as C^T = op(B)^T op(A)^T: with few columns
// (a 7x7 plane's 49) the 16-column panels end in a narrow one that runs the
// tile at a fraction of its rate, and op(A) -- the large operand, the
// filters -- is packed for them all; transposed, the filters are the
// columns, in whole panels.
bool transposed_pays(int64_t m, int64_t n) { return n <= kNarrow && n % kNr != 0 && m >= 4 * kNr; }

}  // namespace

bool sgemm_avx2_few_rows(int64_t m, bool trans_b, int64_t ldb) { return few_rows_pays(m, trans_b, ldb); }

bool sgemm_avx2(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                int64_t ldc, bool write_once) {
    if (m == 0 || n == 0 || sgemm::scale_only(m, n, k, alpha, beta, c, ldc)) return true;
    float *pack = t_pack.get();
    if (!pack) return false;
    float *ap = pack, *bp = ap + kMc * kKc, *tp = bp + kKc * kNc;
    if (transposed_pays(m, n)) {
        // By blocks of kNc rows of C: T = op(B)^T op(A)^T rows [i0, i0 + mb),
        // then C = alpha T^T + beta C.
        for (int64_t i0 = 0; i0 < m; i0 += kNc) {
            const int64_t mb = std::min(kNc, m - i0);
            sgemm_blocked(!trans_b, !trans_a, n, mb, k, 1.f, b, ldb, trans_a ? a + i0 : a + i0 * lda,
                          lda, 0.f, tp, mb, ap, bp, false);
            store_transposed(tp, mb, mb, n, alpha, beta, c + i0 * ldc, ldc);
        }
        return true;
    }
    const bool stream = sgemm::streams_c(write_once, m, n, k, kKc, beta, c, ldc);
    sgemm_blocked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ap, bp, stream);
    if (stream) _mm_sfence();  // the stores are weakly ordered: done before the caller's
    return true;
}

#else

bool sgemm_avx2_few_rows(int64_t, bool, int64_t) { return false; }

bool sgemm_avx2(bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t,
                const float *, int64_t, float, float *, int64_t, bool) {
    return false;
}

#endif

}  // namespace conv::cpu
