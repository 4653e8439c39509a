// direct_avx512's stride-1 passes onto few destination channels (at most 8:
// LeNet-5's 6, an RGB image's 3 in backward-data, a network's last layer
// onto 3 or 4 channels) with the POSITIONS in the vector. The channel-vector
// tiles (direct_avx512.cpp) fill 6 of a vector's 16 lanes there, and
// implicit_gemm and im2col pay their unfold over few outputs: LeNet-5's
// 6->16 5x5 backward-data ran at 10-12 GFLOP/s (batch 32, 1 thread) against
// oneDNN's 55.
//
// A register block is M destination channels x R rows x 16 columns (M * R
// <= 24 sums). Per source channel and tap it loads R source row vectors
// (masked where the window overhangs the plane: masked-off lanes read as 0
// and never fault, so nothing is copied or padded) and M broadcast weights,
// and makes M * R FMAs. Backward-data at stride 1 is the same correlation of
// dy with the filter rotated by 180 degrees and transposed.
//
// Source channels are summed in blocks of 32 from zero and the blocks then
// added (the two-level order of CONV_MATH_STRICT), in an order that does
// not depend on the thread count.
//
// With AVX2 a block is M x R rows x 8 columns (M * R <= 12; onto 7-8
// channels two blocks), and since AVX2 has no masked load that keeps off
// the next page, each image's source is first copied into zero-padded
// planes in the thread's slot (an image a work item). Forward from few
// sources onto more channels is AVX-512's only (with AVX2 it lost to the
// channel-vector tiles: 3->16 32x32 0.80-0.86x, 1->32 26x26 0.75-0.84x,
// 3->64 224x224 0.54-0.68x).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/jit/narrow_tile.h"
#include "cpu/trickle.h"

namespace conv::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxChannels = 8;   // destination channels a block holds
constexpr int kMaxSums = 24;      // M x R sums in registers
constexpr int kMaxRows = 8;
constexpr int kMaxTapColumns = 16;  // per-column masks a block keeps
constexpr int64_t kBlock = 32;    // source channels summed from zero, then added
constexpr int64_t kFewSources = 4;            // forward source channels that take any number of outputs
constexpr int64_t kMaxFewSourceOutputs = 64;  // ... up to this many
// ... onto an image of at most this, or onto rows of whole vectors. Past
// L2, with the compiled blocks, rows that end in a part vector (a masked
// store that misses) lost to the channel-vector tiles (batch 8, 1 thread:
// 4->64 56x56 0.67-0.70x, 3->64 120x120 0.83-0.87x), rows of whole vectors
// won (VGG-16's 3->64 224x224 1.15-1.27x, 112x112 1.07-1.21x). With the
// generated blocks (cpu/jit/narrow_tile.h) the part vectors came out even
// (0.98-1.06x) and whole vectors won more (224x224 1.30x, 96x96 1.35x), so
// the rule stays as the compiled blocks need it.
constexpr int64_t kFewSourceImageBytes = 512 << 10;
// With AVX2, destination channels a block takes whole (two rows of sums);
// more are taken kSplitBlockAvx2 (three rows) a block.
constexpr int64_t kWholeBlockAvx2 = 6;
constexpr int64_t kSplitBlockAvx2 = 4;

// Destination (m, i, j) = sum over source channels c and taps (r, q) of
// W[c][r][q][m] * source(c, i + r - pt, j + q - pl), zero outside the source.
struct Narrow {
    bool backward;
    int64_t n, cs, cd;       // images, source channels (summed), destination channels
    int64_t hs, ws, hd, wd;  // source and destination planes
    int64_t kr, ks, pt, pl;
};

