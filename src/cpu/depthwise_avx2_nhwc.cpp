// Channels-last (NHWC) depthwise 3x3 kernels, fp32, on CPUs with AVX2 and
// FMA but no AVX-512, channel multiplier 1: the AVX2 form of
// depthwise_avx512_nhwc.cpp.
//
// Channels are contiguous, so a ymm holds 8 channels of one pixel and a tap
// is one FMA of the tap's 8 weights with the input pixel's 8 channels: no
// transposes (the channels-first kernels of depthwise_avx2.cpp spend half
// their time on them). Blocks of 4 output pixels along the width are
// computed together, so each input pixel vector loaded feeds the (up to 3)
// outputs whose windows cover it; 4 sums and the 9 taps' weights stay in
// registers (16 ymm: the AVX-512 form's 8-pixel blocks would spill).
// Weights are repacked tap-major (9 x C) once per call. Pixels whose windows
// overhang the image take the same code with per-tap checks. The last
// channel vector, when C is not a multiple of 8, goes through a buffer:
// AVX2 has no load that leaves the lanes past a tensor unread.
//
// Forward (and stride-1 backward-data) takes a block of pixels through all
// channels, 16 at a time (one 64-byte line of each pixel), then 8 and the
// rest: each pixel's channels are read in order, one run of memory, and
// the weights come chunk by chunk from a chunked repack (a chunk's 9 x 16
// one run). Sweeping a row per 16 channels instead read one line of each
// pixel, C floats apart; at stride 2 the prefetchers did not follow it
// (MobileNet's 128-channel 56x56 ran at 3 GFLOP/s at batch 8). Against that
// sweep (Zen 3, 1 thread, 5 alternated rounds, batch 1): MobileNet's stride-2
// layers 1.17-1.33x, stride-1 1.06-1.49x. With the tap-major repack a
// chunk's 9 taps lay C floats apart, in the L1 sets of the pixels' own lines
// where C is a power of two: 512 and 1024 channels lost (0.72-0.79x).
// Backward-filter sweeps a row 16 channels at a time, 8 only for what is
// left: its 9 taps' sums of a chunk stay in registers over a band of rows
// (filter_rows). With C a power of two the pixels' lines for one channel
// block fall into one or two L1 sets, so a line swept for 8 channels was
// gone from L1 by the time the next 8 came back for its other half: 16
// channels at a time measured 1.2-1.7x on MobileNet's 14x14 and 7x7 layers.
// The passes' frame (shapes, repacking, the driver) is depthwise_nhwc.h's.
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/depthwise_avx2.h"
#include "cpu/depthwise_nhwc.h"

