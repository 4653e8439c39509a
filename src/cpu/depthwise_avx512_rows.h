// Row machinery shared by the channels-first depthwise 3x3 kernels that
// sweep a plane row by row with an output row's columns in a vector's
// lanes (depthwise_avx512_filter_rows.cpp, depthwise_avx512_forward_rows.cpp):
// padding 1 before, stride 1 or 2, output rows of up to two vectors, or two
// channels a vector (lanes 0-7 and 8-15) for rows of up to 8 lanes.
//
// An input row is read in place: at stride 1 one load from column -1 and
// the same shifted down by one and two lanes (valignd) put tap columns 0,
// 1, 2 of each output column in its lane; at stride 2 two loads split into
// even and odd columns (vpermt2ps) give taps 0 and 1, the even ones shifted
// by a lane tap 2. Loads read only columns inside the row (masked-off lanes
// read as 0 and never fault), or away from the tensor's ends whole
// vectors; RowShape::tap marks, per tap column, the output lanes whose
// tap lies inside the row, for the kernels' merge-masked FMAs (a padded tap
// adds nothing, whatever the other operand holds).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/checked.h"
#include "cpu/algorithm.h"
#include "cpu/avx512.h"

namespace conv::cpu::dw_rows {

constexpr int kK = 3;              // window size
constexpr int kTaps = kK * kK;
constexpr int kVec = 16;           // floats per zmm; also channels per work item
constexpr int kMaxVectors = 2;     // vectors per output row
// How many lanes, from column -1's (stride 1) or from the even columns'
// (stride 2), an output row's loads and shifts use: each output column's lane,
// and those its taps read. A vector's shifted copies take their last lanes
// from the next vector, the last vector's from itself: these must fit the
// row's vectors, 16 each (8 each with two channels a vector).
inline int64_t row_span(int64_t iw, int64_t ow, int64_t s) {
    if (s == 1) return std::max(ow, std::min(ow, iw - 1) + 2);  // column c in lane c + 1
    // Stride 2: tap 2 of output j is even column lane j + 1 (column 2 j + 1).
    return std::max(ow, std::min(ow - 1, (iw - 2) / 2) + 2);
}

constexpr int64_t kMaxSpan = int64_t{kVec} * kMaxVectors;
// Rows whose span fits 8 lanes take two channels a vector (a vector half
// empty otherwise, and 7x7 is MobileNet's last plane).
constexpr int64_t kPairSpan = kVec / 2;

// A plane's rows: the geometry and its lane masks. With two channels a
// vector (G = 2), lanes 0-7 are the first channel's columns, 8-15 the
// second's.
struct RowShape {
    int64_t ih, iw, oh, ow;
    // Per vector v: the lanes each tap column's FMA adds (output columns
    // whose tap lies inside the row), the dy lanes that are outputs (per
    // channel), the lanes of the x loads that fall inside the row (stride
    // 1: per channel; stride 2: of the two loads a vector splits).
    __mmask16 tap[kMaxVectors][kK], out[kMaxVectors][2], read[kMaxVectors][2];
    // Per vector, for a kernel that meets stride 2's even columns (tap
    // column 0's x) with dy moved up a lane for tap column 2's products:
    // the lanes whose output, a lane before in the same channel, has tap
    // column 2 inside the row.
    __mmask16 tap_next[kMaxVectors];
};

// The rows of an ih x iw input plane and its oh x ow output plane, stride s.
inline RowShape row_shape(int64_t ih, int64_t iw, int64_t oh, int64_t ow, int64_t s, bool pair) {
    RowShape p{};
    p.ih = ih, p.iw = iw, p.oh = oh, p.ow = ow;
    const int64_t width = pair ? kVec / 2 : kVec;
    const auto inside = [&](int64_t col) { return col >= 0 && col < p.iw; };
    for (int v = 0; v < kMaxVectors; ++v)
        for (int l = 0; l < kVec; ++l) {
            const int half = (int)(l / width);  // the lane's channel
            const int64_t j = pair ? l % width : v * kVec + l;  // its output column
            const uint16_t bit = (uint16_t)(1u << l);
            const int64_t before = j - 1;  // the output a lane before, in the same channel
            if (s == 2 && before >= 0 && before < p.ow && inside(2 * before + 1)) p.tap_next[v] |= bit;
            if (j < p.ow) {
                p.out[v][half] |= bit;
                for (int kw = 0; kw < kK; ++kw)
                    if (inside(s * j + kw - 1)) p.tap[v][kw] |= bit;
            }
            // The column a load puts in lane l: each channel's row from
            // column -1 (stride 1), or 32 v - 1 on, in two loads (stride 2).
            if (s == 1 && inside((pair ? j : v * kVec + l) - 1)) p.read[v][half] |= bit;
            if (s == 2)
                for (int h = 0; h < 2; ++h)
                    if (inside(2 * v * kVec - 1 + (pair ? 0 : h * kVec) + l)) p.read[v][h] |= bit;
        }
    return p;
}

// With two channels a vector and the second channel missing (an odd
// channel count's last): the masks keep the first channel's lanes only.
inline void keep_first_channel(RowShape &p) {
    for (int v = 0; v < kMaxVectors; ++v) {
        for (auto &m : p.tap[v]) m &= 0x00ff;
        p.tap_next[v] &= 0x00ff;
        p.read[v][1] = p.out[v][1] = 0;
    }
}

// Calls fn(S, V, G), each a std::integral_constant, for the instantiation
// a plane's rows take: stride S; two channels a vector (G = 2) where the
// row's span fits 8 lanes, else one, in V = 1 or 2 vectors.
template <class F>
void with_row_kernel(int64_t span, int64_t stride, F &&fn) {
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    const bool s2 = stride == 2;
    if (span <= kPairSpan)
        s2 ? fn(Two{}, One{}, Two{}) : fn(One{}, One{}, Two{});
    else if (span > kVec)
        s2 ? fn(Two{}, Two{}, One{}) : fn(One{}, Two{}, One{});
    else
        s2 ? fn(Two{}, One{}, One{}) : fn(One{}, One{}, One{});
}

// The plane each instantiation <S, V, G> is also compiled for with its sizes
// as constants: the one ImageNet-sized networks (224 x 224 input, as
// MobileNet's) give it -- 7 x 7, 14 x 14 or 28 x 28 in at stride 1 (two
// channels a vector, one vector, two), 14 x 14, 28 x 28 or 56 x 56 at stride
// 2. Known sizes make the row walks straight code and the rows' offsets
// immediates (1.02-1.29x on MobileNet's 14x14, 7x7 and stride-2 planes,
// docs/performance.md); other planes run the same code with the sizes read
// at run time: the same operations in the same order.
template <int S, int V, int G>
constexpr int64_t kFixedIn = S == 1 ? (G == 2 ? 7 : V == 1 ? 14 : 28) : (G == 2 ? 14 : V == 1 ? 28 : 56);

template <int S, int V, int G>
inline bool has_fixed_plane(const RowShape &p) {
    constexpr int64_t in = kFixedIn<S, V, G>, out = (in + S - 1) / S;
    return p.ih == in && p.iw == in && p.oh == out && p.ow == out;
}

// p with its sizes as constants (where has_fixed_plane): the caller inlines
// its kernel on the copy, and the compiler sees them.
template <int S, int V, int G>
inline __attribute__((always_inline)) RowShape fixed_plane(const RowShape &p) {
    constexpr int64_t in = kFixedIn<S, V, G>, out = (in + S - 1) / S;
    RowShape f = p;
    f.ih = f.iw = in;
    f.oh = f.ow = out;
    return f;
}

// Runs fn(n, c0, cb) over every image's blocks of 16 channels (cb of them
// from c0), an item each.
template <class F>
void for_image_blocks(const ConvGeometry &g, ThreadPool &pool, int threads, F &&fn) {
    const int64_t blocks = ceil_div(g.c, (int64_t)kVec);
    pool.parallel_for(
        g.n * blocks,
        [&](int64_t item, int) {
            const int64_t n = item / blocks, c0 = item % blocks * kVec;
            fn(n, c0, std::min<int64_t>(kVec, g.c - c0));
        },
        threads);
}

#if CONV_HAVE_AVX512_KERNELS

// The inputs under an output row's V vectors of one input row, per tap
// column.
template <int V>
struct RowSet {
    __m512 v[kK][V];
};

CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 shift_down(__m512 lo, __m512 hi,
                                                                           int n) {
    const __m512i a = _mm512_castps_si512(lo), b = _mm512_castps_si512(hi);
    return _mm512_castsi512_ps(n == 1 ? _mm512_alignr_epi32(b, a, 1) : _mm512_alignr_epi32(b, a, 2));
}

// Stride 1: input row `row` (a pointer to its column 0) under the output row's
// vector `v` (a strip of 16 columns; `next`: the row goes on, and the last
// two lanes of the shifted copies come from the next 16 columns); with two
// channels a vector, `other` is the second channel's same row.
//
// Whole: the loads read whole vectors, lanes past the row's ends too (where
// whole_reads_inside says they stay inside the tensor); the merge-masked
// FMAs never add those lanes. Two channels a vector then take two loads and
// a blend, where they took a zero-masked load and a merge-masked one (two
// zero-masked loads and the blend measured 0.88x, plain ones 1.10x): on 7x7
// planes 1.12x forward and backward-data, 1.06x backward-filter (14x14 and
// 28x28 backward-filter 1.02-1.03x, forward even), Zen 4, 1 thread. The
// loads are held in registers: GCC folded them into the blend (a masked
// form with a memory operand, which tests/check_masked_access.sh does not
// allow, though these read inside the tensor) and into each FMA.
template <int G, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) RowSet<1> load_set_s1(
    const RowShape &p, const float *row, const float *other, int v, bool next) {
    const float *at = row + v * kVec - 1;  // columns 16 v - 1 ...
    __m512 c, n;
    if constexpr (Whole) {
        c = held(_mm512_loadu_ps(at));
        if (G == 2) c = _mm512_mask_blend_ps((__mmask16)0xff00, c, held(_mm512_loadu_ps(other - 1 - kVec / 2)));
        n = next ? held(_mm512_loadu_ps(at + kVec)) : c;
    } else {
        c = _mm512_maskz_loadu_ps(p.read[v][0], at);
        if (G == 2) c = _mm512_mask_loadu_ps(c, p.read[0][1], other - 1 - kVec / 2);
        n = next ? _mm512_maskz_loadu_ps(p.read[v + 1][0], at + kVec) : c;
    }
    return {{{c}, {shift_down(c, n, 1)}, {shift_down(c, n, 2)}}};
}

