// Channels-last (NHWC) depthwise 3x3 kernels, fp32, AVX-512, channel
// multiplier 1.
//
// Channels are contiguous, so a zmm holds 16 channels of one pixel and
// needs no shuffles: a tap is one FMA of the tap's 16 weights with the
// input pixel's 16 channels. Blocks of up to 8 output pixels along the width
// are computed together so each input pixel vector loaded feeds the (up to
// 3) outputs whose windows cover it. Weights are repacked tap-major (9 x C)
// once per call so a tap's weights for 16 channels are one load. Pixels
// whose windows overhang the image take the same code with per-tap checks.
// The passes' frame (shapes, repacking, the driver) is depthwise_nhwc.h's.
// Passes over many channels go to depthwise_avx512_ring.cpp instead.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_nhwc.h"

namespace conv::cpu {
namespace {

using dw_nhwc::ImageJob;
using dw_nhwc::ImageShape;
using dw_nhwc::kK;
using dw_nhwc::kTaps;
constexpr int kVec = 16;   // channels per zmm
constexpr int kPixels = 8;  // output pixels per block

#if CONV_HAVE_AVX512_KERNELS

// P output pixels from (oh, ow0), channels [c0, c0 + 16) under mask cm,
// with the 9 taps' weights w and the initial value init of those channels.
// Edge: some window columns may fall outside the row (checked per column).
template <int S, int P, bool Edge>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void pixel_block(
    const ImageShape &p, const ImageJob &job, int64_t oh, int64_t ow0, int64_t c0, __mmask16 cm,
    const __m512 *w, __m512 init) {
    constexpr int kCols = (P - 1) * S + kK;  // input columns the block reads
    __m512 acc[P];
    for (int i = 0; i < P; ++i) acc[i] = init;
    const int64_t iw0 = ow0 * S - p.pl;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        if (ih < 0 || ih >= p.ih) continue;
        const float *row = job.in + (ih * p.iw + iw0) * p.c + c0;
#pragma GCC unroll 32
        for (int i = 0; i < kCols; ++i) {
            if (Edge && (iw0 + i < 0 || iw0 + i >= p.iw)) continue;
            const __m512 v = _mm512_maskz_loadu_ps(cm, row + i * p.c);
            for (int kw = 0; kw < kK; ++kw) {
                const int d = i - kw;  // = S * (output pixel)
                if (d < 0 || d % S != 0 || d / S >= P) continue;
                acc[d / S] = _mm512_fmadd_ps(w[kh * kK + kw], v, acc[d / S]);
            }
        }
    }
    float *out = job.out + (oh * p.ow + ow0) * p.c + c0;
    const __m512 zero = _mm512_setzero_ps();
    for (int i = 0; i < P; ++i)
        _mm512_mask_storeu_ps(out + i * p.c, cm, job.relu ? _mm512_max_ps(zero, acc[i]) : acc[i]);
}

// Loads a 16-channel block's 9 taps' weights and initial value (the bias
// or zero) from c0 on; returns its lanes.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __mmask16 load_block(const ImageShape &p,
                                                                              const ImageJob &job, int64_t c0,
                                                                              __m512 (&w)[kTaps], __m512 &init) {
    const __mmask16 cm = first_lanes(p.c - c0);
    for (int t = 0; t < kTaps; ++t) w[t] = _mm512_maskz_loadu_ps(cm, job.wt + t * p.c + c0);
    init = job.bias ? _mm512_maskz_loadu_ps(cm, job.bias + c0) : _mm512_setzero_ps();
    return cm;
}

// P output pixels from (oh, ow0) in every channel, 16 at a time: the
// window's pixels are read whole (C floats in a run).
template <int S, int P, bool Edge>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void pixels_all_channels(const ImageShape &p,
                                                                                  const ImageJob &job, int64_t oh,
                                                                                  int64_t ow0) {
    for (int64_t c0 = 0; c0 < p.c; c0 += kVec) {
        __m512 w[kTaps], init;
        const __mmask16 cm = load_block(p, job, c0, w, init);
        pixel_block<S, P, Edge>(p, job, oh, ow0, c0, cm, w, init);
    }
}

