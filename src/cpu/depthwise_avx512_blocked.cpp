// Channels-first (NCHW) depthwise 3x3 backward-filter on small planes,
// fp32, AVX-512, through 16-channel blocks.
//
// depthwise_avx512_nchw.cpp vectorises a plane along its width: on a 14x14
// or 7x7 plane its vectors are half empty, every edge needs a mask, and
// each channel ends in 9 horizontal reductions. Here 16 channels are
// computed together instead: their x and dy planes are transposed (16x16
// in registers) into per-thread tiles holding one zmm of 16 channels per
// position, x zero-padded around so no tap needs a mask, and the 9 taps x
// 16 channels of sums stay in registers over the whole batch. One channel
// block is one work item: its sum order does not depend on the thread
// count.
//
// Forward and backward-data are not done this way: the two transposes cost
// as much as the FMAs of a 3x3 window, and measured (1 thread, 14x14 and
// 7x7 planes, batch 1 and 8) they were no faster than the plane kernels
// (batch 8: 1.2-1.5x slower). Backward-filter transposes too but saves the
// reductions and the masks (see dw_blocked_covers).
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;    // window size
constexpr int kVec = 16; // floats per zmm: the channel block

// A zero-padded tile of one channel block: plane position (h, w) at tile
// position (h + top, w + left), each position kVec floats.
struct Tile {
    int64_t rows, cols, top, left;
    int64_t floats() const { return rows * cols * kVec; }
};

// The pass's planes: x (ih x iw) through the tile `src`, dy (oh x ow) dense.
struct BlockedShape {
    int64_t ih, iw, oh, ow;
    Tile src;
    int s;  // stride
};

// The x tile covers every tap of every output position.
BlockedShape blocked_shape(const ConvGeometry &g) {
    const int64_t pt = g.pad_begin[1], pl = g.pad_begin[2], s = g.stride[1];
    const Tile t{std::max(g.in[1] + pt, (g.out[1] - 1) * s + kK),
                 std::max(g.in[2] + pl, (g.out[2] - 1) * s + kK), pt, pl};
    return {g.in[1], g.in[2], g.out[1], g.out[2], t, (int)s};
}

// Per-thread workspace: the x tile and the dense dy tile.
int64_t slot_floats(const BlockedShape &b) {
    return b.src.floats() + b.oh * b.ow * kVec;
}

#if CONV_HAVE_AVX512_KERNELS

// Lane masks of a channel block's loads: all lanes for channels < cb, none
// after (masked-off lanes read as 0 and never fault).
struct ChannelMasks {
    __mmask16 m[kVec];
    explicit ChannelMasks(int cb) {
        for (int ch = 0; ch < kVec; ++ch) m[ch] = ch < cb ? 0xffff : 0;
    }
};

// Tile positions [from, to) to zero.
CONV_TARGET_AVX512 inline void zero_positions(float *tile, int64_t from, int64_t to) {
    for (int64_t q = from; q < to; ++q) _mm512_store_ps(tile + q * kVec, _mm512_setzero_ps());
}

// Zeroes the positions of the tile outside an h x w plane (once per work
// item: load_tile writes only the plane's positions).
CONV_TARGET_AVX512 void zero_border(const Tile &t, int64_t h, int64_t w, float *tile) {
    zero_positions(tile, 0, t.top * t.cols);
    for (int64_t r = t.top; r < t.top + h; ++r) {
        zero_positions(tile, r * t.cols, r * t.cols + t.left);
        zero_positions(tile, r * t.cols + t.left + w, (r + 1) * t.cols);
    }
    zero_positions(tile, (t.top + h) * t.cols, t.rows * t.cols);
}

// The cb (<= 16) planes at `planes` (plane_stride floats apart, h x w) into
// the tile's plane positions, lanes >= cb zero.
CONV_TARGET_AVX512 void load_tile(const float *planes, int64_t plane_stride, int cb, int64_t h,
                                  int64_t w, const Tile &t, float *tile) {
    const ChannelMasks cm(cb);
    const int64_t size = h * w;
    int64_t r = 0, c = 0;  // plane position of q0
    for (int64_t q0 = 0; q0 < size; q0 += kVec) {
        const int n = (int)std::min<int64_t>(kVec, size - q0);
        const __mmask16 m = first_lanes(n);
        __m512 v[kVec];
        for (int ch = 0; ch < kVec; ++ch)
            v[ch] = _mm512_maskz_loadu_ps(cm.m[ch] & m, planes + ch * plane_stride + q0);
        transpose16(v);
        if (n == kVec && c + kVec <= w) {  // one row: consecutive tile positions
            float *at = tile + ((r + t.top) * t.cols + c + t.left) * kVec;
            for (int j = 0; j < kVec; ++j) _mm512_store_ps(at + j * kVec, v[j]);
            if ((c += kVec) == w) c = 0, ++r;
            continue;
        }
        for (int j = 0; j < n; ++j) {
            _mm512_store_ps(tile + ((r + t.top) * t.cols + c + t.left) * kVec, v[j]);
            if (++c == w) c = 0, ++r;
        }
    }
}

