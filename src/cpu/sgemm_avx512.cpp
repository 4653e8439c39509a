#include "cpu/sgemm_avx512.h"

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "cpu/avx512.h"
#include "cpu/sgemm_shared.h"

namespace conv::cpu {

#if CONV_HAVE_AVX512_KERNELS
namespace {

// The register tile: kMr rows of C by kNr columns (two zmm vectors), 28
// accumulators of the 32 registers; each step of k loads two vectors of B,
// broadcasts kMr values of A and issues 28 FMAs -- enough independent
// chains to cover the FMA latency on both ports.
constexpr int kMr = 14;
constexpr int kNr = 32;
// Blocks: a kKc x kNr panel of B (32 KiB) stays in L1 while the kMc rows
// of packed A (336 KiB) stream from L2; the kKc x kNc block of B (1 MiB)
// stays in L2 across them.
constexpr int64_t kKc = kSgemmKc;
constexpr int64_t kMc = kMr * 24;
constexpr int64_t kNc = 1024;

using sgemm::Store;
thread_local sgemm::PackBuffer<kMc * kKc + kKc * kNc> t_pack;  // packed A, then packed B

// C[rows R x columns < 16V] (op)= alpha * Ap(R x kc) * Bp(kc x 16V). Ap holds
// R values per step of k; Bp's steps are `bstride` apart (packed: 16V, in
// place: ldb), the last vector's loads masked by `bmask` and its columns of C
// by `last`.
template <int R, int V>
CONV_TARGET_AVX512 void micro_kernel(int64_t kc, const float *ap, const float *bp,
                                     int64_t bstride, __mmask16 bmask, float *c, int64_t ldc,
                                     __mmask16 last, float alpha, float beta, Store how) {
    __m512 acc[R][V];
#pragma GCC unroll 14
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
    if (how != Store::stream)
#pragma GCC unroll 14
        for (int i = 0; i < R; ++i) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);

#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; ++p) {
        __m512 bv[V];
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v)
            bv[v] = _mm512_maskz_loadu_ps(v == V - 1 ? bmask : (__mmask16)0xffff,
                                          bp + p * bstride + 16 * v);
#pragma GCC unroll 14
        for (int i = 0; i < R; ++i) {
            const __m512 ai = _mm512_set1_ps(ap[p * R + i]);
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }

    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) {
            const __mmask16 mask = v == V - 1 ? last : (__mmask16)0xffff;
            float *cv = c + i * ldc + 16 * v;
            __m512 r = _mm512_mul_ps(va, acc[i][v]);
            if (how == Store::add)
                r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, cv));
            else if (how == Store::scale)
                r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, cv), r);
            if (how == Store::stream && mask == (__mmask16)0xffff)
                _mm512_stream_ps(cv, r);
            else
                _mm512_mask_storeu_ps(cv, mask, r);
        }
    }
}

using Kernel = void (*)(int64_t, const float *, const float *, int64_t, __mmask16, float *,
                        int64_t, __mmask16, float, float, Store);

// kernels[R - 1][V - 1]: every row count of a panel, one or two vectors.
template <size_t... I>
constexpr auto kernel_table(std::index_sequence<I...>) {
    struct Table {
        Kernel k[kMr][2];
    };
    return Table{{{micro_kernel<int(I) + 1, 1>, micro_kernel<int(I) + 1, 2>}...}};
}
constexpr auto kKernels = kernel_table(std::make_index_sequence<kMr>());

// t[i] = the `lanes` of row i (rows 0 .. rows - 1, `ld` apart), zeros elsewhere.
CONV_TARGET_AVX512 inline void load_rows(__m512 t[16], const float *s, int64_t ld, int64_t rows,
                                         __mmask16 lanes) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
        t[i] = i < rows ? _mm512_maskz_loadu_ps(lanes, s + i * ld) : _mm512_setzero_ps();
}

// Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) into panels of kMr
// rows (the last one narrower): panel by panel, kMr values per step of k.
CONV_TARGET_AVX512 void pack_a(bool trans, const float *a, int64_t lda, int64_t i0, int64_t mc,
                               int64_t p0, int64_t kc, float *dst) {
    for (int64_t ir = 0; ir < mc; ir += kMr) {
        const int64_t r = std::min<int64_t>(kMr, mc - ir);
        float *d = dst + ir * kc;
        if (trans) {  // op(A)(i, p) = a[p * lda + i]: r consecutive values per step
            const __mmask16 mask = first_lanes(r);
            const float *s = a + p0 * lda + i0 + ir;
            for (int64_t p = 0; p < kc; ++p)
                _mm512_mask_storeu_ps(d + p * r, mask, _mm512_maskz_loadu_ps(mask, s + p * lda));
        } else {  // op(A)(i, p) = a[i * lda + p]: r rows transposed, 16 steps at a time
            const float *s = a + (i0 + ir) * lda + p0;
            const __mmask16 rows = first_lanes(r);
            for (int64_t p = 0; p < kc; p += 16) {
                const int64_t q = std::min<int64_t>(16, kc - p);
                __m512 t[16];
                load_rows(t, s + p, lda, r, first_lanes(q));
                transpose16(t);
                for (int64_t j = 0; j < q; ++j) _mm512_mask_storeu_ps(d + (p + j) * r, rows, t[j]);
            }
        }
    }
}

