// The reducer's fused SGD step on device memory (cuda/engine.h,
// sgd_update; the host step is comm/kernels.cpp's, whose arithmetic this
// repeats operation for operation, without contraction into FMAs, so that
// one step agrees with it bit for bit).
//
// Half-precision weights (fp16, bf16) are kept in an fp32 master copy
// between steps, as in NVCaffe and mixed-precision training: the step
// updates the master and rounds it into w, so updates smaller than w's
// half-ulp are not lost. The master starts as zeros and follows w: an
// element whose rounded master is not w's value (the first step, or w
// written by the application, e.g. a broadcast or a checkpoint) is taken
// from w again, so no stale master ever overrides the application's w.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cuda/engine.h"

namespace conv::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }

__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
template <class T> __device__ __forceinline__ T narrow(float v);
template <> __device__ __forceinline__ __half narrow<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ float narrow<float>(float v) { return v; }

template <class T>
__device__ __forceinline__ bool same_bits(T a, T b) {
    static_assert(sizeof(T) == 2, "half types");
    unsigned short x, y;
    memcpy(&x, &a, 2);
    memcpy(&y, &b, 2);
    return x == y;
}

// h = momentum * h + lr * (g + decay * w); w -= h. A = the accumulator type.
template <class T, class A>
__global__ void sgd_kernel(T *__restrict__ w, const T *__restrict__ g, T *__restrict__ h,
                           float *__restrict__ master, int64_t n, A lr, A momentum, A decay) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        A wi = widen(w[i]);
        if constexpr (sizeof(T) == 2) {
            if (master && same_bits(narrow<T>(master[i]), w[i])) wi = master[i];
        }
        A hi = add(mul(momentum, widen(h[i])), mul(lr, add(widen(g[i]), mul(decay, wi))));
        A wn = sub(wi, hi);
        if constexpr (sizeof(T) == 8) {
            h[i] = hi;
            w[i] = wn;
        } else {
            h[i] = narrow<T>(hi);
            w[i] = narrow<T>(wn);
            if (sizeof(T) == 2 && master) master[i] = wn;
        }
    }
}

template <class T, class A>
cudaError_t launch(cudaStream_t st, void *w, const void *g, void *h, float *master, int64_t n,
                   double lr, double momentum, double decay) {
    int blocks = (int)std::min<int64_t>((n + kThreads - 1) / kThreads, 8192);
    sgd_kernel<T, A><<<blocks, kThreads, 0, st>>>(static_cast<T *>(w), static_cast<const T *>(g),
                                                  static_cast<T *>(h), master, n, (A)lr,
                                                  (A)momentum, (A)decay);
    return cudaGetLastError();
}

}  // namespace

void sgd_update(conv_dtype_t dtype, void *w, const void *g, void *h, float *master, int64_t n,
                double lr, double momentum, double decay, void *stream, int device) {
    if (n <= 0) return;
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != device) cudaSetDevice(device);
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    cudaError_t e;
    switch (dtype) {
    case CONV_DTYPE_FLOAT64: e = launch<double, double>(st, w, g, h, nullptr, n, lr, momentum, decay); break;
    case CONV_DTYPE_FLOAT16: e = launch<__half, float>(st, w, g, h, master, n, lr, momentum, decay); break;
    case CONV_DTYPE_BFLOAT16:
        e = launch<__nv_bfloat16, float>(st, w, g, h, master, n, lr, momentum, decay);
        break;
    default: e = launch<float, float>(st, w, g, h, nullptr, n, lr, momentum, decay); break;
    }
    if (previous >= 0 && previous != device) cudaSetDevice(previous);
    if (e != cudaSuccess)
        fail(CONV_STATUS_BACKEND_ERROR, "the SGD update kernel on GPU %d: %s", device,
             cudaGetErrorString(e));
}

}  // namespace conv::cuda
