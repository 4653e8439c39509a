// The engine's own small CUDA kernels (kernels.cu): what cuDNN's legacy API
// does not do for us. Each enqueues on `stream` and returns the launch's
// error (cudaGetLastError), which the caller checks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "conv.h"

namespace conv::cuda::kernels {

// Explicit padding and cropping (asymmetric padding, which the legacy
// descriptor cannot express) and layout changes (channels-last problems
// cuDNN has no kernel for run channels-first): over every element of dst
// (n, c, dst_sp...), dst[p] = src[p - offset] where that lies inside src
// (n, c, src_sp...), else 0. Spatial sizes and offsets are D, H, W (3-D
// normalised); each side has its own layout. Any dtype (moved as bits).
cudaError_t window_copy(cudaStream_t stream, conv_dtype_t dtype, bool src_channels_last,
                        bool dst_channels_last, int64_t n, int64_t c, const int64_t src_sp[3],
                        const int64_t dst_sp[3], const int64_t offset[3], const void *src,
                        void *dst);

// t = act(t + bias) over a tensor of n x c channels x `positions` (bias
// nullable, one value per channel); relu keeps NaN (v < 0 ? 0 : v), as the
// CPU engine does. Arithmetic in float (double for fp64).
cudaError_t bias_act(cudaStream_t stream, conv_dtype_t dtype, bool channels_last, int64_t n,
                     int64_t c, int64_t positions, void *t, const void *bias, bool relu);

// Scratch bytes channel_sums needs.
size_t channel_sums_scratch(conv_dtype_t dtype, int64_t n, int64_t c, int64_t positions);

// sums[ch] = sum over batch and positions of t (the bias gradient), in a
// fixed order (deterministic), accumulated in float (double for fp64).
cudaError_t channel_sums(cudaStream_t stream, conv_dtype_t dtype, bool channels_last, int64_t n,
                         int64_t c, int64_t positions, const void *t, void *sums, void *scratch);

// *result = the smallest index of a NaN or infinity among n elements, or
// ~0ull when none. `result` is device memory.
cudaError_t first_non_finite(cudaStream_t stream, conv_dtype_t dtype, const void *p, int64_t n,
                             unsigned long long *result);

}  // namespace conv::cuda::kernels
