// AVX-512 (and, where they measured faster, AVX2) fp32 kernels of
// CONV_ALGO_GEMM_1X1 for ungrouped pointwise convolutions, and of
// CONV_ALGO_IM2COL_GEMM for 1-D ones (their taps unfolded into the GEMM). gemm_1x1.cpp asks
// pw_avx512_covers() and keeps the OpenBLAS path for everything else (fp64,
// groups, other ISAs, and the shapes where OpenBLAS measured faster).
#pragma once

#include <cstddef>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Whether the kernels compute this fp32 pass on this CPU (at any thread
// count: a plan's prepared weights serve every one).
bool pw_avx512_covers(const ConvGeometry &g, conv_op_t op);

// Whether they compute this fp32 pass of a 1-D convolution (channels-first,
// groups 1, stride 1; any taps, dilation and padding) as one GEMM whose
// reduction (forward, backward-data) or output columns (backward-filter)
// run over channels and taps, B unfolded panel by panel (im2col_gemm.cpp
// runs it so).
bool pw_avx512_covers_taps(const ConvGeometry &g, conv_op_t op);

// Whether that 1-D pass is expected to beat the solvers AUTO tries before
// im2col (direct_avx512's and implicit_gemm's competitive() ask).
bool pw_avx512_taps_win(const ConvGeometry &g, conv_op_t op);

// Workspace bytes they use with `threads` threads (when they cover the pass).
size_t pw_avx512_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);

// Runs a covered pass; `ws` holds pw_avx512_workspace_bytes(g, op, threads).
void pw_avx512_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Prepared weights, on AVX-512, for the passes that make all of W over per
// call: W's panels (channels-first backward-data on small planes,
// channels-last forward and backward-data) or W^T in strips (the other channels-first
// backward-data); 0 bytes for the others. pw_avx512_run finds them in
// ConvArgs::prepared.
size_t pw_avx512_prepared_bytes(const ConvGeometry &g, conv_op_t op);
void pw_avx512_prepare_weights(const ConvGeometry &g, conv_op_t op, const float *w, float *out,
                               ThreadPool &pool, int threads);

}  // namespace conv::cpu