Narrow narrow_shape(const ConvGeometry &g, conv_op_t op) {
    Narrow s;
    s.backward = op == CONV_OP_BACKWARD_DATA;
    s.n = g.n, s.kr = g.kernel[1], s.ks = g.kernel[2];
    if (!s.backward) {
        s.cs = g.c, s.cd = g.k, s.hs = g.in[1], s.ws = g.in[2], s.hd = g.out[1], s.wd = g.out[2];
        s.pt = g.pad_begin[1], s.pl = g.pad_begin[2];
    } else {  // dx (i, j) reads dy (i + r' - (kr - 1 - pad), ...) through tap r' = kr - 1 - r
        s.cs = g.k, s.cd = g.c, s.hs = g.out[1], s.ws = g.out[2], s.hd = g.in[1], s.wd = g.in[2];
        s.pt = s.kr - 1 - g.pad_begin[1], s.pl = s.ks - 1 - g.pad_begin[2];
    }
    return s;
}

// Rows a block of m destination channels holds.
int rows_for(int m) { return std::min(kMaxRows, kMaxSums / m); }

#if CONV_HAVE_AVX512_KERNELS
// W[c][r][q][m]: forward from w[m][c][r][q], backward-data from
// w[c][m][kr - 1 - r][ks - 1 - q]. A filter's taps are read as one run
// (tap t = r * ks + q, rotated: taps - 1 - t): indexed element by element
// from the destination's side, this copy took 10% of a 32->3 5x5
// backward-data onto 16x16 at batch 1.
void pack(const Narrow &s, const float *w, float *out) {
    const int64_t taps = s.kr * s.ks, cd = s.cd;
    for (int64_t c = 0; c < s.cs; ++c)
        for (int64_t m = 0; m < cd; ++m) {
            float *to = out + c * taps * cd + m;
            if (s.backward) {
                const float *from = w + (c * cd + m) * taps + taps - 1;
                for (int64_t t = 0; t < taps; ++t) to[t * cd] = from[-t];
            } else {
                const float *from = w + (m * s.cs + c) * taps;
                for (int64_t t = 0; t < taps; ++t) to[t * cd] = from[t];
            }
        }
}

// Tap column q's lanes of the 16 columns from j0 (of those in `store`)
// whose source column lies in the row.
CONV_TARGET_AVX512 inline __mmask16 tap_column_lanes(const Narrow &s, int64_t j0, int64_t q, __mmask16 store) {
    const int64_t col = j0 + q - s.pl;
    return store & lane_range(-col, s.ws - col);
}

