// Channels-first depthwise 3x3 on AVX2 CPUs a plane at a time, vectors
// along its rows, read and written in place (depthwise_avx2_planes.cpp):
// forward, backward-data at stride 1 (the forward pass of dy with the
// window rotated) and backward-filter, where it measured ahead of
// depthwise_avx2.cpp's blocks and depthwise_avx2_rows.cpp; multiplier 1.
// dw_avx2_* of depthwise_avx2.cpp hand it the passes it covers.
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Among the passes dw_avx2_covers(g, op) accepts: whether this kernel takes it.
bool dw_planes_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_planes_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_planes_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
