// Channels-first depthwise 3x3 backward-data at stride 2 on AVX2 CPUs, dy
// spread into dx a plane at a time, in place (depthwise_avx2_spread.cpp);
// multiplier 1. dw_avx2_* of depthwise_avx2.cpp hand it the passes it
// covers.
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Among the passes dw_avx2_covers(g, op) accepts: whether this kernel takes it.
bool dw_spread_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_spread_workspace_bytes(const ConvGeometry &g, int threads);
void dw_spread_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
