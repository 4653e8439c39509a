// CUDA and cuDNN failures as conv::Error: device memory exhaustion is
// OUT_OF_MEMORY, cuDNN's NOT_SUPPORTED is UNSUPPORTED, anything else
// BACKEND_ERROR, each with the library's own message (cudaGetErrorString;
// cudnnGetErrorString and cuDNN 9's last-error text).
#pragma once

// The legacy convolution API is deprecated in cuDNN 9 and used on purpose
// (docs/gpu.md); cuDNN warns about it only under CUDNN_WARN_DEPRECATED.
// cuDNN's functions come through the table cudnn_library.h loads at run time.
#include <cuda_runtime_api.h>

#include "cuda/cudnn_library.h"

#include "core/error.h"

namespace conv::cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char *what);
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char *what);

inline void check_cuda(cudaError_t e, const char *what) {
    if (e != cudaSuccess) throw_cuda(e, what);
}
inline void check_cudnn(cudnnStatus_t s, const char *what) {
    if (s != CUDNN_STATUS_SUCCESS) throw_cudnn(s, what);
}

// Makes `device` current for a scope and restores the caller's afterwards,
// so libconv never changes the application's current device.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
    int previous_ = -1;
    int device_;
};

// The calling thread's cuDNN handle for `device` (current), created on first
// use (handles.cpp) and destroyed when the thread ends, bound to `stream`
// (cudnnSetStream only when the stream differs from the last call's).
cudnnHandle_t cudnn_handle(int device, cudaStream_t stream);

}  // namespace conv::cuda
