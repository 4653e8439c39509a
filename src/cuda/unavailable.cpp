// The CUDA engine of a build without it (CONV_WITH_CUDA=OFF, or the CUDA
// toolkit / cuDNN not found at configure time; and the static libconv.a):
// no device, and every entry point that needs one fails with NOT_AVAILABLE
// saying how to get it.
#include "core/error.h"
#include "cuda/engine.h"

namespace conv::cuda {
namespace {
#if defined(CONV_STATIC_CPU_ONLY) && CONV_STATIC_CPU_ONLY  // libconv.a of a build with the engine (cmake/ConvPackaging.cmake)
const char kNoCuda[] =
    "the static libconv.a has no CUDA engine: link the shared library, libconv.so, for GPUs "
    "(docs/architecture.md, \"Static linking\")";
#else
const char kNoCuda[] =
    "this libconv was built without the CUDA engine (configure with CONV_WITH_CUDA=ON where "
    "the CUDA toolkit and cuDNN are installed; docs/gpu.md)";
#endif
}

bool built() noexcept { return false; }
int device_count(std::string *why) noexcept {
    try {
        if (why) *why = kNoCuda;
    } catch (...) {  // no memory for the text: the count alone
    }
    return 0;
}
std::string build_versions() { return "none"; }

std::shared_ptr<DeviceRuntime> open(int index) {
    fail(CONV_STATUS_NOT_AVAILABLE, "CUDA device %d requested, but %s", index, kNoCuda);
}
void set_stream(DeviceRuntime &, void *) { fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda); }
void *get_stream(DeviceRuntime &) { return nullptr; }
Prepared prepare(DeviceRuntime &, const Call &, const Settings &, conv_algo_t,
                 const std::function<conv_algo_t()> &) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda);
}
void run(DeviceRuntime &, const Call &, const Prepared &, void *) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda);
}
std::vector<Trial> find(DeviceRuntime &, const Call &, const Settings &, Workspace &) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda);
}
size_t wgrad_scratch_bytes(const ConvGeometry &, conv_op_t, conv_dtype_t) { return 0; }
size_t filter_bytes(const ConvGeometry &, conv_dtype_t) { return 0; }
double time_launches(DeviceRuntime &, const std::function<void()> &, int) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda);
}
void sgd_update(conv_dtype_t, void *, const void *, void *, float *, int64_t, double, double, double,
                void *, int) {
    fail(CONV_STATUS_NOT_AVAILABLE, "%s", kNoCuda);
}

}  // namespace conv::cuda
