// What the files with AVX2 kernels share (CPUs with AVX2 and FMA but no
// AVX-512: AMD Zen 1-3, Intel's desktop cores). Include it only from such
// files; each kernel function carries CONV_TARGET_AVX2 (see isa.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/isa.h"

#if CONV_HAVE_AVX512_KERNELS
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in avx512.h
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace conv::cpu {

// Transposes 8 rows of 8 floats in registers: v[u] lane t <- v[t] lane u.
// 24 shuffles; unrolled, so that the array stays in registers.
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void transpose8(__m256 v[8]) {
    __m256 a[8], b[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // pairs of rows, interleaved by element
        a[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {  // quads of rows, by pairs of elements
        b[4 * i + 0] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0xEE);
        b[4 * i + 2] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // the two 128-bit halves
        v[i] = _mm256_permute2f128_ps(b[i], b[i + 4], 0x20);
        v[i + 4] = _mm256_permute2f128_ps(b[i], b[i + 4], 0x31);
    }
}

// 8 rows of 8 floats (`stride` floats apart from `at`) loaded transposed:
// v[j] lane i <- at[i * stride + j]. Each ymm is put together from two
// rows' 128-bit halves as it is loaded (rows i and i + 4), so that only
// in-lane shuffles remain: 16 of them, not transpose8's 24 of which 8 cross
// lanes (vperm2f128, one a cycle on Zen 3).
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void load_transposed8(const float *at, int64_t stride,
                                                                            __m256 v[8]) {
    __m256 t[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        const float *lo = at + i * stride, *hi = at + (i + 4) * stride;
        t[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
        t[i + 4] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo + 4)), _mm_loadu_ps(hi + 4), 1);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {  // columns 4h..4h+3: a 4 x 4 transpose in each lane
        const __m256 a0 = _mm256_unpacklo_ps(t[4 * h], t[4 * h + 1]), a1 = _mm256_unpackhi_ps(t[4 * h], t[4 * h + 1]);
        const __m256 a2 = _mm256_unpacklo_ps(t[4 * h + 2], t[4 * h + 3]), a3 = _mm256_unpackhi_ps(t[4 * h + 2], t[4 * h + 3]);
        v[4 * h + 0] = _mm256_shuffle_ps(a0, a2, 0x44);
        v[4 * h + 1] = _mm256_shuffle_ps(a0, a2, 0xEE);
        v[4 * h + 2] = _mm256_shuffle_ps(a1, a3, 0x44);
        v[4 * h + 3] = _mm256_shuffle_ps(a1, a3, 0xEE);
    }
}

// The lane sums of 8 vectors: lane i of the result is the sum of v[i]'s.
CONV_TARGET_AVX2 inline __m256 lane_sums(const __m256 *v) {
    const __m256 a = _mm256_hadd_ps(v[0], v[1]), b = _mm256_hadd_ps(v[2], v[3]);
    const __m256 c = _mm256_hadd_ps(v[4], v[5]), d = _mm256_hadd_ps(v[6], v[7]);
    const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);  // 0 1 2 3 | 0 1 2 3, 4 5 6 7 | ...
    return _mm256_add_ps(_mm256_permute2f128_ps(ab, cd, 0x20), _mm256_permute2f128_ps(ab, cd, 0x31));
}

// A 3x3 window's 9 sums from their 9 vectors of partial sums (the
// depthwise backward-filter kernels' end of a channel): out[t] = the sum
// of v[t]'s lanes.
CONV_TARGET_AVX2 inline void store_lane_sums9(float *out, const __m256 *v) {
    _mm256_storeu_ps(out, lane_sums(v));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v[8]), _mm256_extractf128_ps(v[8], 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    _mm_store_ss(out + 8, _mm_add_ss(h, _mm_movehdup_ps(h)));
}

// The first m (0-3) floats at `at` in the low lanes, zeros above; nothing
// past them read.
CONV_TARGET_AVX2 inline __m128 load_few_avx2(const float *at, int64_t m) {
    if (m <= 0) return _mm_setzero_ps();
    if (m == 1) return _mm_load_ss(at);
    const __m128 two = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(at)));
    return m == 2 ? two : _mm_movelh_ps(two, _mm_load_ss(at + 2));
}

