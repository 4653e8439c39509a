// The algorithm choices a context has measured, keyed by a readable problem
// string (MIOpen's find-db idea). Device-neutral: keys and algorithm ids only.
#pragma once

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
    }
    Entries snapshot() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return entries_;
    }
    void merge(const Entries &more) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto &e : more) entries_[e.first] = e.second;
    }
    void clear() {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_.clear();
    }

private:
    mutable std::mutex mutex_;
    Entries entries_;
};

}  // namespace conv
