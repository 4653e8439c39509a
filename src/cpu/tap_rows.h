// x copied, a band of output rows at a time, into rows that each tap of a
// channels-first 2-D convolution reads as they lie (AVX-512), for a kernel
// that puts the POSITIONS in the vector over few source channels
// (direct_dot_filter.cpp).
//
// At unit column stride one row per (channel, tap column s) and padded
// source row, holding what tap column s reads at each output column (zeros
// where it reads padding): tap (c, r, s) of output row oh then reads the
// copy's row (c, s, oh * stride + r * dilation) from its start, and at unit
// strides consecutive output rows are consecutive copy rows (a band is one
// run of positions). At column stride 2 one row per x's column phase (even
// and odd columns): tap column s reads phase (s * dilation) % 2 from column
// (s * dilation) / 2 on.
#pragma once

#include <cstdint>

#include "core/geometry.h"

namespace conv::cpu {

struct TapRows {
    int64_t c, h, w, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t xrows;   // padded source rows a band reads, at most
    int64_t lanes;   // copy rows a channel and source row: kw, or 2 phases
    int64_t xpitch;  // floats a copy row: ow, or a phase's columns in whole vectors
    int64_t vecs;    // vectors an output row
    int64_t xvecs;   // vectors a phase row

    int64_t image_floats() const { return c * lanes * xrows * xpitch; }  // a band's copy of one image
    int64_t mask_count() const { return sw == 1 ? kw * vecs : 2 * xvecs; }
    // Where column j = (c, r, s) of dW (or of the forward's taps) starts in
    // a band's copy: its row for the band's first output row.
    int64_t column_at(int64_t j) const;
};

// For g (channels-first, 2-D or 1-D, column stride 1 or 2), bands of at
// most band_rows output rows.
TapRows make_tap_rows(const ConvGeometry &g, int64_t band_rows);
// The copy's load masks (mask_count() of them), the same for every row and
// channel: made once a call (in each thread's share), not per row.
void fill_tap_masks(const TapRows &t, uint16_t *masks);
// Image n's copy for output rows [r0, r1) into `out` (image_floats(),
// 64-byte aligned).
void copy_tap_rows(const TapRows &t, const float *x, int64_t n, int64_t r0, int64_t r1, const uint16_t *masks,
                   float *out);

}  // namespace conv::cpu
