#include "cpu/bf16_gemm.h"

#include <algorithm>
#include <cstring>

#include "cpu/avx512.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMR = 14;    // rows of a micro-tile: 28 accumulators + 2 B vectors + 1
constexpr int64_t kNR = 32;    // columns of a micro-tile: two vectors of 16 floats
constexpr int64_t kKC = 384;   // reduction elements per packed block: a B panel is 24 KiB (L1)
constexpr int64_t kMC = 8 * kMR;   // rows per packed A block (L2)
constexpr int64_t kNC = 16 * kNR;  // columns per packed B block (L2)

constexpr size_t kPackA = (size_t)kMC * kKC * 2;  // bytes
constexpr size_t kPackB = (size_t)kNC * kKC * 2;

// Element (r, c) of an operand, 0 outside [0, rows) x [0, cols).
inline uint32_t at(const Bf16Operand &o, int64_t r, int64_t c) {
    return o.trans ? o.p[c * o.ld + r] : o.p[r * o.ld + c];
}

// Packs rows [i0, i0+mc) x reduction [k0, k0+kc) of A: micro-panels of kMR
// rows, each [pair][row] with the pair's two elements in one 32-bit word;
// rows past m and the odd element past kc are zeros.
void pack_a(const Bf16Operand &a, int64_t m, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
            uint32_t *out) {
    const int64_t kp = (kc + 1) / 2;
    for (int64_t ip = 0; ip < mc; ip += kMR) {
        uint32_t *panel = out + ip * kp;
        for (int64_t r = 0; r < kMR; ++r) {
            int64_t i = i0 + ip + r;
            if (ip + r >= mc || i >= m) {
                for (int64_t q = 0; q < kp; ++q) panel[q * kMR + r] = 0;
                continue;
            }
            if (!a.trans) {  // the pair is adjacent in memory
                const bf16_t *row = a.p + i * a.ld + k0;
                for (int64_t q = 0; q < kc / 2; ++q) {
                    uint32_t w;
                    std::memcpy(&w, row + 2 * q, 4);
                    panel[q * kMR + r] = w;
                }
            } else {
                for (int64_t q = 0; q < kc / 2; ++q)
                    panel[q * kMR + r] = at(a, i, k0 + 2 * q) | at(a, i, k0 + 2 * q + 1) << 16;
            }
            if (kc % 2) panel[(kp - 1) * kMR + r] = at(a, i, k0 + kc - 1);
        }
    }
}

// Packs reduction [k0, k0+kc) x columns [j0, j0+nc) of B: micro-panels of
// kNR columns, each [pair][column].
CONV_TARGET_AVX512_BF16 void pack_b(const Bf16Operand &b, int64_t k0, int64_t kc, int64_t j0,
                                    int64_t nc, uint32_t *out) {
    const int64_t kp = (kc + 1) / 2;
    for (int64_t jp = 0; jp < nc; jp += kNR) {
        uint32_t *panel = out + jp * kp;
        const int64_t cols = std::min(kNR, nc - jp);
        if (!b.trans) {
            // Two rows interleaved element by element: vpermt2w.
            const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41,
                                                9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2,
                                                33, 1, 32, 0);
            const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
            const __mmask32 mask = cols == 32 ? ~(__mmask32)0 : (((__mmask32)1 << cols) - 1);
            for (int64_t q = 0; q < kp; ++q) {
                const bf16_t *r0 = b.p + (k0 + 2 * q) * b.ld + j0 + jp;
                __m512i v0 = _mm512_maskz_loadu_epi16(mask, r0);
                __m512i v1 = 2 * q + 1 < kc ? _mm512_maskz_loadu_epi16(mask, r0 + b.ld)
                                            : _mm512_setzero_si512();
                _mm512_store_si512(panel + q * kNR, _mm512_permutex2var_epi16(v0, lo, v1));
                _mm512_store_si512(panel + q * kNR + 16, _mm512_permutex2var_epi16(v0, hi, v1));
            }
            continue;
        }
        // B(k, j) = p[j * ld + k]: the pair is adjacent in memory.
        for (int64_t c = 0; c < kNR; ++c) {
            if (c >= cols) {
                for (int64_t q = 0; q < kp; ++q) panel[q * kNR + c] = 0;
                continue;
            }
            const bf16_t *col = b.p + (j0 + jp + c) * b.ld + k0;
            for (int64_t q = 0; q < kc / 2; ++q) {
                uint32_t w;
                std::memcpy(&w, col + 2 * q, 4);
                panel[q * kNR + c] = w;
            }
            if (kc % 2) panel[(kp - 1) * kNR + c] = col[kc - 1];
        }
    }
}

// C tile (rows x cols of kMR x kNR) = or += A panel x B panel over kp pairs.
CONV_TARGET_AVX512_BF16 void micro_kernel(const uint32_t *a, const uint32_t *b, int64_t kp,
                                          float *c, int64_t ldc, int64_t rows, int64_t cols,
                                          bool accumulate) {
    __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 14
    for (int r = 0; r < kMR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t q = 0; q < kp; ++q) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b + q * kNR);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(b + q * kNR + 16);
        const uint32_t *aq = a + q * kMR;
#pragma GCC unroll 14
        for (int r = 0; r < kMR; ++r) {
            const __m512bh ar = (__m512bh)_mm512_set1_epi32((int)aq[r]);
            c0[r] = _mm512_dpbf16_ps(c0[r], ar, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], ar, b1);
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
CONV_TARGET_AVX512_BF16 inline __m256i round_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

CONV_TARGET_AVX512_BF16 inline __m512 widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

}  // namespace

size_t gemm_bf16_pack_bytes() { return kPackA + kPackB; }

void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float *c,
               int64_t ldc, bool accumulate, void *pack) {
    uint32_t *pa = static_cast<uint32_t *>(pack);
    uint32_t *pb = pa + kPackA / 4;
    if (k == 0) {  // an empty reduction: zeros (or C unchanged)
        if (!accumulate)
            for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += kNC) {
        const int64_t nc = std::min(kNC, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += kKC) {
            const int64_t kc = std::min(kKC, k - k0), kp = (kc + 1) / 2;
            const bool add = accumulate || k0 > 0;
            pack_b(b, k0, kc, j0, nc, pb);
            for (int64_t i0 = 0; i0 < m; i0 += kMC) {
                const int64_t mc = std::min(kMC, m - i0);
                pack_a(a, m, i0, mc, k0, kc, pa);
                for (int64_t jp = 0; jp < nc; jp += kNR)
                    for (int64_t ip = 0; ip < mc; ip += kMR)
                        micro_kernel(pa + ip * kp, pb + jp * kp, kp, c + (i0 + ip) * ldc + j0 + jp,
                                     ldc, std::min(kMR, mc - ip), std::min(kNR, nc - jp), add);
            }
        }
    }
}

CONV_TARGET_AVX512_BF16 void store_bf16(const float *c, int64_t ldc, int64_t rows, int64_t cols,
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
