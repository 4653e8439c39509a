#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace conv {

int available_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

// How long a thread spins before it sleeps, waiting for the next region
// (workers) or for the workers to finish one (the caller). A futex wake-up
// costs tens of microseconds on a virtual machine -- far more when the
// other vCPU has halted -- each pass has one to three regions, and a
// network runs its layers back to back: spinning keeps those wake-ups off
// the critical path (GNU OpenMP spins ~15 ms by default). 100 us was too
// short between a framework's layers: with oneDNN's timing between
// libconv's (convbench --peer), the worker missed 29% of ResNet-50's
// forward regions and the pass took 57 ms at 2 threads instead of 33-35;
// at 1 ms it misses 18% there (34 ms), none back to back. The cost is up
// to this much CPU per worker after the last call.
constexpr auto kSpin = std::chrono::microseconds(1000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <class F>
bool spin_until(F &&done) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1;; ++i) {
        if (done()) return true;
        cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) return done();
    }
}

}  // namespace

ThreadPool::ThreadPool(int threads)
    : threads_(std::clamp(threads, 1, (int)kSlotMask)), shares_(new Share[(size_t)threads_]) {
    try {
        workers_.reserve(static_cast<size_t>(threads_ - 1));
        for (int slot = 1; slot < threads_; ++slot)
            workers_.emplace_back([this, slot] { worker_loop(slot); });
    } catch (...) {
        // No memory or no thread (bad_alloc, system_error): stop the workers
        // already started -- a joinable std::thread destroyed would
        // terminate the process -- and report the failure.
        stop();
        throw;
    }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() noexcept {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        post_.stopping.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto &t : workers_)
        if (t.joinable()) t.join();
}

// Items run by the thread that had them last time: each slot's share is
// a contiguous range, the same for the same count, so a thread writes the
// lines it wrote in the previous call (and neighbouring items, which share
// source rows and output lines, stay on one thread). Handed out one at a
// time from a single counter, the items interleaved over the threads and
// changed threads from call to call, each store then taking its line from
// the other core: on Zen 4 at 2 threads, MobileNet's 3->32 224x224 conv1
// forward spent 30% of its samples storing its output (13% at 1 thread).
// A thread done with its share takes the rest of the others', so one that
// joins late (or not at all) still costs the region nothing.
void ThreadPool::run_items(int slot, int slots) {
    for (int k = 0; k < slots; ++k) {
        Share &share = shares_[(size_t)((slot + k) % slots)];
        for (;;) {
            const int64_t item = share.next.fetch_add(1, std::memory_order_relaxed);
            if (item >= share.end) break;
            try {
                (*post_.task)(item, slot);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
                for (int s = 0; s < slots; ++s)  // stop handing out
                    shares_[(size_t)s].next.store(shares_[(size_t)s].end, std::memory_order_relaxed);
            }
        }
    }
}

void ThreadPool::worker_loop(int slot) {
    uint64_t seen = 0;  // the last region's post word
    for (;;) {
        uint64_t word = seen;
        auto posted = [&] {
            return post_.stopping.load(std::memory_order_acquire) ||
                   (word = post_.word.load(std::memory_order_acquire)) != seen;
        };
        if (!spin_until(posted)) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, posted);
        }
        if (post_.stopping.load(std::memory_order_acquire)) return;
        seen = word;
        const int slots = (int)(word & kSlotMask);
        if (slot >= slots) continue;
        // The share's line on its way while the join goes round.
        __builtin_prefetch(&shares_[(size_t)slot], 1);
        leave_cpu(post_.caller_cpu.load(std::memory_order_relaxed));
        if (!join(word >> kSlotBits)) continue;  // the caller finished the region alone
        run_items(slot, slots);
        finish();
    }
}

// Seq_cst on both sides: either the caller, going to sleep, sees this
// count, or this worker sees it asleep and wakes it (through the lock, so
// not between its last look at the count and its wait).
void ThreadPool::finish() {
    finished_.count.fetch_add(1, std::memory_order_seq_cst);
    if (!finished_.caller_asleep.load(std::memory_order_seq_cst)) return;
    { std::lock_guard<std::mutex> lock(mutex_); }
    done_.notify_one();
}