// Packs depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into panels of
// kNr columns, each step of k padded with zeros to a whole vector (the last
// panel one vector wide when it has 16 columns or fewer).
CONV_TARGET_AVX512 void pack_b(bool trans, const float *b, int64_t ldb, int64_t p0, int64_t kc,
                               int64_t j0, int64_t nc, float *dst) {
    for (int64_t jr = 0; jr < nc; jr += kNr) {
        const int64_t w = std::min<int64_t>(kNr, nc - jr);
        const int64_t width = w > 16 ? 32 : 16;
        float *d = dst + jr * kc;
        if (!trans) {  // op(B)(p, j) = b[p * ldb + j]: rows of w values
            const __mmask16 m0 = first_lanes(w), m1 = first_lanes(w - 16);
            const float *s = b + p0 * ldb + j0 + jr;
            for (int64_t p = 0; p < kc; ++p) {
                _mm512_store_ps(d + p * width, _mm512_maskz_loadu_ps(m0, s + p * ldb));
                if (width == 32)
                    _mm512_store_ps(d + p * width + 16,
                                    _mm512_maskz_loadu_ps(m1, s + p * ldb + 16));
            }
        } else {  // op(B)(p, j) = b[j * ldb + p]: w rows transposed, 16 x 16 at a time
            const float *s = b + (j0 + jr) * ldb + p0;
            for (int64_t p = 0; p < kc; p += 16) {
                const int64_t q = std::min<int64_t>(16, kc - p);
                for (int64_t half = 0; half < width / 16; ++half) {
                    __m512 t[16];
                    load_rows(t, s + half * 16 * ldb + p, ldb, w - half * 16, first_lanes(q));
                    transpose16(t);
                    for (int64_t j = 0; j < q; ++j)
                        _mm512_store_ps(d + (p + j) * width + half * 16, t[j]);
                }
            }
        }
    }
}

// Whether the micro-kernel reads B where it lies instead of from packed
// panels. Packing copies all of B for every call; it pays where the panel is
// re-read by many row panels from L1, and where B's rows are 4 KiB-multiples
// apart (every row in the same L1 set). 1 thread pinned, GFLOP/s in place vs
// packed: m = 64, n = 784, k = 576: 149 vs 129; m = 128 (k = 1152): 148 vs
// 139; m = 192: 153 vs 143; m = 256: 149 vs 148; m = 336, n = k = 1024: 135
// vs 143; m = 128, n = ldb = 2048: 116 vs 128.
bool reads_b_in_place(bool tb, int64_t m, int64_t ldb) {
    return !tb && m <= 192 && ldb % 1024 != 0;
}

CONV_TARGET_AVX512 void sgemm_blocked(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                      float alpha, const float *a, int64_t lda, const float *b,
                                      int64_t ldb, float beta, float *c, int64_t ldc, float *ap,
                                      float *bp, bool stream) {
    const bool direct = reads_b_in_place(tb, m, ldb);
    for (int64_t jc = 0; jc < n; jc += kNc) {
        const int64_t nc = std::min(kNc, n - jc);
        for (int64_t pc = 0; pc < k; pc += kKc) {
            const int64_t kc = std::min(kKc, k - pc);
            const Store how = sgemm::store_for(pc, stream, beta);
            if (!direct) pack_b(tb, b, ldb, pc, kc, jc, nc, bp);
            for (int64_t ic = 0; ic < m; ic += kMc) {
                const int64_t mc = std::min(kMc, m - ic);
                pack_a(ta, a, lda, ic, mc, pc, kc, ap);
                for (int64_t jr = 0; jr < nc; jr += kNr) {
                    const int64_t w = std::min<int64_t>(kNr, nc - jr);
                    const int v = w > 16 ? 2 : 1;
                    const __mmask16 last = first_lanes(w - 16 * (v - 1));
                    const float *bpanel = direct ? b + pc * ldb + jc + jr : bp + jr * kc;
                    const int64_t bstride = direct ? ldb : 16 * v;
                    const __mmask16 bmask = direct ? last : (__mmask16)0xffff;
                    for (int64_t ir = 0; ir < mc; ir += kMr) {
                        const int64_t r = std::min<int64_t>(kMr, mc - ir);
                        kKernels.k[r - 1][v - 1](kc, ap + ir * kc, bpanel, bstride, bmask,
                                                 c + (ic + ir) * ldc + jc + jr, ldc, last, alpha,
                                                 beta, how);
                    }
                }
            }
        }
    }
}

}  // namespace

bool sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc, bool write_once) {
    if (m == 0 || n == 0 || sgemm::scale_only(m, n, k, alpha, beta, c, ldc)) return true;
    float *pack = t_pack.get();
    if (!pack) return false;
    const bool stream = sgemm::streams_c(write_once, m, n, k, kKc, beta, c, ldc);
    sgemm_blocked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pack,
                  pack + kMc * kKc, stream);
    if (stream) _mm_sfence();  // the stores are weakly ordered: done before the caller's
    return true;
}

#else

bool sgemm_avx512(bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t,
                  const float *, int64_t, float, float *, int64_t, bool) {
    return false;
}

#endif

}  // namespace conv::cpu
