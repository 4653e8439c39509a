#include "cpu/bf16_gemm.h"

#include <algorithm>
#include <cstring>

#include "cpu/avx512.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMR = 14;        // rows of a micro-tile: 28 accumulators + 2 B vectors + 1
constexpr int64_t kNR = 32;        // columns of a micro-tile: two vectors of 16 floats
constexpr int64_t kKC = 256;       // reduction elements per packed block: a B panel is 32 KiB (L1)
constexpr int64_t kMC = 12 * kMR;  // rows per packed A block (168 KiB, L2)
constexpr int64_t kNC = 16 * kNR;  // columns per packed B block (512 KiB, L2)

constexpr size_t kPackA = (size_t)kMC * kKC * 4;  // bytes
constexpr size_t kPackB = (size_t)kNC * kKC * 4;

// 16 bf16 -> 16 floats, exactly (the bits shifted into place); masked lanes 0.
CONV_TARGET_AVX512 inline __m512 widen16(__mmask16 mask, const bf16_t *p) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}

// Packs rows [i0, i0+mc) x reduction [k0, k0+kc) of A, widened to float,
// in micro-panels of kMR rows (kKC * kMR floats each) laid out the way A's
// memory is read fastest: A(i, k) = p[i * ld + k] row by row ([row][k], row
// stride kKC); A(i, k) = p[k * ld + i] (trans) as [k][row]. Missing rows are zeros.
CONV_TARGET_AVX512 void pack_a(const Bf16Operand &a, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                               float *out) {
    if (a.trans) {  // k outermost: each row of memory is read once, in order
        for (int64_t k = 0; k < kc; ++k) {
            const bf16_t *src = a.p + (k0 + k) * a.ld + i0;
            for (int64_t ip = 0; ip < mc; ip += kMR)
                _mm512_mask_storeu_ps(out + ip * kKC + k * kMR, 0x3fff,
                                      widen16(first_lanes(mc - ip), src + ip));
        }
        return;
    }
    for (int64_t ip = 0; ip < mc; ip += kMR) {
        float *panel = out + ip * kKC;
        const int64_t rows = std::min(kMR, mc - ip);
        for (int64_t r = 0; r < kMR; ++r) {
            float *dst = panel + r * kKC;
            if (r >= rows) {
                std::fill(dst, dst + kc, 0.f);
                continue;
            }
            const bf16_t *row = a.p + (i0 + ip + r) * a.ld + k0;
            for (int64_t k = 0; k < kc; k += 16) {
                const __mmask16 mask = first_lanes(kc - k);
                _mm512_mask_storeu_ps(dst + k, mask, widen16(mask, row + k));
            }
        }
    }
}

// Packs reduction [k0, k0+kc) x columns [j0, j0+nc) of B, widened to float:
// micro-panels of kNR columns, each [k][column]; columns past nc are zeros.
CONV_TARGET_AVX512 void pack_b(const Bf16Operand &b, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                               float *out) {
    for (int64_t jp = 0; jp < nc; jp += kNR) {
        float *panel = out + jp * kc;
        const int64_t cols = std::min(kNR, nc - jp);
        if (!b.trans) {  // B(k, j) = p[k * ld + j]: a row of the panel is contiguous
            const __mmask16 m0 = first_lanes(cols), m1 = first_lanes(cols - 16);
            const bf16_t *src = b.p + k0 * b.ld + j0 + jp;
            for (int64_t k = 0; k < kc; ++k) {
                _mm512_store_ps(panel + k * kNR, widen16(m0, src + k * b.ld));
                _mm512_store_ps(panel + k * kNR + 16, widen16(m1, src + k * b.ld + 16));
            }
            continue;
        }
        // B(k, j) = p[j * ld + k]: 16 columns x 16 k at a time, transposed.
        for (int64_t half = 0; half < kNR; half += 16)
            for (int64_t k = 0; k < kc; k += 16) {
                __m512 v[16];
                const __mmask16 mask = first_lanes(kc - k);
                for (int64_t c = 0; c < 16; ++c)
                    v[c] = half + c < cols
                               ? widen16(mask, b.p + (j0 + jp + half + c) * b.ld + k0 + k)
                               : _mm512_setzero_ps();
                transpose16(v);
                for (int64_t q = 0; q < 16 && k + q < kc; ++q)
                    _mm512_store_ps(panel + (k + q) * kNR + half, v[q]);
            }
    }
}