// Output row oh of one image, swept in blocks of 8, 4 and 1 pixels. On
// wide rows each block goes through all channels before the next: the
// window's pixels are read as runs of memory in order, where a 16-channel
// block's sweep read lines C floats apart that the prefetchers did not
// follow (MobileNet's 112x112 and 56x56 layers 1.05-1.3x). Short rows
// sweep a 16-channel block at a time with its weights kept in registers
// (its 7-wide stride-2 forward lost 15% the other way).
constexpr int64_t kWideRow = 16;  // output pixels

template <int S>
CONV_TARGET_AVX512 void forward_row(const ImageShape &p, const ImageJob &job, int64_t oh) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    if (p.ow >= kWideRow) {
        int64_t ow = 0;
        for (; ow < a; ++ow) pixels_all_channels<S, 1, true>(p, job, oh, ow);
        for (; ow + kPixels <= b; ow += kPixels) pixels_all_channels<S, kPixels, false>(p, job, oh, ow);
        if (ow + 4 <= b) {
            pixels_all_channels<S, 4, false>(p, job, oh, ow);
            ow += 4;
        }
        for (; ow < b; ++ow) pixels_all_channels<S, 1, false>(p, job, oh, ow);
        for (; ow < p.ow; ++ow) pixels_all_channels<S, 1, true>(p, job, oh, ow);
        return;
    }
    for (int64_t c0 = 0; c0 < p.c; c0 += kVec) {
        __m512 w[kTaps], init;
        const __mmask16 cm = load_block(p, job, c0, w, init);
        int64_t ow = 0;
        for (; ow < a; ++ow) pixel_block<S, 1, true>(p, job, oh, ow, c0, cm, w, init);
        for (; ow + kPixels <= b; ow += kPixels) pixel_block<S, kPixels, false>(p, job, oh, ow, c0, cm, w, init);
        if (ow + 4 <= b) {
            pixel_block<S, 4, false>(p, job, oh, ow, c0, cm, w, init);
            ow += 4;
        }
        for (; ow < b; ++ow) pixel_block<S, 1, false>(p, job, oh, ow, c0, cm, w, init);
        for (; ow < p.ow; ++ow) pixel_block<S, 1, true>(p, job, oh, ow, c0, cm, w, init);
    }
}

CONV_TARGET_AVX512 void forward_row_any(const ImageShape &p, const ImageJob &job, int64_t oh) {
    if (p.s == 1)
        forward_row<1>(p, job, oh);
    else
        forward_row<2>(p, job, oh);
}

// dW partial sums over output pixels [ow0, ow0 + P) of row oh of one image,
// every channel, 16 at a time (the wide rows' order, as forward_row's):
// sums[t * c + ch] += dy[oh][ow][ch] * x[...tap t...][ch]. `rows`: the
// window's input rows (null outside the image).
template <int S, int P, bool Edge>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void filter_pixels(const ImageShape &p,
                                                                            const float *const (&rows)[kK],
                                                                            const float *dy, int64_t ow0,
                                                                            float *sums) {
    for (int64_t c0 = 0; c0 < p.c; c0 += kVec) {
        const __mmask16 cm = first_lanes(p.c - c0);
        __m512 acc[kTaps];
        for (int t = 0; t < kTaps; ++t) acc[t] = _mm512_maskz_loadu_ps(cm, sums + t * p.c + c0);
        __m512 d[P];
        for (int o = 0; o < P; ++o) d[o] = _mm512_maskz_loadu_ps(cm, dy + (ow0 + o) * p.c + c0);
        // Each input column once: column i meets pixel o through tap i - o * S.
        constexpr int kCols = (P - 1) * S + kK;
        const int64_t iw0 = ow0 * S - p.pl;
        for (int kh = 0; kh < kK; ++kh) {
            if (!rows[kh]) continue;
#pragma GCC unroll 32
            for (int i = 0; i < kCols; ++i) {
                if (Edge && (iw0 + i < 0 || iw0 + i >= p.iw)) continue;
                const __m512 v = _mm512_maskz_loadu_ps(cm, rows[kh] + (iw0 + i) * p.c + c0);
                for (int kw = 0; kw < kK; ++kw) {
                    const int e = i - kw;  // = S * (output pixel)
                    if (e < 0 || e % S != 0 || e / S >= P) continue;
                    acc[kh * kK + kw] = _mm512_fmadd_ps(d[e / S], v, acc[kh * kK + kw]);
                }
            }
        }
        for (int t = 0; t < kTaps; ++t) _mm512_mask_storeu_ps(sums + t * p.c + c0, cm, acc[t]);
    }
}