// R rows from i0 of one image's M destination planes (src: the image's
// source planes, dst: its destination planes). RowsInside: every tap row of
// every destination row lies in the source (most of a large plane), so the
// taps run without row tests. Taps: a 3 x 3 window's size (0: the shape's),
// its tap loops then unrolled, weights and source rows at constant offsets
// (VGG-16's 3->64 224x224: 1.26x). Where the block has generated code
// (cpu/jit/narrow_tile.h), tile_rows below runs in its place.
template <int M, int R, bool RowsInside, int Taps>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW void block_rows_with(const Narrow &s, const float *src, const float *packed,
                                                           float *dst, int64_t i0, const float *bias, bool relu) {
    static_assert(M * R <= kMaxSums, "the sums must stay in registers");
    const int64_t splane = s.hs * s.ws, dplane = s.hd * s.wd;
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t j0 = 0; j0 < s.wd; j0 += kLanes) {
        const __mmask16 store = first_lanes(s.wd - j0);
        // The block's destination lines asked for ownership before its
        // taps run: on a plane larger than L2 each of its M x R stores
        // missed and stalled (VGG-16's 3->64 224x224 without: 0.90x; asked
        // for one or two blocks ahead instead: 0.90-0.98x).
        for (int m = 0; m < M; ++m)
            for (int i = 0; i < R; ++i) __builtin_prefetch(dst + m * dplane + (i0 + i) * s.wd + j0, 1, 3);
        __mmask16 column[kMaxTapColumns];  // tap column q: lanes whose source column lies in the row
        for (int64_t q = 0; q < s.ks; ++q) column[q] = tap_column_lanes(s, j0, q, store);
        alignas(64) float partial[M * R * kLanes];  // the channel blocks' sums so far
        for (int64_t c0 = 0; c0 < s.cs; c0 += kBlock) {
            __m512 acc[M][R];
            for (int m = 0; m < M; ++m)
                for (int i = 0; i < R; ++i) acc[m][i] = zero;
            // The shape's fields as locals: read through `s` in the loops
            // below, GCC reloaded them from memory at every tap.
            const int64_t ws = s.ws, cd = s.cd, hs = s.hs;
            const int64_t kr = Taps ? Taps : s.kr, ks = Taps ? Taps : s.ks;
            const int64_t c1 = std::min(s.cs, c0 + kBlock);
            for (int64_t c = c0; c < c1; ++c) {
                const float *plane = src + c * splane;
                const float *wc = packed + c * kr * ks * cd;
#pragma GCC unroll 4
                for (int64_t r = 0; r < kr; ++r) {
                    const int64_t row0 = i0 + r - s.pt;  // source row of destination row i0
                    unsigned rows = (1u << R) - 1;       // destination rows whose source row exists
                    if (!RowsInside) {
                        rows = 0;
                        for (int i = 0; i < R; ++i)
                            if (row0 + i >= 0 && row0 + i < hs) rows |= 1u << i;
                        if (!rows) continue;
                    }
                    const float *at = plane + row0 * ws + j0 - s.pl;  // (row0, column of lane 0, tap 0)
                    const float *wr = wc + r * ks * cd;
#pragma GCC unroll 4
                    for (int64_t q = 0; q < ks; ++q) {
                        __m512 v[R];
#pragma GCC unroll 8
                        for (int i = 0; i < R; ++i)
                            v[i] = RowsInside || rows >> i & 1 ? _mm512_maskz_loadu_ps(column[q], at + i * ws + q)
                                                               : zero;
                        const float *wq = wr + q * cd;
#pragma GCC unroll 8
                        for (int m = 0; m < M; ++m) {
                            const __m512 b = _mm512_set1_ps(wq[m]);
#pragma GCC unroll 8
                            for (int i = 0; i < R; ++i) acc[m][i] = _mm512_fmadd_ps(b, v[i], acc[m][i]);
                        }
                    }
                }
            }
            for (int m = 0; m < M; ++m)
                for (int i = 0; i < R; ++i) {
                    float *p = partial + (m * R + i) * kLanes;
                    _mm512_store_ps(p, c0 == 0 ? acc[m][i] : _mm512_add_ps(_mm512_load_ps(p), acc[m][i]));
                }
        }
        for (int m = 0; m < M; ++m)
            for (int i = 0; i < R; ++i) {
                __m512 x = _mm512_load_ps(partial + (m * R + i) * kLanes);
                if (bias) x = _mm512_add_ps(x, _mm512_set1_ps(bias[m]));
                if (relu) x = _mm512_max_ps(zero, x);  // NaN stays NaN (the second operand)
                // Whole vectors stored unmasked: a masked store that misses
                // costs more (the same layer 1.10x).
                float *to = dst + m * dplane + (i0 + i) * s.wd + j0;
                if (store == 0xffff)
                    _mm512_storeu_ps(to, x);
                else
                    _mm512_mask_storeu_ps(to, store, x);
            }
    }
}

// The same block through its generated code `tile` (cpu/jit/narrow_tile.h),
// made for the block's channels, rows and the rows of its window that lie
// in the source.
CONV_TARGET_AVX512 void tile_rows(const Narrow &s, const float *src, const float *packed, float *dst, int64_t i0,
                                  const float *bias, bool relu, jit::NarrowTileFn tile) {
    const int64_t splane = s.hs * s.ws;
    for (int64_t j0 = 0; j0 < s.wd; j0 += kLanes) {
        const __mmask16 store = first_lanes(s.wd - j0);
        alignas(64) float partial[kMaxSums * kLanes];  // the channel blocks' sums so far
        jit::NarrowTileCall call;
        call.sums = partial, call.dst = dst + i0 * s.wd + j0, call.bias = bias;
        // Per tap column the lanes whose source column lies in the row. A
        // fixed count (the generated blocks take at most 7 tap columns): a
        // loop to ks became a call of memmove per block.
        for (int q = 0; q < 7; ++q) call.masks[q] = q < s.ks ? tap_column_lanes(s, j0, q, store) : 0;
        call.masks[7] = store;
        for (int64_t c0 = 0; c0 < s.cs; c0 += kBlock) {
            const int64_t c1 = std::min(s.cs, c0 + kBlock);
            call.x = src + c0 * splane + (i0 - s.pt) * s.ws + j0 - s.pl;
            call.w = packed + c0 * s.kr * s.ks * s.cd;
            call.channels = c1 - c0;
            call.mode = (c0 > 0 ? jit::kNarrowAddSums : 0) |
                        (c1 == s.cs ? jit::kNarrowFinal | (relu ? jit::kNarrowRelu : 0) |
                                          (store != 0xffff ? jit::kNarrowPartVector : 0)
                                    : 0);
            tile(&call);
        }
    }
}

