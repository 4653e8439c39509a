// Channels-last (NHWC) depthwise 3x3 backward-filter on small planes,
// multiplier 1, fp32, AVX-512: each work item is one 16-channel block over
// the batch; each image's plane of the block is first copied into a
// zero-padded tile in the thread's workspace, [rows][columns][16] -- the
// block's pixels 64 bytes apart, as oneDNN's nChw16c holds them -- and the
// window's taps are read from there.
//
// In place, a block's pixels lie C floats apart: from 256 channels on they
// share a few L1 sets, so a window swept along a row finds nothing it read
// a pixel before; depthwise_avx512_ring.cpp copies rows into a ring for
// that, with a ring's bookkeeping per row and per block, and keeps the sums
// in memory between rows (0.29-0.48 of oneDNN on MobileNet's 7x7 and 14x14
// layers). A whole plane's tile is 5-16 KiB there, copied once per image (a
// load and a store a pixel, beside 9 FMAs), with zeros around it, so no
// window needs a check; the 9 sums stay in registers over the batch, one
// item a block: the same bits for any thread count. A padded tap adds dy * 0,
// as zero padding does (an infinite dy there gives NaN).
//
// Forward and backward-data the same way lost to the other kernels (which
// read those windows without a copy; docs/performance.md).
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_nhwc.h"
#include "cpu/depthwise_avx512_nhwc_row.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

using dw_nhwc::ImageShape;
using dw_nhwc::kK;
using dw_nhwc::kTaps;
constexpr int kVec = 16;                        // channels a block
// Tiles of at most this take the pass: against the ring and in-place kernels
// (1 thread, batch 1, 3 alternated rounds) MobileNet's 7x7 1.85x, 14x14
// 1.16x, 14x14 stride 2 1.15x; not 28x28 (a 58 KiB tile: 0.73-0.79x).
constexpr int64_t kMaxTileBytes = 16 << 10;
// And only where the batch's x and dy stay in L2: a block's pixels, read
// 64 bytes of every C * 4, from memory leave the prefetchers behind (batch
// 8: 0.43-0.75x; the ring copies a group of blocks a pixel at a time).
constexpr double kResidentBytes = 1 << 20;  // half an L2 (batch 2: 14x14 even, 7x7 1.26x)

// A plane's padded tile: padded (r, col) holds input (r - pt, col - pl).
struct Tile {
    int64_t rows, cols;
    int64_t floats() const { return rows * cols * kVec; }
};

Tile tile_of(const ImageShape &p) {
    return {(p.oh - 1) * p.s + kK, (p.ow - 1) * p.s + kK};
}

#if CONV_HAVE_AVX512_KERNELS

// Channels [c0, c0 + 16) (lanes of cm) of one image's plane `src` into the
// tile, zero outside the plane.
CONV_TARGET_AVX512 void copy_tile(const ImageShape &p, const Tile &t, const float *src, int64_t c0,
                                  __mmask16 cm, float *tile) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t r = 0; r < t.rows; ++r) {
        float *row = tile + r * t.cols * kVec;
        const int64_t ir = r - p.pt;
        if (ir < 0 || ir >= p.ih) {
            for (int64_t col = 0; col < t.cols; ++col) _mm512_store_ps(row + col * kVec, zero);
            continue;
        }
        const float *in = src + ir * p.iw * p.c + c0;
        const int64_t a = std::clamp<int64_t>(p.pl, 0, t.cols), b = std::clamp<int64_t>(p.pl + p.iw, a, t.cols);
        for (int64_t col = 0; col < a; ++col) _mm512_store_ps(row + col * kVec, zero);
        for (int64_t col = a; col < b; ++col)
            _mm512_store_ps(row + col * kVec, _mm512_maskz_loadu_ps(cm, in + (col - p.pl) * p.c));
        for (int64_t col = b; col < t.cols; ++col) _mm512_store_ps(row + col * kVec, zero);
    }
}

// sums[kh * 3 + kw] += dy(pixel) * tile(window tap) over one image's plane,
// row by row (dw_nhwc::filter_row: each tile column loaded once a window row).
template <int S>
CONV_TARGET_AVX512 void filter_plane(const ImageShape &p, const Tile &t, const float *tile, const float *dy,
                                     int64_t c0, __mmask16 cm, __m512 (&sums)[kTaps]) {
    for (int64_t oh = 0; oh < p.oh; ++oh) {
        const float *row = tile + oh * S * t.cols * kVec;
        const float *const rows[kK] = {row, row + t.cols * kVec, row + 2 * t.cols * kVec};
        dw_nhwc::filter_row<S>(rows, dy + oh * p.ow * p.c + c0, p.ow, p.c, cm, sums);
    }
}

// Backward-filter of channels [c0, c0 + 16): the block's plane of each image
// into the tile, its 9 sums over the batch, then into dw (c x 9).
CONV_TARGET_AVX512 void filter_block(const ImageShape &p, const Tile &t, int64_t images, const float *x,
                                     int64_t x_image, const float *dy, int64_t dy_image, int64_t c0, float *tile,
                                     float *dw) {
    const int64_t cb = std::min<int64_t>(kVec, p.c - c0);
    const __mmask16 cm = first_lanes(cb);
    __m512 sums[kTaps];
    for (auto &v : sums) v = _mm512_setzero_ps();
    for (int64_t n = 0; n < images; ++n) {
        copy_tile(p, t, x + n * x_image, c0, cm, tile);
        if (p.s == 1)
            filter_plane<1>(p, t, tile, dy + n * dy_image, c0, cm, sums);
        else
            filter_plane<2>(p, t, tile, dy + n * dy_image, c0, cm, sums);
    }
    alignas(64) float out[kTaps][kVec];
    for (int i = 0; i < kTaps; ++i) _mm512_store_ps(out[i], sums[i]);
    for (int64_t ch = 0; ch < cb; ++ch)
        for (int i = 0; i < kTaps; ++i) dw[(c0 + ch) * kTaps + i] = out[i][ch];
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_nhwc_tile_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || !dw_nhwc::covers(g)) return false;
    if (4.0 * (double)g.n * (double)g.c * (double)(g.in_size() + g.out_size()) > kResidentBytes) return false;
    return tile_of(dw_nhwc::forward_shape(g)).floats() * (int64_t)sizeof(float) <= kMaxTileBytes;
}

size_t dw_nhwc_tile_workspace_bytes(const ConvGeometry &g, conv_op_t, int threads) {
    const Tile t = tile_of(dw_nhwc::forward_shape(g));  // a tile a thread
    return (size_t)checked_mul(checked_mul(t.floats(), threads, "workspace"), (int64_t)sizeof(float), "workspace");
}

void dw_nhwc_tile_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const ImageShape p = dw_nhwc::forward_shape(g);
    const Tile t = tile_of(p);
    const float *x = static_cast<const float *>(a.x), *dy = static_cast<const float *>(a.y);
    float *dw = static_cast<float *>(a.w), *tiles = static_cast<float *>(ws);
    pool.parallel_for(
        ceil_div(g.c, (int64_t)kVec),
        [&](int64_t block, int slot) {
            filter_block(p, t, g.n, x, g.in_size() * g.c, dy, g.out_size() * g.c, block * kVec,
                         tiles + slot * t.floats(), dw);
        },
        threads);
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
