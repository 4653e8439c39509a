// Channels-last (NHWC) depthwise 3x3 kernels, fp32, AVX-512, multiplier 1,
// for many channels: each item copies the input rows it needs into a ring
// first. depthwise_avx512_nhwc.cpp sends a pass here when dw_ring_covers().
//
// A pixel's 16-channel block lies C floats after the previous pixel's, so
// with C a power of two of 256 or more one block's pixels all fall into a
// few L1 sets: the in-place kernels' windows, swept along a row, find
// nothing they read a row before, and every load comes from L2 (a
// backward-filter pixel read nine of them for nine FMAs: 0.21-0.27 of
// oneDNN on MobileNet's 14x14 and 7x7 layers).
//
// So each item takes one image, a group of 16-channel blocks and a band of
// output rows, and copies the input rows it needs, once each, into a ring
// of a few rows per block in the thread's workspace (RowRing): contiguous,
// padded with zero columns so no window overhangs a row. A pixel's blocks
// are copied together (one run of memory), so the copy visits each page
// once for the group. The kernels then read only the rings (L1), as
// oneDNN's read its blocked layout. Rows outside the image are skipped;
// columns outside it are zeros in the ring, so a tap there adds w * 0 (as
// im2col's zero padding does: an infinite weight makes such an output NaN).
//
// Backward-data at stride 1 is the forward pass over dy with the flipped
// window (padding 3 - 1 - pad); at stride 2 each dx row gathers its taps by
// the parity of its row and columns from a ring of dy rows, eight pixels'
// sums at a time (the in-place kernel's one sum a pixel waited on its
// FMAs' latency). Backward-filter keeps a block's nine sums over a part of
// the batch's rows; the parts depend on the problem only, not on the
// thread count, and are added in order, so any thread count gives the
// same bits.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_nhwc.h"
#include "cpu/depthwise_avx512_nhwc_row.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

using dw_nhwc::filter_row;
using dw_nhwc::ImageShape;
using dw_nhwc::kK;
using dw_nhwc::kTaps;
constexpr int kVec = 16;    // channels per zmm
constexpr int kPixels = 8;  // output pixels per block (8 sums + 9 weights in registers)
constexpr int kRing = 4;    // rows a ring holds: a window's 3, and one being replaced
// An item's rings stay in L1 beside what else it reads.
constexpr int64_t kRingBytes = 20 << 10;
// Work items a pass aims for per thread (images x channel blocks x bands):
// enough to even out, few enough that a band's extra 2 rows stay small.
constexpr int64_t kItemsPerThread = 4;
// Backward-filter cuts the batch's rows into parts until there are this
// many (channel block, part) items: the thread count does not enter, so
// neither does it enter the sums' order.
constexpr int64_t kFilterItems = 16;

// The passes' sizes: the plane read (`ImageShape`) and the padded ring row.
struct Layout {
    ImageShape p;           // forward, or the stride-1 backward-data's flipped shape
    int64_t width, col0;    // ring row: `width` vectors, column j holds source column col0 + j
    int64_t blocks;         // 16-channel blocks
    int64_t group, groups;  // blocks an item copies together; items across the channels
    int64_t plane;          // floats of one block's ring (kRing rows and a row of zeros)
};

// Stride-2 backward-data: dx column 2m + q reads dy column m + off over taps
// kw of one parity; a ring row starts at dy column col0 (the smallest off).
struct S2Taps {
    int count[2];          // taps of each column parity q
    int kw[2][2];
    int64_t off[2][2];     // padded column of tap: m + off
    int64_t cols[2];       // dx columns of each parity
};

Layout forward_layout(const ConvGeometry &g, bool fwd) {
    Layout l{};
    l.p = fwd ? dw_nhwc::forward_shape(g) : dw_nhwc::backward_data_shape(g);
    l.width = (l.p.ow - 1) * l.p.s + kK;
    l.col0 = -l.p.pl;
    return l;
}

