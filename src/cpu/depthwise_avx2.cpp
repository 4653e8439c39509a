// Channels-first (NCHW) depthwise 3x3, stride 1 or 2, fp32, on CPUs with
// AVX2 and FMA but no AVX-512, all three passes, through 8-channel blocks.
//
// The portable loops of depthwise_direct.cpp vectorise a plane along its
// rows; on MobileNet's 7x7-56x56 planes (batch 1, Zen 3) they ran at 1-6
// GFLOP/s, 0.04-0.3x oneDNN. Here 8 channels are computed together, as
// depthwise_avx512_blocked.cpp does for backward-filter: their planes are
// transposed (8x8 in registers) into per-thread tiles holding one ymm of 8
// channels per position, the input side zero-padded around so no tap needs
// a bound, and each tap is one FMA of a whole vector.
//
// - Forward: y(p) = bias + sum over taps of w(tap) * x(p * s + tap), up to
//   8 positions of a row at a time (as many chains of FMAs), each input
//   column loaded once for the outputs whose window holds it; then
//   transposed back into y's planes (ReLU on the way).
// - Backward-data: at stride 1 the forward pass of dy with the window
//   rotated (gather_shape); at stride 2 dx(q) += w(tap) * dy(p) for q = p *
//   s + tap, scattered into a zeroed padded tile, whose interior is then
//   transposed into dx.
// - Backward-filter: dw(tap) = sum over the batch and positions of dy(p) *
//   x(p * s + tap), the 9 tap sums of a channel block in registers over the
//   whole batch: one work item per block (or a few: kItemFloats), so the
//   sums' order does not depend on the thread count. At stride 1 on dy
//   planes over 32 columns wide, depthwise_avx2_rows.cpp takes it.
// depthwise_avx2_planes.cpp (planes swept in place, no transposes) takes
// forward, stride-1 backward-data and backward-filter where it measured
// faster (dw_planes_covers): planes up to 32 wide, wider ones (not at
// stride-1 backward-filter) while the tensors stay in the caches -- but
// not small output planes (up to 10 wide at stride 1, and backward-filter
// onto up to 6 at stride 2), which stay here. depthwise_avx2_flat.cpp
// takes stride-1 backward-filter with padding 1 on planes 11-32 wide (each
// plane one run of positions), depthwise_avx2_spread.cpp stride-2
// backward-data onto dx rows 56 or more wide (both in place).
// Every output is a plain sum of products (a dot product's bound).
#include "cpu/depthwise_avx2.h"

#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/depthwise_avx2_flat.h"
#include "cpu/depthwise_avx2_planes.h"
#include "cpu/depthwise_avx2_rows.h"
#include "cpu/depthwise_avx2_spread.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;    // window size
constexpr int kVec = 8;  // floats per ymm: the channel block

// The padded tile of the input side (x; dx for backward-data): plane
// position (h, w) at tile position (h + top, w + left), kVec floats each;
// it covers every tap of every output position.
struct Shape {
    int64_t ih, iw, oh, ow;  // planes: input side, output side
    int64_t rows, cols, top, left;
    int s;  // stride
    int64_t tile_floats() const { return rows * cols * kVec; }
    int64_t dense_floats() const { return oh * ow * kVec; }
};

Shape make_shape(const ConvGeometry &g) {
    Shape b;
    b.ih = g.in[1], b.iw = g.in[2], b.oh = g.out[1], b.ow = g.out[2];
    b.top = g.pad_begin[1], b.left = g.pad_begin[2], b.s = (int)g.stride[1];
    b.rows = std::max(b.ih + b.top, (b.oh - 1) * b.s + kK);
    b.cols = std::max(b.iw + b.left, (b.ow - 1) * b.s + kK);
    return b;
}

// Backward-data at stride 1 with padding up to 2 is the forward pass of dy
// with the window rotated: dx(h, w) = sum over taps of w(2 - kh, 2 - kw) *
// dy(h + kh - (2 - pt), w + kw - (2 - pl)), dy zero-padded by 2 - pt rows
// and 2 - pl columns. Its shape, as forward_tile reads it.
bool gathers(const ConvGeometry &g) {
    return g.stride[1] == 1 && g.pad_begin[1] <= kK - 1 && g.pad_begin[2] <= kK - 1;
}

