// Channels-first (NCHW) depthwise 3x3 backward-data at stride 2, multiplier
// 1, padding 1 before, dy rows of up to 15 columns (MobileNet's 14x14 and
// 28x28 dx planes); fp32, AVX-512, dy read in place row by row.
//
// dx(i, c) gathers dy(o, j) through tap (kh, kw) where i = 2 o - 1 + kh and
// c = 2 j - 1 + kw. By parity: an even dx row 2 o takes window row 1 of dy
// row o; an odd one, 2 o + 1, rows 2 and 0 of dy rows o and o + 1. An even
// dx column 2 j takes tap column 1 of dy column j, an odd one, 2 j + 1, tap
// columns 2 and 0 of dy columns j and j + 1. So a dy row vector D (16
// columns from j0) and D shifted down a lane (columns j0 + 1 ...) give a dx
// row's even columns E += w(kh, 1) D and odd ones O += w(kh, 2) D + w(kh, 0)
// D1, and E and O interleaved (vpermt2ps) are 32 consecutive dx columns.
// Each dy row is loaded and shifted once for the three dx rows it reaches.
// Rows of up to 7 columns take two channels a vector (lanes 0-7, 8-15),
// each interleaved into its own dx row.
//
// Against depthwise_avx512_nchw.cpp's strips, which it replaces on these
// planes: those run one plane a call, sixteen dy columns a strip, two masked
// loads of each dy row per dx row that reads it. Lanes past dy's columns
// read as 0 (masked loads), so a tap there adds w * 0 as the strips' did.
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_avx512_rows.h"

namespace conv::cpu {
namespace {

using dw_rows::kK;
using dw_rows::kTaps;
using dw_rows::kVec;
// dy columns a vector takes: the shifted copy's lane j is column j + 1, so
// the last column's neighbour must still be a (zero) lane of the vector.
constexpr int64_t kMaxDyColumns = kVec - 1;
constexpr int64_t kPairDyColumns = kVec / 2 - 1;  // two channels a vector

// The planes and the lanes: dy (oh x ow) into dx (ih x iw); with two
// channels a vector, lanes 0-7 are the first's dy columns, 8-15 the second's.
struct Shape {
    int64_t oh, ow, ih, iw;
    __mmask16 read[2];    // dy lanes per channel (the second: G = 2 only)
    __mmask16 store[2];   // dx columns of the interleaved halves (lo: 0-15, hi: 16-31)
};

Shape make_shape(const ConvGeometry &g, bool pair) {
    Shape s{};
    s.oh = g.out[1], s.ow = g.out[2], s.ih = g.in[1], s.iw = g.in[2];
    if (pair) {
        s.read[0] = first_lanes(s.ow);
        s.read[1] = (__mmask16)(first_lanes(s.ow) << (kVec / 2));
        s.store[0] = s.store[1] = first_lanes(s.iw);  // each channel's dx row: one vector
    } else {
        s.read[0] = first_lanes(s.ow);
        s.store[0] = first_lanes(s.iw), s.store[1] = first_lanes(s.iw - kVec);
    }
    return s;
}

#if CONV_HAVE_AVX512_KERNELS

// A dy row and the same a lane on.
struct DyRow {
    __m512 d, d1;
};

template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) DyRow load_row(const Shape &s, const float *row,
                                                                        const float *other) {
    __m512 d = _mm512_maskz_loadu_ps(s.read[0], row);
    if (G == 2) d = _mm512_mask_loadu_ps(d, s.read[1], other - kVec / 2);
    const __m512i i = _mm512_castps_si512(d);
    return {d, _mm512_castsi512_ps(_mm512_alignr_epi32(i, i, 1))};
}

// E += w(kh, 1) D; O += w(kh, 2) D + w(kh, 0) D1.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void add_row(const __m512 (&w)[kTaps], int kh,
                                                                      const DyRow &r, __m512 &e,
                                                                      __m512 &o) {
    e = _mm512_fmadd_ps(w[kh * kK + 1], r.d, e);
    o = _mm512_fmadd_ps(w[kh * kK + 2], r.d, o);
    o = _mm512_fmadd_ps(w[kh * kK], r.d1, o);
}