// float -> bfloat16 bits, round to nearest, ties to even (NaN stays a quiet
// NaN; subnormals are rounded, not flushed), as comm/half.h's float_to_bf16.
CONV_TARGET_AVX512 inline __m256i round_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

CONV_TARGET_AVX512 inline __m512 widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Where a micro-tile goes: float C (`c`), or -- the last reduction block
// of a GEMM with an epilogue -- bf16 y after the bias and ReLU.
struct TileOut {
    float *c;
    int64_t ldc;
    const Bf16Epilogue *epi;  // null: float C
    int64_t i, j;             // the tile's first row and column in C
};

// One row of a finished micro-tile: 16 + 16 sums stored as float or bf16.
CONV_TARGET_AVX512 inline void store_row(const TileOut &o, int64_t r, __m512 v0, __m512 v1,
                                         int64_t cols, bool accumulate) {
    const __mmask16 m0 = first_lanes(cols), m1 = first_lanes(cols - 16);
    const float *cr = o.c + (o.i + r) * o.ldc + o.j;
    if (accumulate) {
        v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
        v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    if (!o.epi) {
        _mm512_mask_storeu_ps(o.c + (o.i + r) * o.ldc + o.j, m0, v0);
        _mm512_mask_storeu_ps(o.c + (o.i + r) * o.ldc + o.j + 16, m1, v1);
        return;
    }
    const Bf16Epilogue &e = *o.epi;
    if (e.bias && e.bias_per_row) {
        const __m512 b = widen_bf16(_mm256_set1_epi16((short)e.bias[o.i + r]));
        v0 = _mm512_add_ps(v0, b);
        v1 = _mm512_add_ps(v1, b);
    } else if (e.bias) {
        v0 = _mm512_add_ps(v0, widen_bf16(_mm256_maskz_loadu_epi16(m0, e.bias + o.j)));
        v1 = _mm512_add_ps(v1, widen_bf16(_mm256_maskz_loadu_epi16(m1, e.bias + o.j + 16)));
    }
    if (e.relu) {  // max(0, v) keeps a NaN (the second operand when one is NaN)
        v0 = _mm512_max_ps(_mm512_setzero_ps(), v0);
        v1 = _mm512_max_ps(_mm512_setzero_ps(), v1);
    }
    bf16_t *yr = e.y + (o.i + r) * e.ldy + o.j;
    _mm256_mask_storeu_epi16(yr, m0, round_bf16(v0));
    _mm256_mask_storeu_epi16(yr + 16, m1, round_bf16(v1));
}

// A tile (rows x cols of kR x kNR, kR <= kMR) of A panel x B panel over kc,
// stored (added to C when `accumulate`) through `o`; the A panel is [row][k]
// (kRowsA) or [k][row] (see pack_a). A kR below kMR serves the last rows of
// an A block and GEMMs of few rows (a depthwise group has one).
template <int kR, bool kRowsA>
CONV_TARGET_AVX512 void micro_kernel(const float *a, const float *b, int64_t kc, const TileOut &o,
                                     int64_t rows, int64_t cols, bool accumulate) {
    __m512 c0[kR], c1[kR];
#pragma GCC unroll 14
    for (int r = 0; r < kR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; ++k) {
        const __m512 b0 = _mm512_load_ps(b + k * kNR), b1 = _mm512_load_ps(b + k * kNR + 16);
#pragma GCC unroll 14
        for (int r = 0; r < kR; ++r) {
            const __m512 ar = _mm512_set1_ps(kRowsA ? a[r * kKC + k] : a[k * kMR + r]);
            c0[r] = _mm512_fmadd_ps(ar, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(ar, b1, c1[r]);
        }
    }
    for (int r = 0; r < rows; ++r) store_row(o, r, c0[r], c1[r], cols, accumulate);
}

using MicroKernel = void (*)(const float *, const float *, int64_t, const TileOut &, int64_t,
                             int64_t, bool);

// The micro-kernel for a tile of `rows` rows: the fewest rows >= rows among 1, 2, 4, 8, 14.
template <bool kRowsA>
MicroKernel kernel_for(int64_t rows) {
    if (rows <= 1) return micro_kernel<1, kRowsA>;
    if (rows <= 2) return micro_kernel<2, kRowsA>;
    if (rows <= 4) return micro_kernel<4, kRowsA>;
    if (rows <= 8) return micro_kernel<8, kRowsA>;
    return micro_kernel<kMR, kRowsA>;
}

}  // namespace

size_t gemm_bf16_pack_bytes() { return kPackA + kPackB; }

void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float *c, int64_t ldc,
               bool accumulate, void *pack, const Bf16Epilogue *epi) {
    float *pa = static_cast<float *>(pack);
    float *pb = pa + kPackA / 4;
    if (k == 0) {  // an empty reduction: zeros (or C unchanged)
        if (!accumulate)
            for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
        if (epi)
            store_bf16(c, ldc, m, n, epi->y, epi->ldy, epi->bias, epi->bias_per_row, epi->relu);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += kNC) {
        const int64_t nc = std::min(kNC, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += kKC) {
            const int64_t kc = std::min(kKC, k - k0);
            const bool add = accumulate || k0 > 0;
            const Bf16Epilogue *last = k0 + kc == k ? epi : nullptr;
            pack_b(b, k0, kc, j0, nc, pb);
            for (int64_t i0 = 0; i0 < m; i0 += kMC) {
                const int64_t mc = std::min(kMC, m - i0);
                pack_a(a, i0, mc, k0, kc, pa);
                for (int64_t jp = 0; jp < nc; jp += kNR)
                    for (int64_t ip = 0; ip < mc; ip += kMR) {
                        const int64_t rows = std::min(kMR, mc - ip);
                        const MicroKernel kernel =
                            a.trans ? kernel_for<false>(rows) : kernel_for<true>(rows);
                        kernel(pa + ip * kKC, pb + jp * kc, kc, {c, ldc, last, i0 + ip, j0 + jp},
                               rows, std::min(kNR, nc - jp), add);
                    }
            }
        }
    }
}

