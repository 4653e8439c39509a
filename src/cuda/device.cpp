#include "cuda/device.h"

#include <dlfcn.h>

#include <cstring>

#include "core/dtype.h"
#include "cuda/engine.h"
#include "cuda/kernels.h"

namespace conv::cuda {
namespace {

float half_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu)
        bits = sign | 0x7f800000u | (man << 13);
    else if (exp == 0) {
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    } else
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

double element_to_double(const unsigned char *b, conv_dtype_t dtype) {
    switch (dtype) {
    case CONV_DTYPE_FLOAT64: { double d; std::memcpy(&d, b, 8); return d; }
    case CONV_DTYPE_FLOAT32: { float f; std::memcpy(&f, b, 4); return f; }
    case CONV_DTYPE_FLOAT16: { uint16_t h; std::memcpy(&h, b, 2); return half_bits_to_float(h); }
    default: {
        uint16_t h;
        std::memcpy(&h, b, 2);
        uint32_t bits = (uint32_t)h << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    }
}

// Why cudaGetDeviceCount failed, in words: the CUDA runtime (linked
// statically) loads the driver, libcuda.so.1, itself and reports its absence
// only as an "insufficient driver".
std::string no_driver_reason(cudaError_t e) {
    if (e == cudaErrorInsufficientDriver && !dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD))
        return "the CUDA driver (libcuda.so.1) was not found: no NVIDIA driver is installed";
    return format("no usable GPU: CUDA error %d (%s): %s", (int)e, cudaGetErrorName(e),
                  cudaGetErrorString(e));
}

}  // namespace

int device_count(std::string *why) noexcept {
    try {
        std::string reason = cudnn_unavailable_reason();
        int n = 0;
        if (reason.empty()) {
            cudaError_t e = cudaGetDeviceCount(&n);
            if (e != cudaSuccess) {
                cudaGetLastError();
                n = 0;
                reason = no_driver_reason(e);
            } else if (n == 0) {
                reason = "no GPU is present";
            }
        }
        if (why) *why = reason;
        return n;
    } catch (...) {  // no memory for the text
        return 0;
    }
}

Device::Device(int index) : index_(index) {
    DeviceGuard guard(index);
    cudaDeviceProp prop;
    check_cuda(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    int rt = 0;
    check_cuda(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
    size_t v = cudnnGetVersion();
    signature_ = format("cuda %s sm_%d%d cudnn %zu.%zu.%zu cudart %d", prop.name, prop.major,
                        prop.minor, v / 10000, (v / 100) % 100, v % 100, rt);
    // Its own stream, non-blocking: libconv's work does not wait for, nor
    // hold up, the legacy default stream of the application.
    check_cuda(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
}

Device::~Device() {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    if (cudaSetDevice(index_) == cudaSuccess) {
        if (own_stream_) {
            cudaStreamSynchronize(own_stream_);
            cudaStreamDestroy(own_stream_);
        }
        if (scratch_) cudaFree(scratch_);
    }
    if (prev >= 0) cudaSetDevice(prev);
    cudaGetLastError();
}

size_t Device::free_memory() {
    DeviceGuard guard(index_);
    size_t free_b = 0, total = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    return free_b;
}

std::shared_ptr<const Plan> Device::find_plan(const PlanKey &k) {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    auto it = plans_.find(k);
    return it == plans_.end() ? nullptr : it->second;
}

void Device::put_plan(const PlanKey &k, std::shared_ptr<const Plan> p) {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    plans_[k] = std::move(p);
}

void *Device::allocate(size_t bytes) {
    DeviceGuard guard(index_);
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        fail(CONV_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes of device memory on GPU %d: %s",
             bytes, index_, cudaGetErrorString(e));
    }
    check_cuda(e, "cudaMalloc");
    return p;
}

void Device::release(void *p) noexcept {
    if (!p) return;
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    if (prev != index_) cudaSetDevice(index_);
    cudaFree(p);  // waits for work that may still use it
    if (prev >= 0 && prev != index_) cudaSetDevice(prev);
    cudaGetLastError();
}

void Device::zero(void *p, size_t bytes) {
    if (!bytes) return;
    DeviceGuard guard(index_);
    check_cuda(cudaMemsetAsync(p, 0, bytes, stream()), "cudaMemsetAsync");
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void Device::host_to_device(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    DeviceGuard guard(index_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()),
               "cudaMemcpyAsync (host to device)");
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void Device::device_to_host(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    DeviceGuard guard(index_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()),
               "cudaMemcpyAsync (device to host)");
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void Device::device_to_device(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    DeviceGuard guard(index_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()),
               "cudaMemcpyAsync (device to device)");
}

void Device::synchronize() {
    DeviceGuard guard(index_);
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

int64_t Device::first_non_finite(const void *p, int64_t n, conv_dtype_t dtype, double *value) {
    if (n <= 0) return -1;
    DeviceGuard guard(index_);
    std::lock_guard<std::mutex> lock(scratch_mutex_);
    if (!scratch_) scratch_ = static_cast<unsigned long long *>(allocate(256));
    check_cuda(kernels::first_non_finite(stream(), dtype, p, n, scratch_), "non-finite scan");
    unsigned long long found = 0;
    device_to_host(&found, scratch_, sizeof found);
    if (found == ~0ull) return -1;
    unsigned char b[8] = {0};
    size_t es = dtype_size(dtype);
    device_to_host(b, static_cast<const unsigned char *>(p) + found * es, es);
    *value = element_to_double(b, dtype);
    return (int64_t)found;
}

}  // namespace conv::cuda
