// Scratch memory for one call at a time. A library-owned workspace grows to
// the largest request and keeps it (allocation, and the cost of touching
// fresh pages, happens once); a wrapped one is the caller's fixed memory and
// refuses requests beyond it with WORKSPACE_TOO_SMALL. Calls lock the
// workspace for their whole duration (Caffe2's shared column buffer).
#pragma once

#include <cstddef>
#include <mutex>

#include "core/tensor.h"

namespace conv {

class Workspace {
public:
    Workspace() = default;                     // library-owned, starts empty
    Workspace(void *memory, size_t bytes);     // wraps caller memory

    std::mutex &mutex() { return mutex_; }
    size_t size() const { return size_; }
    bool owned() const { return !wrapped_; }

    // Returns at least `bytes` of memory, 64-byte aligned; grows an owned
    // workspace, throws WORKSPACE_TOO_SMALL for a wrapped one that is too
    // small. Call with the mutex held.
    void *reserve(size_t bytes);

private:
    std::mutex mutex_;
    bool wrapped_ = false;
    void *memory_ = nullptr;
    size_t size_ = 0;
    AlignedBuffer owned_;
};

}  // namespace conv
