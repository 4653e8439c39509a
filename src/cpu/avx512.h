// What the files with AVX-512 kernels share: the intrinsics, lane masks and
// the index vectors that split even and odd columns. Include it only from
// such files (see isa.h: each kernel function carries CONV_TARGET_AVX512).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/isa.h"

#if CONV_HAVE_AVX512_KERNELS
#include <immintrin.h>

// GCC 12's intrinsic headers initialise their "undefined" vectors from
// themselves (GCC PR 105593): -Wuninitialized then fires at every inlined
// use of those intrinsics in the including file. Fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace conv::cpu {

// Lanes [a, b) of a 16-lane mask, a and b clamped to [0, 16].
inline __mmask16 lane_range(int64_t a, int64_t b) {
    a = std::clamp<int64_t>(a, 0, 16);
    b = std::clamp<int64_t>(b, 0, 16);
    if (b <= a) return 0;
    return (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));
}

// The first n lanes (n clamped to [0, 16]).
inline __mmask16 first_lanes(int64_t n) { return lane_range(0, n); }

// v, kept in a register by an empty asm: GCC 12 folds a loaded vector that
// several FMAs use into each one's memory operand, a load each
// (direct_dot_filter's former 5 x 3 tile issued 18 loads for 15 FMAs;
// MNIST's 1->32 backward-filter 1.42x with it).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 held(__m512 v) {
    asm("" : "+v"(v));
    return v;
}

// One step of dot products along a run: acc[i * T + t] += d[i][p, p + 16)
// * x[t][p, p + 16), lanes outside `lanes` read as zeros (MR + T loads for
// MR * T FMAs: x's T vectors held, d's one at a time). The dot-product
// backward-filter kernels' tile body.
template <int MR, int T>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void dot_outer_step(const float *const (&d)[MR],
                                                                             const float *const (&x)[T], int64_t p,
                                                                             __mmask16 lanes,
                                                                             __m512 (&acc)[MR * T]) {
    __m512 b[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) b[t] = held(_mm512_maskz_loadu_ps(lanes, x[t] + p));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        const __m512 v = held(_mm512_maskz_loadu_ps(lanes, d[i] + p));
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) acc[i * T + t] = _mm512_fmadd_ps(v, b[t], acc[i * T + t]);
    }
}

// vpermt2ps indices picking the even (odd) lanes of two concatenated vectors:
// columns 0, 2, ..., 30 (1, 3, ..., 31) of 32 consecutive ones.
CONV_TARGET_AVX512 inline __m512i even_lanes() {
    return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
CONV_TARGET_AVX512 inline __m512i odd_lanes() {
    return _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// dst[j] = src[2 * j] for j < n: 16 a step, picked from two vectors of the
// source by one permute, the row's end under masks (nothing past src[2n -
// 2] read, nothing past dst[n - 1] written). A strided 1x1 layer's rows
// are short (14 and 7 outputs on ResNet-50's shortcuts): one step each.
CONV_TARGET_AVX512 inline void copy_even_avx512(float *dst, const float *src, int64_t n) {
    for (int64_t j = 0; j < n; j += 16) {
        const int64_t reach = 2 * std::min<int64_t>(16, n - j) - 1;  // source elements read
        const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(reach), src + 2 * j);
        const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(reach - 16), src + 2 * j + 16);
        _mm512_mask_storeu_ps(dst + j, first_lanes(n - j), _mm512_permutex2var_ps(lo, even_lanes(), hi));
    }
}

// Gather indices 0, k, 2k, ..., 15k: elements k apart.
CONV_TARGET_AVX512 inline __m512i lanes_apart(int64_t k) {
    return _mm512_mullo_epi32(_mm512_set1_epi32((int)k),
                              _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// The sums' reduction across lanes, a level at a time: in-lane unpacks and
// shuffles halve each 128-bit chunk twice, then 128-bit shuffles add the
// chunks. Two levels of 2 -> 1 vectors: out = lo(p, q) + hi(p, q).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 lane_sums_level1(__m512 p, __m512 q) {
    return _mm512_add_ps(_mm512_unpacklo_ps(p, q), _mm512_unpackhi_ps(p, q));
}
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 lane_sums_level2(__m512 p, __m512 q) {
    return _mm512_add_ps(_mm512_shuffle_ps(p, q, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(p, q, _MM_SHUFFLE(3, 2, 3, 2)));
}
// Chunks 0 + 1 and 2 + 3 of p, then of q.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 lane_sums_chunks(__m512 p, __m512 q) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The sums of 16 vectors' lanes, one lane each, from `in` (16 / G vectors:
// sum ch is vector ch's, or with G = 2 sums 2 i and 2 i + 1 are lanes 0-7
// and 8-15 of vector i): sum ch in lane lane_of_sum(ch, G). 45 instructions
// for 16 vectors (21 for 8 of two halves), where 16 separate reductions
// take 128. A vector's sum does not depend on its neighbours'.
template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 lane_sums16_of(const __m512 (&in)[16 / G]) {
    constexpr int n = 16 / G;
    __m512 a[n / 2], b[n / 4];
    for (int i = 0; i < n / 2; ++i) a[i] = lane_sums_level1(in[2 * i], in[2 * i + 1]);
    for (int i = 0; i < n / 4; ++i) b[i] = lane_sums_level2(a[2 * i], a[2 * i + 1]);
    // b[i] chunk k: [vector 4 i's chunk k sum, 4 i + 1's, 4 i + 2's, 4 i + 3's].
    if (G == 2) return lane_sums_chunks(b[0], b[1]);  // halves kept apart
    return lane_sums_chunks(lane_sums_chunks(b[0], b[1]), lane_sums_chunks(b[2], b[3]));
}

// The lane sums of N vectors in registers (N <= 32) into out[0, N) (64-byte
// aligned, rounded up to 16 floats): lane_sums16_of 16 vectors at a time,
// zeros past N.
template <int N>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void lane_sums_of(const __m512 (&acc)[N], float *out) {
    static_assert(N <= 32, "two groups of 16 at most");
    __m512 in[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) in[i] = i < N ? acc[i] : _mm512_setzero_ps();
    _mm512_store_ps(out, lane_sums16_of<1>(in));
    if constexpr (N > 16) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) in[i] = 16 + i < N ? acc[16 + i] : _mm512_setzero_ps();
        _mm512_store_ps(out + 16, lane_sums16_of<1>(in));
    }
}