// `tile`: the generated code of this M x R block (for its rows), or null.
template <int M, int R>
void block_rows(const Narrow &s, const float *src, const float *packed, float *dst, int64_t i0,
                const float *bias, bool relu, jit::NarrowTileFn tile) {
    if (tile) return tile_rows(s, src, packed, dst, i0, bias, relu, tile);
    const bool inside = i0 - s.pt >= 0 && i0 + R - 1 + s.kr - 1 - s.pt < s.hs;
    if constexpr (M == kMaxChannels)  // (the unrolled 3x3 blocks of 8 channels only: compile time)
        if (s.kr == 3 && s.ks == 3)
            return (inside ? block_rows_with<M, R, true, 3> : block_rows_with<M, R, false, 3>)(s, src, packed, dst,
                                                                                                i0, bias, relu);
    (inside ? block_rows_with<M, R, true, 0> : block_rows_with<M, R, false, 0>)(s, src, packed, dst, i0, bias,
                                                                                 relu);
}

using BlockFn = void (*)(const Narrow &, const float *, const float *, float *, int64_t, const float *, bool,
                         jit::NarrowTileFn);

// kBlocks[m - 1][r - 1]: the block of m channels and r rows (null past rows_for(m)).
template <int M, int... I>
constexpr std::array<BlockFn, kMaxRows> blocks_of(std::integer_sequence<int, I...>) {
    return {{(M * (I + 1) <= kMaxSums ? &block_rows<M, (M * (I + 1) <= kMaxSums ? I + 1 : 1)> : nullptr)...}};
}
const std::array<std::array<BlockFn, kMaxRows>, kMaxChannels> kBlocks = {
    blocks_of<1>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<2>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<3>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<4>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<5>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<6>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<7>(std::make_integer_sequence<int, kMaxRows>{}),
    blocks_of<8>(std::make_integer_sequence<int, kMaxRows>{}),
};

// ---- AVX2 (no masked loads that keep off a page): the source image is
// first copied into zero-padded planes, `Padded` below, so that every tap's
// row vector is a plain load inside them.

// Bytes of a padded source image an AVX2 item takes a band of rows of at most.
constexpr int64_t kPaddedBand = int64_t(1) << 20;

// Source planes with the window's overhang zero-filled: destination (i, j)
// meets tap (r, q) at padded (i + r, j + q); rows wide enough for whole
// 8-column vectors of every destination row.
struct Padded {
    int64_t rows, cols;
    int64_t floats(int64_t channels) const { return channels * rows * cols; }
};

Padded padded_shape(const Narrow &s) {
    return {s.hd + s.kr - 1, round_up(s.wd, (int64_t)8) + s.ks - 1};
}

// Where the threads' padded images start in the workspace: after the
// packed weights, 64-byte aligned.
int64_t padded_at(const Narrow &s) { return round_up(s.cs * s.cd * s.kr * s.ks, (int64_t)16); }

// Rows [first, end) of image `src`'s cs padded planes, at their places in
// the planes at `out`: padded column j holds source column j - pl (pl < 0:
// the pass crops), zero outside.
void pad_image(const Narrow &s, const Padded &p, const float *src, float *out, int64_t first, int64_t end) {
    const int64_t lo = std::clamp<int64_t>(s.pl, 0, p.cols);  // the source's columns
    const int64_t hi = std::clamp<int64_t>(s.pl + s.ws, lo, p.cols);
    first = std::max<int64_t>(first, 0), end = std::min(end, p.rows);
    for (int64_t c = 0; c < s.cs; ++c) {
        const float *plane = src + c * s.hs * s.ws;
        float *to = out + c * p.rows * p.cols;
        for (int64_t i = first; i < end; ++i) {
            float *row = to + i * p.cols;
            const int64_t sr = i - s.pt;
            std::fill(row, row + p.cols, 0.0f);
            if (sr < 0 || sr >= s.hs) continue;
            std::copy(plane + sr * s.ws + (lo - s.pl), plane + sr * s.ws + (hi - s.pl), row + lo);
        }
    }
}

