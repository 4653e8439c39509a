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
#include "cpu/isa.h"

namespace conv::cpu {

class Trickle {
public:
    Trickle() = default;
    // [from, from + bytes) over about `steps` calls of step() (paced: what
    // the steps can take).
    Trickle(const void *from, int64_t bytes, int64_t steps) : Trickle(from, bytes, 1, 0, steps) {}
    // `runs` runs of `bytes`, each `stride` bytes after the last (a filter's
    // share of a block of channels, a filter apart), over about `steps` calls.
    Trickle(const void *from, int64_t bytes, int64_t runs, int64_t stride, int64_t steps)
        : run_(static_cast<const char *>(from)), bytes_(std::max<int64_t>(bytes, 0)), stride_(stride),
          runs_(bytes_ > 0 ? runs : 0) {
        const int64_t lines = ceil_div(bytes_, kLine) + 1;  // + 1: a run that starts inside a line
        per_step_ = ceil_div(lines * std::max<int64_t>(runs_, 0), std::max<int64_t>(steps, 1));
        start_run();
    }
    void step() {
        for (int64_t i = 0; i < per_step_; ++i, next_ += kLine) {
            if (next_ >= end_) {
                if (--runs_ <= 0) return;
                run_ += stride_;
                start_run();
            }
            if (l1_)
                __builtin_prefetch(next_, 0, 3);
            else
                __builtin_prefetch(next_, 0, 2);
        }
    }
    // At most kPacedLines a step: a step's prefetches go out back to back,
    // and a burst of more waits on the core's outstanding misses. What the
    // steps leave its reader fetches itself.
    Trickle &paced() {
        per_step_ = std::min(per_step_, kPacedLines);
        return *this;
    }
    // Into L1 as well (prefetcht0), for a copy that reads the span soon
    // after: direct_dot_filter's next band, 1.03x over prefetcht1.
    Trickle &into_l1() {
        l1_ = true;
        return *this;
    }

private:
    static constexpr int64_t kLine = 64;
    // paced()'s lines a step. 512->512 backward-data's next block of
    // filters (filter_ahead) came 32-42 lines a tile on 14x14 at stride 2
    // and 7x7, and perf put 9% of the pass on those prefetches; at 8 a step
    // those passes ran 1.03-1.04x (Zen 4, 1 thread, one-shot calls; 3
    // alternated rounds; 512->512 14x14 at stride 1, 7 lines a step, even).
    // Not the others: the next image's source even, the dot-product
    // backward-filter's next band (which must arrive whole) 0.98x at batch 8.
    static constexpr int64_t kPacedLines = 8;
    void start_run() {  // from the run's first line
        next_ = reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(run_) & ~uintptr_t{kLine - 1});
        end_ = run_ + bytes_;
    }
    const char *run_ = nullptr, *next_ = nullptr, *end_ = nullptr;
    int64_t bytes_ = 0, stride_ = 0, runs_ = 0, per_step_ = 0;
    bool l1_ = false;
};


// RowLines: rows of a strided layout asked into the cache a few at a time
// between a kernel's tiles. Rows are indexed (r, m): row r of "channel" m
// starts at first + r * row_step + m * plane and holds `len` floats.
// - DestinationLines (Write): lines about to be written, asked for
//   ownership (PREFETCHW), so that the reads for ownership of a store
//   scattered over many rows overlap the tiles instead of stalling the
//   store (direct_avx512's channel rows).
// - SourceLines: rows the next work item reads, asked into L2, where they
//   lie in L3 one short run a channel apart -- runs the hardware
//   prefetcher does not follow (direct_avx512's source on large planes,
//   its padded copy or itself).
template <bool Write>
class RowLines {
public:
    RowLines() = default;
    // Over about `steps` calls of step().
    RowLines(const float *first, int64_t row_step, int64_t plane, int64_t rows, int64_t channels, int64_t len,
             int64_t steps)
        : first_(first), row_step_(row_step), plane_(plane), channels_(std::max<int64_t>(channels, 1)),
          bytes_(len * (int64_t)sizeof(float)), rows_(channels > 0 ? rows : 0),
          per_step_(ceil_div(rows * channels, std::max<int64_t>(steps, 1))) {}
    // Row (r, m) walked as counters, not divided out per row.
    CONV_TARGET_PRFCHW void step() {
        for (int64_t i = 0; i < per_step_ && row_ < rows_; ++i) {
            const char *at = reinterpret_cast<const char *>(first_ + row_ * row_step_ + m_ * plane_);
            for (const char *line = reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63});
                 line < at + bytes_; line += 64) {
                if constexpr (Write)
                    __builtin_prefetch(line, 1, 3);  // PREFETCHW where the CPU has it
                else
                    __builtin_prefetch(line, 0, 2);  // PREFETCHT1: into L2
            }
            if (++m_ == channels_) m_ = 0, ++row_;
        }
    }

private:
    const float *first_ = nullptr;
    int64_t row_step_ = 0, plane_ = 0, channels_ = 1, bytes_ = 0, rows_ = 0, per_step_ = 0;
    int64_t row_ = 0, m_ = 0;  // the next row: (row_, m_)
};

using DestinationLines = RowLines<true>;
using SourceLines = RowLines<false>;

}  // namespace conv::cpu
