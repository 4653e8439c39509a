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
// Backward-data at stride 1 is the forward pass over dy with the flipped
// window (padding 3 - 1 - pad); at stride 2 each dx pixel gathers its one
// to four taps. Backward-filter keeps each thread's partial 9 x C sums in
// its scratch and adds them up at the end, as the AVX-512 form does.
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/depthwise_avx2.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3, kTaps = kK * kK;
constexpr int kVec = 8;     // channels per ymm
constexpr int kPixels = 4;  // output pixels per block

// out[oh][ow][c] = init[c] + sum w[kh][kw][c] * in[oh*s - pt + kh][ow*s - pl + kw][c]
struct ImageShape {
    int64_t ih, iw, oh, ow, pt, pl, c;
    int s;
    // Output columns whose whole window lies inside the input row.
    int64_t inner_begin() const { return std::min(ow, ceil_div(std::max<int64_t>(pl, 0), s)); }
    int64_t inner_end() const {
        int64_t e = iw - kK + pl < 0 ? 0 : floor_div(iw - kK + pl, s) + 1;
        return std::clamp(e, inner_begin(), ow);
    }
};

struct ImageJob {
    const float *in;    // one image
    float *out;         // one image
    const float *wt;    // kTaps x c, tap-major
    const float *bias;  // c values or null
    bool relu;
};

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

// Output row oh of one image, channels [c0, c0 + rest): their weights
// loaded once, the row swept in blocks of 4 and 1 pixels.
template <int S, bool Tail>
CONV_TARGET_AVX2 void forward_channels(const ImageShape &p, const ImageJob &job, int64_t oh, int64_t c0,
                                       int64_t rest) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    __m256 w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = load_channels<Tail>(job.wt + t * p.c + c0, rest);
    const __m256 init = job.bias ? load_channels<Tail>(job.bias + c0, rest) : _mm256_setzero_ps();
    int64_t ow = 0;
    for (; ow < a; ++ow) pixel_block<S, 1, true, Tail>(p, job, oh, ow, c0, rest, w, init);
    for (; ow + kPixels <= b; ow += kPixels) pixel_block<S, kPixels, false, Tail>(p, job, oh, ow, c0, rest, w, init);
    for (; ow < b; ++ow) pixel_block<S, 1, false, Tail>(p, job, oh, ow, c0, rest, w, init);
    for (; ow < p.ow; ++ow) pixel_block<S, 1, true, Tail>(p, job, oh, ow, c0, rest, w, init);
}

template <int S>
CONV_TARGET_AVX2 void forward_row(const ImageShape &p, const ImageJob &job, int64_t oh) {
    int64_t c0 = 0;
    for (; c0 + kVec <= p.c; c0 += kVec) forward_channels<S, false>(p, job, oh, c0, kVec);
    if (c0 < p.c) forward_channels<S, true>(p, job, oh, c0, p.c - c0);
}

CONV_TARGET_AVX2 void forward_row_any(const ImageShape &p, const ImageJob &job, int64_t oh) {
    if (p.s == 1)
        forward_row<1>(p, job, oh);
    else
        forward_row<2>(p, job, oh);
}

// dW partial sums of channels [c0, c0 + rest) over output row oh of one
// image: sums[t * c + ch] += sum over ow of dy[oh][ow][ch] * x[...tap t...][ch].
// Pixel-major, all taps inside: nine independent sums in flight.
template <int S, bool Tail>
CONV_TARGET_AVX2 void filter_channels(const ImageShape &p, const float *x, const float *dy, int64_t oh,
                                      int64_t c0, int64_t rest, float *sums) {
    const int64_t a = p.inner_begin(), b = p.inner_end();
    __m256 acc[kTaps];
    for (int t = 0; t < kTaps; ++t) acc[t] = load_channels<Tail>(sums + t * p.c + c0, rest);
    const float *rows[kK];
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh * p.s - p.pt + kh;
        rows[kh] = ih < 0 || ih >= p.ih ? nullptr : x + ih * p.iw * p.c + c0;
    }
    const float *g = dy + oh * p.ow * p.c + c0;
    for (int64_t ow = 0; ow < p.ow; ++ow) {
        const __m256 d = load_channels<Tail>(g + ow * p.c, rest);
        const int64_t iw0 = ow * S - p.pl;
        const bool inner = ow >= a && ow < b;
        for (int kh = 0; kh < kK; ++kh) {
            if (!rows[kh]) continue;
            for (int kw = 0; kw < kK; ++kw) {
                if (!inner && (iw0 + kw < 0 || iw0 + kw >= p.iw)) continue;
                const __m256 v = load_channels<Tail>(rows[kh] + (iw0 + kw) * p.c, rest);
                acc[kh * kK + kw] = _mm256_fmadd_ps(d, v, acc[kh * kK + kw]);
            }
        }
    }
    for (int t = 0; t < kTaps; ++t) store_channels<Tail>(sums + t * p.c + c0, acc[t], rest);
}

