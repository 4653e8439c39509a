// The size from which a pass's tensor is taken to travel to or from
// memory rather than stay in the caches: a quarter of the 32 MiB L3 of the
// Zen 4 the rules that use it were measured on. Outputs from this size on
// are stored non-temporally (gemm_1x1's channels-first forward and
// backward-data, the depthwise NCHW plane blocks); dy read a chunk at a
// time is asked for a chunk ahead (direct_avx512's backward-filter).
#pragma once

#include <cstdint>

namespace conv::cpu {

constexpr double kPastCacheBytes = 8 << 20;

// Whether an output of `floats` floats from `out`, in rows of `row`, is
// stored non-temporally: kPastCacheBytes or more, its rows whole lines
// from a line-aligned start, so that each line is one streamed vector and
// none is part streamed and part stored (MobileNet's 128 channels of 56x56
// at batch 8, rows of 3.5 lines, lost 0.81-0.95x so).
inline bool streams_whole_lines(double floats, const float *out, int64_t row) {
    return floats * 4 >= kPastCacheBytes && row % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0;
}

}  // namespace conv::cpu
