// The backward-filter row sweep the channels-last depthwise kernels that
// read windows from padded rows share (depthwise_avx512_ring.cpp's ring rows,
// depthwise_avx512_nhwc_tile.cpp's tile rows): a 16-channel block's nine tap
// sums over one dy row.
#pragma once

#include <cstdint>

#include "cpu/avx512.h"
#include "cpu/depthwise_nhwc.h"

namespace conv::cpu::dw_nhwc {

#if CONV_HAVE_AVX512_KERNELS

// acc[kh * 3 + kw] += sum over ow of dy[ow] * x[padded column ow * S + kw of
// row kh]: `in` are the window rows' first columns (16 floats a column),
// `dy` the dy row's first pixel of the block (pixels c floats apart, lanes
// cm). Nine sums in flight, and each row's columns slide: the window's last
// column is the next one's first (stride 2) or its first two (stride 1), so
// a step loads 3 (6) columns.
template <int S>
CONV_TARGET_AVX512 inline void filter_row(const float *const (&in)[kK], const float *dy, int64_t ow, int64_t c,
                                          __mmask16 cm, __m512 (&acc)[kTaps]) {
    constexpr int kVec = 16;
    if (ow <= 0) return;
    __m512 a[kTaps], first[kK], second[kK];
    for (int t = 0; t < kTaps; ++t) a[t] = acc[t];
    for (int kh = 0; kh < kK; ++kh) {
        first[kh] = _mm512_loadu_ps(in[kh]);
        if (S == 1) second[kh] = _mm512_loadu_ps(in[kh] + kVec);
    }
    for (int64_t o = 0; o < ow; ++o) {
        const __m512 d = _mm512_maskz_loadu_ps(cm, dy + o * c);
        for (int kh = 0; kh < kK; ++kh) {
            const float *at = in[kh] + o * S * kVec;
            const __m512 x0 = first[kh];
            const __m512 x1 = S == 1 ? second[kh] : _mm512_loadu_ps(at + kVec);
            const __m512 x2 = _mm512_loadu_ps(at + 2 * kVec);
            a[kh * kK] = _mm512_fmadd_ps(d, x0, a[kh * kK]);
            a[kh * kK + 1] = _mm512_fmadd_ps(d, x1, a[kh * kK + 1]);
            a[kh * kK + 2] = _mm512_fmadd_ps(d, x2, a[kh * kK + 2]);
            if (S == 1)
                first[kh] = x1, second[kh] = x2;
            else
                first[kh] = x2;
        }
    }
    for (int t = 0; t < kTaps; ++t) acc[t] = a[t];
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace conv::cpu::dw_nhwc
