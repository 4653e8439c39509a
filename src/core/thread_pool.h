// A small persistent thread pool: parallel_for(count, fn) runs fn(item, slot)
// for item in [0, count) on the caller plus (threads - 1) workers. Each
// thread first takes the items of its own share (a contiguous range, the
// same for every call of the same count), then helps with the others'
// shares; `slot` (0..threads-1) names the executing thread so callers can
// give each one its own scratch buffer.
//
// One parallel region runs at a time. A call that finds the pool busy (another
// thread of the application is using the same context) runs its items inline
// on slot 0 instead of waiting: it always progresses, never deadlocks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace conv {

// A non-owning reference to a callable `void(int64_t item, int slot)`: unlike
// std::function it never allocates, so starting a parallel region cannot
// fail half way through a pass (the callable must outlive the call, as a
// lambda passed straight to parallel_for does).
class TaskRef {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, TaskRef>>>
    TaskRef(F &&f) noexcept  // NOLINT: implicit, like std::function
        : object_(const_cast<void *>(static_cast<const void *>(std::addressof(f)))),
          call_([](void *o, int64_t item, int slot) {
              (*static_cast<std::remove_reference_t<F> *>(o))(item, slot);
          }) {}
    void operator()(int64_t item, int slot) const { call_(object_, item, slot); }

private:
    void *object_;
    void (*call_)(void *, int64_t, int);
};

class ThreadPool {
public:
    using Task = TaskRef;

    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int threads() const { return threads_; }

    // Runs the items; rethrows the first exception a task threw. `max_slots`
    // bounds how many threads take part (the scratch slots the caller has).
    void parallel_for(int64_t count, Task task, int max_slots);

    // Whether parallel_for(count, ..., max_slots) hands items a and b to the
    // same thread's share (each thread's items are a range; another may
    // still take some of them once its own run out).
    bool same_share(int64_t count, int max_slots, int64_t a, int64_t b) const;

private:
    int slots_for(int64_t count, int max_slots) const;
    // The share of `slots` that holds `item` of `count`.
    static int64_t share_of(int64_t count, int slots, int64_t item);
    void stop() noexcept;
    void worker_loop(int slot);
    void run_items(int slot, int slots);
    // Enters the region `generation` unless the caller has closed it (or a
    // later one is posted); true when this worker must run its items.
    bool join(uint64_t generation);
    // Tells the caller a joined worker is done with its items.
    void finish();
    // Moves this worker off `cpu` (the caller's) when it runs there.
    static void leave_cpu(int cpu);

    int threads_;
    std::vector<std::thread> workers_;
    std::mutex region_mutex_;  // held by the caller of the running region

    // What the workers read of a region, in lines of their own: a region's
    // start and end move a few lines between the caller's core and each
    // worker's, one after another, each transfer ~40 ns where the host puts
    // two vCPUs on cores close together and ~180 ns where it puts them far
    // apart (Zen 4: a line's round trip measured 55-90 ns or 340-380 ns,
    // the host switching between the two within minutes). A worker's fast
    // path touches only these lines, never the lock: it spins on `post_`,
    // joins through `entry_`, reports to `finished_` (the caller still
    // posts under the lock, a line only it takes while no worker sleeps). Where the lock, the
    // generation and the counters shared lines that the caller and worker
    // took in turn, a region of two 2 us items took 0.57 us more than its
    // items with the vCPUs close (median of 40 alternated runs; 0.47 us
    // now), 1.41 us with them far apart (0.97 us now, one run).
    static constexpr int kSlotBits = 16;  // post.word: generation << kSlotBits | slots
    static constexpr uint64_t kSlotMask = (uint64_t(1) << kSlotBits) - 1;
    struct alignas(64) Post {
        std::atomic<uint64_t> word{0};
        std::atomic<bool> stopping{false};
        // Read by joined workers only (the join orders them after these
        // writes; the next region's, after their finish).
        const Task *task = nullptr;
        // Where the caller posted the region (-1: unknown): read before the
        // join too (leave_cpu), where another region's is only a worse guess.
        std::atomic<int> caller_cpu{-1};
    } post_;
    // The caller waits only for the workers that entered its region before
    // it ran out of items and closed it: a worker that is not running then
    // (asleep, preempted, or sharing the caller's CPU) costs the region
    // nothing. entry_ packs the region's generation (high bits), a closed
    // bit and the count of workers that joined; CAS keeps a worker from
    // joining a closed or newer region.
    static constexpr int kEntryGenerationShift = 24;
    static constexpr uint64_t kEntryGenerationMask = (uint64_t(1) << 40) - 1;
    static constexpr uint64_t kEntryClosed = uint64_t(1) << 23;
    static constexpr uint64_t kEntryJoinedMask = kEntryClosed - 1;
    alignas(64) std::atomic<uint64_t> entry_{0};
    struct alignas(64) Finish {
        std::atomic<uint64_t> count{0};      // joined workers done with their items
        std::atomic<bool> caller_asleep{false};  // the caller waits on done_: notify it
    } finished_;

    // The slow path: workers that spun kSpin without a region sleep on
    // wake_, a caller that waited as long on done_.
    alignas(64) std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    uint64_t generation_ = 0;  // the caller's count of regions (under region_mutex_ and mutex_)

    // A thread's share of the items: [next, end) not yet handed out. Its
    // own thread takes them from `next` on; one done with its own share
    // takes the rest of the others' the same way.
    struct alignas(64) Share {
        std::atomic<int64_t> next{0};
        int64_t end = 0;
    };
    std::unique_ptr<Share[]> shares_;
    std::exception_ptr error_;
    std::mutex error_mutex_;
};

// The number of CPUs this process may run on (its affinity mask), >= 1.
int available_cpus();

}  // namespace conv
