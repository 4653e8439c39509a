// A dense tensor: dtype, layout, logical dims (N, C, spatial...) and a data
// pointer, either owned (allocated here, 64-byte aligned) or borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "conv.h"
#include "core/device_runtime.h"

namespace conv {

constexpr int kMaxDims = 5;  // N, C + up to 3 spatial

constexpr size_t kAlignment = 64;

// Where host memory comes from: the default (aligned malloc/free) when
// `alloc` is null, else a caller's allocator (conv_context_set_allocator).
struct HostAllocator {
    conv_alloc_fn_t alloc = nullptr;
    conv_free_fn_t free = nullptr;
    void *user = nullptr;
    bool operator==(const HostAllocator &o) const {
        return alloc == o.alloc && free == o.free && user == o.user;
    }
    bool operator!=(const HostAllocator &o) const { return !(*this == o); }
};

// Frees a block through the allocator it came from (remembered per block).
struct AlignedDeleter {
    HostAllocator allocator;
    void operator()(void *p) const noexcept;
};
using AlignedBuffer = std::unique_ptr<void, AlignedDeleter>;

// Allocates `bytes` with 64-byte alignment from `allocator`; throws
// OUT_OF_MEMORY (nothing allocated) when it cannot. When `zero` is set the
// memory is zero-filled.
AlignedBuffer aligned_alloc_bytes(size_t bytes, bool zero,
                                  const HostAllocator &allocator = HostAllocator());

class Tensor {
public:
    // Validates the description (dims >= 0, ndim 3..5, size fits) and, when
    // not borrowing and the tensor is not empty, allocates owned memory from
    // `allocator`.
    Tensor(conv_device_t device, int device_index, conv_dtype_t dtype, conv_layout_t layout,
           int ndim, const int64_t *dims, void *borrowed, bool borrow,
           const HostAllocator &allocator = HostAllocator(),
           std::shared_ptr<DeviceRuntime> runtime = nullptr);

    conv_device_t device() const { return device_; }
    int device_index() const { return device_index_; }
    conv_dtype_t dtype() const { return dtype_; }
    conv_layout_t layout() const { return layout_; }
    int ndim() const { return ndim_; }
    int64_t dim(int i) const { return dims_[i]; }
    const int64_t *dims() const { return dims_; }
    int64_t elements() const { return elements_; }
    size_t bytes() const { return bytes_; }
    void *data() const { return data_; }

    template <class T>
    T *as() const { return static_cast<T *>(data_); }

    // The device runtime of a device tensor's context (owned or wrapped
    // device memory); null for a host tensor.
    DeviceRuntime *runtime() const { return runtime_.get(); }

private:
    conv_device_t device_;
    int device_index_;
    conv_dtype_t dtype_;
    conv_layout_t layout_;
    int ndim_;
    int64_t dims_[kMaxDims] = {0, 0, 0, 0, 0};
    int64_t elements_ = 0;
    size_t bytes_ = 0;
    void *data_ = nullptr;
    AlignedBuffer owned_;
    std::shared_ptr<DeviceRuntime> runtime_;  // device tensors only
    std::shared_ptr<void> device_owned_;      // owned device memory
};

// "2x64x56x56" for messages.
std::string dims_string(int ndim, const int64_t *dims);

}  // namespace conv