// As many blocks an item as their rings fit kRingBytes (at least one), in
// groups of equal size.
Layout with_groups(Layout l, int64_t c) {
    l.blocks = ceil_div(c, kVec);
    l.plane = checked_mul((kRing + 1) * kVec, l.width, "workspace");
    const int64_t fit = std::max<int64_t>(1, kRingBytes / (l.plane * (int64_t)sizeof(float)));
    l.groups = ceil_div(l.blocks, std::min(fit, l.blocks));
    l.group = ceil_div(l.blocks, l.groups);
    l.groups = ceil_div(l.blocks, l.group);
    return l;
}

// Stride-2 backward-data over the forward shape p (p.ih x p.iw is dx).
S2Taps s2_taps(const ImageShape &p, int64_t *col0, int64_t *width) {
    S2Taps t{};
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int q = 0; q < 2; ++q) {
        t.cols[q] = p.iw > q ? (p.iw - q + 1) / 2 : 0;
        for (int kw = 0; kw < kK; ++kw) {
            if ((q + p.pl - kw) % 2 != 0) continue;
            const int64_t off = (q + p.pl - kw) / 2;  // exact: the numerator is even
            t.kw[q][t.count[q]] = kw;
            t.off[q][t.count[q]++] = off;
            if (t.cols[q] > 0) lo = std::min(lo, off), hi = std::max(hi, off + t.cols[q] - 1);
        }
    }
    if (lo > hi) lo = hi = 0;  // no dx columns: nothing reads the ring
    for (int q = 0; q < 2; ++q)
        for (int i = 0; i < t.count[q]; ++i) t.off[q][i] -= lo;
    *col0 = lo;
    *width = hi - lo + 1;
    return t;
}

Layout s2_layout(const ConvGeometry &g, S2Taps *taps) {
    Layout l = forward_layout(g, true);
    *taps = s2_taps(l.p, &l.col0, &l.width);
    return with_groups(l, g.c);
}

// The layout of pass `op`, and stride-2 backward-data's taps into `taps`.
Layout op_layout(const ConvGeometry &g, conv_op_t op, S2Taps *taps) {
    if (op == CONV_OP_BACKWARD_DATA && g.stride[1] == 2) return s2_layout(g, taps);
    return with_groups(forward_layout(g, op != CONV_OP_BACKWARD_DATA), g.c);
}

// A thread's rings.
int64_t ring_floats(const Layout &l) { return round_up(checked_mul(l.plane, l.group, "workspace"), 16); }

// Bands of output rows per (image, channel block): at least
// kItemsPerThread items a thread where the rows allow.
int64_t band_count(int64_t images_blocks, int64_t rows, int threads) {
    const int64_t want = ceil_div(kItemsPerThread * threads, std::max<int64_t>(images_blocks, 1));
    return std::clamp<int64_t>(want, 1, std::max<int64_t>(rows, 1));
}

int64_t filter_parts(const ConvGeometry &g, const Layout &l) {
    const int64_t rows = g.n * g.out[1];
    return std::clamp<int64_t>(ceil_div(kFilterItems, l.groups), 1, std::max<int64_t>(rows, 1));
}

// The workspace: the repacked weights (forward, backward-data) or the
// parts' sums (backward-filter), then a ring per thread.
struct WorkspacePlan {
    int64_t head_floats, ring;
};

WorkspacePlan workspace_plan(const ConvGeometry &g, conv_op_t op, const Layout &l) {
    const int64_t head = op == CONV_OP_BACKWARD_FILTER
                             ? checked_mul(filter_parts(g, l), l.blocks * kTaps * kVec, "workspace")
                             : checked_mul(kTaps, g.c, "workspace");
    return {round_up(head, 16), ring_floats(l)};
}

#if CONV_HAVE_AVX512_KERNELS

CONV_TARGET_AVX512 inline __mmask16 block_mask(int64_t c, int64_t c0) {
    const int64_t rest = std::min<int64_t>(kVec, c - c0);
    return (__mmask16)((1u << rest) - 1u);
}

