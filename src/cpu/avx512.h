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

// vpermt2ps indices picking the even (odd) lanes of two concatenated vectors:
// columns 0, 2, ..., 30 (1, 3, ..., 31) of 32 consecutive ones.
CONV_TARGET_AVX512 inline __m512i even_lanes() {
    return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
CONV_TARGET_AVX512 inline __m512i odd_lanes() {
    return _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

}  // namespace conv::cpu

#endif
