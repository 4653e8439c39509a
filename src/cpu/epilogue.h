// Elementwise work around the GEMMs: bias + activation after a forward tile,
// and the bias gradient (sums of dy over batch and space).
#pragma once

#include <cstdint>

#include "core/geometry.h"
#include "core/thread_pool.h"

namespace conv::cpu {

// Channels-first tile: `rows` output channels of `cols` positions, row
// stride `ld`; bias (nullable) holds one value per row.
template <class T>
void bias_act_rows(T *y, int64_t rows, int64_t cols, int64_t ld, const T *bias, bool relu);

// Channels-last tile: `rows` positions of `k` channels each (contiguous).
template <class T>
void bias_act_cols(T *y, int64_t rows, int64_t k, const T *bias, bool relu);

// A whole tensor's shape as the epilogues see it: batch, channels, positions.
struct ChannelShape {
    conv_layout_t layout;
    int64_t n, channels, positions;
};

// sums[c] = sum over batch and positions of t (the bias gradient when t is
// dy), accumulated in double. `dtype` is float32, float64 or bfloat16.
void channel_sums(const ChannelShape &s, conv_dtype_t dtype, const void *t, void *sums,
                  ThreadPool &pool, int threads);

// t = act(t + bias) over a whole tensor (bias nullable): the epilogue of a
// transposed convolution, whose output is produced by a backward-data pass.
void bias_act_tensor(const ChannelShape &s, conv_dtype_t dtype, void *t, const void *bias,
                     bool relu, ThreadPool &pool, int threads);

}  // namespace conv::cpu