namespace conv::cpu {
namespace {

using dw_nhwc::ImageJob;
using dw_nhwc::ImageShape;
using dw_nhwc::kK;
using dw_nhwc::kTaps;
constexpr int kVec = 8;     // channels per ymm
constexpr int kPixels = 4;  // output pixels per block
constexpr int64_t kBandBytes = 192 << 10;  // x and dy rows of a backward-filter band: an L2 share

#if CONV_HAVE_AVX512_KERNELS

// `rest` channels from `at`: a whole vector, or (Tail) the first rest < 8
// through a buffer.
template <bool Tail>
CONV_TARGET_AVX2 inline __m256 load_channels(const float *at, int64_t rest) {
    return Tail ? load_first_avx2(at, rest) : _mm256_loadu_ps(at);
}
template <bool Tail>
CONV_TARGET_AVX2 inline void store_channels(float *at, __m256 v, int64_t rest) {
    if (Tail)
        store_first_avx2(at, v, rest);
    else
        _mm256_storeu_ps(at, v);
}

// P output pixels from (oh, ow0), channels [c0, c0 + rest), with the 9
// taps' weights w and the initial value init of those channels. Edge: some
// window columns may fall outside the row (checked per column).
template <int S, int P, bool Edge, bool Tail>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void pixel_block(
    const ImageShape &p, const ImageJob &job, int64_t oh, int64_t ow0, int64_t c0, int64_t rest,
    const __m256 *w, __m256 init) {
    constexpr int kCols = (P - 1) * S + kK;  // input columns the block reads
    __m256 acc[P];
    for (int i = 0; i < P; ++i) acc[i] = init;
    const int64_t iw0 = ow0 * S - p.pl;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        if (ih < 0 || ih >= p.ih) continue;
        const float *row = job.in + (ih * p.iw + iw0) * p.c + c0;
#pragma GCC unroll 16
        for (int i = 0; i < kCols; ++i) {
            if (Edge && (iw0 + i < 0 || iw0 + i >= p.iw)) continue;
            const __m256 v = load_channels<Tail>(row + i * p.c, rest);
            for (int kw = 0; kw < kK; ++kw) {
                const int d = i - kw;  // = S * (output pixel)
                if (d < 0 || d % S != 0 || d / S >= P) continue;
                acc[d / S] = _mm256_fmadd_ps(w[kh * kK + kw], v, acc[d / S]);
            }
        }
    }
    float *out = job.out + (oh * p.ow + ow0) * p.c + c0;
    const __m256 zero = _mm256_setzero_ps();
    // max(0, v): a NaN stays NaN (the second operand), as epilogue.cpp.
    for (int i = 0; i < P; ++i) store_channels<Tail>(out + i * p.c, job.relu ? _mm256_max_ps(zero, acc[i]) : acc[i], rest);
}

// P output pixels from (oh, ow0), the 16 channels [c0, c0 + 16) (two
// vectors, a whole 64-byte line of each pixel), with wl the chunk's 9 taps
// x 16 weights (contiguous). Edge: window columns checked.
template <int S, int P, bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void pixel_block16(const ImageShape &p, const ImageJob &job,
                                                                          int64_t oh, int64_t ow0, int64_t c0,
                                                                          const float *wl, __m256 init0,
                                                                          __m256 init1) {
    constexpr int kCols = (P - 1) * S + kK;
    __m256 acc0[P], acc1[P];
    for (int i = 0; i < P; ++i) acc0[i] = init0, acc1[i] = init1;
    const int64_t iw0 = ow0 * S - p.pl;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        if (ih < 0 || ih >= p.ih) continue;
        __m256 w0[kK], w1[kK];
        for (int kw = 0; kw < kK; ++kw) {
            w0[kw] = _mm256_loadu_ps(wl + (kh * kK + kw) * 16);
            w1[kw] = _mm256_loadu_ps(wl + (kh * kK + kw) * 16 + 8);
        }
        const float *row = job.in + (ih * p.iw + iw0) * p.c + c0;
#pragma GCC unroll 16
        for (int i = 0; i < kCols; ++i) {
            if (Edge && (iw0 + i < 0 || iw0 + i >= p.iw)) continue;
            const __m256 v0 = _mm256_loadu_ps(row + i * p.c), v1 = _mm256_loadu_ps(row + i * p.c + 8);
            for (int kw = 0; kw < kK; ++kw) {
                const int d = i - kw;
                if (d < 0 || d % S != 0 || d / S >= P) continue;
                acc0[d / S] = _mm256_fmadd_ps(w0[kw], v0, acc0[d / S]);
                acc1[d / S] = _mm256_fmadd_ps(w1[kw], v1, acc1[d / S]);
            }
        }
    }
    float *out = job.out + (oh * p.ow + ow0) * p.c + c0;
    const __m256 zero = _mm256_setzero_ps();
    for (int i = 0; i < P; ++i) {
        _mm256_storeu_ps(out + i * p.c, job.relu ? _mm256_max_ps(zero, acc0[i]) : acc0[i]);
        _mm256_storeu_ps(out + i * p.c + 8, job.relu ? _mm256_max_ps(zero, acc1[i]) : acc1[i]);
    }
}

// The weights and initial values of a channel block narrower than 16 (8
// channels, or the last rest < 8), for pixel blocks through all channels.
struct NarrowBlock {
    __m256 w[kTaps], init;
};
// Channels [c0, c0 + rest) of the last c % 16, whose weights lie
// tap-major after the whole chunks' (chunked_index).
template <bool Tail>
CONV_TARGET_AVX2 inline void narrow_block(const ImageJob &job, int64_t c, int64_t c0, int64_t rest, NarrowBlock &nb) {
    const int64_t whole = c / dw_nhwc::kChunk * dw_nhwc::kChunk;
    const float *w = job.wt + whole * kTaps + (c0 - whole);
    for (int t = 0; t < kTaps; ++t) nb.w[t] = load_channels<Tail>(w + t * (c - whole), rest);
    nb.init = job.bias ? load_channels<Tail>(job.bias + c0, rest) : _mm256_setzero_ps();
}

