// Convolution lowered to GEMM (Caffe2's ConvOp, PyTorch's slow_conv2d), for
// the three passes and both layouts. With `unfold` the input is unfolded
// tile by tile into a per-thread buffer (im2col / im2row); without it the
// input is used in place, which is only valid for pointwise problems.
//
// Parallel work items are chosen so that no two threads ever write the same
// output element: forward splits images x groups x output-position tiles,
// backward-data splits images x groups x input-channel blocks (folding back
// overlapping windows only ever touches the block's own channels; where
// those are fewer than the threads, channels-last also splits output rows
// into bands folded in two rounds, see GemmConvPlan::bands), and
// backward-filter splits groups x channel blocks x filter blocks, each
// accumulating over the whole batch in a fixed order -- so results are
// identical from run to run with the same thread count.
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

struct GemmConvPlan {
    int64_t pt = 1;      // output positions per tile
    int64_t ct = 1;      // input channels per block (backward passes)
    int64_t kt = 1;      // filters per block (backward-filter)
    int64_t items = 0;   // parallel work items
    size_t slot_bytes = 0;  // scratch per thread, 64-byte multiple
    // Channels-last backward-data with fewer items than threads: each item's
    // output rows in `bands` bands of `band_rows`, run in two rounds (even
    // bands, then odd) -- far enough apart that no two bands of a round fold
    // into the same dx rows. 1: none.
    int64_t bands = 1, band_rows = 0;
};

// The block size splitting `total` (filters, channels) so that `work`
// items times the blocks reach `threads`: all of it when work already does.
int64_t block_for_threads(int64_t total, int64_t work, int threads);

GemmConvPlan plan_gemm_conv(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype, bool unfold,
                            int threads);

void run_gemm_conv(const ConvArgs &args, bool unfold, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
