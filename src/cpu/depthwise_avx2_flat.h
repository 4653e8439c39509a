// Channels-first depthwise 3x3 backward-filter at stride 1, padding 1, on
// AVX2 CPUs, small planes swept as flat runs of positions, in place
// (depthwise_avx2_flat.cpp); multiplier 1. dw_avx2_* of depthwise_avx2.cpp
// hand it the passes it covers.
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Among the passes dw_avx2_covers(g, op) accepts: whether this kernel takes it.
bool dw_flat_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_flat_workspace_bytes(const ConvGeometry &g, int threads);
void dw_flat_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
