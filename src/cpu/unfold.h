// Unfolding the input into a GEMM operand and folding it back.
//
// Channels-first (im2col): for one image and one group, the column matrix has
// a row per (channel, kernel offset) and a column per output position;
// these routines produce or consume a tile of it: channels [c0, c1) and
// output positions [p0, p1), stored densely as (c1-c0)*KK rows of (p1-p0).
//
// Channels-last (im2row): a row per output position, and a column per
// (kernel offset, channel) with channels [c0, c1) innermost: a tile is
// (p1-p0) rows of KK*(c1-c0).
//
// `x` points at the image's first element of the group's first channel
// (channels-first: x + (n*C + g*Cg)*in_size; channels-last: x + n*in_size*C +
// g*Cg). The fold routines ADD into dx, so overlapping windows accumulate.
#pragma once

#include <cstdint>

#include "core/geometry.h"

namespace conv::cpu {

template <class T>
void im2col_tile(const ConvGeometry &g, const T *x, int64_t c0, int64_t c1, int64_t p0, int64_t p1,
                 T *col);
template <class T>
void col2im_tile_add(const ConvGeometry &g, const T *col, int64_t c0, int64_t c1, int64_t p0,
                     int64_t p1, T *dx);

template <class T>
void im2row_tile(const ConvGeometry &g, const T *x, int64_t c0, int64_t c1, int64_t p0,
                 int64_t p1, T *row);
template <class T>
void row2im_tile_add(const ConvGeometry &g, const T *row, int64_t c0, int64_t c1, int64_t p0,
                     int64_t p1, T *dx);

}  // namespace conv::cpu
