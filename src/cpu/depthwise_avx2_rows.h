// Channels-first depthwise 3x3 backward-filter at stride 1 on AVX2
// CPUs, vectors along a plane's rows read in place (depthwise_avx2_rows.cpp):
// multiplier 1, dy planes 16 or more columns wide. dw_avx2_* of depthwise_avx2.cpp
// hand it the passes it covers.
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Among the passes dw_avx2_covers(g, op) accepts: whether this kernel takes it.
bool dw_rows_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_rows_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_rows_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