// Backward-filter: sums[kh * 3 + kw] += dy(position) * x(tap) over the
// plane, two positions at a time into two sets of sums (18 chains of FMAs).
template <int S>
CONV_TARGET_AVX512 void filter_tile(const BlockedShape &b, const float *x, const float *dy,
                                    __m512 (&sums)[2][kK * kK]) {
    const int64_t row = b.src.cols;
    for (int64_t oh = 0; oh < b.oh; ++oh) {
        const float *in = x + oh * S * row * kVec;
        const float *d = dy + oh * b.ow * kVec;
        int64_t ow = 0;
        for (; ow + 2 <= b.ow; ow += 2) {
            const __m512 g0 = _mm512_load_ps(d + ow * kVec), g1 = _mm512_load_ps(d + (ow + 1) * kVec);
            const float *i0 = in + ow * S * kVec, *i1 = i0 + S * kVec;
            for (int kh = 0; kh < kK; ++kh)
                for (int kw = 0; kw < kK; ++kw) {
                    const int t = kh * kK + kw;
                    const int64_t at = (kh * row + kw) * kVec;
                    sums[0][t] = _mm512_fmadd_ps(g0, _mm512_load_ps(i0 + at), sums[0][t]);
                    sums[1][t] = _mm512_fmadd_ps(g1, _mm512_load_ps(i1 + at), sums[1][t]);
                }
        }
        if (ow < b.ow) {
            const __m512 g0 = _mm512_load_ps(d + ow * kVec);
            const float *i0 = in + ow * S * kVec;
            for (int t = 0; t < kK * kK; ++t)
                sums[0][t] = _mm512_fmadd_ps(
                    g0, _mm512_load_ps(i0 + (t / kK * row + t % kK) * kVec), sums[0][t]);
        }
    }
}

// dw of channels [c0, c0 + cb): the sums over the whole batch in registers.
CONV_TARGET_AVX512 void filter_item(const BlockedShape &b, const ConvGeometry &g, const float *x,
                                    const float *dy, float *dw, int64_t c0, int cb, float *tile) {
    const int64_t in_plane = g.in_size(), out_plane = g.out_size();
    float *dyt = tile + b.src.floats();
    __m512 sums[2][kK * kK];
    for (auto &set : sums)
        for (auto &v : set) v = _mm512_setzero_ps();
    zero_border(b.src, b.ih, b.iw, tile);
    for (int64_t n = 0; n < g.n; ++n) {
        load_tile(x + (n * g.c + c0) * in_plane, in_plane, cb, b.ih, b.iw, b.src, tile);
        load_tile(dy + (n * g.c + c0) * out_plane, out_plane, cb, b.oh, b.ow,
                  Tile{b.oh, b.ow, 0, 0}, dyt);
        if (b.s == 1)
            filter_tile<1>(b, tile, dyt, sums);
        else
            filter_tile<2>(b, tile, dyt, sums);
    }
    alignas(64) float t[kK * kK][kVec];
    for (int i = 0; i < kK * kK; ++i) _mm512_store_ps(t[i], _mm512_add_ps(sums[0][i], sums[1][i]));
    for (int ch = 0; ch < cb; ++ch)
        for (int i = 0; i < kK * kK; ++i) dw[(c0 + ch) * kK * kK + i] = t[i][ch];
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_blocked_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || !dw_first_3x3(g)) return false;
    if (g.pad_begin[1] < 0 || g.pad_begin[2] < 0) return false;
    // Planes up to 14x14. Measured (1 thread, MobileNet's layers, against
    // the plane kernels, interleaved): 7x7 0.080 -> 0.030 ms (batch 1),
    // 0.46 -> 0.27 ms (batch 8); 14x14 0.063 -> 0.040, 0.43 -> 0.44;
    // 14x14 stride 2 0.051 -> 0.025, 0.34 -> 0.24. At 28x28 the plane
    // kernels fill their vectors and win at batch 8 (stride 1 0.71 vs 0.81
    // ms, stride 2 0.36 vs 0.48).
    return g.in[1] * g.in[2] <= 14 * 14;
}

size_t dw_blocked_workspace_bytes(const ConvGeometry &g, conv_op_t, int threads) {
    return (size_t)checked_mul(checked_mul(slot_floats(blocked_shape(g)), threads, "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

void dw_blocked_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const BlockedShape b = blocked_shape(g);
    const int64_t slot = slot_floats(b);
    const float *x = static_cast<const float *>(a.x), *dy = static_cast<const float *>(a.y);
    float *dw = static_cast<float *>(a.w), *scratch = static_cast<float *>(ws);
    pool.parallel_for(
        ceil_div(g.c, kVec),
        [&](int64_t block, int s) {
            const int64_t c0 = block * kVec;
            filter_item(b, g, x, dy, dw, c0, (int)std::min<int64_t>(kVec, g.c - c0),
                        scratch + s * slot);
        },
        threads);
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, dy, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