// dx row `row` (and `other`, the second channel's) from its even and odd
// columns.
template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_row(const Shape &s, __m512 e, __m512 o,
                                                                        float *row, float *other) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    _mm512_mask_storeu_ps(row, s.store[0], _mm512_permutex2var_ps(e, lo, o));
    if (G == 2)
        _mm512_mask_storeu_ps(other, s.store[1], _mm512_permutex2var_ps(e, hi, o));
    else if (s.store[1])
        _mm512_mask_storeu_ps(row + kVec, s.store[1], _mm512_permutex2var_ps(e, hi, o));
}

// One image's dx plane(s) of a vector's channel(s): dy rows o and o + 1 in
// `cur` and `next`, dx rows 2 o and 2 o + 1 from them.
template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void plane(const Shape &s, const __m512 (&w)[kTaps],
                                                                    const float *dy, const float *dy1, float *dx,
                                                                    float *dx1) {
    const __m512 zero = _mm512_setzero_ps();
    DyRow cur = load_row<G>(s, dy, dy1);
    for (int64_t o = 0; o < s.oh; ++o) {
        const int64_t even = 2 * o, odd = even + 1;
        if (even >= s.ih) break;
        __m512 e = zero, od = zero;
        add_row(w, 1, cur, e, od);
        store_row<G>(s, e, od, dx + even * s.iw, dx1 + even * s.iw);
        if (odd >= s.ih) break;
        e = zero, od = zero;
        add_row(w, 2, cur, e, od);
        if (o + 1 < s.oh) {
            cur = load_row<G>(s, dy + (o + 1) * s.ow, dy1 + (o + 1) * s.ow);
            add_row(w, 0, cur, e, od);
        }
        store_row<G>(s, e, od, dx + odd * s.iw, dx1 + odd * s.iw);
    }
    // dx rows below every window (padding after of 2 or more): zero.
    for (int64_t i = 2 * s.oh; i < s.ih; ++i) store_row<G>(s, zero, zero, dx + i * s.iw, dx1 + i * s.iw);
}

// Image n's channels [c0, c0 + cb), G at a time.
template <int G>
CONV_TARGET_AVX512 void channel_block(const Shape &shape, const ConvGeometry &g, const float *dy, const float *w,
                                      float *dx, int64_t n, int64_t c0, int64_t cb) {
    Shape s = shape;  // a local copy: its masks stay in registers
    const int64_t in_plane = s.ih * s.iw, out_plane = s.oh * s.ow;
    for (int64_t ch = 0; ch < cb; ch += G) {
        const int64_t c = c0 + ch;
        const bool lone = G == 2 && ch + 1 == cb;
        if (lone) s.read[1] = s.store[1] = 0;  // a channel without its pair: its half only
        const float *w0 = w + c * kTaps, *w1 = lone ? w0 : w0 + kTaps;
        __m512 wv[kTaps];
        for (int t = 0; t < kTaps; ++t)
            wv[t] = G == 2 ? _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(w0[t]), _mm512_set1_ps(w1[t]))
                           : _mm512_set1_ps(w0[t]);
        const int64_t at = n * g.c + c;
        plane<G>(s, wv, dy + at * out_plane, dy + (at + 1) * out_plane, dx + at * in_plane,
                 dx + (at + 1) * in_plane);
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_backward_rows_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_DATA || !dw_first_3x3(g) || g.stride[1] != 2) return false;
    if (g.pad_begin[1] != 1 || g.pad_begin[2] != 1) return false;
    // dx columns 2 j - 1 + kw of the dy row's 16 lanes: up to 32 (16 a channel).
    return g.out[2] <= kMaxDyColumns && g.in[2] <= 2 * kVec;
}

size_t dw_backward_rows_workspace_bytes(const ConvGeometry &, conv_op_t, int) { return 0; }

void dw_backward_rows_run(const ConvArgs &a, void *, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const bool pair = g.out[2] <= kPairDyColumns && g.in[2] <= kVec;
    const Shape s = make_shape(g, pair);
    const float *dy = static_cast<const float *>(a.y), *w = static_cast<const float *>(a.w);
    float *dx = static_cast<float *>(a.x);
    dw_rows::for_image_blocks(g, pool, threads, [&](int64_t n, int64_t c0, int64_t cb) {
        if (pair)
            channel_block<2>(s, g, dy, w, dx, n, c0, cb);
        else
            channel_block<1>(s, g, dy, w, dx, n, c0, cb);
    });
#else
    (void)a, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
