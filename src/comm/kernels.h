// Host arithmetic of the communication layer: the in-process reduction of N
// ranks' buffers, the division of an average, fp16/bf16 <-> float, and the
// fused SGD update. All element-wise, in float for FLOAT32/FLOAT16/BFLOAT16
// and double for FLOAT64, rounded once to the dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conv.h"

namespace conv::comm {

// For elements [begin, end): acc = sends[0] + sends[1] + ... (rank order),
// divided by n when `average`, written to every recvs[r]. Reads all sends of
// a block before writing any recv of it, so sends[r] == recvs[r] is fine.
void reduce_into(conv_dtype_t dtype, int n, const void *const *sends, void *const *recvs,
                 int64_t begin, int64_t end, bool average);

// data[i] /= divisor, rounded once to the dtype.
void divide(conv_dtype_t dtype, void *data, int64_t count, int divisor);

// 16-bit floats <-> float (dtype FLOAT16 or BFLOAT16).
void widen_to_float(conv_dtype_t dtype, const void *src, float *dst, int64_t count);
void narrow_from_float(conv_dtype_t dtype, const float *src, void *dst, int64_t count);

// NVCaffe's SGD with momentum and L2 decay over n elements:
//   h = momentum * h + lr * (g + decay * w);  w -= h
void sgd_update(conv_dtype_t dtype, void *w, const void *g, void *h, int64_t n, double lr,
                double momentum, double decay);

}  // namespace conv::comm
