#include "dispatch/gpu.h"

#include "core/error.h"
#include "cuda/engine.h"

namespace conv::dispatch {
namespace {

DeviceRuntime &runtime(const Context &ctx) {
    if (!ctx.runtime()) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA context without its runtime");
    return *ctx.runtime();
}

}  // namespace

int gpu_count(std::string *why) noexcept { return cuda::device_count(why); }

std::shared_ptr<DeviceRuntime> open_gpu(int index) { return cuda::open(index); }

void set_gpu_stream(Context &ctx, void *stream) { cuda::set_stream(runtime(ctx), stream); }
void *gpu_stream(Context &ctx) { return cuda::get_stream(runtime(ctx)); }

comm::DeviceSgd gpu_sgd() noexcept { return cuda::built() ? &cuda::sgd_update : nullptr; }

}  // namespace conv::dispatch
