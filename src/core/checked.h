// Overflow-checked int64 arithmetic for sizes and indices: every product or
// sum of user-controlled sizes goes through these, so a huge padding or
// dilation yields CONV_STATUS_OVERFLOW instead of a wrapped index.
#pragma once

#include <cstdint>

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

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Floor division that is right for negative numerators too.
inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace conv
