// Plans kept per context for the one-shot calls (conv_forward & co.): a
// bounded, thread-safe map from a binary problem key to the plan made for
// it. A steady state of calls on the same shapes finds its plan with one
// hash of ~50 integers and one uncontended lock, and allocates nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace conv {

// Integers that identify a problem (dims, descriptor, settings), in a fixed order.
struct PlanKey {
    static constexpr int kMax = 64;
    int64_t v[kMax];
    int n = 0;
    void push(int64_t x) { v[n++] = x; }  // callers push at most kMax
    bool operator==(const PlanKey &o) const {
        return n == o.n && std::memcmp(v, o.v, sizeof(int64_t) * (size_t)n) == 0;
    }
};
// FNV-1a in four lanes, every fourth word each, then mixed: one chain of
// multiplies over ~45 words was 4 cycles a word, two thirds of a cache hit
// (10% of a 1->16 8x8 backward-filter call); four chains overlap.
struct PlanKeyHash {
    size_t operator()(const PlanKey &k) const noexcept {
        constexpr uint64_t kPrime = 0x100000001b3ull;
        uint64_t h[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull,
                         0xc2b2ae3d27d4eb4full};
        for (int i = 0; i < k.n; ++i) h[i & 3] = (h[i & 3] ^ (uint64_t)k.v[i]) * kPrime;
        uint64_t m = (uint64_t)k.n;
        for (uint64_t x : h) m = (m ^ x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
        return (size_t)(m ^ (m >> 31));
    }
};

// What the cache holds (dispatch's plan derives from it: core knows no plan).
class CachedPlan {
public:
    virtual ~CachedPlan() = default;
};

class PlanCache {
public:
    // At most this many plans; the oldest goes first (a training loop's few
    // dozen layer shapes stay; a stream of new shapes cannot grow it).
    static constexpr size_t kCapacity = 256;
    explicit PlanCache(size_t capacity = kCapacity) : capacity_(capacity) {}

    // The plan made for `key` while the tuning table was at `generation`
    // (a plan chosen from an older table is stale), or null.
    std::shared_ptr<const CachedPlan> find(const PlanKey &key, uint64_t generation) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it == map_.end() || it->second.generation != generation) return nullptr;
        return it->second.plan;
    }
    // May throw bad_alloc (nothing changed then).
    void put(const PlanKey &key, uint64_t generation, std::shared_ptr<const CachedPlan> plan) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it != map_.end()) {
            it->second = {generation, std::move(plan)};
            return;
        }
        order_.push_back(key);
        try {
            map_.emplace(key, Entry{generation, std::move(plan)});
        } catch (...) {
            order_.pop_back();
            throw;
        }
        if (order_.size() > capacity_) {
            map_.erase(order_.front());
            order_.pop_front();
        }
    }
    void clear() {
        std::lock_guard<std::mutex> lock(mutex_);
        map_.clear();
        order_.clear();
    }
    size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return map_.size();
    }

private:
    struct Entry {
        uint64_t generation;
        std::shared_ptr<const CachedPlan> plan;
    };
    const size_t capacity_;
    mutable std::mutex mutex_;
    std::unordered_map<PlanKey, Entry, PlanKeyHash> map_;
    std::deque<PlanKey> order_;
};

}  // namespace conv
