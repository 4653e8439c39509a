#include "core/context.h"

namespace conv {

Context::Context(conv_device_t device, int device_index, int threads)
    : device_(device), device_index_(device_index),
      pool_(std::make_shared<ThreadPool>(threads)) {}

// The pool's workspaces go first (back to the allocators they came from),
// then the thread pool.
Context::~Context() { free_workspaces_.clear(); }

HostAllocator Context::allocator() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocator_;
}

void Context::set_allocator(const HostAllocator &allocator) {
    std::vector<std::unique_ptr<Workspace>> idle;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        allocator_ = allocator;
        idle.swap(free_workspaces_);
    }
    // `idle` is freed here, outside the lock, through each one's allocator.
}

int Context::threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_->threads();
}

void Context::set_threads(int threads) {
    auto fresh = std::make_shared<ThreadPool>(threads);
    std::shared_ptr<ThreadPool> old;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        old = std::move(pool_);
        pool_ = std::move(fresh);
    }
    // `old` is joined here unless a call still holds it; then by that call.
}

std::shared_ptr<ThreadPool> Context::pool() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_;
}

Context::Lease::Lease(Context &ctx, Workspace *caller) : ctx_(ctx), ws_(caller) {
    if (!ws_) {
        leased_ = ctx_.take_workspace();
        ws_ = leased_.get();
    }
}

Context::Lease::~Lease() {
    if (leased_) ctx_.give_back(std::move(leased_));
}

std::unique_ptr<Workspace> Context::take_workspace() {
    std::unique_ptr<Workspace> ws;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!free_workspaces_.empty()) {
            ws = std::move(free_workspaces_.back());
            free_workspaces_.pop_back();
        }
    }
    if (!ws && runtime_) {  // device memory
        ws = std::make_unique<Workspace>(runtime_);
        ws->set_device(device_, device_index_);
    }
    if (!ws) ws = std::make_unique<Workspace>(allocator());
    return ws;
}

// Runs in a destructor: never throws. A workspace that cannot be kept (no
// memory to grow the list, or made with an allocator no longer current) is
// freed instead, outside the lock.
void Context::give_back(std::unique_ptr<Workspace> ws) noexcept {
    if (!ws) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (ws->allocator() == allocator_) {
            try {
                free_workspaces_.push_back(std::move(ws));
            } catch (...) {
                // bad_alloc: `ws` still owns the workspace.
            }
        }
    }
}

}  // namespace conv
