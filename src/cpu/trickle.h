// Trickle: prefetches a span into L2 a few cache lines at a time, one step
// between a kernel's tiles, so that data a thread reads next arrives while
// it computes instead of stalling a copy later. This machine's single-core
// memory bandwidth is ~5 GB/s: direct_avx512 copying the next image's
// source from L2 rather than memory ran ResNet-20's 32x32 layers 1.05-1.07x
// as fast at batch 32 (forward and backward-data). Its backward-filter,
// whose tiles stream dy from L2 themselves, lost 1-6% to prefetching the
// next block of images, and does without.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/checked.h"

namespace conv::cpu {

class Trickle {
public:
    Trickle() = default;
    // [from, from + bytes) over about `steps` calls of step().
    Trickle(const void *from, int64_t bytes, int64_t steps)
        : next_(static_cast<const char *>(from)), end_(next_ + std::max<int64_t>(bytes, 0)),
          per_step_(ceil_div(ceil_div(std::max<int64_t>(bytes, 0), kLine), std::max<int64_t>(steps, 1))) {}
    void step() {
        for (int64_t i = 0; i < per_step_ && next_ < end_; ++i, next_ += kLine) __builtin_prefetch(next_, 0, 2);
    }

private:
    static constexpr int64_t kLine = 64;
    const char *next_ = nullptr, *end_ = nullptr;
    int64_t per_step_ = 0;
};

}  // namespace conv::cpu
