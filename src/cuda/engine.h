// The CUDA engine as dispatch sees it: plain C++, no CUDA or cuDNN header
// (docs/gpu.md). dispatch validates and lowers a pass exactly as for the
// CPU, then hands the lowered pass here. Built from src/cuda/*.cpp and
// kernels.cu when CONV_WITH_CUDA is on; otherwise src/cuda/unavailable.cpp
// answers "no device".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conv.h"
#include "core/device_runtime.h"
#include "core/engine.h"
#include "core/geometry.h"
#include "core/workspace.h"

namespace conv::cuda {

// Whether this libconv was built with the CUDA engine.
bool built() noexcept;

// Usable GPUs: 0 without the engine, cuDNN, a driver or a GPU, and then
// *why (when given) says which was missing. Never throws.
int device_count(std::string *why = nullptr) noexcept;

// "cuda 13.0, cuDNN 9.19.0" (what was compiled against) for messages.
std::string build_versions();

// Opens GPU `index` for a context: its own stream, its device properties,
// its plan cache. NOT_AVAILABLE when there is no such GPU.
std::shared_ptr<DeviceRuntime> open(int index);

// The context's stream (a cudaStream_t): the caller's, or the runtime's own.
void set_stream(DeviceRuntime &rt, void *stream);
void *get_stream(DeviceRuntime &rt);

// A lowered pass in convolution roles (as cpu::ConvArgs): x the input (dx
// for BACKWARD_DATA), w the filter (dw for BACKWARD_FILTER), y the output
// (dy for the backward passes). `bias` is the user's bias (forward) or db
// (backward-filter), nullable; `relu` the user's activation. For a plain
// convolution the forward adds bias and applies relu to y and db sums y;
// for a transposed one (g->transposed) the user's output is x: a lowered
// BACKWARD_DATA pass adds bias / applies relu to x, a lowered
// BACKWARD_FILTER pass sums x into db.
struct Call {
    conv_op_t op;
    const ConvGeometry *g;
    conv_dtype_t dtype;
    void *x, *w, *y;
    void *bias;
    bool relu;
};

// What the context says about the choice.
struct Settings {
    conv_math_t math;
    bool deterministic;
    size_t workspace_limit;       // 0: none
    uint64_t tuning_generation;   // the tuning table's, to notice changes
};

// A prepared pass: descriptors, the algorithm and the workspace it needs
// (bytes, before the 64 bytes of alignment slack). Cached per context and
// problem; shared by concurrent calls.
struct Plan;
struct Prepared {
    std::shared_ptr<const Plan> plan;
    conv_algo_t algo;
    size_t workspace_bytes;
};

// The plan for a call: the algorithm is `forced` when not AUTO (UNSUPPORTED
// when it does not apply), else the tuned one (`tuned()` is asked on a
// cache miss; AUTO when none) when it still applies, else cuDNN's
// heuristic's first that the settings allow.
Prepared prepare(DeviceRuntime &rt, const Call &c, const Settings &s, conv_algo_t forced,
                 const std::function<conv_algo_t()> &tuned);

// Enqueues the pass on the context's stream. `ws` holds at least
// p.workspace_bytes of device memory (any 64-byte aligned address).
void run(DeviceRuntime &rt, const Call &c, const Prepared &p, void *ws);

struct Trial {
    conv_algo_t algo;
    double ms;
    size_t workspace_bytes;  // including the 64 bytes of slack
};

// cudnnFind*Ex over the algorithms the settings allow and the workspace
// bound admits (a wrapped workspace: its size; an owned one: the context's
// limit, else half the free device memory), fastest first; the caller
// commits the first as the tuned choice, then runs it (`prepare` with it
// forced) so that the output holds its result. UNSUPPORTED when none ran.
std::vector<Trial> find(DeviceRuntime &rt, const Call &c, const Settings &s, Workspace &ws);

// Bytes of workspace a backward-filter pass writes dw into before copying
// it to the caller's, 0 where cuDNN may write the caller's dw directly.
// cuDNN 9.19's grouped weight-gradient kernels (e.g.
// sm80_xmma_wgrad_implicit_gemm_indexed_..._g16) write past the end of dw
// (compute-sanitizer on an H200, 2026-11-30: up to ~140 bytes after an
// 864-byte dw, into the next allocation -- there dy, so the bias gradient
// summed afterwards was wrong), on the legacy and the graph path alike. So
// grouped backward-filter passes get dw in the workspace with room behind it
// (the filter's bytes again, at least 64 KiB) and a copy.
size_t wgrad_scratch_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype);
// The filter's own bytes (what the copy moves).
size_t filter_bytes(const ConvGeometry &g, conv_dtype_t dtype);

// GPU time in ms of what `launch` enqueues on the context's stream: the
// median of `runs` timed launches (CUDA events) after one untimed. For
// candidates that cudnnFind*Ex does not time (cudnn_graph's plan).
double time_launches(DeviceRuntime &rt, const std::function<void()> &launch, int runs);

// The reducer's fused SGD step on device memory (comm::DeviceSgd, cuda/sgd.cu):
// comm/kernels.h's sgd_update over n elements of GPU `device`, enqueued on
// `stream`; fp16/bf16 weights kept in the fp32 `master` copy when given
// (zeros at first: an element whose rounded master is not w is taken from w).
void sgd_update(conv_dtype_t dtype, void *w, const void *g, void *h, float *master, int64_t n,
                double lr, double momentum, double decay, void *stream, int device);

// The algorithm ids of the engine (cuda/solvers.cpp).
bool is_cuda_algo(conv_algo_t a);

// The CUDA engine as dispatch sees it: cuDNN's families as solvers, plans
// over prepare() and run() (cuda/solvers.cpp).
const Engine &engine();

}  // namespace conv::cuda