// Whether the loads may read whole vectors (load_set_s1's and load_set_s2's
// Whole) in the G planes of `floats` each from `plane`, in a tensor [begin,
// end): they read at most 9 floats before them (a second channel's column
// -1 from lane 8) and fewer than 64 after (a last row's stride-2 vectors
// reach 62 floats from its start): false only near the tensor's ends.
inline bool whole_reads_inside(const float *plane, int64_t floats, int g, const float *begin, const float *end) {
    return plane - begin >= kVec && end - plane >= g * floats + 2 * kMaxSpan;
}

// Stride 2: input row `row` under the output row's V vectors (two channels a
// vector: `other` as above). Without `Third`, tap column 2's set is not made
// (a kernel that shifts dy instead). Whole: as load_set_s1's, each loaded
// vector held in a register (GCC folded a plain load into both permutes'
// memory operands, and so read it twice: 0.85-0.92x); with it, 1 thread,
// batch 1: 56x56 forward 1.14x, backward-filter 1.11x, 14x14 (two channels
// a vector) 1.05-1.06x, 28x28 1.01-1.03x.
template <int V, int G, bool Third, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) RowSet<V> load_set_s2(const RowShape &p,
                                                                               const float *row,
                                                                               const float *other) {
    // Columns 32 v - 1 ... in a and b (two channels: each one's -1 ...),
    // split into even and odd lanes.
    RowSet<V> s;
    const __m512i even = even_lanes(), odd = odd_lanes();
    for (int v = 0; v < V; ++v) {
        const float *at = row + 2 * v * kVec - 1, *then = G == 2 ? other - 1 : at + kVec;
        __m512 a, b;
        if constexpr (Whole)
            a = held(_mm512_loadu_ps(at)), b = held(_mm512_loadu_ps(then));
        else
            a = _mm512_maskz_loadu_ps(p.read[v][0], at), b = _mm512_maskz_loadu_ps(p.read[v][1], then);
        s.v[0][v] = _mm512_permutex2var_ps(a, even, b);  // columns 2 j - 1
        s.v[1][v] = _mm512_permutex2var_ps(a, odd, b);   // 2 j
    }
    if constexpr (Third)
        for (int v = 0; v < V; ++v)  // 2 j + 1: the next even lane
            s.v[2][v] = shift_down(s.v[0][v], s.v[0][v + 1 < V ? v + 1 : v], 1);
    return s;
}

