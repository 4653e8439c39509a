// What a context owns: its device, its thread pool (replaced atomically by
// set_threads, so calls in flight keep the pool they started with) and a pool
// of library-owned workspaces for calls that bring none. A call leases a
// workspace and returns it, so concurrent calls on one context each get their
// own and a steady state allocates nothing.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "conv.h"
#include "core/thread_pool.h"
#include "core/tuning_table.h"
#include "core/workspace.h"

namespace conv {

class Context {
public:
    Context(conv_device_t device, int device_index, int threads);

    conv_device_t device() const { return device_; }
    int device_index() const { return device_index_; }

    int threads() const;
    void set_threads(int threads);
    std::shared_ptr<ThreadPool> pool() const;

    // A workspace from the pool, given back when the lease ends.
    class Lease {
    public:
        Lease(Context &ctx, std::unique_ptr<Workspace> ws) : ctx_(ctx), ws_(std::move(ws)) {}
        ~Lease() { ctx_.give_back(std::move(ws_)); }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        Workspace &get() { return *ws_; }

    private:
        Context &ctx_;
        std::unique_ptr<Workspace> ws_;
    };
    std::unique_ptr<Lease> lease_workspace();

    TuningTable &tuning() { return tuning_; }

private:
    void give_back(std::unique_ptr<Workspace> ws);

    conv_device_t device_;
    int device_index_;
    mutable std::mutex mutex_;
    std::shared_ptr<ThreadPool> pool_;
    std::vector<std::unique_ptr<Workspace>> free_workspaces_;
    TuningTable tuning_;
};

}  // namespace conv