// `blocks` 16-channel blocks of a plane's rows, copied on demand into kRing
// padded rows a block: ring column j holds source column col0 + j, zero
// outside; block g's rows lie `plane` floats after block 0's. Rows are
// asked for in an order whose highest row only grows and whose window
// spans at most kRing rows (a window of 3, moving down).
struct RowRing {
    float *slots;
    int64_t width, col0, plane;
    const float *src;             // the image (NHWC)
    int64_t rows, cols, c, c0;    // its plane and channels; the first block's first channel
    int blocks;
    int64_t next;                 // the row after the last one copied (INT64_MIN: none yet)
    float *zeros;                 // a row of zeros in each block, once made
    bool framed = false;          // the ring's columns outside the image zeroed (once: copies leave them)

    // Row r's padded copy (block 0's; block g's is `plane` floats on), or
    // null outside the image.
    CONV_TARGET_AVX512 const float *row(int64_t r) {
        if (r < 0 || r >= rows) return nullptr;
        if (next <= r) {
            // Rows are asked for without gaps once the first is in.
            for (int64_t s = next > r - kRing ? next : r; s <= r; ++s) copy(s);
            next = r + 1;
        }
        return slots + (r % kRing) * width * kVec;
    }

    // The same with a row of zeros outside the image (the slot after the ring's).
    CONV_TARGET_AVX512 const float *row_or_zero(int64_t r) {
        if (const float *at = row(r)) return at;
        if (!zeros) {
            zeros = slots + kRing * width * kVec;
            for (int g = 0; g < blocks; ++g) std::fill(zeros + g * plane, zeros + g * plane + width * kVec, 0.0f);
        }
        return zeros;
    }

    // A pixel's blocks are one run of memory (G lines), the pixels C floats
    // apart: a page holds few pixels when C is large, so the blocks are
    // copied together, each page visited once for all of them.
    CONV_TARGET_AVX512 void copy(int64_t r) {
        float *dst = slots + (r % kRing) * width * kVec;
        const int64_t a = std::clamp<int64_t>(-col0, 0, width), b = std::clamp<int64_t>(cols - col0, a, width);
        if (!framed) {
            // Every slot's outside columns, once an item: zeroed per row
            // copy, they were short memsets (5% of a 512-channel 14x14
            // forward).
            const __m512 zero = _mm512_setzero_ps();
            for (int g = 0; g < blocks; ++g)
                for (int k = 0; k < kRing; ++k) {
                    float *d = slots + g * plane + k * width * kVec;
                    for (int64_t j = 0; j < a; ++j) _mm512_storeu_ps(d + j * kVec, zero);
                    for (int64_t j = b; j < width; ++j) _mm512_storeu_ps(d + j * kVec, zero);
                }
            framed = true;
        }
        const float *s = src + (r * cols + col0) * c + c0;
        const int whole = std::min<int64_t>(blocks, (c - c0) / kVec);  // blocks without a channel mask
        for (int64_t j = a; j < b; ++j) {
            const float *from = s + j * c;
            float *to = dst + j * kVec;
            int g = 0;
            for (; g + 2 <= whole; g += 2) {
                const __m512 v0 = _mm512_loadu_ps(from + g * kVec), v1 = _mm512_loadu_ps(from + (g + 1) * kVec);
                _mm512_storeu_ps(to + g * plane, v0);
                _mm512_storeu_ps(to + (g + 1) * plane, v1);
            }
            for (; g < blocks; ++g)
                _mm512_storeu_ps(to + g * plane, _mm512_maskz_loadu_ps(block_mask(c, c0 + g * kVec), from + g * kVec));
        }
    }
};

// The nine taps' weights of channels [cb, cb + 16) under cm, from the
// tap-major wt (9 x c).
CONV_TARGET_AVX512 inline void load_taps(const float *wt, int64_t c, int64_t cb, __mmask16 cm, __m512 (&w)[kTaps]) {
    for (int t = 0; t < kTaps; ++t) w[t] = _mm512_maskz_loadu_ps(cm, wt + t * c + cb);
}