// R rows from i0 of one image's M destination planes from its padded
// source: M x R sums of 8 columns, per source channel and tap R row loads
// and M broadcast weights.
template <int M, int R>
CONV_TARGET_AVX2 void block_rows_avx2(const Narrow &s, const Padded &p, const float *src,
                                      const float *packed, float *dst, int64_t i0, const float *bias, bool relu) {
    static_assert(M * R <= 12 && M * R + R + 1 <= 16, "the sums, rows and a broadcast in 16 registers");
    const int64_t dplane = s.hd * s.wd, pplane = p.rows * p.cols;
    // The shapes' fields as locals: read through `s` in the loops below,
    // GCC reloaded the weights' stride from memory at every tap and
    // multiplied (backward-data, batch 32: LeNet-5's 6->16 5x5 1.18x, MNIST's
    // 1->32 28x28 1.40x, ResNet-20's 3->16 stem 1.12x).
    const int64_t cd = s.cd, ks = s.ks, kr = s.kr, cols = p.cols;
    for (int64_t j0 = 0; j0 < s.wd; j0 += 8) {
        alignas(32) float partial[M * R * 8];
        for (int64_t c0 = 0; c0 < s.cs; c0 += kBlock) {
            const int64_t c1 = std::min(s.cs, c0 + kBlock);
            __m256 acc[M * R];
#pragma GCC unroll 12
            for (int a = 0; a < M * R; ++a) acc[a] = _mm256_setzero_ps();
            for (int64_t c = c0; c < c1; ++c) {
                const float *plane = src + c * pplane + i0 * cols + j0;
                const float *wq = packed + c * kr * ks * cd;  // tap (r, q)'s weights, cd floats a tap
                for (int64_t r = 0; r < kr; ++r)
                    for (int64_t q = 0; q < ks; ++q, wq += cd) {
                        const float *at = plane + r * cols + q;
                        __m256 v[R];
#pragma GCC unroll 8
                        for (int i = 0; i < R; ++i) v[i] = _mm256_loadu_ps(at + i * cols);
#pragma GCC unroll 8
                        for (int m = 0; m < M; ++m) {
                            const __m256 b = _mm256_broadcast_ss(wq + m);
#pragma GCC unroll 8
                            for (int i = 0; i < R; ++i) acc[m * R + i] = _mm256_fmadd_ps(b, v[i], acc[m * R + i]);
                        }
                    }
            }
#pragma GCC unroll 12
            for (int a = 0; a < M * R; ++a)
                _mm256_store_ps(partial + a * 8, c0 == 0 ? acc[a] : _mm256_add_ps(_mm256_load_ps(partial + a * 8), acc[a]));
        }
        const int64_t n = std::min<int64_t>(8, s.wd - j0);
        for (int m = 0; m < M; ++m)
            for (int i = 0; i < R; ++i) {
                __m256 x = _mm256_load_ps(partial + (m * R + i) * 8);
                if (bias) x = _mm256_add_ps(x, _mm256_broadcast_ss(bias + m));
                if (relu) x = _mm256_max_ps(_mm256_setzero_ps(), x);  // NaN stays NaN (the second operand)
                store_first_avx2(dst + m * dplane + (i0 + i) * s.wd + j0, x, n);
            }
    }
}

using BlockAvx2Fn = void (*)(const Narrow &, const Padded &, const float *, const float *, float *, int64_t,
                             const float *, bool);

// Rows a block of m destination channels holds with AVX2.
constexpr int rows_for_avx2(int m) { return std::min(15 / (m + 1), 12 / m); }
constexpr int kMaxRowsAvx2 = 7;

