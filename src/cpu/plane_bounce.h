// Copies of the planes a vector kernel reading a tensor in place could read
// outside it: the kernels that sweep channels-first planes with loads that
// reach a few floats before a plane's first row and past its last one
// (depthwise_avx2_rows.cpp, depthwise_avx2_planes.cpp,
// depthwise_avx2_flat.cpp, depthwise_avx2_spread.cpp) copy only the
// tensor's first and last planes, with zeros around, into their scratch.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/checked.h"

namespace conv::cpu {

// Floats a plane is rounded to in scratch: 8 (one ymm).
constexpr int64_t kBounceAlign = 8;

// Floats of a copy of a plane (`size` floats) with `before` and `after`
// zeroed around it, rounded to whole vectors.
inline int64_t bounce_floats(int64_t before, int64_t size, int64_t after) {
    return round_up(before, kBounceAlign) + round_up(size + after, kBounceAlign);
}

// The plane at `src` (size floats) inside `scratch` (bounce_floats of it),
// zeros `before` and `after` it; returns where the plane starts.
inline const float *bounce(const float *src, int64_t before, int64_t size, int64_t after, float *scratch) {
    const int64_t lead = round_up(before, kBounceAlign);
    std::fill(scratch, scratch + lead, 0.0f);
    std::copy(src, src + size, scratch + lead);
    std::fill(scratch + lead + size, scratch + lead + round_up(size + after, kBounceAlign), 0.0f);
    return scratch + lead;
}

// Whether plane q of a tensor of `planes` planes (`size` floats each) could
// be read outside the tensor by reads from `before` floats before it to
// `after` past it.
inline bool near_ends(int64_t q, int64_t planes, int64_t size, int64_t before, int64_t after) {
    return q * size < before || (planes - q) * size < size + after;
}

}  // namespace conv::cpu