// P output pixels from (oh, ow) through every channel: 16 at a time (a
// chunk's 9 x 16 weights one run of the chunked repack, from L1), then the
// narrower rest.
template <int S, int P, bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void pixels_all_channels(
    const ImageShape &p, const ImageJob &job, int64_t oh, int64_t ow, const NarrowBlock &eight,
    const NarrowBlock &tail) {
    int64_t c0 = 0;
    for (; c0 + 2 * kVec <= p.c; c0 += 2 * kVec) {
        const __m256 init0 = job.bias ? _mm256_loadu_ps(job.bias + c0) : _mm256_setzero_ps();
        const __m256 init1 = job.bias ? _mm256_loadu_ps(job.bias + c0 + 8) : _mm256_setzero_ps();
        pixel_block16<S, P, Edge>(p, job, oh, ow, c0, job.wt + c0 * kTaps, init0, init1);
    }
    if (c0 + kVec <= p.c) pixel_block<S, P, Edge, false>(p, job, oh, ow, c0, kVec, eight.w, eight.init), c0 += kVec;
    if (c0 < p.c) pixel_block<S, P, Edge, true>(p, job, oh, ow, c0, p.c - c0, tail.w, tail.init);
}

// Output row oh of one image, a block of pixels through all channels at a
// time (see the top of the file).
template <int S>
CONV_TARGET_AVX2 void forward_row(const ImageShape &p, const ImageJob &job, int64_t oh) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    NarrowBlock eight, tail;
    const int64_t c8 = p.c / (2 * kVec) * (2 * kVec);
    if (c8 + kVec <= p.c) narrow_block<false>(job, p.c, c8, kVec, eight);
    const int64_t ct = p.c / kVec * kVec;
    if (ct < p.c) narrow_block<true>(job, p.c, ct, p.c - ct, tail);
    int64_t ow = 0;
    for (; ow < a; ++ow) pixels_all_channels<S, 1, true>(p, job, oh, ow, eight, tail);
    for (; ow + kPixels <= b; ow += kPixels) pixels_all_channels<S, kPixels, false>(p, job, oh, ow, eight, tail);
    for (; ow < b; ++ow) pixels_all_channels<S, 1, false>(p, job, oh, ow, eight, tail);
    for (; ow < p.ow; ++ow) pixels_all_channels<S, 1, true>(p, job, oh, ow, eight, tail);
}

CONV_TARGET_AVX2 void forward_row_any(const ImageShape &p, const ImageJob &job, int64_t oh) {
    if (p.s == 1)
        forward_row<1>(p, job, oh);
    else
        forward_row<2>(p, job, oh);
}

// One dy pixel's products into the 9 tap sums, its window checked against
// the image (rows[kh] null: input row outside).
template <int S, bool Tail>
CONV_TARGET_AVX2 inline void filter_pixel_checked(const ImageShape &p, const float *const *rows, const float *g,
                                                  int64_t ow, int64_t rest, __m256 *acc) {
    const __m256 d = load_channels<Tail>(g + ow * p.c, rest);
    const int64_t iw0 = ow * S - p.pl;
    for (int kh = 0; kh < kK; ++kh) {
        if (!rows[kh]) continue;
        for (int kw = 0; kw < kK; ++kw) {
            if (iw0 + kw < 0 || iw0 + kw >= p.iw) continue;
            const __m256 v = load_channels<Tail>(rows[kh] + (iw0 + kw) * p.c, rest);
            acc[kh * kK + kw] = _mm256_fmadd_ps(d, v, acc[kh * kK + kw]);
        }
    }
}