template <int M, int... I>
constexpr std::array<BlockAvx2Fn, kMaxRowsAvx2> blocks_of_avx2(std::integer_sequence<int, I...>) {
    return {{(I + 1 <= rows_for_avx2(M) ? &block_rows_avx2<M, (I + 1 <= rows_for_avx2(M) ? I + 1 : 1)>
                                        : nullptr)...}};
}
const std::array<std::array<BlockAvx2Fn, kMaxRowsAvx2>, kMaxChannels> kBlocksAvx2 = {
    blocks_of_avx2<1>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<2>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<3>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<4>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<5>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<6>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<7>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
    blocks_of_avx2<8>(std::make_integer_sequence<int, kMaxRowsAvx2>{}),
};
#endif

}  // namespace

bool direct_narrow_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    const Isa isa = cpu_isa();
    if (dtype != CONV_DTYPE_FLOAT32 || (isa != Isa::avx512 && isa != Isa::avx2)) return false;
    if (op != CONV_OP_FORWARD && op != CONV_OP_BACKWARD_DATA) return false;
    if (g.layout != CONV_LAYOUT_CHANNELS_FIRST || g.groups != 1 || !g.is_planar()) return false;
    if (g.stride[1] != 1 || g.stride[2] != 1 || g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    if (g.kernel[2] > kMaxTapColumns) return false;
    // Forward from 2-4 source channels onto more than kMaxChannels: blocks
    // of kMaxChannels destination channels, each re-reading the few source
    // rows from L1, where the channel-vector tiles pad and copy the source
    // and transpose every output back into channels-first rows. 1 thread,
    // batch 32, alternated: ResNet-20's 3->16 32x32 stem 1.17-1.20x; from
    // one channel it lost (MNIST's 1->32 onto 26x26, rows in 16 + 10
    // lanes: 0.85x).
    const bool few_sources = op == CONV_OP_FORWARD && isa == Isa::avx512 && g.c >= 2 && g.c <= kFewSources &&
                             g.k <= kMaxFewSourceOutputs &&
                             (g.k * g.out_size() * (int64_t)sizeof(float) <= kFewSourceImageBytes ||
                              g.out[2] % kLanes == 0);
    if ((op == CONV_OP_FORWARD ? g.k : g.c) > kMaxChannels && !few_sources) return false;
    // Forward against the channel-vector tiles (batch 32, 1 thread, strict,
    // 6 interleaved rounds): 1.58-1.72x on LeNet-5's 1->6 5x5, 3->8 32x32,
    // 8->8 16x16, 1->8 28x28 and 16->4 28x28, but 0.85x on 6->8 5x5 onto
    // 10x10, whose rows fill 10 of a vector's 16 lanes: forward takes it
    // where the output rows fill at least 3/4 of their vectors. With AVX2
    // (8 lanes, the same rule), the same way: LeNet-5's 1->6 5x5
    // 1.40-1.56x, 64->3 32x32 2.4x, 16->4 28x28 2.3x, 32->1 64x64 2.6-2.9x,
    // 8->8 16x16 1.5-1.8x, 3->8 32x32 1.5-2.1x, 64->8 32x32 1.26-1.36x.
    const int64_t wd = g.out[2], lanes = isa == Isa::avx2 ? 8 : kLanes;
    return op == CONV_OP_BACKWARD_DATA || 4 * wd >= 3 * lanes * ceil_div(wd, lanes);
}