// The row walks of one image's plane (x, x1: the input's, read in rows),
// the first rows and the last checked, those between not (their windows lie
// inside the plane), unrolled so the input row sets' roles rotate by name,
// not by register moves. `row` is the kernel's: row.template s1<Checked>(v,
// next, r, above, at, below) for output row r's vector v from input rows r -
// 1, r, r + 1 (it loads `below`); row.template s2<Checked>(r, top, bottom)
// from rows 2 r - 1 (`top`), 2 r and 2 r + 1 (it loads `bottom`); Row::kWhole:
// how its loads read (load_set_s1's Whole). Checked:
// input rows outside the plane neither read nor used.
//
// Stride 1: a row of two vectors runs as two strips of 16 columns (all rows
// of one, then of the other: the three rows' shifted copies of both would
// not fit the registers).
// Taller: the output may have more rows than the input (backward-data with
// padding after of 2 or more), so more than three rows may be left after
// the unchecked ones; otherwise (oh <= ih) at most three, walked without a
// loop -- the loop's rotating roles cost the short planes 5-8%.
template <int V, int G, bool Taller, class Row>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void walk_rows_s1(const RowShape &p, const float *x,
                                                                           const float *x1, Row &row) {
    for (int v = 0; v < V; ++v) {
        const bool next = v + 1 < V;
        // Row r's roles: (above, at, below) = (a, b, c) rotated r times.
        RowSet<1> a{}, b = load_set_s1<G, Row::kWhole>(p, x, x1, v, next), c{};
        row.template s1<true>(v, next, 0, a, b, c);
        int64_t r = 1;
        for (; r + 3 < (Taller ? std::min(p.oh, p.ih) : p.oh); r += 3) {  // input rows up to r + 3 < ih
            row.template s1<false>(v, next, r, b, c, a);
            row.template s1<false>(v, next, r + 1, c, a, b);
            row.template s1<false>(v, next, r + 2, a, b, c);
        }
        if constexpr (Taller) {
            for (; r < p.oh; r += 3) {
                row.template s1<true>(v, next, r, b, c, a);
                if (r + 1 < p.oh) row.template s1<true>(v, next, r + 1, c, a, b);
                if (r + 2 < p.oh) row.template s1<true>(v, next, r + 2, a, b, c);
            }
        } else {
            if (r < p.oh) row.template s1<true>(v, next, r, b, c, a);
            if (r + 1 < p.oh) row.template s1<true>(v, next, r + 1, c, a, b);
            if (r + 2 < p.oh) row.template s1<true>(v, next, r + 2, a, b, c);
        }
    }
}

template <int V, class Row>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void walk_rows_s2(const RowShape &p, Row &row) {
    // Row r's (top, bottom) = (a, b) for even r, (b, a) for odd.
    RowSet<V> a{}, b{};
    row.template s2<true>(0, a, b);
    int64_t r = 1;
    for (; r + 2 < p.oh && 2 * r + 3 < p.ih; r += 2) {  // rows r, r + 1: 2 r + 3 < ih
        row.template s2<false>(r, b, a);
        row.template s2<false>(r + 1, a, b);
    }
    for (; r < p.oh; r += 2) {
        row.template s2<true>(r, b, a);
        if (r + 1 < p.oh) row.template s2<true>(r + 1, a, b);
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace conv::cpu::dw_rows