// dW partial sums of channels [c0, c0 + rest) over output row oh of one
// image: sums[t * tap_stride + ch - c0] += sum over ow of dy[oh][ow][ch] *
// x[...tap t...][ch]. Pixel-major, all taps inside: nine independent sums
// in flight.
template <int S, bool Tail>
CONV_TARGET_AVX2 void filter_channels(const ImageShape &p, const float *x, const float *dy, int64_t oh,
                                      int64_t c0, int64_t rest, float *sums, int64_t tap_stride) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    __m256 acc[kTaps];
    for (int t = 0; t < kTaps; ++t) acc[t] = load_channels<Tail>(sums + t * tap_stride, rest);
    const float *rows[kK];
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        rows[kh] = ih < 0 || ih >= p.ih ? nullptr : x + ih * p.iw * p.c + c0;
    }
    const float *g = dy + oh * p.ow * p.c + c0;
    int64_t ow = 0;
    for (; ow < a; ++ow) filter_pixel_checked<S, Tail>(p, rows, g, ow, rest, acc);
    if (rows[0] && rows[1] && rows[2]) {
        // The window inside the image: 9 FMAs and no checks (the checks per
        // tap, kept in flags, took most of the time).
        for (; ow < b; ++ow) {
            const __m256 d = load_channels<Tail>(g + ow * p.c, rest);
            const int64_t at = (ow * S - p.pl) * p.c;
#pragma GCC unroll 3
            for (int kh = 0; kh < kK; ++kh)
#pragma GCC unroll 3
                for (int kw = 0; kw < kK; ++kw)
                    acc[kh * kK + kw] = _mm256_fmadd_ps(d, load_channels<Tail>(rows[kh] + at + kw * p.c, rest),
                                                        acc[kh * kK + kw]);
        }
    }
    for (; ow < p.ow; ++ow) filter_pixel_checked<S, Tail>(p, rows, g, ow, rest, acc);
    for (int t = 0; t < kTaps; ++t) store_channels<Tail>(sums + t * tap_stride, acc[t], rest);
}

// One dy pixel's products into the sums of 16 channels of R tap rows, of
// which those in Use (a bit per row) lie inside the image (rows[r]: the
// input row of tap row r). Edge: window columns checked.
template <int S, int R, int Use, bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_pixel16(const ImageShape &p,
                                                                           const float *const *rows,
                                                                           const float *g, int64_t ow,
                                                                           __m256 (*acc)[2]) {
    const __m256 d0 = _mm256_loadu_ps(g + ow * p.c), d1 = _mm256_loadu_ps(g + ow * p.c + 8);
    const int64_t iw0 = ow * S - p.pl;
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
        if (!(Use >> r & 1)) continue;
#pragma GCC unroll 3
        for (int kw = 0; kw < kK; ++kw) {
            if (Edge && (iw0 + kw < 0 || iw0 + kw >= p.iw)) continue;
            const float *at = rows[r] + (iw0 + kw) * p.c;
            acc[r * kK + kw][0] = _mm256_fmadd_ps(d0, _mm256_loadu_ps(at), acc[r * kK + kw][0]);
            acc[r * kK + kw][1] = _mm256_fmadd_ps(d1, _mm256_loadu_ps(at + 8), acc[r * kK + kw][1]);
        }
    }
}

// One dy row g along the row, the tap rows in Use.
template <int S, int R, int Use>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_sweep16(const ImageShape &p,
                                                                           const float *const *rows,
                                                                           const float *g, __m256 (*acc)[2]) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    int64_t ow = 0;
    for (; ow < a; ++ow) filter_pixel16<S, R, Use, true>(p, rows, g, ow, acc);
    for (; ow < b; ++ow) filter_pixel16<S, R, Use, false>(p, rows, g, ow, acc);
    for (; ow < p.ow; ++ow) filter_pixel16<S, R, Use, true>(p, rows, g, ow, acc);
}