Shape gather_shape(const ConvGeometry &g) {
    Shape b;
    b.ih = g.out[1], b.iw = g.out[2], b.oh = g.in[1], b.ow = g.in[2];
    b.top = kK - 1 - g.pad_begin[1], b.left = kK - 1 - g.pad_begin[2], b.s = 1;
    b.rows = std::max(b.ih + b.top, (b.oh - 1) + kK);
    b.cols = std::max(b.iw + b.left, (b.ow - 1) + kK);
    return b;
}

// The floats of output planes (backward-filter: of dy) a work item takes,
// as many whole blocks as fit, one at least (dw_avx2_run).
constexpr int64_t kItemFloats = 2048;

// A thread's slot: the padded tile, then the dense tile of the output side
// (for either shape the pass uses).
int64_t slot_floats(const ConvGeometry &g, conv_op_t op) {
    const Shape b = op == CONV_OP_BACKWARD_DATA && gathers(g) ? gather_shape(g) : make_shape(g);
    return b.tile_floats() + b.dense_floats();
}

#if CONV_HAVE_AVX512_KERNELS

// Walks an h x w plane's positions in order through the padded tile (no
// division per position: on 7x7 planes one cost as much as the FMAs).
struct TileCursor {
    int64_t cols, top, left, w;
    int64_t r = 0, c = 0;
    int64_t at() const { return ((r + top) * cols + c + left) * kVec; }
    void next() {
        if (++c == w) c = 0, ++r;
    }
    void seek(int64_t q) { r = q / w, c = q % w; }
};

CONV_TARGET_AVX2 inline void zero_positions(float *tile, int64_t from, int64_t to) {
    for (int64_t q = from; q < to; ++q) _mm256_store_ps(tile + q * kVec, _mm256_setzero_ps());
}

// The positions of the padded tile outside the ih x iw plane.
CONV_TARGET_AVX2 void zero_border(const Shape &b, float *tile) {
    zero_positions(tile, 0, b.top * b.cols);
    for (int64_t r = b.top; r < b.top + b.ih; ++r) {
        zero_positions(tile, r * b.cols, r * b.cols + b.left);
        zero_positions(tile, r * b.cols + b.left + b.iw, (r + 1) * b.cols);
    }
    zero_positions(tile, (b.top + b.ih) * b.cols, b.rows * b.cols);
}

// cb (<= 8) planes of `size` positions (`stride` floats apart) into the
// tile positions `walk` visits, 8 positions at a time; lanes >= cb zero.
// A last partial block of 8 whole planes is the block of the last 8
// positions, its first ones stored again (no bounded loads: the 49th
// position of a 7x7 plane, on its own, cost a fifth of the copy).
template <class Cursor>
CONV_TARGET_AVX2 void planes_to_tile(const float *planes, int64_t stride, int cb, int64_t size,
                                     Cursor walk, float *tile) {
    for (int64_t q0 = 0; q0 < size; q0 += kVec) {
        int64_t n = std::min<int64_t>(kVec, size - q0);
        __m256 v[kVec];
        if (n < kVec && cb == kVec && size >= kVec) q0 = size - kVec, n = kVec, walk.seek(q0);
        if (n == kVec && cb == kVec) {  // whole blocks without a bound (most of them)
            load_transposed8(planes + q0, stride, v);
#pragma GCC unroll 8
            for (int j = 0; j < kVec; ++j) _mm256_store_ps(tile + walk.at(), v[j]), walk.next();
            continue;
        }
#pragma GCC unroll 8
        for (int ch = 0; ch < kVec; ++ch)
            v[ch] = ch < cb ? load_first_avx2(planes + ch * stride + q0, n) : _mm256_setzero_ps();
        transpose8(v);
#pragma GCC unroll 8
        for (int j = 0; j < kVec; ++j)
            if (j < n) _mm256_store_ps(tile + walk.at(), v[j]), walk.next();
    }
}

