// The GPU side of dispatch: after the same validation and lowering as the
// CPU, a CUDA context's passes go to the CUDA engine (src/cuda/engine.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/device_runtime.h"
#include "dispatch/lowering.h"
#include "dispatch/operation.h"

namespace conv::dispatch {

// Usable GPUs (0 without the CUDA engine, cuDNN, a driver or a GPU: *why
// then says which, when given).
int gpu_count(std::string *why = nullptr) noexcept;

// The runtime of a new CUDA context on GPU `index` (NOT_AVAILABLE if none).
std::shared_ptr<DeviceRuntime> open_gpu(int index);

// The context's stream (a cudaStream_t); set: NULL for its own.
void set_gpu_stream(Context &ctx, void *stream);
void *gpu_stream(Context &ctx);

// A workspace belongs to the device of the context it was made with:
// TYPE_MISMATCH when `ws` (nullable) is another device's.
void check_workspace(const Context &ctx, const Workspace *ws);

// The tuning-table key of a GPU pass: the CPU's key plus the settings that
// change which algorithms are allowed (the device is in the file's header).
std::string gpu_problem_key(const Context &ctx, const Lowered &l, conv_dtype_t dtype);

size_t gpu_workspace_size(Context &ctx, const ConvParams &params, const Pass &pass,
                          const Lowered &l);
conv_algo_t gpu_chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass,
                                 const Lowered &l);
void gpu_run(Context &ctx, const ConvParams &params, const Pass &pass, const Lowered &l,
             Workspace *ws);
std::vector<Trial> gpu_find(Context &ctx, const ConvParams &params, const Pass &pass,
                            const Lowered &l, Workspace *ws);

}  // namespace conv::dispatch