// The sums of 16 channels [c0, c0 + 16) of R tap rows from K0 (rows 0-1, or
// row 2) over dy rows [oh0, oh1) of one image; `block`: the chunk's 9 x 16
// sums. Their 3R x 2 sums stay in registers over all the rows: the 9 taps'
// 18 do not fit in 16 registers, so the tap rows go in two such passes.
template <int S, int R, int K0>
CONV_TARGET_AVX2 void filter_taps16(const ImageShape &p, const float *x, const float *dy, int64_t oh0, int64_t oh1,
                                    int64_t c0, float *block) {
    __m256 acc[R * kK][2];
    for (int t = 0; t < R * kK; ++t)
        for (int h = 0; h < 2; ++h) acc[t][h] = _mm256_loadu_ps(block + (K0 * kK + t) * 16 + 8 * h);
    for (int64_t oh = oh0; oh < oh1; ++oh) {
        const float *rows[R];
        int use = 0;
        for (int r = 0; r < R; ++r) {
            const int64_t ih = oh * S - p.pt + K0 + r;
            const bool inside = ih >= 0 && ih < p.ih;
            rows[r] = inside ? x + ih * p.iw * p.c + c0 : x;
            use |= inside << r;
        }
        const float *g = dy + oh * p.ow * p.c + c0;
        if (use == (1 << R) - 1)
            filter_sweep16<S, R, (1 << R) - 1>(p, rows, g, acc);
        else if (use & 1)
            filter_sweep16<S, R, 1>(p, rows, g, acc);
        else if (R == 2 && (use & 2))
            filter_sweep16<S, R, 2>(p, rows, g, acc);
    }
    for (int t = 0; t < R * kK; ++t)
        for (int h = 0; h < 2; ++h) _mm256_storeu_ps(block + (K0 * kK + t) * 16 + 8 * h, acc[t][h]);
}

// Rows [r0, r1) of the batch (row r: output row r % oh of image r / oh),
// in bands of rows whose x and dy fit in L2 (kBandBytes): per band, each
// whole 16-channel chunk's tap rows over all the band's rows, then the
// channels left over row by row. The sums lie in dw_nhwc::chunked_index's
// layout, a chunk's 9 x 16 on 9 consecutive lines. Row by row, with the
// sums loaded and stored per row, 7x7 and 14x14 planes ran at half the
// rate of larger ones; and tap-major sums put a chunk's 9 taps C floats
// apart, in one or two L1 sets where C is a power of two.
template <int S>
CONV_TARGET_AVX2 void filter_rows(const ImageShape &p, const float *x, const float *dy, int64_t r0, int64_t r1,
                                  float *sums) {
    const int64_t in_image = p.ih * p.iw * p.c, out_image = p.oh * p.ow * p.c;
    const int64_t whole = p.c / dw_nhwc::kChunk * dw_nhwc::kChunk, left = p.c - whole;
    const int64_t row_bytes = (p.ow + p.iw * S) * p.c * (int64_t)sizeof(float);
    const int64_t band = std::max<int64_t>(1, kBandBytes / std::max<int64_t>(row_bytes, 1));
    float *tail = sums + whole * kTaps;
    for (int64_t r = r0; r < r1;) {
        const int64_t n = r / p.oh, oh0 = r % p.oh, oh1 = std::min({p.oh, oh0 + band, oh0 + r1 - r});
        const float *xi = x + n * in_image, *gi = dy + n * out_image;
        for (int64_t c0 = 0; c0 < whole; c0 += dw_nhwc::kChunk) {
            filter_taps16<S, 2, 0>(p, xi, gi, oh0, oh1, c0, sums + c0 * kTaps);
            filter_taps16<S, 1, 2>(p, xi, gi, oh0, oh1, c0, sums + c0 * kTaps);
        }
        for (int64_t oh = oh0; oh < oh1; ++oh) {
            int64_t c = whole;
            if (c + kVec <= p.c) filter_channels<S, false>(p, xi, gi, oh, c, kVec, tail, left), c += kVec;
            if (c < p.c) filter_channels<S, true>(p, xi, gi, oh, c, p.c - c, tail + (c - whole), left);
        }
        r += oh1 - oh0;
    }
}

CONV_TARGET_AVX2 void filter_rows_any(const ImageShape &p, const float *x, const float *dy, int64_t r0, int64_t r1,
                                      float *sums) {
    if (p.s == 1)
        filter_rows<1>(p, x, dy, r0, r1, sums);
    else
        filter_rows<2>(p, x, dy, r0, r1, sums);
}

