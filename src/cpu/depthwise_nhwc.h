// The frame the channels-last depthwise 3x3 kernels share (multiplier 1,
// fp32; depthwise_avx512_nhwc.cpp and depthwise_avx2_nhwc.cpp): the image
// shape, the weights repacked tap-major, what they cover, their workspace,
// and the driver that splits each pass into output rows for an ISA's row
// kernels. Plain C++: only the row kernels use vector instructions.
//
// Backward-data at stride 1 is the forward pass over dy with the flipped
// window (padding 3 - 1 - pad); at stride 2 each dx row gathers its taps.
// Backward-filter keeps each thread's partial 9 x C sums in its scratch and
// adds them up at the end: a fixed split of the rows, so the same bits on
// every run with the same thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/checked.h"
#include "cpu/algorithm.h"

namespace conv::cpu::dw_nhwc {

constexpr int kK = 3, kTaps = kK * kK;

// out[oh][ow][c] = init[c] + sum w[kh][kw][c] * in[oh*s - pt + kh][ow*s - pl + kw][c]
struct ImageShape {
    int64_t ih, iw, oh, ow, pt, pl, c;
    int s;
    // Output columns whose whole window lies inside the input row.
    int64_t inner_begin() const { return std::min(ow, ceil_div(std::max<int64_t>(pl, 0), s)); }
    int64_t inner_end() const {
        int64_t e = iw - kK + pl < 0 ? 0 : floor_div(iw - kK + pl, s) + 1;
        return std::clamp(e, inner_begin(), ow);
    }
};

struct ImageJob {
    const float *in;    // one image
    float *out;         // one image
    const float *wt;    // kTaps x c, tap-major
    const float *bias;  // c values or null
    bool relu;
};

// An ISA's row kernels.
struct RowKernels {
    // Output row oh of one image (forward, and stride-1 backward-data).
    void (*forward_row)(const ImageShape &p, const ImageJob &job, int64_t oh);
    // sums[t * c + ch] += dy(oh, ow, ch) * x(tap t of (oh, ow), ch) over the
    // batch's rows [r0, r1) (row r: output row r % oh of image r / oh).
    void (*filter_rows)(const ImageShape &p, const float *x, const float *dy, int64_t r0, int64_t r1,
                        float *sums);
    // dx row ih of one image at stride 2 (p: the forward shape, wt not flipped).
    void (*backward_data_s2_row)(const ImageShape &p, const float *dy, const float *wt, float *dx, int64_t ih);
    // Whether filter_rows's sums and forward_row's weights (ImageJob::wt,
    // from repack_chunked()) lie as chunked_index says; else tap-major,
    // sums[t * c + ch] and repack()'s weights. backward_data_s2_row's
    // weights are tap-major either way.
    bool chunked = false;
    // repack() for the ISA, where it has a faster one (null: repack()).
    void (*repack)(const float *w, int64_t c, bool flip, float *wt) = nullptr;
};

// Backward-filter sums by chunks of kChunk channels: chunk k's 9 x kChunk
// sums (tap-major within it) start at k * 9 * kChunk, then the last c %
// kChunk channels' 9 x (c % kChunk).
constexpr int64_t kChunk = 16;
inline int64_t chunked_index(int t, int64_t ch, int64_t c) {
    const int64_t whole = c / kChunk * kChunk;
    if (ch < whole) return ch / kChunk * kTaps * kChunk + t * kChunk + ch % kChunk;
    return whole * kTaps + t * (c - whole) + (ch - whole);
}

// The plane a pass reads and the one it writes: the forward's (x to y), and
// the stride-1 backward-data's as a forward over dy with the window flipped.
ImageShape forward_shape(const ConvGeometry &g);
ImageShape backward_data_shape(const ConvGeometry &g);

// The weights (c x 9) tap-major (9 x c) into wt, optionally with the window
// flipped (backward-data).
void repack(const float *w, int64_t c, bool flip, float *wt);
// The same by chunks (chunked_index): a chunk's 9 x 16 weights one run of
// memory, for kernels that take a pixel through all its chunks (a
// tap-major row of 512 or 1024 channels puts a chunk's 9 taps 2-4 KiB
// apart, into the L1 sets of the pixels' own lines).
void repack_chunked(const float *w, int64_t c, bool flip, float *wt);

// The geometries the kernels compute (channels-last, 2-D 3x3, stride 1 or
// 2, no dilation, multiplier 1); the ISA is the caller's to check.
bool covers(const ConvGeometry &g);
// Forward and backward-data: the repacked weights. Backward-filter: each
// thread's 9 x C partial sums.
size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads);
// A covered pass through `rows`; `ws` holds workspace_bytes().
void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads, const RowKernels &rows);

}  // namespace conv::cpu::dw_nhwc
