// Version, statuses, the last-error message, names and device counts.
#include <algorithm>
#include <string>
#include <vector>

#include "api/guard.h"
#include "api/handles.h"
#include "dispatch/engines.h"
#include "dispatch/gpu.h"

namespace conv::api {

static thread_local std::string t_last_error;

void set_last_error(const char *message) noexcept {
    try {
        t_last_error.assign(message);
    } catch (...) {
        t_last_error.clear();  // no memory for the text: keep the status alone
    }
}

void clear_last_error() noexcept {
    std::string &message = t_last_error;  // one look-up of the thread's copy
    if (!message.empty()) message.clear();
}

}  // namespace conv::api

using namespace conv;

extern "C" {

unsigned conv_version(void) { return CONV_VERSION_NUMBER; }

const char *conv_version_string(void) {
#define CONV_STR2(x) #x
#define CONV_STR(x) CONV_STR2(x)
    return CONV_STR(CONV_VERSION_MAJOR) "." CONV_STR(CONV_VERSION_MINOR) "." CONV_STR(
        CONV_VERSION_PATCH);
}

const char *conv_status_string(conv_status_t s) {
    switch (s) {
    case CONV_STATUS_SUCCESS: return "success";
    case CONV_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case CONV_STATUS_INVALID_HANDLE: return "invalid handle";
    case CONV_STATUS_SHAPE_MISMATCH: return "shape mismatch";
    case CONV_STATUS_TYPE_MISMATCH: return "dtype, layout or device mismatch";
    case CONV_STATUS_UNSUPPORTED: return "unsupported";
    case CONV_STATUS_OUT_OF_MEMORY: return "out of memory";
    case CONV_STATUS_WORKSPACE_TOO_SMALL: return "workspace too small";
    case CONV_STATUS_OVERFLOW: return "size overflow";
    case CONV_STATUS_NOT_AVAILABLE: return "not available";
    case CONV_STATUS_BACKEND_ERROR: return "backend error";
    case CONV_STATUS_IO_ERROR: return "i/o error";
    case CONV_STATUS_BAD_FILE: return "bad file";
    case CONV_STATUS_INTERNAL_ERROR: return "internal error";
    case CONV_STATUS_NUMERICAL_ERROR: return "non-finite value in an output";
    default: break;  // unknown values
    }
    return "unknown status";
}

const char *conv_last_error(void) { return api::t_last_error.c_str(); }

const char *conv_algo_name(conv_algo_t algo) {
    if (algo == CONV_ALGO_AUTO) return "auto";
    const Solver *s = dispatch::find_solver(algo);
    return s ? s->name() : "unknown";
}

conv_status_t conv_algo_from_name(const char *name, conv_algo_t *algo) {
    return api::guarded([&] {
        api::require(name, "name");
        api::require(algo, "algo");
        if (std::string(name) == "auto") {
            *algo = CONV_ALGO_AUTO;
            return;
        }
        const Solver *s = dispatch::find_solver(name);
        if (!s)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown algorithm name '%.80s'; known: auto, %s", name,
                 dispatch::solver_names().c_str());
        *algo = s->id();
    });
}

conv_status_t conv_algo_list(conv_device_t device, int capacity, conv_algo_t *algos, int *count) {
    return api::guarded([&] {
        api::require(count, "count");
        if (capacity < 0) fail(CONV_STATUS_INVALID_ARGUMENT, "capacity %d must be >= 0", capacity);
        if (capacity > 0) api::require(algos, "algos");
        const std::vector<const Solver *> &list = dispatch::engine_for(device).solvers();
        const int n = std::min(capacity, (int)list.size());
        for (int i = 0; i < n; ++i) algos[i] = list[(size_t)i]->id();
        *count = (int)list.size();
    });
}

conv_status_t conv_device_count(conv_device_t device, int *count) {
    std::string why;  // no GPU: which library, driver or device is missing
    conv_status_t s = api::guarded([&] {
        api::require(count, "count");
        if (device == CONV_DEVICE_CPU)
            *count = 1;
        else if (device == CONV_DEVICE_CUDA)
            *count = dispatch::gpu_count(&why);
        else
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown device kind %d", (int)device);
    });
    // The one success that leaves a message (conv.h): why the count is 0.
    if (s == CONV_STATUS_SUCCESS && !why.empty()) api::set_last_error(why.c_str());
    return s;
}

}  // extern "C"
