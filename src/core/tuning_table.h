// The algorithm choices a context has measured, keyed by a readable problem
// string (MIOpen's find-db idea). Device-neutral: keys and algorithm ids only.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace conv {

class TuningTable {
public:
    using Entries = std::map<std::string, int>;

    bool find(const std::string &key, int *algo) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return false;
        *algo = it->second;
        return true;
    }
    void set(const std::string &key, int algo) {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_[key] = algo;
        ++generation_;
        size_.store(entries_.size(), std::memory_order_relaxed);
    }
    // set() in two steps, for a caller that must not fail after it has
    // started writing its outputs: prepare() allocates the entry (may throw
    // bad_alloc), commit() stores it without allocating.
    Entries prepare(const std::string &key) const {
        Entries one;
        one.emplace(key, 0);
        return one;
    }
    void commit(Entries &&prepared, int algo) noexcept {
        if (prepared.empty()) return;
        auto node = prepared.extract(prepared.begin());
        node.mapped() = algo;
        std::lock_guard<std::mutex> lock(mutex_);
        auto r = entries_.insert(std::move(node));
        if (!r.inserted) r.position->second = algo;
        ++generation_;
        size_.store(entries_.size(), std::memory_order_relaxed);
    }
    // Changes with every change of the table: a cache of choices made from
    // it (the CUDA engine's plans) is stale when its generation differs.
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
    // Whether there is nothing to look up, read without the lock (a call
    // racing with the first set() may miss it, as it may miss any set()):
    // an untuned context builds no problem key at all.
    bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }
    Entries snapshot() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return entries_;
    }
    // All or nothing: merged into a copy that replaces the table only when
    // complete, so running out of memory half way changes nothing.
    void merge(const Entries &more) {
        std::lock_guard<std::mutex> lock(mutex_);
        Entries merged = entries_;
        for (const auto &e : more) merged[e.first] = e.second;
        entries_.swap(merged);
        ++generation_;
        size_.store(entries_.size(), std::memory_order_relaxed);
    }
    void clear() {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_.clear();
        ++generation_;
        size_.store(entries_.size(), std::memory_order_relaxed);
    }

private:
    mutable std::mutex mutex_;
    Entries entries_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<size_t> size_{0};
};

}  // namespace conv