// The ring of channel blocks [block0, block0 + group) of a rows x cols
// plane at src (NHWC, the pass's channels).
CONV_TARGET_AVX512 inline RowRing make_ring(const Layout &l, const float *src, int64_t rows, int64_t cols,
                                            int64_t block0, float *slots) {
    const int blocks = (int)std::min(l.group, l.blocks - block0);
    return RowRing{slots, l.width, l.col0, l.plane, src, rows, cols, l.p.c, block0 * kVec, blocks, INT64_MIN, nullptr};
}

// P output pixels from ring column ow0 * S of rows `in` (null: outside the
// image) into out (pixels c floats apart), with the taps' weights w.
template <int S, int P>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void pixel_block(const float *const (&in)[kK], int64_t ow0,
                                                                          const __m512 (&w)[kTaps], __m512 init,
                                                                          float *out, int64_t c, __mmask16 cm,
                                                                          bool relu) {
    constexpr int kCols = (P - 1) * S + kK;  // ring columns the block reads
    __m512 acc[P];
    for (int i = 0; i < P; ++i) acc[i] = init;
    for (int kh = 0; kh < kK; ++kh) {
        if (!in[kh]) continue;
        const float *row = in[kh] + ow0 * S * kVec;
#pragma GCC unroll 32
        for (int i = 0; i < kCols; ++i) {
            const __m512 v = held(_mm512_loadu_ps(row + i * kVec));  // one load for its up to 3 FMAs
            for (int kw = 0; kw < kK; ++kw) {
                const int d = i - kw;  // = S * (output pixel)
                if (d < 0 || d % S != 0 || d / S >= P) continue;
                acc[d / S] = _mm512_fmadd_ps(w[kh * kK + kw], v, acc[d / S]);
            }
        }
    }
    // max(0, v) keeps a NaN (the second operand), as epilogue.cpp does.
    const __m512 zero = _mm512_setzero_ps();
    for (int i = 0; i < P; ++i)
        _mm512_mask_storeu_ps(out + (ow0 + i) * c, cm, relu ? _mm512_max_ps(zero, acc[i]) : acc[i]);
}

// A whole output row: blocks of 8 pixels, then one of the 1-7 left.
template <int S>
CONV_TARGET_AVX512 void forward_row(const float *const (&in)[kK], int64_t ow, const __m512 (&w)[kTaps],
                                    __m512 init, float *out, int64_t c, __mmask16 cm, bool relu) {
    int64_t o = 0;
    for (; o + kPixels <= ow; o += kPixels) pixel_block<S, kPixels>(in, o, w, init, out, c, cm, relu);
    switch (ow - o) {
    case 7: pixel_block<S, 7>(in, o, w, init, out, c, cm, relu); break;
    case 6: pixel_block<S, 6>(in, o, w, init, out, c, cm, relu); break;
    case 5: pixel_block<S, 5>(in, o, w, init, out, c, cm, relu); break;
    case 4: pixel_block<S, 4>(in, o, w, init, out, c, cm, relu); break;
    case 3: pixel_block<S, 3>(in, o, w, init, out, c, cm, relu); break;
    case 2: pixel_block<S, 2>(in, o, w, init, out, c, cm, relu); break;
    case 1: pixel_block<S, 1>(in, o, w, init, out, c, cm, relu); break;
    default: break;
    }
}

