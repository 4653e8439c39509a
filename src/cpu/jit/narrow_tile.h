// The register block of direct_narrow (cpu/direct_narrow_avx512.cpp),
// generated for one problem: M destination channels x R rows x 16 columns
// (positions in the vector), summed over source channels and the window's
// taps.
//
//   for c < channels:                        (a loop; x, w advance per channel)
//     for each tap (r, q) (unrolled; offsets are displacements):
//       v_i = load(x + (r + i) * row + q), lanes of mask q   i < R, row r + i live
//       acc[m][i] += broadcast(w[(r * ks + q) * tap_w + m]) * v_i    m < M
//
// What it saves over the compiled block: GCC's code for the unrolled 3x3
// window kept 28 of 32 registers live and copied the sums between
// registers at each tap row, and on other windows ran the tap loops with
// their address arithmetic; here every load is a displacement and the sums
// never move. The products are added in the compiled block's order (source
// channel, tap row, tap column), so both give the same bits (for finite
// weights: the compiled block multiplies a row outside the source as
// zeros, which an infinite weight turns into NaN; this code leaves those
// products out).
//
// A block's window spans kr + r - 1 source rows; those outside the source
// (a block at the top or bottom of a padded plane) are left out when the
// code is made, with their products: no row tests, and the padding's
// products are not computed at all (a zero row's FMAs cost as much as a
// live one's: the compiled edge blocks of ResNet-20's 3->16 32x32 stem, 2
// of its 11 row blocks, took 17-21% of the pass). The columns where the
// window overhangs the row are the masks' (lanes off read as zero and
// never fault). The last channel block's call also adds the bias, applies
// ReLU and stores the sums to the destination's rows: the sums' round trip
// through memory and the compiled store after it stalled on a full store
// queue (VGG-16's 3->64 224x224).
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/jit/jit.h"

namespace conv::cpu::jit {

// What a block's code is made for; elements are floats.
struct NarrowTileSpec {
    int m = 0, r = 0;          // destination channels, rows
    int kr = 0, ks = 0;        // the window's rows and columns
    int64_t row = 0;           // elements from one source row to the next
    int64_t channel_x = 0;     // ... from one source channel's plane to the next
    int64_t tap_w = 0;         // ... from one tap's packed weights to the next
    int64_t dst_row = 0;       // ... from one destination row to the next
    int64_t dst_channel = 0;   // ... from one destination plane to the next
    int live_begin = 0;        // the window's rows (0 .. kr + r - 2) that lie in the source:
    int live_end = 0;          // [live_begin, live_end)
    bool operator==(const NarrowTileSpec &o) const;
};

// One call of a block: sums source channels [c0, c0 + channels).
struct NarrowTileCall {
    const float *x;      // channel c0 at the block's first tap row, the column of lane 0 for tap column 0
    const float *w;      // channel c0's packed weights (the block's first destination channel's)
    int64_t channels;
    float *sums;         // [m][r][16], 64-byte aligned: the channel blocks' sums so far
    float *dst;          // the block's first destination row at its first column
    const float *bias;   // the block's first channel's, or null
    int64_t mode;        // kNarrow* bits
    uint16_t masks[8];   // per tap column the lanes that lie in the row; [7]: the lanes stored
};

// kNarrowAddSums: add `sums` (the channel blocks before, two-level
// summation); kNarrowFinal: the bias, ReLU where kNarrowRelu, and the
// store to dst (masked where kNarrowPartVector), else the store to sums.
constexpr int64_t kNarrowAddSums = 1, kNarrowFinal = 2, kNarrowRelu = 4, kNarrowPartVector = 8;

using NarrowTileFn = void (*)(const NarrowTileCall *call);

using NarrowTileKernel = Kernel<NarrowTileFn>;

// The block's kernel, generated or from the cache; null where jit::enabled()
// is false, the CPU has no AVX-512, or the spec is beyond the generator
// (the compiled block runs).
std::shared_ptr<const NarrowTileKernel> narrow_tile(const NarrowTileSpec &spec);

}  // namespace conv::cpu::jit
