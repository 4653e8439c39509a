// Per-device, per-thread cuDNN handles (Caffe2's thread-local CUDA objects):
// cuDNN handles must not be used by two threads at once, and creating one
// costs milliseconds, so each thread makes one per GPU on first use and
// keeps it; the context binds it to its stream at every call.
#include <mutex>
#include <vector>

#include "cuda/cuda_check.h"

namespace conv::cuda {
namespace {

struct ThreadHandles {
    std::vector<cudnnHandle_t> cudnn;  // by device index
    std::vector<cudaStream_t> bound;   // the stream each is bound to
    ~ThreadHandles() {
        // At thread (or process) exit: errors cannot be reported, and a
        // driver already shut down makes these fail harmlessly.
        for (size_t d = 0; d < cudnn.size(); ++d)
            if (cudnn[d]) {
                if (cudaSetDevice((int)d) == cudaSuccess) cudnnDestroy(cudnn[d]);
                cudaGetLastError();
            }
    }
};

thread_local ThreadHandles t_handles;

}  // namespace

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
    ThreadHandles &t = t_handles;
    size_t d = (size_t)device;
    if (d >= t.cudnn.size()) {
        t.cudnn.resize(d + 1, nullptr);
        t.bound.resize(d + 1, nullptr);
    }
    if (!t.cudnn[d]) {
        cudnnHandle_t h = nullptr;
        check_cudnn(cudnnCreate(&h), "cudnnCreate");
        t.cudnn[d] = h;
        t.bound[d] = nullptr;  // a new handle works on the legacy default stream
    }
    // Only libconv uses these handles, so the stream last bound is known:
    // rebinding costs a cuDNN call per pass otherwise.
    if (t.bound[d] != stream) {
        check_cudnn(cudnnSetStream(t.cudnn[d], stream), "cudnnSetStream");
        t.bound[d] = stream;
    }
    return t.cudnn[d];
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device_) check_cuda(cudaSetDevice(device_), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
    if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
}

[[noreturn]] void throw_cuda(cudaError_t e, const char *what) {
    cudaGetLastError();  // clear a non-sticky error so the thread can go on
    conv_status_t s = e == cudaErrorMemoryAllocation ? CONV_STATUS_OUT_OF_MEMORY
                      : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
                          ? CONV_STATUS_NOT_AVAILABLE
                          : CONV_STATUS_BACKEND_ERROR;
    fail(s, "%s failed: CUDA error %d (%s): %s%s", what, (int)e, cudaGetErrorName(e),
         cudaGetErrorString(e),
         s == CONV_STATUS_OUT_OF_MEMORY ? " (out of device memory; nothing was written)" : "");
}

[[noreturn]] void throw_cudnn(cudnnStatus_t st, const char *what) {
    char last[512] = "";
    cudnnGetLastErrorString(last, sizeof last);
    conv_status_t s =
        (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
         st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
            ? CONV_STATUS_OUT_OF_MEMORY
        : CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ? CONV_STATUS_UNSUPPORTED
                                                                  : CONV_STATUS_BACKEND_ERROR;
    fail(s, "%s failed: cuDNN status %d (%s)%s%s", what, (int)st, cudnnGetErrorString(st),
         last[0] ? ": " : "", last);
}

}  // namespace conv::cuda