// Output rows [r0, r1) of one image, channel blocks [block0, block0 + group).
CONV_TARGET_AVX512 void forward_band(const Layout &l, const float *src, float *dst, const float *wt,
                                     const float *bias, bool relu, int64_t block0, int64_t r0, int64_t r1,
                                     float *slots) {
    const ImageShape &p = l.p;
    RowRing ring = make_ring(l, src, p.ih, p.iw, block0, slots);
    const int64_t c0 = ring.c0;
    const int blocks = ring.blocks;
    for (int64_t oh = r0; oh < r1; ++oh) {
        const int64_t ih = oh * p.s - p.pt;
        const float *base[kK];
        for (int kh = 0; kh < kK; ++kh) base[kh] = ring.row(ih + kh);
        for (int b = 0; b < blocks; ++b) {
            const int64_t cb = c0 + b * kVec;
            const __mmask16 cm = block_mask(p.c, cb);
            __m512 w[kTaps];
            load_taps(wt, p.c, cb, cm, w);
            const __m512 init = bias ? _mm512_maskz_loadu_ps(cm, bias + cb) : _mm512_setzero_ps();
            const float *in[kK];
            for (int kh = 0; kh < kK; ++kh) in[kh] = base[kh] ? base[kh] + b * l.plane : nullptr;
            float *out = dst + oh * p.ow * p.c + cb;
            if (p.s == 1)
                forward_row<1>(in, p.ow, w, init, out, p.c, cm, relu);
            else
                forward_row<2>(in, p.ow, w, init, out, p.c, cm, relu);
        }
    }
}

// Rows [r0, r1) of the batch (row r: output row r % oh of image r / oh)
// of channel blocks [block0, block0 + group) into their nine sums each,
// tap-major (9 x 16) a block from out.
CONV_TARGET_AVX512 void filter_part(const Layout &l, const float *x, const float *dy, int64_t block0, int64_t r0,
                                    int64_t r1, float *slots, float *out) {
    const ImageShape &p = l.p;
    const int64_t in_image = p.ih * p.iw * p.c, out_image = p.oh * p.ow * p.c;
    RowRing ring = make_ring(l, nullptr, p.ih, p.iw, block0, slots);
    const int64_t c0 = ring.c0;
    const int blocks = ring.blocks;
    std::fill(out, out + blocks * kTaps * kVec, 0.0f);
    int64_t image = -1;
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / p.oh, oh = r % p.oh;
        if (n != image) ring.src = x + n * in_image, ring.next = INT64_MIN, image = n;  // the zero rows stay
        const int64_t ih = oh * p.s - p.pt;
        const float *base[kK];
        for (int kh = 0; kh < kK; ++kh) base[kh] = ring.row_or_zero(ih + kh);
        for (int b = 0; b < blocks; ++b) {
            const int64_t cb = c0 + b * kVec;
            const __mmask16 cm = block_mask(p.c, cb);
            float *sums = out + b * kTaps * kVec;
            __m512 acc[kTaps];
            for (int t = 0; t < kTaps; ++t) acc[t] = _mm512_loadu_ps(sums + t * kVec);
            const float *in[kK];
            for (int kh = 0; kh < kK; ++kh) in[kh] = base[kh] + b * l.plane;
            const float *g = dy + n * out_image + oh * p.ow * p.c + cb;
            if (p.s == 1)
                filter_row<1>(in, g, p.ow, p.c, cm, acc);
            else
                filter_row<2>(in, g, p.ow, p.c, cm, acc);
            for (int t = 0; t < kTaps; ++t) _mm512_storeu_ps(sums + t * kVec, acc[t]);
        }
    }
}

