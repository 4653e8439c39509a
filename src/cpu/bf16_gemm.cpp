#include "cpu/bf16_gemm.h"

#include <algorithm>
#include <cstring>

#include "cpu/avx512.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMR = 14;   // rows of a micro-tile: 28 accumulators + 2 B vectors + 1
constexpr int64_t kNR = 32;   // columns of a micro-tile: two vectors of 16 floats
constexpr int64_t kKC = 256;  // reduction elements per packed block: a B panel is 32 KiB (L1)
constexpr int64_t kMC = 12 * kMR;  // rows per packed A block (168 KiB, L2)
constexpr int64_t kNC = 16 * kNR;  // columns per packed B block (512 KiB, L2)

constexpr size_t kPackA = (size_t)kMC * kKC * 4;  // bytes
constexpr size_t kPackB = (size_t)kNC * kKC * 4;

inline float widen(bf16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// 16 bf16 -> 16 floats, exactly (the bits shifted into place); masked lanes 0.
CONV_TARGET_AVX512 inline __m512 widen16(__mmask16 mask, const bf16_t *p) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}

// Packs rows [i0, i0+mc) x reduction [k0, k0+kc) of A, widened to float:
// micro-panels of kMR rows, each [k][row]; rows past m are zeros.
CONV_TARGET_AVX512 void pack_a(const Bf16Operand &a, int64_t m, int64_t i0, int64_t mc,
                               int64_t k0, int64_t kc, float *out) {
    for (int64_t ip = 0; ip < mc; ip += kMR) {
        float *panel = out + ip * kc;
        const int64_t rows = std::min(kMR, std::min(mc, m - i0) - ip);
        if (a.trans) {  // A(i, k) = p[k * ld + i]: a row of the panel is contiguous
            const __mmask16 mask = first_lanes(rows);
            const bf16_t *src = a.p + k0 * a.ld + i0 + ip;
            for (int64_t k = 0; k < kc; ++k)
                _mm512_mask_storeu_ps(panel + k * kMR, 0x3fff, widen16(mask, src + k * a.ld));
            continue;
        }
        for (int64_t r = 0; r < kMR; ++r) {
            if (r >= rows) {
                for (int64_t k = 0; k < kc; ++k) panel[k * kMR + r] = 0.f;
                continue;
            }
            const bf16_t *row = a.p + (i0 + ip + r) * a.ld + k0;
            for (int64_t k = 0; k < kc; ++k) panel[k * kMR + r] = widen(row[k]);
        }
    }
}

// Packs reduction [k0, k0+kc) x columns [j0, j0+nc) of B, widened to float:
// micro-panels of kNR columns, each [k][column]; columns past nc are zeros.
CONV_TARGET_AVX512 void pack_b(const Bf16Operand &b, int64_t k0, int64_t kc, int64_t j0,
                               int64_t nc, float *out) {
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
        for (int64_t c = 0; c < kNR; ++c) {
            if (c >= cols) {
                for (int64_t k = 0; k < kc; ++k) panel[k * kNR + c] = 0.f;
                continue;
            }
            const bf16_t *col = b.p + (j0 + jp + c) * b.ld + k0;
            for (int64_t k = 0; k < kc; ++k) panel[k * kNR + c] = widen(col[k]);
        }
    }
}

// C tile (rows x cols of kMR x kNR) = or += A panel x B panel over kc.
CONV_TARGET_AVX512 void micro_kernel(const float *a, const float *b, int64_t kc, float *c,
                                     int64_t ldc, int64_t rows, int64_t cols, bool accumulate) {
    __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 14
    for (int r = 0; r < kMR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; ++k) {
        const __m512 b0 = _mm512_load_ps(b + k * kNR), b1 = _mm512_load_ps(b + k * kNR + 16);
        const float *ak = a + k * kMR;
#pragma GCC unroll 14
        for (int r = 0; r < kMR; ++r) {
            const __m512 ar = _mm512_set1_ps(ak[r]);
            c0[r] = _mm512_fmadd_ps(ar, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(ar, b1, c1[r]);
        }
    }
    const __mmask16 m0 = first_lanes(cols), m1 = first_lanes(cols - 16);
    for (int r = 0; r < rows; ++r) {
        float *cr = c + r * ldc;
        __m512 v0 = c0[r], v1 = c1[r];
        if (accumulate) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
        }
        _mm512_mask_storeu_ps(cr, m0, v0);
        _mm512_mask_storeu_ps(cr + 16, m1, v1);
    }
}

// float -> bfloat16 bits, round to nearest, ties to even (NaN stays a quiet
// NaN; subnormals are rounded, not flushed), as comm/half.h's float_to_bf16.
CONV_TARGET_AVX512 inline __m256i round_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

CONV_TARGET_AVX512 inline __m512 widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

}  // namespace

size_t gemm_bf16_pack_bytes() { return kPackA + kPackB; }

void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float *c,
               int64_t ldc, bool accumulate, void *pack) {
    float *pa = static_cast<float *>(pack);
    float *pb = pa + kPackA / 4;
    if (k == 0) {  // an empty reduction: zeros (or C unchanged)
        if (!accumulate)
            for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += kNC) {
        const int64_t nc = std::min(kNC, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += kKC) {
            const int64_t kc = std::min(kKC, k - k0);
            const bool add = accumulate || k0 > 0;
            pack_b(b, k0, kc, j0, nc, pb);
            for (int64_t i0 = 0; i0 < m; i0 += kMC) {
                const int64_t mc = std::min(kMC, m - i0);
                pack_a(a, m, i0, mc, k0, kc, pa);
                for (int64_t jp = 0; jp < nc; jp += kNR)
                    for (int64_t ip = 0; ip < mc; ip += kMR)
                        micro_kernel(pa + ip * kc, pb + jp * kc, kc, c + (i0 + ip) * ldc + j0 + jp,
                                     ldc, std::min(kMR, mc - ip), std::min(kNR, nc - jp), add);
            }
        }
    }
}

CONV_TARGET_AVX512 void store_bf16(const float *c, int64_t ldc, int64_t rows, int64_t cols,
                                        bf16_t *y, int64_t ldy, const bf16_t *bias,
                                        bool bias_per_row, bool relu) {
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
