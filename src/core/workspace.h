// Scratch memory for one call at a time. A library-owned workspace grows to
// the largest request and keeps it (allocation, and the cost of touching
// fresh pages, happens once); a wrapped one is the caller's fixed memory and
// refuses requests beyond it with WORKSPACE_TOO_SMALL. Calls lock the
// workspace for their whole duration (Caffe2's shared column buffer).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>

#include "core/tensor.h"

namespace conv {

class Workspace {
public:
    // Library-owned, starts empty, grows through `allocator`.
    explicit Workspace(const HostAllocator &allocator = HostAllocator()) : allocator_(allocator) {}
    Workspace(void *memory, size_t bytes);     // wraps caller memory
    // Library-owned device memory of a device context, grows through `runtime`.
    explicit Workspace(std::shared_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}

    std::mutex &mutex() { return mutex_; }
    // The device of the context it was made with (its memory is there).
    conv_device_t device() const { return device_; }
    int device_index() const { return device_index_; }
    void set_device(conv_device_t d, int index) { device_ = d; device_index_ = index; }
    size_t size() const { return size_; }
    bool owned() const { return !wrapped_; }
    const HostAllocator &allocator() const { return allocator_; }

    // Returns at least `bytes` of memory, 64-byte aligned; grows an owned
    // workspace, throws WORKSPACE_TOO_SMALL for a wrapped one that is too
    // small. Call with the mutex held. When growing fails (OUT_OF_MEMORY)
    // the workspace is left empty and valid.
    void *reserve(size_t bytes);

private:
    std::mutex mutex_;
    bool wrapped_ = false;
    void *memory_ = nullptr;
    size_t size_ = 0;
    HostAllocator allocator_;
    AlignedBuffer owned_;
    std::shared_ptr<DeviceRuntime> runtime_;  // device workspaces only
    conv_device_t device_ = CONV_DEVICE_CPU;
    int device_index_ = 0;
    std::shared_ptr<void> device_owned_;
};

}  // namespace conv