CONV_TARGET_AVX512 void store_bf16(const float *c, int64_t ldc, int64_t rows, int64_t cols,
                                   bf16_t *y, int64_t ldy, const bf16_t *bias, bool bias_per_row,
                                   bool relu) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) {
        const float *cr = c + r * ldc;
        bf16_t *yr = y + r * ldy;
        const __m512 row_bias =
            bias && bias_per_row ? widen_bf16(_mm256_set1_epi16((short)bias[r])) : zero;
        for (int64_t j = 0; j < cols; j += 16) {
            const __mmask16 mask = first_lanes(cols - j);
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, cr + j), row_bias);
            if (bias && !bias_per_row)
                v = _mm512_add_ps(v, widen_bf16(_mm256_maskz_loadu_epi16(mask, bias + j)));
            if (relu) v = _mm512_max_ps(zero, v);  // the second operand when one is NaN
            _mm256_mask_storeu_epi16(yr + j, mask, round_bf16(v));
        }
    }
}

}  // namespace conv::cpu

namespace conv::cpu {

CONV_TARGET_AVX512 void widen_bf16(const bf16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = first_lanes(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, widen16(mask, src + i));
    }
}

CONV_TARGET_AVX512 void store_bf16_transposed(const float *c, int64_t ldc, int64_t rows,
                                              int64_t cols, bf16_t *y, int64_t ldy) {
    for (int64_t i0 = 0; i0 < rows; i0 += 16)
        for (int64_t j0 = 0; j0 < cols; j0 += 16) {
            __m512 v[16];
            const __mmask16 jmask = first_lanes(cols - j0), imask = first_lanes(rows - i0);
            for (int64_t i = 0; i < 16; ++i)
                v[i] = i0 + i < rows ? _mm512_maskz_loadu_ps(jmask, c + (i0 + i) * ldc + j0)
                                     : _mm512_setzero_ps();
            transpose16(v);
            for (int64_t j = 0; j < 16 && j0 + j < cols; ++j)
                _mm256_mask_storeu_epi16(y + (j0 + j) * ldy + i0, imask, round_bf16(v[j]));
        }
}

}  // namespace conv::cpu
