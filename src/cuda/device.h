// One GPU as a context sees it: the DeviceRuntime core uses for memory and
// copies, the context's stream (its own, or the caller's), the device's
// name and capability, and the cache of prepared plans.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/device_runtime.h"
#include "core/plan_cache.h"
#include "cuda/cuda_check.h"

namespace conv::cuda {

struct Plan;

// Everything that decides a plan, as integers (cheap to hash and compare
// on every call, unlike the tuning table's readable string).
class Device final : public DeviceRuntime {
public:
    explicit Device(int index);
    ~Device() override;

    int index() const { return index_; }
    cudaStream_t stream() const {
        void *s = user_stream_.load(std::memory_order_acquire);
        return s ? static_cast<cudaStream_t>(s) : own_stream_;
    }
    void set_stream(void *s) { user_stream_.store(s, std::memory_order_release); }
    size_t free_memory();

    std::shared_ptr<const Plan> find_plan(const PlanKey &k);
    void put_plan(const PlanKey &k, std::shared_ptr<const Plan> p);

    // DeviceRuntime
    void *allocate(size_t bytes) override;
    void release(void *p) noexcept override;
    void zero(void *p, size_t bytes) override;
    void host_to_device(void *dst, const void *src, size_t bytes) override;
    void device_to_host(void *dst, const void *src, size_t bytes) override;
    void device_to_device(void *dst, const void *src, size_t bytes) override;
    void synchronize() override;
    int64_t first_non_finite(const void *p, int64_t n, conv_dtype_t dtype, double *value) override;
    std::string signature() const override { return signature_; }

private:
    int index_;
    cudaStream_t own_stream_ = nullptr;
    std::atomic<void *> user_stream_{nullptr};
    std::string signature_;
    std::mutex plans_mutex_;
    std::unordered_map<PlanKey, std::shared_ptr<const Plan>, PlanKeyHash> plans_;
    std::mutex scratch_mutex_;
    unsigned long long *scratch_ = nullptr;  // first_non_finite's result
};

}  // namespace conv::cuda
