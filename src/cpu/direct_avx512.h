// What direct_avx512's two files share: the padded source planes its tiles
// read (direct_avx512.cpp) and its backward-filter pass
// (direct_avx512_filter.cpp), which the solver in direct_avx512.cpp runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/geometry.h"
#include "core/thread_pool.h"
#include "cpu/algorithm.h"

namespace conv::cpu {

// x as the forward tiles read it: per image and channel a zero-padded plane
// (`plane` elements) whose rows are split into their stride_w column
// phases. Output position (oh, ow) meets tap (r, s) at element
// oh * rstep + ow + tap_offset(r * dilation_h, s * dilation_w) of its
// channel's plane, at any stride.
struct DirectSource {
    int64_t plane, rstep, wq, sw;
    int64_t slice, sz;  // elements per padded depth slice (plane / slices); depth stride
    int64_t tap_offset(int64_t tr, int64_t tc) const { return (tr * sw + tc % sw) * wq + tc / sw; }
};

DirectSource direct_source(const ConvGeometry &g);
// x ([n][C] planes of g, either layout) into n * C padded planes at `out`.
// `source`: direct_source_plan(g) (with as many images or more), or null.
void direct_pad_source(const ConvGeometry &g, const float *x, float *out, ThreadPool &pool, int threads,
                       const RunPlan *source = nullptr);
// What direct_pad_source works out for g, once (null where not kept).
std::shared_ptr<const RunPlan> direct_source_plan(const ConvGeometry &g);
void direct_pad_source(const ConvGeometry &g, const double *x, double *out, ThreadPool &pool, int threads,
                       const RunPlan *source = nullptr);

// Backward-filter with the filters in the vector (direct_avx512_filter.cpp).
size_t direct_filter_workspace(const ConvGeometry &g, conv_dtype_t dtype, int threads);
void direct_filter_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);
// What backward-filter works out once per plan (column tables, generated
// tiles), handed back to direct_filter_run in ConvArgs::planned; null for
// float64.
std::shared_ptr<const RunPlan> direct_filter_plan(const ConvGeometry &g, conv_dtype_t dtype, int threads);

// Stride-1 forward and backward-data onto at most 8 destination channels,
// positions in the vector (direct_narrow_avx512.cpp): where it applies (for
// forward, where the output rows fill their vectors; with AVX2 backward-data
// only) the solver runs it instead of its channel-vector tiles.
bool direct_narrow_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype);
size_t direct_narrow_workspace(const ConvGeometry &g, conv_op_t op, int threads);
void direct_narrow_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Forward from at most 4 source channels at column stride 2, positions in
// the vector (direct_few_sources.cpp, AVX2 and AVX-512): where it applies
// the solver runs it instead of its channel-vector tiles.
bool direct_few_sources_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype);
size_t direct_few_sources_workspace(const ConvGeometry &g, int threads);
void direct_few_sources_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

// Backward-filter from at most 4 source channels as dot products along
// the positions (direct_dot_filter.cpp, AVX-512): where it applies the
// solver runs it instead of its filter-vector tiles.
bool direct_dot_filter_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype);
size_t direct_dot_filter_workspace(const ConvGeometry &g, int threads);
void direct_dot_filter_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads);

}  // namespace conv::cpu
