// bench_overhead -- libconv's per-call overhead over raw cuDNN with the same
// algorithm (issue 5's target: under 2%). For ResNet-50 layers, batch 1 and
// 32, fp32 (strict) and fp16 forward: the same problem through conv_forward
// and through cudnnConvolutionForward with identical descriptors, math type,
// algorithm and workspace, each `calls` times back to back on one stream,
// timed with CUDA events (GPU time per call), plus the host time per call
// of enqueueing alone. Prints a table; exit 77 without a GPU.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "conv.h"

#define CK(x)                                                                         \
    do {                                                                              \
        auto r_ = (x);                                                                \
        if ((int)r_ != 0) {                                                           \
            std::fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #x, \
                         (int)r_, conv_last_error());                                 \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

struct Layer {
    const char *name;
    int c, k, h, r, s, p;
};

static const Layer kLayers[] = {
    {"conv1", 3, 64, 224, 7, 2, 3},       {"res2a_2a", 64, 64, 56, 1, 1, 0},
    {"res2_2b", 64, 64, 56, 3, 1, 1},     {"res2_2c+1", 64, 256, 56, 1, 1, 0},
    {"res3a_2b", 128, 128, 56, 3, 2, 1},  {"res3_2c", 128, 512, 28, 1, 1, 0},
    {"res4b-f_2b", 256, 256, 14, 3, 1, 1}, {"res5_2c", 512, 2048, 7, 1, 1, 0},
};

template <class F>
static double gpu_ms_per_call(cudaStream_t st, int calls, F &&call, double *host_us) {
    for (int i = 0; i < 5; ++i) call();
    CK(cudaStreamSynchronize(st));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, st));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    auto t1 = std::chrono::steady_clock::now();
    CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    *host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / calls;
}

int main(int argc, char **argv) {
    int gpus = 0;
    if (conv_device_count(CONV_DEVICE_CUDA, &gpus) != CONV_STATUS_SUCCESS || gpus == 0) {
        std::printf("no GPU: skipping\n");
        return 77;
    }
    int calls = argc > 1 ? std::atoi(argv[1]) : 200;
    conv_context_t ctx;
    CK(conv_context_create(CONV_DEVICE_CUDA, 0, &ctx));
    cudaStream_t st;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(conv_context_set_stream(ctx, st));
    cudnnHandle_t h;
    CK(cudnnCreate(&h));
    CK(cudnnSetStream(h, st));
    conv_workspace_t ws;
    CK(conv_workspace_create(ctx, &ws));
    std::printf("%-11s %5s %4s %-28s %10s %10s %8s %9s %9s\n", "layer", "batch", "type", "algorithm",
                "cudnn ms", "libconv ms", "overhead", "cudnn us", "conv us");
    const conv_dtype_t types[] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_FLOAT16};
    for (conv_dtype_t dt : types)
        for (int batch : {1, 32})
            for (const Layer &l : kLayers) {
                int o = (l.h + 2 * l.p - l.r) / l.s + 1;
                int64_t xd[4] = {batch, l.c, l.h, l.h}, wd[4] = {l.k, l.c, l.r, l.r};
                int64_t yd[4] = {batch, l.k, o, o};
                conv_tensor_t x, w, y;
                CK(conv_tensor_create(ctx, dt, CONV_LAYOUT_CHANNELS_FIRST, 4, xd, &x));
                CK(conv_tensor_create(ctx, dt, CONV_LAYOUT_CHANNELS_FIRST, 4, wd, &w));
                CK(conv_tensor_create(ctx, dt, CONV_LAYOUT_CHANNELS_FIRST, 4, yd, &y));
                conv_desc_t d;
                CK(conv_desc_create(2, &d));
                int64_t s2[2] = {l.s, l.s}, p2[2] = {l.p, l.p};
                CK(conv_desc_set_strides(d, s2));
                CK(conv_desc_set_padding(d, p2, p2));
                conv_algo_t algo;
                CK(conv_chosen_algorithm(ctx, d, CONV_OP_FORWARD, x, w, y, &algo));
                void *px, *pw, *py;
                conv_tensor_get_data(x, &px);
                conv_tensor_get_data(w, &pw);
                conv_tensor_get_data(y, &py);
                double conv_host = 0, raw_host = 0;
                double conv_ms = gpu_ms_per_call(st, calls, [&] {
                    CK(conv_forward(ctx, d, x, w, nullptr, y, ws));
                }, &conv_host);
                // raw cuDNN: the same descriptors, math and algorithm
                cudnnDataType_t cdt = dt == CONV_DTYPE_FLOAT32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
                cudnnTensorDescriptor_t xD, yD;
                cudnnFilterDescriptor_t wD;
                cudnnConvolutionDescriptor_t cD;
                CK(cudnnCreateTensorDescriptor(&xD));
                CK(cudnnCreateTensorDescriptor(&yD));
                CK(cudnnCreateFilterDescriptor(&wD));
                CK(cudnnCreateConvolutionDescriptor(&cD));
                CK(cudnnSetTensor4dDescriptor(xD, CUDNN_TENSOR_NCHW, cdt, batch, l.c, l.h, l.h));
                CK(cudnnSetTensor4dDescriptor(yD, CUDNN_TENSOR_NCHW, cdt, batch, l.k, o, o));
                CK(cudnnSetFilter4dDescriptor(wD, cdt, CUDNN_TENSOR_NCHW, l.k, l.c, l.r, l.r));
                CK(cudnnSetConvolution2dDescriptor(cD, l.p, l.p, l.s, l.s, 1, 1, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
                CK(cudnnSetConvolutionMathType(cD, dt == CONV_DTYPE_FLOAT32 ? CUDNN_FMA_MATH
                                                                            : CUDNN_TENSOR_OP_MATH));
                auto fa = (cudnnConvolutionFwdAlgo_t)(algo - CONV_ALGO_CUDNN_IMPLICIT_GEMM);
                size_t wsb = 0;
                CK(cudnnGetConvolutionForwardWorkspaceSize(h, xD, wD, cD, yD, fa, &wsb));
                void *wsp = nullptr;
                if (wsb) CK(cudaMalloc(&wsp, wsb));
                float one = 1, zero = 0;
                double raw_ms = gpu_ms_per_call(st, calls, [&] {
                    CK(cudnnConvolutionForward(h, &one, xD, px, wD, pw, cD, fa, wsp, wsb, &zero, yD, py));
                }, &raw_host);
                std::printf("%-11s %5d %4s %-28s %10.4f %10.4f %7.2f%% %9.2f %9.2f\n", l.name, batch,
                            dt == CONV_DTYPE_FLOAT32 ? "f32" : "f16", conv_algo_name(algo), raw_ms,
                            conv_ms, 100.0 * (conv_ms - raw_ms) / raw_ms, raw_host, conv_host);
                std::fflush(stdout);
                if (wsp) cudaFree(wsp);
                cudnnDestroyTensorDescriptor(xD);
                cudnnDestroyTensorDescriptor(yD);
                cudnnDestroyFilterDescriptor(wD);
                cudnnDestroyConvolutionDescriptor(cD);
                conv_desc_destroy(d);
                conv_tensor_destroy(x);
                conv_tensor_destroy(w);
                conv_tensor_destroy(y);
            }
    cudnnDestroy(h);
    conv_workspace_destroy(ws);
    conv_context_destroy(ctx);
    cudaStreamDestroy(st);
    return 0;
}
