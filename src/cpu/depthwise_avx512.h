// AVX-512 fp32 kernels of CONV_ALGO_DEPTHWISE_DIRECT for the common case:
// 2-D 3x3 windows, stride 1 or 2, no dilation (MobileNet's depthwise
// layers). depthwise_direct.cpp asks dw_avx512_covers() and keeps its
// portable code for everything else (fp64, other ISAs, other geometries).
#pragma once

#include <cstddef>
#include <memory>

#include "cpu/algorithm.h"

namespace conv::cpu {

// Whether the AVX-512 kernels compute this fp32 pass on this CPU.
bool dw_avx512_covers(const ConvGeometry &g, conv_op_t op);

// Workspace bytes they use with `threads` threads (when they cover the pass).
size_t dw_avx512_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);

// Runs a covered pass; `ws` holds dw_avx512_workspace_bytes(g, op, threads).
void dw_avx512_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Once per plan, for a covered pass: what its kernel would otherwise work
// out on every call (Algorithm::plan_run), or null.
std::shared_ptr<const RunPlan> dw_avx512_plan(const ConvGeometry &g, conv_op_t op);

// Channels-first, 2-D, a 3x3 window without dilation, equal strides of 1
// or 2, channel multiplier 1, a non-empty input: the frame every
// channels-first kernel below starts from (each then names its planes).
bool dw_first_3x3(const ConvGeometry &g);

// The two layouts' halves of the above (depthwise_avx512_nchw.cpp and
// depthwise_avx512_nhwc.cpp).
bool dw_nchw_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_nchw_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
// Whether a channel multiplier's pass runs flat there (forward and
// backward-filter: multi_flat, multi_filter).
bool dw_nchw_multi_flat(const ConvGeometry &g, conv_op_t op);
void dw_nchw_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);
// The plane kernels' lane masks and offsets for a pass, made once per plan
// (dw_nchw_run takes them from ConvArgs::planned, else makes them per call).
std::shared_ptr<const RunPlan> dw_nchw_plan(const ConvGeometry &g, conv_op_t op);

bool dw_nhwc_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_nhwc_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_nhwc_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-last backward-filter on planes of up to 14x14: a 16-channel
// block's plane copied into a zero-padded tile, image by image
// (depthwise_avx512_nhwc_tile.cpp); dw_nhwc_* sends it there where it covers.
bool dw_nhwc_tile_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_nhwc_tile_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_nhwc_tile_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// dw_nhwc::repack by 16 channels a gather (depthwise_avx512_nhwc.cpp): the
// in-place channels-last kernels' and the ring's.
void dw_repack_taps_avx512(const float *w, int64_t c, bool flip, float *wt);

// Channels-last passes with many channels through rows copied into a ring
// (depthwise_avx512_ring.cpp); dw_nhwc_* sends them there where it covers.
bool dw_ring_covers(const ConvGeometry &g, conv_op_t op, int threads);
size_t dw_ring_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_ring_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-first backward-filter, multiplier 1, padding 1 before, dy rows of
// up to 31 columns: row by row, x and dy read in place
// (depthwise_avx512_filter_rows.cpp); preferred over dw_blocked_* and
// dw_nchw_* where it covers.
bool dw_filter_rows_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_filter_rows_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_filter_rows_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-first forward, and backward-data at stride 1, multiplier 1,
// padding 1 before, output rows of up to 31 columns: row by row, x (dy)
// read in place (depthwise_avx512_forward_rows.cpp); preferred over
// dw_nchw_* where it covers.
bool dw_forward_rows_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_forward_rows_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_forward_rows_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-first backward-data at stride 2, multiplier 1, padding 1 before,
// dy rows of up to 15 columns: dx rows from dy rows read in place, even and
// odd columns interleaved (depthwise_avx512_backward_rows.cpp); preferred
// over dw_nchw_* where it covers.
bool dw_backward_rows_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_backward_rows_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_backward_rows_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Channels-first small planes through 16-channel blocks
// (depthwise_avx512_blocked.cpp); preferred over dw_nchw_* where it covers.
bool dw_blocked_covers(const ConvGeometry &g, conv_op_t op);
size_t dw_blocked_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
void dw_blocked_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
