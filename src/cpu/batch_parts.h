// A backward-filter's batch split into parts, one thread each: part p's
// images summed into its own copy of dW (part 0's is dW), the copies then
// added up a tree of pairs by whichever thread of a pair finishes second.
//
// Why: small filters over a batch (the small CNNs' layers, conv1 layers)
// give the threads too few filter blocks and column tiles to share, so
// split that way each thread read x and dy the other had padded and laid
// out (a line written by one core and read by the other: ~30 ns on Zen 4)
// and waited on it at every block of images. Parts keep each thread on its
// own images from the copy to the sums. The part count comes from the
// geometry alone, so the sums' order does not depend on the threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/thread_pool.h"

namespace conv::cpu {

// Up to kMaxBatchParts parts (a power of two) where dW's copies stay small.
// At 2 threads 4 parts cost 0-2% against 2, 8 parts 3-4% (the small CNNs'
// layers, direct_avx512): 4 lets up to 4 threads in. The copies added in
// a second parallel loop instead of up the tree: 1-2% more.
constexpr int64_t kMaxBatchParts = 4;
constexpr double kPartSumsBytes = 256 << 10;

// Parts of a batch of n images whose dW is dw_bytes: 1 (not split) unless
// n >= 2 and dW is at most kPartSumsBytes.
inline int64_t batch_parts(int64_t n, double dw_bytes) {
    int64_t parts = 1;
    while (2 * parts <= std::min(n, kMaxBatchParts) && dw_bytes <= kPartSumsBytes) parts *= 2;
    return parts;
}

// Images [first, first + count) of part `part` of `parts`.
inline void part_images(int64_t n, int64_t part, int64_t parts, int64_t *first, int64_t *count) {
    *first = part * n / parts;
    *count = (part + 1) * n / parts - *first;
}

// Runs sweep(part, slot, out) for every part on up to `threads` threads --
// out is dw for part 0, partials + (part - 1) * len for the others -- then
// leaves dw = the parts' sums added up the tree: ((p0 + p1) + (p2 + p3)).
template <class T, class Sweep>
void run_batch_parts(ThreadPool &pool, int threads, int64_t parts, T *dw, T *partials, int64_t len,
                     Sweep &&sweep) {
    auto sums_of = [&](int64_t part) { return part == 0 ? dw : partials + (part - 1) * len; };
    std::atomic<int> arrived[kMaxBatchParts];  // halves of a pair done, at [left + width - 1]
    for (auto &a : arrived) a.store(0, std::memory_order_relaxed);
    pool.parallel_for(
        parts,
        [&](int64_t part, int slot) {
            sweep(part, slot, sums_of(part));
            for (int64_t width = 1; width < parts; width *= 2) {
                const int64_t left = part & ~(2 * width - 1);
                if (arrived[left + width - 1].fetch_add(1, std::memory_order_acq_rel) == 0) return;
                T *__restrict to = sums_of(left);
                const T *__restrict from = sums_of(left + width);
                for (int64_t e = 0; e < len; ++e) to[e] += from[e];
                part = left;
            }
        },
        threads);
}

}  // namespace conv::cpu