#if CONV_HAVE_AVX512_KERNELS
// The generated code of each block the pass meets (a plan's or the
// context's cached plan's calls find them in jit's cache): whole and last
// blocks of channels and of rows, for the rows inside the plane and for
// the row blocks at its top and bottom whose window overhangs it. Made
// before the items run; find() only reads. Null where the generator makes
// none: the compiled block runs.
class BlockTiles {
public:
    BlockTiles(const Narrow &s, int rows) : s_(s) {
        const int64_t row_blocks = ceil_div(s.hd, rows);
        const int channel_blocks[2] = {(int)std::min<int64_t>(s.cd, kMaxChannels), (int)(s.cd % kMaxChannels)};
        for (int m : channel_blocks) {
            if (m == 0) continue;
            // A whole block whose window lies in the source, then the
            // first and last kEdgeBlocks row blocks: those that overhang
            // the plane where its padding is at most kEdgeBlocks blocks
            // deep, and the last, which may be shorter.
            const int whole = std::min(rows, rows_for(m));
            add(m, whole, Window{0, (int)s.kr + whole - 1});
            for (int64_t b = 0; b < row_blocks; ++b) {
                if (b == kEdgeBlocks && row_blocks - kEdgeBlocks > b) b = row_blocks - kEdgeBlocks;
                const int64_t i0 = b * rows;
                const int r = (int)std::min<int64_t>({(int64_t)rows, s.hd - i0, (int64_t)rows_for(m)});
                add(m, r, window(r, i0));
            }
        }
    }

    // The code of the block of m channels and r rows from destination row i0.
    jit::NarrowTileFn find(int m, int r, int64_t i0) const { return lookup(m, r, window(r, i0)); }

private:
    static constexpr int kEdgeBlocks = 3;
    // [begin, end): the rows of a block's window (0 .. kr + r - 2) that lie in the source.
    struct Window {
        int begin, end;
        bool operator==(const Window &o) const { return begin == o.begin && end == o.end; }
    };
    struct Entry {
        int m = 0, r = 0;
        Window live{0, 0};
        jit::NarrowTileFn fn = nullptr;
    };

    Window window(int r, int64_t i0) const {
        const int64_t span = s_.kr + r - 1, top = i0 - s_.pt;  // the window's first row in the source
        return {(int)std::clamp<int64_t>(-top, 0, span), (int)std::clamp<int64_t>(s_.hs - top, 0, span)};
    }

    jit::NarrowTileFn lookup(int m, int r, const Window &w) const {
        for (int e = 0; e < count_; ++e)
            if (entries_[e].m == m && entries_[e].r == r && entries_[e].live == w) return entries_[e].fn;
        return nullptr;
    }

    void add(int m, int r, const Window &w) {
        if (lookup(m, r, w) || count_ == kMaxEntries) return;
        jit::NarrowTileSpec spec;
        spec.m = m, spec.r = r, spec.kr = (int)s_.kr, spec.ks = (int)s_.ks;
        spec.row = s_.ws, spec.channel_x = s_.hs * s_.ws, spec.tap_w = s_.cd;
        spec.dst_row = s_.wd, spec.dst_channel = s_.hd * s_.wd;
        spec.live_begin = w.begin, spec.live_end = w.end;
        std::shared_ptr<const jit::NarrowTileKernel> made = jit::narrow_tile(spec);
        if (!made) return;
        entries_[count_] = {m, r, w, made->fn()};
        kept_[count_++] = std::move(made);
    }

    // Two channel blocks x (a whole block inside + 2 kEdgeBlocks row blocks).
    static constexpr int kMaxEntries = 2 * (2 * kEdgeBlocks + 1);
    const Narrow &s_;
    int count_ = 0;
    Entry entries_[kMaxEntries];
    std::shared_ptr<const jit::NarrowTileKernel> kept_[kMaxEntries];
};
#endif

size_t direct_narrow_workspace(const ConvGeometry &g, conv_op_t op, int threads) {
    int64_t floats = checked_mul(g.c * g.k, g.kernel_size(), "workspace");
    if (cpu_isa() == Isa::avx2) {  // and a padded source image per thread
        const Narrow s = narrow_shape(g, op);
        floats = checked_add(padded_at(s),
                             checked_mul(padded_shape(s).floats(s.cs), std::max(threads, 1), "workspace"),
                             "workspace");
    }
    return (size_t)checked_mul(floats, (int64_t)sizeof(float), "workspace");
}

