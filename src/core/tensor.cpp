#include "core/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/checked.h"
#include "core/dtype.h"
#include "core/error.h"

namespace conv {

const char *dtype_name(conv_dtype_t d) {
    switch (d) {
    case CONV_DTYPE_FLOAT32: return "float32";
    case CONV_DTYPE_FLOAT64: return "float64";
    case CONV_DTYPE_FLOAT16: return "float16";
    case CONV_DTYPE_BFLOAT16: return "bfloat16";
    default: break;  // unknown values
    }
    return "unknown dtype";
}

const char *layout_name(conv_layout_t l) {
    return l == CONV_LAYOUT_CHANNELS_LAST ? "channels-last" : "channels-first";
}

const char *device_name(conv_device_t d) { return d == CONV_DEVICE_CUDA ? "cuda" : "cpu"; }

void AlignedDeleter::operator()(void *p) const noexcept {
    if (!p) return;
    if (allocator.free)
        allocator.free(allocator.user, p);
    else
        std::free(p);
}

AlignedBuffer aligned_alloc_bytes(size_t bytes, bool zero, const HostAllocator &allocator) {
    if (bytes == 0) return AlignedBuffer(nullptr, AlignedDeleter{allocator});
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded < bytes)
        fail(CONV_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes: the size overflows", bytes);
    void *p = allocator.alloc ? allocator.alloc(allocator.user, rounded, kAlignment)
                              : std::aligned_alloc(kAlignment, rounded);
    if (!p)
        fail(CONV_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory%s", rounded,
             allocator.alloc ? " (the context's allocator returned NULL)" : "");
    AlignedBuffer buffer(p, AlignedDeleter{allocator});  // freed if we fail below
    if (reinterpret_cast<uintptr_t>(p) % kAlignment != 0)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "the context's allocator returned %p for %zu bytes, not aligned to the %zu bytes "
             "asked for",
             p, rounded, kAlignment);
    if (zero) std::memset(p, 0, rounded);
    return buffer;
}

std::string dims_string(int ndim, const int64_t *dims) {
    std::string s;
    for (int i = 0; i < ndim; ++i) {
        if (i) s += 'x';
        s += std::to_string(dims[i]);
    }
    return s;
}

Tensor::Tensor(conv_device_t device, int device_index, conv_dtype_t dtype, conv_layout_t layout,
               int ndim, const int64_t *dims, void *borrowed, bool borrow,
               const HostAllocator &allocator, std::shared_ptr<DeviceRuntime> runtime)
    : device_(device), device_index_(device_index), dtype_(dtype), layout_(layout), ndim_(ndim),
      runtime_(std::move(runtime)) {
    if (!dtype_valid(dtype)) fail(CONV_STATUS_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (!layout_valid(layout))
        fail(CONV_STATUS_INVALID_ARGUMENT, "unknown layout %d", (int)layout);
    if (ndim < 3 || ndim > kMaxDims)
        fail(CONV_STATUS_INVALID_ARGUMENT,
             "tensor rank %d out of range: expected 3..5 (N, C and 1..3 spatial dims)", ndim);
    if (!dims) fail(CONV_STATUS_INVALID_ARGUMENT, "dims is NULL");
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) {
        if (dims[i] < 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "dim %d is negative (%lld)", i,
                 (long long)dims[i]);
        dims_[i] = dims[i];
        n = checked_mul(n, dims[i], "tensor element count");
    }
    elements_ = n;
    int64_t b = checked_mul(n, (int64_t)dtype_size(dtype), "tensor size in bytes");
    bytes_ = static_cast<size_t>(b);
    if (borrow) {
        if (!borrowed && elements_ > 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "data is NULL for a tensor of %lld elements",
                 (long long)elements_);
        // Every kernel loads whole elements: memory at an address that is no
        // multiple of the element size is refused (as the Python layer does
        // before it gets here), not read misaligned.
        if (reinterpret_cast<uintptr_t>(borrowed) % dtype_size(dtype) != 0)
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "data: address %p is not aligned to its %zu-byte elements (%s)", borrowed,
                 dtype_size(dtype), dtype_name(dtype));
        data_ = borrowed;
    } else if (runtime_) {
        if (bytes_) {
            DeviceRuntime *rt = runtime_.get();
            void *p = rt->allocate(bytes_);
            auto keep = runtime_;  // the memory keeps its runtime alive
            device_owned_ = std::shared_ptr<void>(p, [keep](void *q) { keep->release(q); });
            rt->zero(p, bytes_);
            data_ = p;
        }
    } else {
        owned_ = aligned_alloc_bytes(bytes_, true, allocator);
        data_ = owned_.get();
    }
}

}  // namespace conv