// Stride-2 backward-data: dx rows [r0, r1) of one image, channel blocks
// [block0, block0 + group), dy's rows through the ring; wt: the taps
// tap-major, not flipped.
CONV_TARGET_AVX512 void backward_data_s2_band(const Layout &l, const S2Taps &t, const float *dy, float *dx,
                                              const float *wt, int64_t block0, int64_t r0, int64_t r1,
                                              float *slots) {
    const ImageShape &p = l.p;
    RowRing ring = make_ring(l, dy, p.oh, p.ow, block0, slots);
    const int64_t c0 = ring.c0;
    const int blocks = ring.blocks;
    for (int64_t ih = r0; ih < r1; ++ih) {
        // dx row ih reads dy row (ih + pt - kh) / 2 for each kh of its parity.
        int kh_of[2], rows = 0;
        const float *base[2];
        for (int kh = kK - 1; kh >= 0; --kh) {  // rising dy rows, as the ring wants
            const int64_t twice = ih + p.pt - kh;
            if (twice < 0 || twice % 2 != 0) continue;
            if (const float *row = ring.row(twice / 2)) kh_of[rows] = kh, base[rows++] = row;
        }
        for (int b = 0; b < blocks; ++b) {
            const int64_t cb = c0 + b * kVec;
            const __mmask16 cm = block_mask(p.c, cb);
            __m512 w[kTaps];
            load_taps(wt, p.c, cb, cm, w);
            float *out = dx + ih * p.iw * p.c + cb;
            for (int q = 0; q < 2; ++q) {
                for (int64_t m0 = 0; m0 < t.cols[q]; m0 += kPixels) {
                    const int n = (int)std::min<int64_t>(kPixels, t.cols[q] - m0);
                    __m512 acc[kPixels];
                    for (int u = 0; u < kPixels; ++u) acc[u] = _mm512_setzero_ps();
                    for (int i = rows - 1; i >= 0; --i)  // kh rising, as the in-place kernel adds them
                        for (int k = 0; k < t.count[q]; ++k) {
                            const __m512 wk = w[kh_of[i] * kK + t.kw[q][k]];
                            const float *at = base[i] + b * l.plane + (m0 + t.off[q][k]) * kVec;
#pragma GCC unroll 8
                            for (int u = 0; u < kPixels; ++u)
                                if (u < n) acc[u] = _mm512_fmadd_ps(wk, _mm512_loadu_ps(at + u * kVec), acc[u]);
                        }
#pragma GCC unroll 8
                    for (int u = 0; u < kPixels; ++u)
                        if (u < n) _mm512_mask_storeu_ps(out + (2 * (m0 + u) + q) * p.c, cm, acc[u]);
                }
            }
        }
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Where the ring measured faster than the in-place kernels (MobileNet-v1's
// layers, alternated). 1 thread, batch 1, from 256 channels (pixels 1 KiB
// or more apart): backward-filter 1.07-1.68x, stride-1 forward 1.04-1.22x
// and backward-data 1.0-1.17x, stride-2 backward-data 1.64-1.85x (and 1.36x
// at 128 channels); stride-2 forward 0.89-1.0x (its rows are read once each
// in place too), but 1.13-1.17x (1024 channels 14x14 1.6x) since the ring's
// forward loads each column once (fifty-fourth session); with 128 channels
// or fewer the other passes 0.44-0.73x
// (rows of 512 bytes or less stream well in place). At batch 8, x and y
// outgrow L2, and a group's 256 bytes a pixel from L3 streamed worse than
// whole rows in place: 0.68-0.86x, but for stride-2 backward-data (1.17x
// at 256 channels). With 2 threads backward-filter still gains (1.14-1.51x)
// but forward and stride-1 backward-data lose (0.62-0.69x; neither form
// gains from a second thread on these 20-40 us passes), so those take the
// ring at 1 thread only -- with the same bits either way (finite weights: the
// ring's zero columns): both forms add a pixel's taps in the same order.
constexpr double kResidentBytes = 2 << 20;  // x and y of a pass within a core's L2 (2 MiB here)
// Stride-2 backward-data takes the ring on any thread count, from 256
// channels or with dx and dy within this (the in-place kernel sums one dx
// pixel at a time and ran at 10-15 GFLOP/s). Against it, batch 1, 5
// rounds: 1 thread, 32-96 channels on 28x28 to 112x112, 1.89-2.05x
// (MobileNet's dw2, 64 channels 112x112, 2.03x), 1-16 channels 112x112
// 1.93-2.01x; 2 threads 1.67-1.83x, 512 channels even. At batch 8 (dx past
// L3, both memory-bound) dw2 0.81x, dw4 0.94x, 96 channels 56x56 1.31x, in
// noisy rounds.
constexpr double kRingS2Bytes = 8 << 20;

bool dw_ring_covers(const ConvGeometry &g, conv_op_t op, int threads) {
    if (!dw_nhwc::covers(g)) return false;
    const bool s2 = g.stride[1] == 2;
    const double bytes = 4.0 * (double)g.n * (double)g.c * (double)(g.in_size() + g.out_size());
    const bool resident = bytes <= kResidentBytes;
    if (op == CONV_OP_BACKWARD_FILTER) return resident && g.c >= 256;
    if (op == CONV_OP_BACKWARD_DATA && s2) return g.c >= 256 || bytes <= kRingS2Bytes;
    if (threads > 1) return false;
    return resident && g.c >= 256;
}

size_t dw_ring_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    S2Taps taps;
    const WorkspacePlan w = workspace_plan(g, op, op_layout(g, op, &taps));
    const int64_t floats = checked_add(w.head_floats, checked_mul(w.ring, threads, "workspace"), "workspace");
    return (size_t)checked_mul(floats, (int64_t)sizeof(float), "workspace");
}

void dw_ring_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const int64_t N = g.n, C = g.c;
    float *x = static_cast<float *>(a.x), *w = static_cast<float *>(a.w);
    float *y = static_cast<float *>(a.y), *bias = static_cast<float *>(a.bias);
    S2Taps taps;
    const Layout l = op_layout(g, a.op, &taps);
    const WorkspacePlan plan = workspace_plan(g, a.op, l);
    float *head = static_cast<float *>(ws), *rings = head + plan.head_floats;
    const int64_t in_image = g.in_size() * C, out_image = g.out_size() * C;
    switch (a.op) {
    case CONV_OP_BACKWARD_DATA:
        if (g.stride[1] == 2) {
            dw_repack_taps_avx512(w, C, false, head);
            const int64_t bands = band_count(N * l.groups, l.p.ih, threads);
            pool.parallel_for(
                N * l.groups * bands,
                [&](int64_t item, int slot) {
                    const int64_t band = item % bands, group = item / bands % l.groups, n = item / bands / l.groups;
                    backward_data_s2_band(l, taps, y + n * out_image, x + n * in_image, head, group * l.group,
                                          l.p.ih * band / bands, l.p.ih * (band + 1) / bands,
                                          rings + slot * plan.ring);
                },
                threads);
            return;
        }
        [[fallthrough]];
    case CONV_OP_FORWARD: {
        const bool fwd = a.op == CONV_OP_FORWARD;
        dw_repack_taps_avx512(w, C, !fwd, head);
        const float *src = fwd ? x : y;
        float *dst = fwd ? y : x;
        const int64_t src_image = fwd ? in_image : out_image, dst_image = fwd ? out_image : in_image;
        const bool relu = fwd && g.activation == CONV_ACTIVATION_RELU;
        const float *b = fwd ? bias : nullptr;
        const int64_t bands = band_count(N * l.groups, l.p.oh, threads);
        pool.parallel_for(
            N * l.groups * bands,
            [&](int64_t item, int slot) {
                const int64_t band = item % bands, group = item / bands % l.groups, n = item / bands / l.groups;
                forward_band(l, src + n * src_image, dst + n * dst_image, head, b, relu, group * l.group,
                             l.p.oh * band / bands, l.p.oh * (band + 1) / bands, rings + slot * plan.ring);
            },
            threads);
        return;
    }
    case CONV_OP_BACKWARD_FILTER: {
        const int64_t parts = filter_parts(g, l), rows = N * l.p.oh, block_sums = kTaps * kVec;
        pool.parallel_for(
            l.groups * parts,
            [&](int64_t item, int slot) {
                const int64_t part = item % parts, block = item / parts * l.group;
                filter_part(l, x, y, block, rows * part / parts, rows * (part + 1) / parts,
                            rings + slot * plan.ring, head + (part * l.blocks + block) * block_sums);
            },
            threads);
        // dW[ch][t]: the parts' sums in order.
        for (int64_t ch = 0; ch < C; ++ch) {
            const float *s = head + ch / kVec * block_sums + ch % kVec;
            for (int t = 0; t < kTaps; ++t) {
                float sum = s[t * kVec];
                for (int64_t part = 1; part < parts; ++part) sum += s[part * l.blocks * block_sums + t * kVec];
                w[ch * kTaps + t] = sum;
            }
        }
        if (bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool, threads);
        return;
    }
    default: return;
    }
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