// dW partial sums over output row oh of one image. Wide rows go a block of
// pixels through all channels at a time (forward_row's reason: 1.xx on
// MobileNet's 112x112 and 56x56 layers); short ones a 16-channel block
// along the row, pixel-major with all taps inside: nine independent sums
// in flight (tap-major would chain each sum's FMAs along the row).
template <int S>
CONV_TARGET_AVX512 void filter_row(const ImageShape &p, const float *x, const float *dy,
                                   int64_t oh, float *sums) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    const float *rows[kK];
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        rows[kh] = ih < 0 || ih >= p.ih ? nullptr : x + ih * p.iw * p.c;
    }
    const float *g = dy + oh * p.ow * p.c;
    if (p.ow >= kWideRow) {
        int64_t ow = 0;
        for (; ow < a; ++ow) filter_pixels<S, 1, true>(p, rows, g, ow, sums);
        for (; ow + kPixels <= b; ow += kPixels) filter_pixels<S, kPixels, false>(p, rows, g, ow, sums);
        for (; ow < b; ++ow) filter_pixels<S, 1, false>(p, rows, g, ow, sums);
        for (; ow < p.ow; ++ow) filter_pixels<S, 1, true>(p, rows, g, ow, sums);
        return;
    }
    for (int64_t c0 = 0; c0 < p.c; c0 += kVec) {
        const __mmask16 cm = first_lanes(p.c - c0);
        __m512 acc[kTaps];
        for (int t = 0; t < kTaps; ++t) acc[t] = _mm512_maskz_loadu_ps(cm, sums + t * p.c + c0);
        for (int64_t ow = 0; ow < p.ow; ++ow) {
            const __m512 d = _mm512_maskz_loadu_ps(cm, g + ow * p.c + c0);
            const int64_t iw0 = ow * S - p.pl;
            const bool inner = ow >= a && ow < b;
            for (int kh = 0; kh < kK; ++kh) {
                if (!rows[kh]) continue;
                for (int kw = 0; kw < kK; ++kw) {
                    if (!inner && (iw0 + kw < 0 || iw0 + kw >= p.iw)) continue;
                    const __m512 v = _mm512_maskz_loadu_ps(cm, rows[kh] + (iw0 + kw) * p.c + c0);
                    acc[kh * kK + kw] = _mm512_fmadd_ps(d, v, acc[kh * kK + kw]);
                }
            }
        }
        for (int t = 0; t < kTaps; ++t) _mm512_mask_storeu_ps(sums + t * p.c + c0, cm, acc[t]);
    }
}

// Rows [r0, r1) of the batch, one at a time.
CONV_TARGET_AVX512 void filter_rows_any(const ImageShape &p, const float *x, const float *dy, int64_t r0,
                                        int64_t r1, float *sums) {
    const int64_t in_image = p.ih * p.iw * p.c, out_image = p.oh * p.ow * p.c;
    for (int64_t r = r0; r < r1; ++r) {
        const float *xi = x + r / p.oh * in_image, *gi = dy + r / p.oh * out_image;
        if (p.s == 1)
            filter_row<1>(p, xi, gi, r % p.oh, sums);
        else
            filter_row<2>(p, xi, gi, r % p.oh, sums);
    }
}

constexpr int64_t kS2Pixels = 8;                // dx pixels a block (backward_data_s2_row)
constexpr double kS2ResidentBytes = 2 << 20;   // an image's dx and dy within a core's L2

