// The copy of x into rows each tap reads as they lie (tap_rows.h).
#include "cpu/tap_rows.h"

#include <cstring>

#include "core/checked.h"
#include "cpu/avx512.h"

namespace conv::cpu {

int64_t TapRows::column_at(int64_t j) const {
    const int64_t tc = j % kw, tr = j / kw % kh, ch = j / (kw * kh);
    const int64_t lane = sw == 1 ? tc : tc * dw % 2, shift = sw == 1 ? 0 : tc * dw / 2;
    return ((ch * lanes + lane) * xrows + tr * dh) * xpitch + shift;
}

TapRows make_tap_rows(const ConvGeometry &g, int64_t band_rows) {
    TapRows t{};
    t.c = g.c, t.h = g.in[1], t.w = g.in[2], t.ow = g.out[2];
    t.kh = g.kernel[1], t.kw = g.kernel[2];
    t.sh = g.stride[1], t.sw = g.stride[2], t.dh = g.dilation[1], t.dw = g.dilation[2];
    t.pt = g.pad_begin[1], t.pl = g.pad_begin[2];
    t.xrows = (band_rows - 1) * t.sh + (t.kh - 1) * t.dh + 1;
    t.vecs = ceil_div(t.ow, (int64_t)16);
    // A phase row holds the columns its taps read, ow + (kw - 1) * dw / 2,
    // in whole vectors (its rows then stay aligned).
    t.lanes = t.sw == 1 ? t.kw : 2;
    t.xpitch = t.sw == 1 ? t.ow : round_up(t.ow + (t.kw - 1) * t.dw / 2, (int64_t)16);
    t.xvecs = t.xpitch / 16;
    return t;
}

#if CONV_HAVE_AVX512_KERNELS

namespace {

// dst[o] = row[o + off] for o in [0, ow), zero where o + off is outside
// [0, w): what tap column tc (off = tc * dw - pl) reads along an output
// row. Masked loads: never outside x's row, the zeros for free.
CONV_TARGET_AVX512 inline void copy_tap_row(const TapRows &t, const float *row, int64_t off, const uint16_t *masks,
                                            float *dst) {
    const __mmask16 tail = first_lanes(t.ow - (t.vecs - 1) * 16);
    for (int64_t v = 0; v < t.vecs; ++v) {
        const __m512 a = _mm512_maskz_loadu_ps(masks[v], row + v * 16 + off);
        _mm512_mask_storeu_ps(dst + v * 16, v + 1 < t.vecs ? (__mmask16)0xFFFF : tail, a);
    }
}

// Column stride 2: even[j] = row[2 j - pl], odd[j] = row[2 j + 1 - pl] for
// j in [0, xpitch), zero outside [0, w).
CONV_TARGET_AVX512 inline void copy_phase_rows(const TapRows &t, const float *row, const uint16_t *masks,
                                               float *even, float *odd) {
    for (int64_t v = 0; v < t.xvecs; ++v) {
        const float *at = row + v * 32 - t.pl;
        const __m512 a = _mm512_maskz_loadu_ps(masks[2 * v], at);
        const __m512 b = _mm512_maskz_loadu_ps(masks[2 * v + 1], at + 16);
        _mm512_store_ps(even + v * 16, _mm512_permutex2var_ps(a, even_lanes(), b));
        _mm512_store_ps(odd + v * 16, _mm512_permutex2var_ps(a, odd_lanes(), b));
    }
}

}  // namespace

// The lanes of x's row that the copy's loads keep (those inside [0, w),
// the rest zeros). Column stride 1: vector v of tap column tc's row loads
// the 16 floats from v * 16 + tc * dw - pl. Stride 2: vector v of the phase
// rows is made of the 32 floats from v * 32 - pl, two masks.
void fill_tap_masks(const TapRows &t, uint16_t *masks) {
    if (t.sw == 1) {
        for (int64_t tc = 0; tc < t.kw; ++tc)
            for (int64_t v = 0; v < t.vecs; ++v) {
                const int64_t at = v * 16 + tc * t.dw - t.pl;
                masks[tc * t.vecs + v] = lane_range(-at, t.w - at);
            }
        return;
    }
    for (int64_t v = 0; v < t.xvecs; ++v) {
        const int64_t at = v * 32 - t.pl;
        masks[2 * v] = lane_range(-at, t.w - at);
        masks[2 * v + 1] = lane_range(-at - 16, t.w - at - 16);
    }
}

CONV_TARGET_AVX512 void copy_tap_rows(const TapRows &t, const float *x, int64_t n, int64_t r0, int64_t r1,
                                      const uint16_t *masks, float *out) {
    const int64_t rows = (r1 - r0 - 1) * t.sh + (t.kh - 1) * t.dh + 1;
    for (int64_t c = 0; c < t.c; ++c)
        for (int64_t i = 0; i < rows; ++i) {
            const int64_t src = r0 * t.sh + i - t.pt;
            const bool inside = src >= 0 && src < t.h;
            const float *row = inside ? x + ((n * t.c + c) * t.h + src) * t.w : nullptr;
            for (int64_t lane = 0; lane < t.lanes; ++lane) {
                float *dst = out + ((c * t.lanes + lane) * t.xrows + i) * t.xpitch;
                if (!inside)
                    std::memset(dst, 0, (size_t)t.xpitch * sizeof(float));
                else if (t.sw == 1)
                    copy_tap_row(t, row, lane * t.dw - t.pl, masks + lane * t.vecs, dst);
                else if (lane == 0)
                    copy_phase_rows(t, row, masks, dst, dst + t.xrows * t.xpitch);
            }
        }
}

#else

void fill_tap_masks(const TapRows &, uint16_t *) {}
void copy_tap_rows(const TapRows &, const float *, int64_t, int64_t, int64_t, const uint16_t *, float *) {}

#endif

}  // namespace conv::cpu