// Backward-data at stride 2, dx row ih of one image, channels [c0, c0 +
// rest) (p: the forward shape, wt: the taps tap-major, not flipped).
// dx[ih][iw] gathers dy[oh][ow] through the taps with 2 oh = ih + pt - kh
// and 2 ow = iw + pl - kw: R (1 or 2) rows kh by ih's parity; by iw's, an
// even iw + pl takes columns kw 0 and 2 (ow = m and m - 1), an odd one
// column 1. The R rows' 3 weights each stay in registers (a tap array
// indexed at run time went through memory: 0.12-0.49 of oneDNN).
template <bool Tail, int R>
CONV_TARGET_AVX2 void backward_data_s2_channels(const ImageShape &p, const float *dy, const float *wt,
                                                float *dx, int64_t ih, const int *rows, int64_t c0,
                                                int64_t rest) {
    const int64_t C = p.c, ow = p.ow;
    __m256 w[R][kK];
    const float *g[R];
    for (int r = 0; r < R; ++r) {
        for (int kw = 0; kw < kK; ++kw) w[r][kw] = load_channels<Tail>(wt + (rows[r] * kK + kw) * C + c0, rest);
        g[r] = dy + (ih + p.pt - rows[r]) / 2 * ow * C + c0;
    }
    float *out = dx + ih * p.iw * C + c0;
    for (int64_t iw = 0; iw < p.iw; ++iw) {
        const int64_t t = iw + p.pl;
        __m256 acc = _mm256_setzero_ps();
        if ((t & 1) == 0) {
            const int64_t m = t >> 1;
            const bool first = m >= 0 && m < ow, second = m >= 1 && m - 1 < ow;
#pragma GCC unroll 2
            for (int r = 0; r < R; ++r) {
                if (first) acc = _mm256_fmadd_ps(w[r][0], load_channels<Tail>(g[r] + m * C, rest), acc);
                if (second) acc = _mm256_fmadd_ps(w[r][2], load_channels<Tail>(g[r] + (m - 1) * C, rest), acc);
            }
        } else {
            const int64_t m = (t - 1) >> 1;
            if (m >= 0 && m < ow)
#pragma GCC unroll 2
                for (int r = 0; r < R; ++r)
                    acc = _mm256_fmadd_ps(w[r][1], load_channels<Tail>(g[r] + m * C, rest), acc);
        }
        store_channels<Tail>(out + iw * C, acc, rest);
    }
}

template <int R>
CONV_TARGET_AVX2 void backward_data_s2_rows(const ImageShape &p, const float *dy, const float *wt, float *dx,
                                            int64_t ih, const int *rows) {
    int64_t c0 = 0;
    for (; c0 + kVec <= p.c; c0 += kVec) backward_data_s2_channels<false, R>(p, dy, wt, dx, ih, rows, c0, kVec);
    if (c0 < p.c) backward_data_s2_channels<true, R>(p, dy, wt, dx, ih, rows, c0, p.c - c0);
}

CONV_TARGET_AVX2 void backward_data_s2_row(const ImageShape &p, const float *dy, const float *wt, float *dx,
                                           int64_t ih) {
    int rows[2], row_count = 0;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t twice = ih + p.pt - kh;
        if (twice >= 0 && twice % 2 == 0 && twice / 2 < p.oh) rows[row_count++] = kh;
    }
    if (row_count == 2)
        backward_data_s2_rows<2>(p, dy, wt, dx, ih, rows);
    else if (row_count == 1)
        backward_data_s2_rows<1>(p, dy, wt, dx, ih, rows);
    else  // no dy row reaches it: zeros
        std::fill(dx + ih * p.iw * p.c, dx + (ih + 1) * p.iw * p.c, 0.0f);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_avx2_nhwc_covers(const ConvGeometry &g, conv_op_t) { return g.groups == g.c && dw_nhwc::covers(g); }

size_t dw_avx2_nhwc_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    return dw_nhwc::workspace_bytes(g, op, threads);
}

void dw_avx2_nhwc_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    dw_nhwc::run(a, ws, pool, threads, {forward_row_any, filter_rows_any, backward_data_s2_row, true});
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