// The reverse: tile positions into cb planes, ReLU applied if asked (a
// last partial block of 8 planes as the last 8 positions, as above: the
// first ones are stored again with the values they hold).
template <class Cursor>
CONV_TARGET_AVX2 void tile_to_planes(const float *tile, Cursor walk, int64_t size, int cb,
                                     bool relu, float *planes, int64_t stride) {
    for (int64_t q0 = 0; q0 < size; q0 += kVec) {
        int64_t n = std::min<int64_t>(kVec, size - q0);
        __m256 v[kVec];
        if (n < kVec && cb == kVec && size >= kVec) q0 = size - kVec, n = kVec, walk.seek(q0);
        if (n == kVec && cb == kVec) {  // whole blocks without a bound
#pragma GCC unroll 8
            for (int j = 0; j < kVec; ++j) v[j] = _mm256_load_ps(tile + walk.at()), walk.next();
            transpose8(v);
#pragma GCC unroll 8
            for (int ch = 0; ch < kVec; ++ch)
                _mm256_storeu_ps(planes + ch * stride + q0,
                                 relu ? _mm256_max_ps(_mm256_setzero_ps(), v[ch]) : v[ch]);
            continue;
        }
#pragma GCC unroll 8
        for (int j = 0; j < kVec; ++j)
            if (j < n)
                v[j] = _mm256_load_ps(tile + walk.at()), walk.next();
            else
                v[j] = _mm256_setzero_ps();
        transpose8(v);
#pragma GCC unroll 8
        for (int ch = 0; ch < kVec; ++ch)
            if (ch < cb) {
                // max(0, v): a NaN stays NaN (the second operand), as epilogue.cpp.
                const __m256 x = relu ? _mm256_max_ps(_mm256_setzero_ps(), v[ch]) : v[ch];
                store_first_avx2(planes + ch * stride + q0, x, n);
            }
    }
}

// A dense tile: position q at q * kVec.
struct DenseCursor {
    int64_t q = 0;
    int64_t at() const { return q * kVec; }
    void next() { ++q; }
    void seek(int64_t to) { q = to; }
};

// The 9 taps' weights of channels [c0, c0 + cb), a vector per tap.
CONV_TARGET_AVX2 void load_weights(const float *w, int64_t c0, int cb, __m256 (&wv)[kK * kK]) {
    if (cb == kVec) {  // 8 channels' 72 weights: taps 0-7 transposed 8 x 8, tap 8 gathered
        const float *at = w + c0 * kK * kK;
        __m256 v[kVec];
#pragma GCC unroll 8
        for (int ch = 0; ch < kVec; ++ch) v[ch] = _mm256_loadu_ps(at + ch * kK * kK);
        transpose8(v);
#pragma GCC unroll 8
        for (int t = 0; t < kVec; ++t) wv[t] = v[t];
        wv[kVec] = _mm256_setr_ps(at[8], at[17], at[26], at[35], at[44], at[53], at[62], at[71]);
        return;
    }
    alignas(32) float t[kK * kK][kVec] = {};
    for (int ch = 0; ch < cb; ++ch)
        for (int i = 0; i < kK * kK; ++i) t[i][ch] = w[(c0 + ch) * kK * kK + i];
#pragma GCC unroll 9
    for (int i = 0; i < kK * kK; ++i) wv[i] = _mm256_load_ps(t[i]);
}

CONV_TARGET_AVX2 __m256 load_bias(const float *bias, int64_t c0, int cb) {
    return bias ? load_first_avx2(bias + c0, cb) : _mm256_setzero_ps();
}

