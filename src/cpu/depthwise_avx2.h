// The AVX2 fp32 kernels of CONV_ALGO_DEPTHWISE_DIRECT: 2-D 3x3 windows,
// stride 1 or 2, no dilation, multiplier 1 (MobileNet's depthwise layers)
// on CPUs with AVX2 and FMA but no AVX-512; channels-first in
// depthwise_avx2.cpp (and depthwise_avx2_rows.cpp), channels-last in
// depthwise_avx2_nhwc.cpp. depthwise_direct.cpp asks dw_avx2_covers() as it
// asks dw_avx512_covers().
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

bool dw_avx2_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_avx2_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_avx2_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-last (depthwise_avx2_nhwc.cpp); dw_avx2_* route to these.
bool dw_avx2_nhwc_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_avx2_nhwc_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_avx2_nhwc_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
