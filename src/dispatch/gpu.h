// The GPU's device management as the API needs it: how many, opening one
// for a context, its stream. (Passes go through the context's engine like
// the CPU's: dispatch/plan.cpp.)
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "core/context.h"
#include "core/device_runtime.h"

namespace conv::dispatch {

// Usable GPUs (0 without the CUDA engine, cuDNN, a driver or a GPU: *why
// then says which, when given).
int gpu_count(std::string *why = nullptr) noexcept;

// The runtime of a new CUDA context on GPU `index` (NOT_AVAILABLE if none).
std::shared_ptr<DeviceRuntime> open_gpu(int index);

// The context's stream (a cudaStream_t); set: NULL for its own.
void set_gpu_stream(Context &ctx, void *stream);
void *gpu_stream(Context &ctx);

// The CUDA engine's SGD kernel for device communicators, null without the engine.
comm::DeviceSgd gpu_sgd() noexcept;

}  // namespace conv::dispatch
