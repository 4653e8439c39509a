// The engine's own kernels (see kernels.h). Kept few and small: nvcc
// compiles this one file, for sm_80 and sm_90 (+ PTX).
#include "cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace conv::cuda::kernels {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t total) {
    int64_t b = (total + kThreads - 1) / kThreads;
    return (int)std::min<int64_t>(std::max<int64_t>(b, 1), 8192);
}

// Element <-> accumulator conversions.
__device__ __forceinline__ float load(float v) { return v; }
__device__ __forceinline__ double load(double v) { return v; }
__device__ __forceinline__ float load(__half v) { return __half2float(v); }
__device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T, class A>
__device__ __forceinline__ T store(A v);
template <> __device__ __forceinline__ float store<float, float>(float v) { return v; }
template <> __device__ __forceinline__ double store<double, double>(double v) { return v; }
template <> __device__ __forceinline__ __half store<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16, float>(float v) {
    return __float2bfloat16_rn(v);
}

struct Sp {
    int64_t d, h, w;
};

template <class T>
__global__ void window_copy_kernel(const T *__restrict__ src, T *__restrict__ dst, int64_t total,
                                   int64_t c, Sp s, Sp d, Sp off, bool src_cl, bool cl) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ch, z, y, x, nn;
        if (cl) {
            ch = r % c; r /= c;
            x = r % d.w; r /= d.w;
            y = r % d.h; r /= d.h;
            z = r % d.d; nn = r / d.d;
        } else {
            x = r % d.w; r /= d.w;
            y = r % d.h; r /= d.h;
            z = r % d.d; r /= d.d;
            ch = r % c; nn = r / c;
        }
        int64_t sz = z - off.d, sy = y - off.h, sx = x - off.w;
        T v = T(0);
        if (sz >= 0 && sz < s.d && sy >= 0 && sy < s.h && sx >= 0 && sx < s.w) {
            int64_t j = src_cl ? ((((nn * s.d + sz) * s.h + sy) * s.w + sx) * c + ch)
                               : ((((nn * c + ch) * s.d + sz) * s.h + sy) * s.w + sx);
            v = src[j];
        }
        dst[i] = v;
    }
}

template <class T, class A>
__global__ void bias_act_kernel(T *t, const T *__restrict__ bias, int64_t total, int64_t c,
                                int64_t positions, bool cl, bool relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = cl ? i % c : (i / positions) % c;
        A v = load(t[i]);
        if (bias) v += load(bias[ch]);
        if (relu && v < A(0)) v = A(0);
        t[i] = store<T, A>(v);
    }
}

// Bias gradient, stage 1: per (channel, chunk of rows) partial sums, in a
// fixed order, so the result is the same on every run.
template <class T, class A>
__global__ void sums_cf_kernel(const T *__restrict__ t, int64_t c, int64_t positions,
                               int64_t rows, int64_t chunk, A *partial) {
    __shared__ A sh[kThreads];
    int64_t ch = blockIdx.x;
    int64_t m0 = blockIdx.y * chunk, m1 = min(rows, m0 + chunk);
    A acc = A(0);
    for (int64_t m = m0 + threadIdx.x; m < m1; m += blockDim.x) {
        int64_t nn = m / positions, s = m - nn * positions;
        acc += load(t[(nn * c + ch) * positions + s]);
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.y * c + ch] = sh[0];
}

template <class T, class A>
__global__ void sums_cl_kernel(const T *__restrict__ t, int64_t c, int64_t rows, int64_t chunk,
                               A *partial) {
    __shared__ A sh[8][32];
    int64_t ch = blockIdx.x * 32 + threadIdx.x;
    int64_t m0 = blockIdx.y * chunk, m1 = min(rows, m0 + chunk);
    A acc = A(0);
    if (ch < c)
        for (int64_t m = m0 + threadIdx.y; m < m1; m += 8) acc += load(t[m * c + ch]);
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && ch < c) {
        A s = A(0);
        for (int j = 0; j < 8; ++j) s += sh[j][threadIdx.x];
        partial[blockIdx.y * c + ch] = s;
    }
}

template <class T, class A>
__global__ void sums_final_kernel(const A *__restrict__ partial, int chunks, int64_t c, T *sums) {
    for (int64_t ch = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; ch < c;
         ch += (int64_t)gridDim.x * blockDim.x) {
        A s = A(0);
        for (int r = 0; r < chunks; ++r) s += partial[r * c + ch];
        sums[ch] = store<T, A>(s);
    }
}

template <class B, B kExp>
__global__ void non_finite_kernel(const B *__restrict__ p, int64_t n, unsigned long long *res) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        if ((p[i] & kExp) == kExp) atomicMin(res, (unsigned long long)i);
}

// Rows of a bias gradient split into `chunks` pieces of `chunk` rows.
void split_rows(int64_t rows, int *chunks, int64_t *chunk) {
    int64_t r = std::min<int64_t>(std::max<int64_t>((rows + 4095) / 4096, 1), 128);
    *chunks = (int)r;
    *chunk = (rows + r - 1) / r;
}

template <class T, class A>
cudaError_t channel_sums_typed(cudaStream_t stream, bool cl, int64_t n, int64_t c,
                               int64_t positions, const void *t, void *sums, void *scratch) {
    if (c == 0) return cudaSuccess;
    int64_t rows = n * positions, chunk;
    int chunks;
    split_rows(rows, &chunks, &chunk);
    A *partial = static_cast<A *>(scratch);
    const T *tt = static_cast<const T *>(t);
    if (cl)
        sums_cl_kernel<T, A><<<dim3((unsigned)((c + 31) / 32), (unsigned)chunks), dim3(32, 8), 0,
                               stream>>>(tt, c, rows, chunk, partial);
    else
        sums_cf_kernel<T, A><<<dim3((unsigned)c, (unsigned)chunks), kThreads, 0, stream>>>(
            tt, c, positions ? positions : 1, rows, chunk, partial);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    sums_final_kernel<T, A><<<blocks_for(c), kThreads, 0, stream>>>(partial, chunks, c,
                                                                     static_cast<T *>(sums));
    return cudaGetLastError();
}

