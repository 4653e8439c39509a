#include "core/context.h"

namespace conv {

Context::Context(conv_device_t device, int device_index, int threads)
    : device_(device), device_index_(device_index),
      pool_(std::make_shared<ThreadPool>(threads)) {}

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

std::unique_ptr<Context::Lease> Context::lease_workspace() {
    std::unique_ptr<Workspace> ws;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!free_workspaces_.empty()) {
            ws = std::move(free_workspaces_.back());
            free_workspaces_.pop_back();
        }
    }
    if (!ws) ws = std::make_unique<Workspace>();
    return std::make_unique<Lease>(*this, std::move(ws));
}

void Context::give_back(std::unique_ptr<Workspace> ws) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_workspaces_.push_back(std::move(ws));
}

}  // namespace conv