template <int S>
CONV_TARGET_AVX2 void filter_row(const ImageShape &p, const float *x, const float *dy, int64_t oh, float *sums) {
    int64_t c0 = 0;
    for (; c0 + kVec <= p.c; c0 += kVec) filter_channels<S, false>(p, x, dy, oh, c0, kVec, sums);
    if (c0 < p.c) filter_channels<S, true>(p, x, dy, oh, c0, p.c - c0, sums);
}

CONV_TARGET_AVX2 void filter_row_any(const ImageShape &p, const float *x, const float *dy, int64_t oh,
                                     float *sums) {
    if (p.s == 1)
        filter_row<1>(p, x, dy, oh, sums);
    else
        filter_row<2>(p, x, dy, oh, sums);
}

// Backward-data at stride 2, dx row ih of one image, channels [c0, c0 +
// rest) (p: the forward shape, wt: the taps tap-major, not flipped).
// dx[ih][iw] gathers dy[oh][ow] through the taps with 2 oh = ih + pt - kh
// and 2 ow = iw + pl - kw: one or two rows kh by ih's parity, one or two
// columns kw by iw's.
template <bool Tail>
CONV_TARGET_AVX2 void backward_data_s2_channels(const ImageShape &p, const float *dy, const float *wt,
                                                float *dx, int64_t ih, const int *rows, int row_count,
                                                int64_t c0, int64_t rest) {
    __m256 w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = load_channels<Tail>(wt + t * p.c + c0, rest);
    for (int64_t iw = 0; iw < p.iw; ++iw) {
        __m256 acc = _mm256_setzero_ps();
        for (int i = 0; i < row_count; ++i) {
            const int kh = rows[i];
            const float *g = dy + (ih + p.pt - kh) / 2 * p.ow * p.c + c0;
            for (int kw = (int)((iw + p.pl) & 1); kw < kK; kw += 2) {
                const int64_t twice = iw + p.pl - kw;
                if (twice < 0 || twice / 2 >= p.ow) continue;
                acc = _mm256_fmadd_ps(w[kh * kK + kw], load_channels<Tail>(g + twice / 2 * p.c, rest), acc);
            }
        }
        store_channels<Tail>(dx + (ih * p.iw + iw) * p.c + c0, acc, rest);
    }
}

CONV_TARGET_AVX2 void backward_data_s2_row(const ImageShape &p, const float *dy, const float *wt, float *dx,
                                           int64_t ih) {
    int rows[2], row_count = 0;
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t twice = ih + p.pt - kh;
        if (twice >= 0 && twice % 2 == 0 && twice / 2 < p.oh) rows[row_count++] = kh;
    }
    int64_t c0 = 0;
    for (; c0 + kVec <= p.c; c0 += kVec)
        backward_data_s2_channels<false>(p, dy, wt, dx, ih, rows, row_count, c0, kVec);
    if (c0 < p.c) backward_data_s2_channels<true>(p, dy, wt, dx, ih, rows, row_count, c0, p.c - c0);
}

#endif  // CONV_HAVE_AVX512_KERNELS

ImageShape forward_shape(const ConvGeometry &g) {
    return {g.in[1], g.in[2], g.out[1], g.out[2], g.pad_begin[1], g.pad_begin[2], g.c, (int)g.stride[1]};
}

// dx[i][j] = sum w[kh][kw] dy[i + pt - kh][j + pl - kw]: flipped window.
ImageShape backward_data_shape(const ConvGeometry &g) {
    return {g.out[1], g.out[2], g.in[1], g.in[2], kK - 1 - g.pad_begin[1], kK - 1 - g.pad_begin[2], g.c, 1};
}