// 8 floats from `at`, of which the first n (<= 8) exist, zeros past them:
// a partial load is put together from 4-, 2- and 1-float loads in
// registers, never past the n-th element. (Through a buffer in memory, as
// before, its narrow stores could not be forwarded to the wide load: each
// waited on the store's retirement.)
CONV_TARGET_AVX2 inline __m256 load_first_avx2(const float *at, int64_t n) {
    if (n >= 8) return _mm256_loadu_ps(at);
    if (n >= 4) return _mm256_set_m128(load_few_avx2(at + 4, n - 4), _mm_loadu_ps(at));
    return _mm256_set_m128(_mm_setzero_ps(), load_few_avx2(at, n));
}

// The even elements of the 16 floats a:b (a's first), in order: one
// in-lane shuffle and one cross-lane permute.
CONV_TARGET_AVX2 inline __m256 even_lanes_avx2(__m256 a, __m256 b) {
    const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // 0 2 8 10 | 4 6 12 14
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
}

// The odd elements of the 16 floats a:b, in order.
CONV_TARGET_AVX2 inline __m256 odd_lanes_avx2(__m256 a, __m256 b) {
    const __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));  // 1 3 9 11 | 5 7 13 15
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), _MM_SHUFFLE(3, 1, 2, 0)));
}

// dst[j] = src[2 * j] for j < n, 8 a step from 16 loaded source elements,
// the last ones one by one: nothing past src[2n-2] is read.
CONV_TARGET_AVX2 inline void copy_even_avx2(float *dst, const float *src, int64_t n) {
    int64_t j = 0;
    for (; j + 8 < n; j += 8)  // src[2j .. 2j + 15] all within the 2n - 1 read
        _mm256_storeu_ps(dst + j, even_lanes_avx2(_mm256_loadu_ps(src + 2 * j), _mm256_loadu_ps(src + 2 * j + 8)));
    for (; j < n; ++j) dst[j] = src[2 * j];
}

// Stores the first n (<= 8) lanes of x at `at`: a partial store as 4-, 2-
// and 1-float stores from registers, not a masked store (vmaskmovps), whose
// masked-off lanes past a tensor's last page check_masked_access has not
// shown safe.
CONV_TARGET_AVX2 inline void store_first_avx2(float *at, __m256 x, int64_t n) {
    if (n >= 8) return _mm256_storeu_ps(at, x);
    __m128 part = _mm256_castps256_ps128(x);
    if (n >= 4) {
        _mm_storeu_ps(at, part);
        part = _mm256_extractf128_ps(x, 1), at += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_epi64(reinterpret_cast<__m128i *>(at), _mm_castps_si128(part));
        part = _mm_movehl_ps(part, part), at += 2, n -= 2;
    }
    if (n >= 1) _mm_store_ss(at, part);
}

// One step of a 16-column panel: the 16 floats at `at`, of which the first
// n exist, stored at the 32-byte aligned `dst` with zeros past n.
CONV_TARGET_AVX2 inline void copy_panel_step_avx2(float *dst, const float *at, int64_t n) {
    if (n >= 16) {
        _mm256_store_ps(dst, _mm256_loadu_ps(at));
        _mm256_store_ps(dst + 8, _mm256_loadu_ps(at + 8));
        return;
    }
    _mm256_store_ps(dst, load_first_avx2(at, n));
    _mm256_store_ps(dst + 8, load_first_avx2(at + 8, n - 8));
}

// transpose_rows_avx512's contract at 8 lanes a step: out[j * 16 + l] = row
// l's element j (rows `stride` apart, zero past `lanes`), j < len; `out` is
// 32-byte aligned.
CONV_TARGET_AVX2 inline void transpose_rows_avx2(const float *rows, int64_t stride, int64_t lanes,
                                                 int64_t len, float *out) {
    for (int64_t j = 0; j < len; j += 8) {
        const int64_t cols = std::min<int64_t>(8, len - j);
        if (cols < 8) {  // the last columns one by one: partial loads through a buffer cost more
            for (int64_t c = 0; c < cols; ++c)
                for (int64_t l = 0; l < 16; ++l) out[(j + c) * 16 + l] = l < lanes ? rows[l * stride + j + c] : 0.0f;
            break;
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            __m256 v[8];
#pragma GCC unroll 8
            for (int l = 0; l < 8; ++l)
                v[l] = h * 8 + l < lanes ? _mm256_loadu_ps(rows + (h * 8 + l) * stride + j) : _mm256_setzero_ps();
            transpose8(v);
#pragma GCC unroll 8
            for (int c = 0; c < 8; ++c) _mm256_store_ps(out + (j + c) * 16 + h * 8, v[c]);
        }
    }
}

}  // namespace conv::cpu
#endif
