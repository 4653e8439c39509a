// Overflow-checked int64 arithmetic for sizes and indices: every product or
// sum of user-controlled sizes goes through these, so a huge padding or
// dilation yields CONV_STATUS_OVERFLOW instead of a wrapped index.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/error.h"

namespace conv {

inline int64_t checked_mul(int64_t a, int64_t b, const char *what) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        fail(CONV_STATUS_OVERFLOW, "%s overflows int64: %lld x %lld", what, (long long)a,
             (long long)b);
    return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char *what) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        fail(CONV_STATUS_OVERFLOW, "%s overflows int64: %lld + %lld", what, (long long)a,
             (long long)b);
    return r;
}

// The product of non-negative sizes, as an element count: 0 when any of
// them is 0 (an empty tensor, whatever its other dims), else OVERFLOW when
// it does not fit in int64.
inline int64_t checked_product(std::initializer_list<int64_t> sizes, const char *what) {
    for (int64_t v : sizes)
        if (v == 0) return 0;
    int64_t r = 1;
    for (int64_t v : sizes) r = checked_mul(r, v, what);
    return r;
}

// Ceiling division for a >= 0, b >= 1, without the overflow of a + b - 1.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// a rounded up to a multiple of b (a >= 0, b >= 1).
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// n (>= 1) in ceil(n / most) pieces as even as they come, sizes one apart
// at most (49 as 4 x 6 + 5 x 5, not 8 x 6 and a 1 that runs a tile at a
// sixth of its rate): piece t starts at start(t) and holds size(t).
struct EvenPieces {
    int64_t count, low, high;
    EvenPieces(int64_t n, int64_t most) : count(ceil_div(n, most)), low(n / count), high(n % count) {}
    int64_t start(int64_t t) const { return t * low + (t < high ? t : high); }
    int64_t size(int64_t t) const { return low + (t < high ? 1 : 0); }
};

// Floor division that is right for negative numerators too.
inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace conv
