// The register tile of direct_avx512's backward-filter
// (cpu/direct_avx512_filter.cpp), generated for one problem: NV vectors of
// 16 filters x NC columns of dw (a column: one source channel and tap),
// summed over a chunk's output positions.
//
//   for r < rows:                                  (loops; dy and x advance)
//     for ow < len:                                (len <= wo: a window of the row)
//       d_v = dy[v * dy_vec + ow * dy_pos]         v < NV
//       acc[v][j] += d_v * broadcast(x[off[j] + ow])   j < NC
//
// The columns' offsets (from the first column's source element) are
// displacements here. The compiled tile keeps them in an array: with one
// filter vector its 16 columns need 16 address registers, GCC spills six
// and reloads them at every position, and its indexed broadcast operands
// take two micro-ops each. Same order of additions, same bits.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/jit/jit.h"

namespace conv::cpu::jit {

struct FilterTileSpec {
    int nv = 0, nc = 0;            // 1..4 filter vectors, 1..16 columns
    int64_t dy_vec = 0;            // elements from one filter vector's dy to the next's
    int64_t dy_pos = 16;           // elements from one position's dy to the next's (16: laid out, aligned)
    int64_t wo = 0;                // positions a row of dy (from one row's dy to the next's)
    int64_t len = 0;               // positions summed a row, from the first (1..wo; 0: wo)
    std::vector<int64_t> offsets;  // per column, elements from the first column's source
    bool operator==(const FilterTileSpec &o) const;
};

// dy: the first vector's dy at the chunk's first position ([position][16],
// or where dy_pos is not 16 channels-last dy as it lies, unaligned);
// x: the first column's source element there; rstep: elements from one
// padded source row to the next; sums: [column][NV][16], 64-byte aligned;
// mode 0 overwrites them, 1 adds in registers, 2 sums from zero then adds.
using FilterTileFn = void (*)(const float *dy, const float *x, int64_t rows, int64_t rstep,
                              float *sums, int64_t mode);

using FilterTileKernel = Kernel<FilterTileFn>;

// Whether these tiles are generated in this process: jit::enabled() and a
// CPU with AVX-512 (the generator makes zmm code only; on AVX2 the
// compiled tile runs).
bool filter_tiles_generated();

// The tile's kernel, generated or from the cache; null where
// filter_tiles_generated() is false or the spec is beyond the generator
// (the compiled tile runs).
std::shared_ptr<const FilterTileKernel> filter_tile(const FilterTileSpec &spec);

}  // namespace conv::cpu::jit
