// Channels-first pointwise backward-filter onto few filters as dot products
// (AVX-512, fp32): dW[k][c] = sum over images and positions of dy[k][p] *
// x[c][p], both operands read in place along p, where they are contiguous.
// pointwise_avx512.cpp hands it the passes it covers.
#pragma once

#include "cpu/algorithm.h"

namespace conv::cpu {

// Whether it computes this fp32 pass (on this CPU).
bool pw_dot_filter_covers(const ConvGeometry &g, conv_op_t op);

// dW (and db where args.bias) of a covered pass; no workspace.
void pw_dot_filter_run(const ConvArgs &args, ThreadPool &pool, int threads);

}  // namespace conv::cpu
