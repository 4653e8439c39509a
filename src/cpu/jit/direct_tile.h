// The register tile of direct_avx512 (cpu/direct_avx512.cpp), generated
// for one problem: NV vectors of 16 destination channels x UR positions,
// summed over source channels and, per channel, a fixed list of taps.
//
//   for c < channels:                       (a loop; x, w advance per channel)
//     for each tap t (unrolled; AVX2 from 25 taps, AVX-512 past 4096
//     instructions unrolled, a loop over the kernel's rows or a 3-D
//     kernel's slices, one repeat's taps unrolled): (offsets are displacements)
//       w_v = load(w + t.w + v * vector)    v < NV
//       acc[v][i] += w_v * broadcast(x[t.x + i * position_x])
//                                           i < UR, live_lo[t] <= i < live_hi[t]
//
// What it saves over the compiled tile: the per-step table of offsets
// (two loads and an address per step), and with one vector the broadcast
// register (the FMA broadcasts from memory). The products are added in the
// order the compiled tile adds them, so both give the same bits.
// A tile on a plane's border leaves out the products of taps that read the
// source's zero padding (`live_lo`, `live_hi`): its sums then differ from
// the compiled tile's by adding w * 0 -- nothing, on finite weights.
//
// AVX2 (`ymm`): each vector of 16 channels is two ymm halves, as in the
// compiled tile_avx2, in 16 registers. Its tiles run on across rows
// (tiles_wrap): positions [0, wrap) are read from x + i, positions
// [wrap, ur) from x2 + i (x2: the next row, less `wrap` elements).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/jit/jit.h"

namespace conv::cpu::jit {

// What a tile's code is made for; elements are floats.
struct DirectTileSpec {
    int nv = 0, ur = 0;        // vectors of 16 channels, positions
    bool ymm = false;          // AVX2: two ymm halves a vector, 16 registers
    int wrap = 0;              // ymm: positions before the next row's (ur: none)
    int64_t channel_x = 0;     // elements from one source channel's plane to the next
    int64_t position_x = 1;    // elements from one position to the next (zmm; ymm: 1)
    int64_t channel_w = 0;     // elements from one channel's packed weights to the next
    int64_t vector_w = 0;      // elements from one weight vector to the next
    std::vector<int64_t> tap_x, tap_w;  // per tap of a channel: its x and w offsets
    // Per tap, the positions [lo, hi) that read the source, not its padding
    // (zmm only; empty: every position of every tap).
    std::vector<int8_t> live_lo, live_hi;
    bool operator==(const DirectTileSpec &o) const;
};

// How the tile meets `out` (sums [position][NV * 16], 64-byte aligned):
// 0 overwrites it, 1 adds to it in registers (a running sum), 2 sums from
// zero and then adds (two-level summation under CONV_MATH_STRICT).
// `x2`: positions from `wrap` on (ymm; else unused).
using DirectTileFn = void (*)(const float *x, const float *w, int64_t channels, float *out,
                              int64_t mode, const float *x2);

using DirectTileKernel = Kernel<DirectTileFn>;

// The tile's kernel, generated or from the cache; null where jit::enabled()
// is false or the spec is beyond the generator (more than 32 registers,
// offsets past 32 bits, too much code), and the caller runs its compiled
// tile. The kernel lives while a holder keeps it.
std::shared_ptr<const DirectTileKernel> direct_tile(const DirectTileSpec &spec);

}  // namespace conv::cpu::jit
