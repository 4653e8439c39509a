#include "core/workspace.h"

#include <cstdint>

#include "core/error.h"

namespace conv {

Workspace::Workspace(void *memory, size_t bytes) : wrapped_(true), memory_(memory), size_(bytes) {}

void *Workspace::reserve(size_t bytes) {
    if (wrapped_) {
        // Callers' memory may be unaligned: a wrapped workspace must hold the
        // need plus 64 bytes of slack (what conv_workspace_size reports), so
        // aligning up never pushes past the end, whatever the address.
        if (bytes == 0) return memory_;
        if (size_ < bytes + 64 || !memory_)
            fail(CONV_STATUS_WORKSPACE_TOO_SMALL,
                 "workspace of %zu bytes is too small: this call needs %zu bytes", size_,
                 bytes + 64);
        uintptr_t p = reinterpret_cast<uintptr_t>(memory_);
        return reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
    }
    if (runtime_) {  // device memory: the same growth policy
        if (bytes > size_) {
            device_owned_.reset();
            size_ = 0;
            void *p = runtime_->allocate(bytes);
            auto keep = runtime_;
            device_owned_ = std::shared_ptr<void>(p, [keep](void *q) { keep->release(q); });
            size_ = bytes;
        }
        return device_owned_.get();
    }
    if (bytes > size_) {
        owned_.reset();  // free first: the old contents are not needed
        size_ = 0;
        owned_ = aligned_alloc_bytes(bytes, false, allocator_);
        size_ = bytes;
    }
    return owned_.get();
}

}  // namespace conv