// Backward-data at stride 2, dx row ih of one image (p: the forward shape,
// wt: the taps tap-major, not flipped). dx[ih][iw] gathers dy[oh][ow]
// through the taps with 2 oh = ih + pt - kh and 2 ow = iw + pl - kw: one or
// two rows kh by ih's parity, one or two columns kw by iw's.
CONV_TARGET_AVX512 void backward_data_s2_row(const ImageShape &p, const float *dy, const float *wt,
                                             float *dx, int64_t ih) {
    int rows[2], row_count = 0;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t twice = ih + p.pt - kh;
        if (twice >= 0 && twice % 2 == 0 && twice / 2 < p.oh) rows[row_count++] = kh;
    }
    // 64-127 channels on an image past L2: blocks of kS2Pixels dx pixels
    // through all channels (forward_row's reason), the taps' weights
    // reloaded per block; else each 16 channels along the row. 1 thread, 3
    // alternated rounds: MobileNet's 64-channel 112x112 1.29x (2 threads
    // 1.18x); 32 channels (a pixel two lines) 0.93-0.97x, 96 channels on a
    // 56x56 image within L2 0.94x, 256 channels 0.95-1.00x (more weight
    // reloads a block).
    const bool blocks = p.c >= 64 && p.c < 128 &&
                        4.0 * (double)p.c * (double)(p.ih * p.iw + p.oh * p.ow) > kS2ResidentBytes;
    const int64_t block = blocks ? kS2Pixels : p.iw;
    for (int64_t b0 = 0; b0 < p.iw; b0 += block) {
        const int64_t b1 = std::min(p.iw, b0 + block);
        for (int64_t c0 = 0; c0 < p.c; c0 += kVec) {
            const __mmask16 cm = first_lanes(p.c - c0);
            __m512 w[kTaps];
            for (int t = 0; t < kTaps; ++t) w[t] = _mm512_maskz_loadu_ps(cm, wt + t * p.c + c0);
            for (int64_t iw = b0; iw < b1; ++iw) {
                __m512 acc = _mm512_setzero_ps();
                for (int i = 0; i < row_count; ++i) {
                    const int kh = rows[i];
                    const float *g = dy + (ih + p.pt - kh) / 2 * p.ow * p.c + c0;
                    for (int kw = (int)((iw + p.pl) & 1); kw < kK; kw += 2) {
                        const int64_t twice = iw + p.pl - kw;
                        if (twice < 0 || twice / 2 >= p.ow) continue;
                        acc = _mm512_fmadd_ps(w[kh * kK + kw], _mm512_maskz_loadu_ps(cm, g + twice / 2 * p.c), acc);
                    }
                }
                _mm512_mask_storeu_ps(dx + (ih * p.iw + iw) * p.c + c0, cm, acc);
            }
        }
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

#if CONV_HAVE_AVX512_KERNELS
// dw_nhwc::repack by 16 channels a gather: its scalar transpose of 9 x C
// was 10% of a 512-channel 14x14 forward.
CONV_TARGET_AVX512 void dw_repack_taps_avx512(const float *w, int64_t c, bool flip, float *wt) {
    const __m512i apart = lanes_apart(kTaps);
    const int64_t whole = c / kVec * kVec;
    for (int t = 0; t < kTaps; ++t) {
        float *to = wt + (flip ? kTaps - 1 - t : t) * c;
        for (int64_t ch = 0; ch < whole; ch += kVec)
            _mm512_storeu_ps(to + ch, _mm512_i32gather_ps(apart, w + ch * kTaps + t, 4));
        for (int64_t ch = whole; ch < c; ++ch) to[ch] = w[ch * kTaps + t];
    }
}
#endif

bool dw_nhwc_covers(const ConvGeometry &g, conv_op_t) { return dw_nhwc::covers(g); }

size_t dw_nhwc_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    if (dw_nhwc_tile_covers(g, op)) return dw_nhwc_tile_workspace_bytes(g, op, threads);
    if (dw_ring_covers(g, op, threads)) return dw_ring_workspace_bytes(g, op, threads);
    return dw_nhwc::workspace_bytes(g, op, threads);
}

void dw_nhwc_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
    if (dw_nhwc_tile_covers(*a.g, a.op)) return dw_nhwc_tile_run(a, ws, pool, threads);
    if (dw_ring_covers(*a.g, a.op, threads)) return dw_ring_run(a, ws, pool, threads);
#if CONV_HAVE_AVX512_KERNELS
    dw_nhwc::run(a, ws, pool, threads, {forward_row_any, filter_rows_any, backward_data_s2_row, false, dw_repack_taps_avx512});
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