// The scheduler may wake a worker onto the CPU of the thread that woke it
// (the caller, busy with the region's items) and leave the pair there while
// another CPU idles: the worker then never runs in time to join, and on two
// vCPUs whole runs of a layer went at one thread's speed or below (256->256
// 14x14 3x3 forward at 2 threads: 1.8 ms in half the runs, 0.85 in the
// rest; 1 thread 1.7). A worker that finds itself on the caller's CPU
// moves off it: excluded from its affinity for a moment (the kernel
// migrates it at once), then allowed back everywhere it was.
void ThreadPool::leave_cpu(int cpu) {
    if (cpu < 0 || sched_getcpu() != cpu) return;
    cpu_set_t allowed, others;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
    others = allowed;
    CPU_CLR(cpu, &others);
    if (sched_setaffinity(0, sizeof others, &others) == 0)
        sched_setaffinity(0, sizeof allowed, &allowed);
}

bool ThreadPool::join(uint64_t generation) {
    uint64_t entry = entry_.load(std::memory_order_acquire);
    for (;;) {
        if ((entry >> kEntryGenerationShift) != (generation & kEntryGenerationMask) ||
            (entry & kEntryClosed))
            return false;
        if (entry_.compare_exchange_weak(entry, entry + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
            return true;
    }
}

int ThreadPool::slots_for(int64_t count, int max_slots) const {
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({(int64_t)threads_, (int64_t)max_slots, count})));
}

int64_t ThreadPool::share_of(int64_t count, int slots, int64_t item) {
    const int64_t each = count / slots, extra = count % slots;  // the first `extra` shares one more
    // Shares 0 .. extra - 1 hold each + 1 items, the rest each.
    const int64_t long_items = extra * (each + 1);
    return item < long_items ? item / (each + 1) : extra + (item - long_items) / std::max<int64_t>(each, 1);
}

bool ThreadPool::same_share(int64_t count, int max_slots, int64_t a, int64_t b) const {
    const int slots = slots_for(count, max_slots);
    return slots <= 1 || share_of(count, slots, a) == share_of(count, slots, b);
}

void ThreadPool::parallel_for(int64_t count, Task task, int max_slots) {
    if (count <= 0) return;
    const int slots = slots_for(count, max_slots);
    auto inline_run = [&] {
        for (int64_t i = 0; i < count; ++i) task(i, 0);
    };
    // One slot runs inline before the region lock is tried: a task may run
    // a one-slot loop of its own, and the thread that opened the region
    // holds that lock (a second try_lock by its owner is undefined).
    if (slots <= 1) return inline_run();
    std::unique_lock<std::mutex> region(region_mutex_, std::try_to_lock);
    if (!region.owns_lock()) return inline_run();
    {
        // Under the lock: a worker asleep on wake_ sees the new word.
        std::lock_guard<std::mutex> lock(mutex_);
        post_.task = &task;
        const int64_t each = count / slots, extra = count % slots;  // the first `extra` shares one more
        for (int s = 0; s < slots; ++s) {
            const int64_t begin = s * each + std::min<int64_t>(s, extra);
            shares_[(size_t)s].next.store(begin, std::memory_order_relaxed);
            shares_[(size_t)s].end = begin + each + (s < extra);
        }
        post_.caller_cpu.store(sched_getcpu(), std::memory_order_relaxed);
        ++generation_;
        finished_.count.store(0, std::memory_order_relaxed);
        entry_.store((generation_ & kEntryGenerationMask) << kEntryGenerationShift, std::memory_order_release);
        post_.word.store(generation_ << kSlotBits | (uint64_t)slots, std::memory_order_release);
    }
    wake_.notify_all();
    run_items(0, slots);
    // Close the region and wait only for the workers that joined it: one
    // not yet running (asleep, or sharing this CPU) finds the region closed
    // when it gets there and skips it.
    const uint64_t joined =
        entry_.fetch_or(kEntryClosed, std::memory_order_acq_rel) & kEntryJoinedMask;
    auto all_done = [&] { return finished_.count.load(std::memory_order_seq_cst) == joined; };
    if (!spin_until(all_done)) {
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.caller_asleep.store(true, std::memory_order_seq_cst);
        done_.wait(lock, all_done);
        finished_.caller_asleep.store(false, std::memory_order_relaxed);
    }
    // error_ is written only where a task threw: left alone otherwise, its
    // line stays where it is.
    if (error_) {
        std::exception_ptr error = std::move(error_);
        error_ = nullptr;
        std::rethrow_exception(error);
    }
}

}  // namespace conv
