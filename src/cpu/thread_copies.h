// What each thread's own copy holds within one call, where the threads
// make per call what their items read (weights packed, dy laid out, W's
// strips) each for itself: a line one core wrote and another then read
// cost ~30 ns on Zen 4, so data made by all threads together and read by
// all ran no faster at 2 threads than at 1 (docs/performance.md). A copy
// is made of pieces (channel blocks, row blocks), each made by a thread at
// its first use in the call.
#pragma once

#include <array>
#include <cstdint>

namespace conv::cpu {

class ThreadCopies {
public:
    static constexpr int kMaxThreads = 64;     // threads that keep copies of their own
    static constexpr int64_t kMaxPieces = 64;  // pieces a copy is made of

    // Whether `threads` threads keep copies of `pieces` pieces this way.
    static bool apply(int threads, int64_t pieces) {
        return threads > 1 && threads <= kMaxThreads && pieces <= kMaxPieces;
    }
    // True the first time the thread in `slot` asks for `piece` in the
    // call: it makes that piece of its copy then.
    bool first_use(int slot, int64_t piece) {
        uint64_t &held = held_[(size_t)slot];
        const uint64_t bit = uint64_t(1) << piece;
        if (held & bit) return false;
        held |= bit;
        return true;
    }

private:
    std::array<uint64_t, kMaxThreads> held_{};  // per slot: its pieces made
};

}  // namespace conv::cpu
