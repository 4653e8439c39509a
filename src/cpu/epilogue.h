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

// db[k] = sum over n and positions of dy, accumulated in double.
template <class T>
void bias_gradient(const ConvGeometry &g, const T *dy, T *db, ThreadPool &pool, int threads);

}  // namespace conv::cpu
