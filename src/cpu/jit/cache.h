// The process-wide cache of generated kernels (cpu/jit/jit.h): one per
// kind of kernel, keyed by its spec (everything that is a constant of the
// code). A lookup that misses generates the kernel under the cache's lock,
// so two threads never make the same one twice.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace conv::cpu::jit {

// Past kMaxKernels a cache starts over; kernels a caller still holds live
// on in its shared_ptr.
constexpr size_t kMaxKernels = 1024;

template <class Spec, class Kernel, class Hash>
class KernelCache {
public:
    // The kernel of `spec`, made by make(spec) on a miss; null when making
    // it throws (no memory, pages that cannot be made executable).
    template <class Make>
    std::shared_ptr<const Kernel> get(const Spec &spec, Make make) {
        std::lock_guard<std::mutex> hold(lock_);
        auto found = kernels_.find(spec);
        if (found != kernels_.end()) return found->second;
        std::shared_ptr<const Kernel> made;
        try {
            made = make(spec);
            if (kernels_.size() >= kMaxKernels) kernels_.clear();
            kernels_.emplace(spec, made);
        } catch (...) {
            return made;  // made but not kept, or null
        }
        return made;
    }

private:
    std::mutex lock_;
    std::unordered_map<Spec, std::shared_ptr<const Kernel>, Hash> kernels_;
};

// A boost-style hash combination.
inline void hash_mix(size_t &h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

}  // namespace conv::cpu::jit
