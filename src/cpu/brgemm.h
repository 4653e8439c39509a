// The batch-reduce GEMM: one micro-kernel interface for convolution passes
// that are sums over kernel taps and channel blocks of small matrix
// products (oneDNN's brgemm, LIBXSMM's batch-reduce kernels):
//
//     C[32 x 32] (+)= sum over i < count of A_i[32 x K] * B_i[K x 32]
//
// The solvers (cpu/brgemm_conv.h) decide what A_i and B_i are -- rows of a
// padded channels-last copy of the input, blocks of packed weights -- and
// the backend how the products are made:
//   tiles   AMX: bf16 A and B, fp32 sums (tdpbf16ps), on the hardware or
//           emulated (cpu/tiles.h); K a multiple of 32; B pair-interleaved
//   avx512  fp32 A and B, FMA; K any
// A block always has 32 rows and 32 columns: rows or columns past a
// problem's edge are computed and discarded by the caller, who keeps the
// memory they read valid (rows of the padded copy, zero columns of the
// packed weights). A batch and its blocking are decided once per plan.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/amx.h"

namespace conv::cpu::brgemm {

enum class Backend { avx512, tiles_hw, tiles_emulated };

constexpr int kBlock = 32;  // rows and columns of C

// The elements of A and B the backend reads, and their alignment rules.
struct Format {
    size_t element;   // bytes of one A or B element: 2 (bf16) or 4 (float)
    int k_multiple;   // the reduction of each batch element is padded to a multiple of this
    bool pair_b;      // B is pair-interleaved: K/2 rows of 32 columns x 2 (bf16 pairs)
};
Format format_of(Backend b);

// One batch. A_i's row r starts at a[i] + r * a_row_bytes and holds `k`
// elements; B_i is the packed block at b[i]: k rows of 32 (avx512) or k/2
// pair-rows of 32 pairs (tiles), rows b_row_bytes apart.
struct Batch {
    int count;
    const void *const *a;
    const void *const *b;
    int64_t a_row_bytes;
    int64_t b_row_bytes;
    int64_t k;
};

// C (32 x 32 floats, rows 32 apart) = the batch's sum, or += when
// `accumulate`. Tile backends: call inside a TileScope on this thread.
void run(Backend be, const Batch &batch, float *c, bool accumulate);

// Configures the tiles for the calling thread for the scope's life and
// releases them at its end (hardware: ldtilecfg / tilerelease); nothing on
// the AVX-512 backend. One per thread per parallel region.
class TileScope {
public:
    explicit TileScope(Backend be);
    ~TileScope();
    TileScope(const TileScope &) = delete;
    TileScope &operator=(const TileScope &) = delete;

private:
    Backend be_;
};

// The tile backend this process has (tile_backend()), or avx512 when none.
Backend tile_backend_or_avx512();

}  // namespace conv::cpu::brgemm