void direct_narrow_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const Narrow s = narrow_shape(*args.g, args.op);
    float *packed = static_cast<float *>(ws);
    pack(s, static_cast<const float *>(args.w), packed);
    const float *src = static_cast<const float *>(s.backward ? args.y : args.x);
    float *dst = static_cast<float *>(s.backward ? args.x : args.y);
    const float *bias = s.backward ? nullptr : static_cast<const float *>(args.bias);
    const bool relu = !s.backward && args.g->activation == CONV_ACTIVATION_RELU;
    const int64_t dplane = s.hd * s.wd;
    if (cpu_isa() == Isa::avx2) {  // an image an item, padded into the thread's slot
        const Padded p = padded_shape(s);
        float *slots = packed + padded_at(s);
        // Onto 7 or 8 channels, blocks of kSplitBlockAvx2 over a band of
        // rows (every block before the next band, so that the band's source
        // rows stay in L1): a block of 7-8 holds one row, a broadcast per
        // FMA. Against the whole block, batch 32, 1 thread, 6 alternated
        // rounds: forward 8->8 16x16 1.25-1.5x, 3->8 32x32 1.13-1.48x,
        // 16->7 28x28 1.02-1.07x; backward-data onto 7-8 channels
        // 1.21-1.28x.
        const int per = (int)(s.cd <= kWholeBlockAvx2 ? s.cd : kSplitBlockAvx2), rows = rows_for_avx2(per);
        // An item is a band of an image's rows (whole blocks' rows), padding
        // only the source rows it reads: with several threads and under two
        // images a thread, four items a thread (image by image, VGG's
        // 3-channel backward-data at batch 1 ran on one thread: 2 threads
        // 0.97-1.14x of 1), and bands of a padded image past kPaddedBand
        // (its rows then still in L2 when the blocks read them).
        const int64_t for_threads = threads == 1 || s.n >= 2 * threads ? 1 : ceil_div(4 * threads, s.n);
        const int64_t for_size = ceil_div(p.floats(s.cs) * (int64_t)sizeof(float), kPaddedBand);
        const int64_t bands = std::min(ceil_div(s.hd, rows), std::max(for_threads, for_size));
        const int64_t band = round_up(ceil_div(s.hd, bands), rows), per_image = ceil_div(s.hd, band);
        pool.parallel_for(
            s.n * per_image,
            [&](int64_t item, int slot) {
                const int64_t n = item / per_image, b0 = item % per_image * band, b1 = std::min(s.hd, b0 + band);
                float *padded = slots + slot * p.floats(s.cs);
                pad_image(s, p, src + n * s.cs * s.hs * s.ws, padded, b0, b1 + s.kr - 1);
                for (int64_t i0 = b0; i0 < b1; i0 += rows) {
                    const int r = (int)std::min<int64_t>(rows, b1 - i0);  // a block of fewer channels holds as many
                    for (int64_t m0 = 0; m0 < s.cd; m0 += per) {
                        const int m = (int)std::min<int64_t>(per, s.cd - m0);
                        kBlocksAvx2[m - 1][r - 1](s, p, padded, packed + m0, dst + (n * s.cd + m0) * dplane, i0,
                                                  bias ? bias + m0 : nullptr, relu);
                    }
                }
            },
            threads);
        return;
    }
    // Destination channels in blocks of up to kMaxChannels (the packed
    // weights' m, the destination's planes and the bias offset by the
    // block's first), each of an item's rows.
    const int rows = rows_for((int)std::min<int64_t>(s.cd, kMaxChannels));
    const int64_t row_blocks = ceil_div(s.hd, rows);
    const BlockTiles tiles(s, rows);
    pool.parallel_for(
        s.n * row_blocks,
        [&](int64_t item, int) {
            const int64_t n = item / row_blocks, i0 = item % row_blocks * rows;
            const int r = (int)std::min<int64_t>(rows, s.hd - i0);
            for (int64_t m0 = 0; m0 < s.cd; m0 += kMaxChannels) {
                const int m = (int)std::min<int64_t>(kMaxChannels, s.cd - m0), rm = std::min(r, rows_for(m));
                kBlocks[m - 1][rm - 1](s, src + n * s.cs * s.hs * s.ws, packed + m0, dst + (n * s.cd + m0) * dplane,
                                       i0, bias ? bias + m0 : nullptr, relu, tiles.find(m, rm, i0));
            }
        },
        threads);
#else
    (void)args, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
