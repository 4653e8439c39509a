// The size from which a pass's tensor is taken to travel to or from
// memory rather than stay in the caches: a quarter of the 32 MiB L3 of the
// Zen 4 the rules that use it were measured on. Outputs from this size on
// are stored non-temporally (gemm_1x1's channels-first forward and
// backward-data, the depthwise NCHW plane blocks); dy read a chunk at a
// time is asked for a chunk ahead (direct_avx512's backward-filter).
#pragma once

namespace conv::cpu {

constexpr double kPastCacheBytes = 8 << 20;

}  // namespace conv::cpu