template <class T, class A>
cudaError_t bias_act_typed(cudaStream_t stream, bool cl, int64_t n, int64_t c, int64_t positions,
                           void *t, const void *bias, bool relu) {
    int64_t total = n * c * positions;
    if (total == 0 || (!bias && !relu)) return cudaSuccess;
    bias_act_kernel<T, A><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<T *>(t), static_cast<const T *>(bias), total, c, positions, cl, relu);
    return cudaGetLastError();
}

template <class T>
cudaError_t window_copy_typed(cudaStream_t stream, bool src_cl, bool cl, int64_t n, int64_t c,
                              const int64_t *src_sp, const int64_t *dst_sp, const int64_t *offset,
                              const void *src, void *dst) {
    int64_t total = n * c * dst_sp[0] * dst_sp[1] * dst_sp[2];
    if (total == 0) return cudaSuccess;
    window_copy_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T *>(src), static_cast<T *>(dst), total, c,
        Sp{src_sp[0], src_sp[1], src_sp[2]}, Sp{dst_sp[0], dst_sp[1], dst_sp[2]},
        Sp{offset[0], offset[1], offset[2]}, src_cl, cl);
    return cudaGetLastError();
}

}  // namespace

cudaError_t window_copy(cudaStream_t stream, conv_dtype_t dtype, bool src_cl, bool dst_cl,
                        int64_t n, int64_t c, const int64_t src_sp[3], const int64_t dst_sp[3],
                        const int64_t offset[3], const void *src, void *dst) {
    switch (dtype) {
    case CONV_DTYPE_FLOAT64:
        return window_copy_typed<unsigned long long>(stream, src_cl, dst_cl, n, c, src_sp, dst_sp,
                                                     offset, src, dst);
    case CONV_DTYPE_FLOAT32:
        return window_copy_typed<unsigned int>(stream, src_cl, dst_cl, n, c, src_sp, dst_sp,
                                               offset, src, dst);
    default:
        return window_copy_typed<unsigned short>(stream, src_cl, dst_cl, n, c, src_sp, dst_sp,
                                                 offset, src, dst);
    }
}

cudaError_t bias_act(cudaStream_t stream, conv_dtype_t dtype, bool cl, int64_t n, int64_t c,
                     int64_t positions, void *t, const void *bias, bool relu) {
    switch (dtype) {
    case CONV_DTYPE_FLOAT32: return bias_act_typed<float, float>(stream, cl, n, c, positions, t, bias, relu);
    case CONV_DTYPE_FLOAT64: return bias_act_typed<double, double>(stream, cl, n, c, positions, t, bias, relu);
    case CONV_DTYPE_FLOAT16: return bias_act_typed<__half, float>(stream, cl, n, c, positions, t, bias, relu);
    default: return bias_act_typed<__nv_bfloat16, float>(stream, cl, n, c, positions, t, bias, relu);
    }
}

size_t channel_sums_scratch(conv_dtype_t dtype, int64_t n, int64_t c, int64_t positions) {
    int chunks;
    int64_t chunk;
    split_rows(n * positions, &chunks, &chunk);
    return (size_t)chunks * (size_t)c * (dtype == CONV_DTYPE_FLOAT64 ? 8 : 4);
}

cudaError_t channel_sums(cudaStream_t stream, conv_dtype_t dtype, bool cl, int64_t n, int64_t c,
                         int64_t positions, const void *t, void *sums, void *scratch) {
    switch (dtype) {
    case CONV_DTYPE_FLOAT32: return channel_sums_typed<float, float>(stream, cl, n, c, positions, t, sums, scratch);
    case CONV_DTYPE_FLOAT64: return channel_sums_typed<double, double>(stream, cl, n, c, positions, t, sums, scratch);
    case CONV_DTYPE_FLOAT16: return channel_sums_typed<__half, float>(stream, cl, n, c, positions, t, sums, scratch);
    default: return channel_sums_typed<__nv_bfloat16, float>(stream, cl, n, c, positions, t, sums, scratch);
    }
}

cudaError_t first_non_finite(cudaStream_t stream, conv_dtype_t dtype, const void *p, int64_t n,
                             unsigned long long *result) {
    cudaError_t e = cudaMemsetAsync(result, 0xff, sizeof *result, stream);
    if (e != cudaSuccess || n == 0) return e;
    int blocks = blocks_for(n);
    switch (dtype) {
    case CONV_DTYPE_FLOAT32:
        non_finite_kernel<unsigned int, 0x7f800000u><<<blocks, kThreads, 0, stream>>>(
            static_cast<const unsigned int *>(p), n, result);
        break;
    case CONV_DTYPE_FLOAT64:
        non_finite_kernel<unsigned long long, 0x7ff0000000000000ull><<<blocks, kThreads, 0, stream>>>(
            static_cast<const unsigned long long *>(p), n, result);
        break;
    case CONV_DTYPE_FLOAT16:
        non_finite_kernel<unsigned short, (unsigned short)0x7c00u><<<blocks, kThreads, 0, stream>>>(
            static_cast<const unsigned short *>(p), n, result);
        break;
    default:
        non_finite_kernel<unsigned short, (unsigned short)0x7f80u><<<blocks, kThreads, 0, stream>>>(
            static_cast<const unsigned short *>(p), n, result);
        break;
    }
    return cudaGetLastError();
}

}  // namespace conv::cuda::kernels
