// What core needs from a device that is not the host: memory, copies, and
// waiting. An engine implements it for its device (src/cuda for GPUs) and
// the context of that device owns one; tensors and workspaces made with the
// context keep it alive and take their memory through it. Core never sees
// the device's own API (no CUDA header here). A CPU context has none: its
// memory is host memory (HostAllocator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "conv.h"

namespace conv {

class DeviceRuntime {
public:
    virtual ~DeviceRuntime() = default;

    // Device memory, at least 256-byte aligned; throws OUT_OF_MEMORY (nothing
    // allocated) or BACKEND_ERROR. release() never throws.
    virtual void *allocate(size_t bytes) = 0;
    virtual void release(void *p) noexcept = 0;

    // Zero-fills device memory and waits for it.
    virtual void zero(void *p, size_t bytes) = 0;

    // Copies, after the work enqueued before them. Those with a host side
    // return when the data has arrived; device_to_device is enqueued.
    virtual void host_to_device(void *dst, const void *src, size_t bytes) = 0;
    virtual void device_to_host(void *dst, const void *src, size_t bytes) = 0;
    virtual void device_to_device(void *dst, const void *src, size_t bytes) = 0;

    // Waits for the work enqueued so far.
    virtual void synchronize() = 0;

    // Index of the first NaN or infinity among n elements of `dtype` (in
    // memory order), or -1; the value found goes to *value. Waits.
    virtual int64_t first_non_finite(const void *p, int64_t n, conv_dtype_t dtype,
                                     double *value) = 0;

    // "cuda <name> sm_90 cudnn 9.19.0 cudart 13000": the tuning-file device.
    virtual std::string signature() const = 0;
};

}  // namespace conv