// The same from memory: `v`, vectors `apart` floats apart (16 unless
// told), past the first `count` zeros.
template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) __m512 lane_sums16(const float *v, int64_t apart = 16,
                                                                          int64_t count = 16 / G) {
    __m512 in[16 / G];
    for (int i = 0; i < 16 / G; ++i) in[i] = i < count ? _mm512_load_ps(v + i * apart) : _mm512_setzero_ps();
    return lane_sums16_of<G>(in);
}

// out[i] = the sum of vector i's lanes for the n vectors from v (64 B
// apart): lane_sums16 16 at a time, a store each, in place of a reduction a
// vector (~3x the instructions) and a scalar store.
CONV_TARGET_AVX512 inline void store_lane_sums(const float *v, int64_t n, float *out) {
    for (int64_t at = 0; at < n; at += 16)
        _mm512_mask_storeu_ps(out + at, first_lanes(n - at), lane_sums16<1>(v + at * 16, 16, n - at));
}

// The lane of sum ch in lane_sums16<G>'s result.
constexpr int lane_of_sum(int ch, int G) {
    // G = 2: vector i = ch / 2's half h in chunk 2 (i / 4) + h, place i % 4.
    return G == 1 ? ch : (ch / 8) * 8 + (ch % 2) * 4 + (ch / 2) % 4;
}

// Transposes 16 rows of 16 floats in registers: v[u] lane t <- v[t] lane u.
// (Unrolled: the arrays must stay in registers.)
CONV_TARGET_AVX512 inline void transpose16(__m512 v[16]) {
    __m512 t[16];
    // Rows 2i and 2i+1 interleaved: in each 128-bit lane, a0 b0 a1 b1 / a2 b2 a3 b3.
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    // v[4i + j], 128-bit lane L: rows 4i..4i+3 of column 4L + j.
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        v[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        v[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        v[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        v[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // Column 4L + j gathers lane L of v[j], v[4 + j], v[8 + j], v[12 + j].
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        const __m512 u0 = _mm512_shuffle_f32x4(v[j], v[4 + j], 0x88);  // L0, L2 of both
        const __m512 u1 = _mm512_shuffle_f32x4(v[j], v[4 + j], 0xDD);  // L1, L3
        const __m512 u2 = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0x88);
        const __m512 u3 = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0xDD);
        t[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
        t[8 + j] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
        t[4 + j] = _mm512_shuffle_f32x4(u1, u3, 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) v[i] = t[i];
}

// v[j] lane l = row l's element j: rows `stride` apart, the first
// `lanes` of them read (the others zero), each under `keep`.
CONV_TARGET_AVX512 inline void load_transposed16(const float *rows, int64_t stride, int64_t lanes, __mmask16 keep,
                                                 __m512 v[16]) {
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l) v[l] = l < lanes ? _mm512_maskz_loadu_ps(keep, rows + l * stride) : _mm512_setzero_ps();
    transpose16(v);
}

// out[j * 16 + l] = row l's element j (rows `stride` apart, zero past
// `lanes`), j < len, 16 columns at a time through transpose16; `out` is
// 64-byte aligned. Packs channels-first filters with a channel per lane,
// and lays dy out position-major with 16 channels per position. ahead > 0:
// each row's line `ahead` elements on is asked for as its line is read
// (the next chunk of rows read from memory a chunk at a time).
CONV_TARGET_AVX512 inline void transpose_rows_ahead_avx512(const float *rows, int64_t stride, int64_t lanes,
                                                           int64_t len, float *out, int64_t ahead) {
    for (int64_t j = 0; j < len; j += 16) {
        if (ahead > 0)
            for (int64_t l = 0; l < lanes; ++l)
                _mm_prefetch((const char *)(rows + l * stride + j + ahead), _MM_HINT_T0);
        __m512 v[16];
        load_transposed16(rows + j, stride, lanes, first_lanes(len - j), v);
        const int64_t cols = std::min<int64_t>(16, len - j);
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c)
            if (c < cols) _mm512_store_ps(out + (j + c) * 16, v[c]);
    }
}

CONV_TARGET_AVX512 inline void transpose_rows_avx512(const float *rows, int64_t stride, int64_t lanes, int64_t len,
                                                     float *out) {
    transpose_rows_ahead_avx512(rows, stride, lanes, len, out, 0);
}

}  // namespace conv::cpu

#endif
