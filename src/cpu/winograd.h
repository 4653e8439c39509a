// Winograd F(4x4, 3x3), shared between the portable implementation
// (winograd.cpp: fp64, and fp32 without AVX-512) and the AVX-512 fp32
// kernels (winograd_avx512.cpp). See winograd.cpp for the algorithm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conv.h"
#include "core/geometry.h"
#include "core/thread_pool.h"

namespace conv::cpu::winograd {

constexpr int64_t kAlpha = 6, kTile = 4, kXi = kAlpha * kAlpha;  // 36 products per tile

// The 2-D problem Winograd computes: `src` (channels ci) -> `dst` (channels
// co); backward-data reads each forward filter rotated, channels exchanged.
struct Problem {
    bool last;                            // channels-last layout
    int64_t n, groups, ci, co, cig, cog;  // channels per group: cig, cog
    int64_t ih, iw, oh, ow, pad_top, pad_left;
    int64_t tiles_h, tiles_w;
    bool rotate;  // backward-data: w[o][i] is the forward filter w[i][o] rotated
    const ConvGeometry *g;

    int64_t tiles() const { return tiles_h * tiles_w; }
    // Element strides of src and dst: channel, row, column.
    int64_t src_cs() const { return last ? 1 : ih * iw; }
    int64_t src_hs() const { return last ? iw * ci : iw; }
    int64_t src_ws() const { return last ? ci : 1; }
    int64_t dst_cs() const { return last ? 1 : oh * ow; }
    int64_t dst_hs() const { return last ? ow * co : ow; }
    int64_t dst_ws() const { return last ? co : 1; }
};

Problem make_problem(const ConvGeometry &g, conv_op_t op);

// The AVX-512 fp32 path: whether this process uses it for `dtype`.
bool avx512_applies(conv_dtype_t dtype);
size_t avx512_workspace_bytes(const Problem &p, int threads);
// dst = winograd(src, w) (+ bias, ReLU); `ws` is 64-byte aligned. With
// `prepared` (from avx512_prepare_filters) the filters are not transformed.
void avx512_run(const Problem &p, const float *w, const float *src, const float *bias, bool relu,
                float *dst, void *ws, ThreadPool &pool, int threads,
                const float *prepared = nullptr);
// The Winograd-domain filters of forward and backward-data, made once for
// many runs (prepared weights): their bytes, and the transform into `U`.
size_t avx512_prepared_bytes(const Problem &p);
void avx512_prepare_filters(const Problem &p, const float *w, float *U, ThreadPool &pool,
                            int threads);
// Backward-filter: dw = the filter gradient of x and dy (no bias gradient).
size_t avx512_filter_workspace_bytes(const Problem &p);
void avx512_run_filter(const Problem &p, const float *x, const float *dy, float *dw, void *ws,
                       ThreadPool &pool, int threads);

}  // namespace conv::cpu::winograd
