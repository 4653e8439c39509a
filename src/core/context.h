// What a context owns: its device, its thread pool (replaced atomically by
// set_threads, so calls in flight keep the pool they started with) and a pool
// of library-owned workspaces for calls that bring none. A call leases a
// workspace and returns it, so concurrent calls on one context each get their
// own and a steady state allocates nothing. Also the host allocator tensors
// and workspaces take their memory from, and the numerical-guard flag.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "conv.h"
#include "core/device_runtime.h"
#include "core/engine.h"
#include "core/plan_cache.h"
#include "core/thread_pool.h"
#include "core/tuning_table.h"
#include "core/workspace.h"

namespace conv {

class Context {
public:
    Context(conv_device_t device, int device_index, int threads);
    ~Context();

    conv_device_t device() const { return device_; }
    int device_index() const { return device_index_; }

    int threads() const;

    // The accuracy the algorithm choice may trade (conv_math_t).
    conv_math_t math() const { return math_.load(std::memory_order_relaxed); }
    void set_math(conv_math_t m) { math_.store(m, std::memory_order_relaxed); }
    void set_threads(int threads);
    std::shared_ptr<ThreadPool> pool() const;

    // The allocator new tensors and workspaces use. Setting one releases the
    // pool's idle workspaces; leased ones made with another allocator are
    // released when their lease ends.
    HostAllocator allocator() const;
    void set_allocator(const HostAllocator &allocator);

    // The numerical guard: outputs scanned for NaN/Inf after each pass.
    bool check_numerics() const { return check_numerics_.load(std::memory_order_relaxed); }
    void set_check_numerics(bool on) { check_numerics_.store(on, std::memory_order_relaxed); }

    // A workspace from the pool, given back when the lease ends.
    // The caller's workspace when it passed one (`caller` non-null), else
    // one taken from the pool and given back when the lease ends. A value on
    // the caller's stack: a call allocates nothing once the pool holds one.
    class Lease {
    public:
        Lease(Context &ctx, Workspace *caller);
        ~Lease();
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        Workspace &get() { return *ws_; }

    private:
        Context &ctx_;
        std::unique_ptr<Workspace> leased_;
        Workspace *ws_;
    };

    TuningTable &tuning() { return tuning_; }

    // A device context's runtime (memory, copies, waiting; set once, right
    // after construction, by whoever opened the device); null on the CPU.
    const std::shared_ptr<DeviceRuntime> &runtime() const { return runtime_; }
    void set_runtime(std::shared_ptr<DeviceRuntime> rt) { runtime_ = std::move(rt); }

    // Deterministic algorithm choice only (conv_context_set_deterministic).
    bool deterministic() const { return deterministic_.load(std::memory_order_relaxed); }
    void set_deterministic(bool on) { deterministic_.store(on, std::memory_order_relaxed); }

    // Bound on the workspace of a chosen algorithm; 0: none.
    size_t workspace_limit() const { return workspace_limit_.load(std::memory_order_relaxed); }
    void set_workspace_limit(size_t b) { workspace_limit_.store(b, std::memory_order_relaxed); }

    // The engine of the context's device (set once, right after construction).
    const Engine &engine() const { return *engine_; }
    void set_engine(const Engine &e) { engine_ = &e; }

    // The plans of the one-shot calls.
    PlanCache &plans() { return plans_; }

    // The trace level (conv_context_set_verbose).
    int verbose() const { return verbose_.load(std::memory_order_relaxed); }
    void set_verbose(int level) { verbose_.store(level, std::memory_order_relaxed); }

    // Expires when the context is destroyed: a plan made with it holds a
    // weak reference and refuses to run after that.
    std::weak_ptr<void> liveness() const { return alive_; }

private:
    std::unique_ptr<Workspace> take_workspace();
    void give_back(std::unique_ptr<Workspace> ws) noexcept;

    conv_device_t device_;
    int device_index_;
    mutable std::mutex mutex_;
    std::shared_ptr<ThreadPool> pool_;
    std::vector<std::unique_ptr<Workspace>> free_workspaces_;
    HostAllocator allocator_;
    std::atomic<bool> check_numerics_{false};
    TuningTable tuning_;
    std::atomic<conv_math_t> math_{CONV_MATH_DEFAULT};
    std::shared_ptr<DeviceRuntime> runtime_;
    std::atomic<bool> deterministic_{false};
    std::atomic<size_t> workspace_limit_{0};
    const Engine *engine_ = nullptr;
    PlanCache plans_;
    std::atomic<int> verbose_{0};
    std::shared_ptr<void> alive_ = std::make_shared<char>(0);
};

}  // namespace conv