// Tap-major weights, optionally with the window flipped.
void repack(const float *w, int64_t c, bool flip, float *wt) {
    for (int64_t ch = 0; ch < c; ++ch)
        for (int t = 0; t < kTaps; ++t) wt[(flip ? kTaps - 1 - t : t) * c + ch] = w[ch * kTaps + t];
}

}  // namespace

bool dw_avx2_nhwc_covers(const ConvGeometry &g, conv_op_t op) {
    (void)op;
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST || g.k != g.c || g.groups != g.c) return false;
    if (!g.is_planar() || g.in_size() == 0 || g.out_size() == 0) return false;
    if (g.kernel[1] != kK || g.kernel[2] != kK) return false;
    if (g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    return g.stride[1] == g.stride[2] && g.stride[1] >= 1 && g.stride[1] <= 2;
}

// Forward and backward-data: the repacked weights. Backward-filter: each
// thread's 9 x C partial sums.
size_t dw_avx2_nhwc_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    int64_t floats = checked_mul(kTaps, g.c, "workspace");
    if (op == CONV_OP_BACKWARD_FILTER) floats = checked_mul(floats, threads, "workspace");
    return (size_t)checked_mul(floats, (int64_t)sizeof(float), "workspace");
}

void dw_avx2_nhwc_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const int64_t N = g.n, C = g.c;
    float *x = static_cast<float *>(a.x), *w = static_cast<float *>(a.w);
    float *y = static_cast<float *>(a.y), *bias = static_cast<float *>(a.bias);
    float *scratch = static_cast<float *>(ws);
    const int64_t in_image = g.in_size() * C, out_image = g.out_size() * C;
    switch (a.op) {
    case CONV_OP_BACKWARD_DATA:
        if (g.stride[1] == 2) {
            const ImageShape p = forward_shape(g);
            repack(w, C, false, scratch);
            pool.parallel_for(
                N * p.ih,
                [&](int64_t item, int) {
                    const int64_t n = item / p.ih;
                    backward_data_s2_row(p, y + n * out_image, scratch, x + n * in_image, item % p.ih);
                },
                threads);
            return;
        }
        [[fallthrough]];
    case CONV_OP_FORWARD: {
        const bool fwd = a.op == CONV_OP_FORWARD;
        const ImageShape p = fwd ? forward_shape(g) : backward_data_shape(g);
        repack(w, C, !fwd, scratch);
        const float *src = fwd ? x : y;
        float *dst = fwd ? y : x;
        const int64_t src_image = fwd ? in_image : out_image, dst_image = fwd ? out_image : in_image;
        const bool relu = fwd && g.activation == CONV_ACTIVATION_RELU;
        pool.parallel_for(
            N * p.oh,
            [&](int64_t item, int) {
                const int64_t n = item / p.oh;
                const ImageJob job{src + n * src_image, dst + n * dst_image, scratch, fwd ? bias : nullptr, relu};
                forward_row_any(p, job, item % p.oh);
            },
            threads);
        return;
    }
    case CONV_OP_BACKWARD_FILTER: {
        // A fixed split of the rows into `parts`, each summed in its own
        // slot and the slots added in order: the same bits on every run
        // with the same thread count.
        const ImageShape p = forward_shape(g);
        const int64_t slot = kTaps * C, rows = N * p.oh;
        const int parts = (int)std::min<int64_t>(threads, std::max<int64_t>(rows, 1));
        std::fill(scratch, scratch + parts * slot, 0.0f);
        pool.parallel_for(
            parts,
            [&](int64_t part, int) {
                for (int64_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r)
                    filter_row_any(p, x + r / p.oh * in_image, y + r / p.oh * out_image, r % p.oh,
                                   scratch + part * slot);
            },
            threads);
        for (int64_t ch = 0; ch < C; ++ch)
            for (int t = 0; t < kTaps; ++t) {
                float sum = 0;
                for (int s = 0; s < parts; ++s) sum += scratch[s * slot + t * C + ch];
                w[ch * kTaps + t] = sum;
            }
        if (bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool, threads);
        return;
    }
    default: return;
    }
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