// N (1-8) consecutive positions of an output row, from `in` (the first
// one's window) on: each input column of a tap row is loaded once and
// feeds the (up to 3) outputs whose window holds it, so the N sums run as N
// chains side by side. (Four positions a step, each with its own 9 loads,
// left a 7-wide row's last three as chains of their own: 2.3x the FMAs'
// time on 7x7 planes.) The weights are read per tap row: with them in 9
// registers the N sums would not fit.
template <int S, int N>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void forward_run(const float *in, int64_t row,
                                                                       const __m256 (&w)[kK * kK], __m256 bias,
                                                                       float *out) {
    __m256 acc[N];
#pragma GCC unroll 8
    for (int u = 0; u < N; ++u) acc[u] = bias;
#pragma GCC unroll 3
    for (int kh = 0; kh < kK; ++kh) {
        const __m256 w0 = w[kh * kK], w1 = w[kh * kK + 1], w2 = w[kh * kK + 2];
        const float *at = in + kh * row;
        // Input column j is tap kw of output (j - kw) / S.
#pragma GCC unroll 17
        for (int j = 0; j < (N - 1) * S + kK; ++j) {
            const __m256 xv = _mm256_load_ps(at + j * kVec);
            if (j % S == 0 && j / S < N) acc[j / S] = _mm256_fmadd_ps(w0, xv, acc[j / S]);
            if (j >= 1 && (j - 1) % S == 0 && (j - 1) / S < N) acc[(j - 1) / S] = _mm256_fmadd_ps(w1, xv, acc[(j - 1) / S]);
            if (j >= 2 && (j - 2) % S == 0 && (j - 2) / S < N) acc[(j - 2) / S] = _mm256_fmadd_ps(w2, xv, acc[(j - 2) / S]);
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < N; ++u) _mm256_store_ps(out + u * kVec, acc[u]);
}

// Forward: the dense y tile from the padded x tile, 8 positions of a row at
// a time (forward_run), the row's last 1-7 together.
template <int S>
CONV_TARGET_AVX2 void forward_tile(const Shape &b, const float *x, const __m256 (&w)[kK * kK],
                                   __m256 bias, float *y) {
    const int64_t row = b.cols * kVec;
    for (int64_t oh = 0; oh < b.oh; ++oh) {
        const float *in = x + oh * S * row;
        float *out = y + oh * b.ow * kVec;
        int64_t ow = 0;
        for (; ow + 8 <= b.ow; ow += 8) forward_run<S, 8>(in + ow * S * kVec, row, w, bias, out + ow * kVec);
        const float *at = in + ow * S * kVec;
        float *to = out + ow * kVec;
        switch (b.ow - ow) {
        case 7: forward_run<S, 7>(at, row, w, bias, to); break;
        case 6: forward_run<S, 6>(at, row, w, bias, to); break;
        case 5: forward_run<S, 5>(at, row, w, bias, to); break;
        case 4: forward_run<S, 4>(at, row, w, bias, to); break;
        case 3: forward_run<S, 3>(at, row, w, bias, to); break;
        case 2: forward_run<S, 2>(at, row, w, bias, to); break;
        case 1: forward_run<S, 1>(at, row, w, bias, to); break;
        default: break;
        }
    }
}

// Backward-data: dy's dense tile scattered through the taps into the zeroed
// padded dx tile, a dy row and a tap row at a time.
template <int S>
CONV_TARGET_AVX2 void backward_data_tile(const Shape &b, const float *dy, const __m256 (&w)[kK * kK],
                                         float *dx) {
    const int64_t row = b.cols * kVec;
    for (int64_t oh = 0; oh < b.oh; ++oh) {
        const float *d = dy + oh * b.ow * kVec;
#pragma GCC unroll 3
        for (int kh = 0; kh < kK; ++kh) {
            float *out = dx + (oh * S + kh) * row;
            for (int64_t ow = 0; ow < b.ow; ++ow) {
                const __m256 g = _mm256_load_ps(d + ow * kVec);
                float *at = out + ow * S * kVec;
#pragma GCC unroll 3
                for (int kw = 0; kw < kK; ++kw)
                    _mm256_store_ps(at + kw * kVec,
                                    _mm256_fmadd_ps(w[kh * kK + kw], g, _mm256_load_ps(at + kw * kVec)));
            }
        }
    }
}

// Backward-filter: sums[t] += dy(p) * x(p * s + t), a position at a time:
// each of the 9 sums takes one FMA a position, so their 9 chains cover the
// FMA latency, and the sums, dy and one x vector take 11 registers. (Two
// positions a step with the sums passed by reference left one sum on the
// stack, a store and a load on its chain every step.)
template <int S>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_tile(const Shape &b, const float *x,
                                                                       const float *dy, __m256 (&sums)[kK * kK]) {
    const int64_t row = b.cols * kVec, oh = b.oh, ow = b.ow;
    __m256 s[kK * kK];
#pragma GCC unroll 9
    for (int t = 0; t < kK * kK; ++t) s[t] = sums[t];
    for (int64_t r = 0; r < oh; ++r) {
        const float *in = x + r * S * row, *d = dy + r * ow * kVec;
        for (int64_t c = 0; c < ow; ++c, in += S * kVec, d += kVec) {
            const __m256 g = _mm256_load_ps(d);
#pragma GCC unroll 9
            for (int t = 0; t < kK * kK; ++t)
                s[t] = _mm256_fmadd_ps(g, _mm256_load_ps(in + (t / kK) * row + (t % kK) * kVec), s[t]);
        }
    }
#pragma GCC unroll 9
    for (int t = 0; t < kK * kK; ++t) sums[t] = s[t];
}

// A forward pass of one block: cb planes (`in_plane` positions, at `src`)
// through shape b's padded tile, summed into its dense tile and out to cb
// planes (`out_plane` positions, at `dst`).
CONV_TARGET_AVX2 void forward_planes(const Shape &b, const float *src, int64_t in_plane, int cb,
                                     const __m256 (&w)[kK * kK], __m256 bias, bool relu, float *dst,
                                     int64_t out_plane, float *tile) {
    float *dense = tile + b.tile_floats();  // the border already zero (dw_avx2_run)
    planes_to_tile(src, in_plane, cb, in_plane, TileCursor{b.cols, b.top, b.left, b.iw}, tile);
    if (b.s == 1)
        forward_tile<1>(b, tile, w, bias, dense);
    else
        forward_tile<2>(b, tile, w, bias, dense);
    tile_to_planes(dense, DenseCursor{}, out_plane, cb, relu, dst, out_plane);
}

// One work item of forward or backward-data: image n, channels [c0, c0 + cb).
CONV_TARGET_AVX2 void data_item(const Shape &b, const ConvArgs &a, int64_t n, int64_t c0, int cb,
                                float *tile) {
    const ConvGeometry &g = *a.g;
    const int64_t in_plane = g.in_size(), out_plane = g.out_size();
    // The block's planes of x (dx) and y (dy).
    float *x = static_cast<float *>(a.x) + (n * g.c + c0) * in_plane;
    float *y = static_cast<float *>(a.y) + (n * g.k + c0) * out_plane;
    __m256 w[kK * kK];
    load_weights(static_cast<const float *>(a.w), c0, cb, w);
    if (a.op == CONV_OP_FORWARD)
        return forward_planes(b, x, in_plane, cb, w, load_bias(static_cast<const float *>(a.bias), c0, cb),
                              g.activation == CONV_ACTIVATION_RELU, y, out_plane, tile);
    const float *dy = y;
    float *dx = x;
    if (gathers(g)) {  // the forward pass of dy with the window rotated
        __m256 rotated[kK * kK];
        for (int t = 0; t < kK * kK; ++t) rotated[t] = w[kK * kK - 1 - t];
        return forward_planes(gather_shape(g), dy, out_plane, cb, rotated, _mm256_setzero_ps(), false, dx,
                              in_plane, tile);
    }
    float *dense = tile + b.tile_floats();
    zero_positions(tile, 0, b.rows * b.cols);
    planes_to_tile(dy, out_plane, cb, out_plane, DenseCursor{}, dense);
    if (b.s == 1)
        backward_data_tile<1>(b, dense, w, tile);
    else
        backward_data_tile<2>(b, dense, w, tile);
    tile_to_planes(tile, TileCursor{b.cols, b.top, b.left, b.iw}, in_plane, cb, false, dx, in_plane);
}

// dw of channels [c0, c0 + cb): the sums over the whole batch in registers.
CONV_TARGET_AVX2 void filter_item(const Shape &b, const ConvArgs &a, int64_t c0, int cb, float *tile) {
    const ConvGeometry &g = *a.g;
    const int64_t in_plane = g.in_size(), out_plane = g.out_size();
    float *dense = tile + b.tile_floats();
    __m256 sums[kK * kK];
    // Unrolled: as a loop GCC made it a memset.
#pragma GCC unroll 9
    for (int t = 0; t < kK * kK; ++t) sums[t] = _mm256_setzero_ps();
    const TileCursor padded{b.cols, b.top, b.left, b.iw};
    for (int64_t n = 0; n < g.n; ++n) {
        planes_to_tile(static_cast<const float *>(a.x) + (n * g.c + c0) * in_plane, in_plane, cb,
                       in_plane, padded, tile);
        planes_to_tile(static_cast<const float *>(a.y) + (n * g.k + c0) * out_plane, out_plane, cb,
                       out_plane, DenseCursor{}, dense);
        if (b.s == 1)
            filter_tile<1>(b, tile, dense, sums);
        else
            filter_tile<2>(b, tile, dense, sums);
    }
    float *dw = static_cast<float *>(a.w) + c0 * kK * kK;
    if (cb == kVec) {  // taps 0-7 of each channel transposed 8 x 8, tap 8 one by one
        alignas(32) float last[kVec];
        _mm256_store_ps(last, sums[kK * kK - 1]);
        transpose8(sums);
#pragma GCC unroll 8
        for (int ch = 0; ch < kVec; ++ch) {
            _mm256_storeu_ps(dw + ch * kK * kK, sums[ch]);
            dw[ch * kK * kK + kVec] = last[ch];
        }
        return;
    }
    alignas(32) float t[kK * kK][kVec];
    // Unrolled: as a loop GCC stored the sums and then copied them (rep
    // movsq, an eighth of a 7x7 item's time).
#pragma GCC unroll 9
    for (int i = 0; i < kK * kK; ++i) _mm256_store_ps(t[i], sums[i]);
    for (int ch = 0; ch < cb; ++ch)
        for (int i = 0; i < kK * kK; ++i) dw[ch * kK * kK + i] = t[i][ch];
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_avx2_covers(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx2) return false;
    if (g.layout == CONV_LAYOUT_CHANNELS_LAST) return dw_avx2_nhwc_covers(g, op);
    if (g.k != g.c || g.groups != g.c) return false;
    if (!g.is_planar() || g.in_size() == 0 || g.out_size() == 0) return false;
    if (g.kernel[1] != kK || g.kernel[2] != kK) return false;
    if (g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    if (g.stride[1] != g.stride[2] || g.stride[1] < 1 || g.stride[1] > 2) return false;
    return g.pad_begin[1] >= 0 && g.pad_begin[2] >= 0;
}

size_t dw_avx2_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    if (g.layout == CONV_LAYOUT_CHANNELS_LAST) return dw_avx2_nhwc_workspace_bytes(g, op, threads);
    if (dw_flat_covers(g, op)) return dw_flat_workspace_bytes(g, threads);
    if (dw_planes_covers(g, op)) return dw_planes_workspace_bytes(g, op, threads);
    if (dw_spread_covers(g, op)) return dw_spread_workspace_bytes(g, threads);
    if (dw_rows_covers(g, op)) return dw_rows_workspace_bytes(g, op, threads);
    return (size_t)checked_mul(checked_mul(slot_floats(g, op), threads, "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

void dw_avx2_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
    if (a.g->layout == CONV_LAYOUT_CHANNELS_LAST) return dw_avx2_nhwc_run(a, ws, pool, threads);
    if (dw_flat_covers(*a.g, a.op)) return dw_flat_run(a, ws, pool, threads);
    if (dw_planes_covers(*a.g, a.op)) return dw_planes_run(a, ws, pool, threads);
    if (dw_spread_covers(*a.g, a.op)) return dw_spread_run(a, ws, pool, threads);
    if (dw_rows_covers(*a.g, a.op)) return dw_rows_run(a, ws, pool, threads);
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const Shape b = make_shape(g);
    const int64_t slot = slot_floats(g, a.op), blocks = ceil_div(g.c, (int64_t)kVec);
    float *scratch = static_cast<float *>(ws);
    auto width = [&](int64_t block) { return (int)std::min<int64_t>(kVec, g.c - block * kVec); };
    // The padded tiles' borders stay zero from item to item (the items
    // write inside them): zeroed once per slot, not per item (its small
    // memsets were a tenth of a 7x7 item). Backward-data's scatter zeroes
    // its whole tile per item.
    if (a.op != CONV_OP_BACKWARD_DATA || gathers(g)) {
        const Shape padded = a.op == CONV_OP_BACKWARD_DATA ? gather_shape(g) : b;
        for (int s = 0; s < std::max(threads, 1); ++s) zero_border(padded, scratch + s * slot);
    }
    // Blocks a work item takes: kItemFloats' worth, since the pool hands out
    // items one at a time (a block of 7x7 planes takes ~0.3 us; one an item
    // ran 7x7 at 2 threads at 0.77-0.88x the plane sweeps).
    const int64_t plane = a.op == CONV_OP_BACKWARD_FILTER ? g.n * g.out_size()
                          : a.op == CONV_OP_FORWARD      ? g.out_size()
                                                         : g.in_size();
    auto in_items = [&](int64_t count, auto fn) {
        // ... but no fewer than 4 items a thread where the blocks allow.
        const int64_t per = std::max<int64_t>(1, std::min(kItemFloats / (kVec * plane), count / (4 * std::max(threads, 1))));
        pool.parallel_for(
            ceil_div(count, per),
            [&](int64_t item, int s) {
                for (int64_t i = item * per; i < std::min(count, (item + 1) * per); ++i) fn(i, scratch + s * slot);
            },
            threads);
    };
    if (a.op == CONV_OP_BACKWARD_FILTER) {
        in_items(blocks, [&](int64_t block, float *tile) { filter_item(b, a, block * kVec, width(block), tile); });
        if (a.bias)
            channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
        return;
    }
    in_items(g.n * blocks, [&](int64_t i, float *tile) {
        data_item(b, a, i / blocks, i % blocks * kVec, width(i % blocks), tile);
    });
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
