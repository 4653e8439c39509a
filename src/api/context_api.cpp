// Contexts and workspaces.
#include <algorithm>
#include <memory>

#include "api/guard.h"
#include "api/handles.h"
#include "dispatch/registry.h"
#include "dispatch/tuning_file.h"

using namespace conv;

static constexpr int kMaxThreads = 1024;
static constexpr int kDefaultMaxThreads = 64;

extern "C" {

conv_status_t conv_context_create(conv_device_t device, int device_index, conv_context_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        if (device == CONV_DEVICE_CUDA)
            fail(CONV_STATUS_NOT_AVAILABLE,
                 "CUDA device %d requested, but this build of libconv has no CUDA engine",
                 device_index);
        if (device != CONV_DEVICE_CPU)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown device kind %d", (int)device);
        if (device_index != 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "CPU device index must be 0, got %d",
                 device_index);
        dispatch::init_cpu_engine();
        int threads = std::min(available_cpus(), kDefaultMaxThreads);
        *out = new conv_context_s(device, device_index, threads);
    });
}

void conv_context_destroy(conv_context_t ctx) { api::destroy(ctx); }

conv_status_t conv_context_get_device(conv_context_t ctx, conv_device_t *device,
                                      int *device_index) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(device, "device");
        api::require(device_index, "device_index");
        *device = c.device();
        *device_index = c.device_index();
    });
}

conv_status_t conv_context_set_threads(conv_context_t ctx, int threads) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (threads < 1 || threads > kMaxThreads)
            fail(CONV_STATUS_INVALID_ARGUMENT, "threads %d out of range 1..%d", threads,
                 kMaxThreads);
        c.set_threads(threads);
    });
}

conv_status_t conv_context_get_threads(conv_context_t ctx, int *threads) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(threads, "threads");
        *threads = c.threads();
    });
}

conv_status_t conv_context_save_tuning(conv_context_t ctx, const char *path) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        dispatch::save_tuning(c, c.tuning(), api::require(path, "path"));
    });
}

conv_status_t conv_context_load_tuning(conv_context_t ctx, const char *path) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        dispatch::load_tuning(c, c.tuning(), api::require(path, "path"));
    });
}

conv_status_t conv_context_clear_tuning(conv_context_t ctx) {
    return api::guarded([&] { api::checked(ctx, "ctx").impl.tuning().clear(); });
}

conv_status_t conv_workspace_create(conv_context_t ctx, conv_workspace_t *out) {
    return api::guarded([&] {
        api::checked(ctx, "ctx");
        api::require(out, "out");
        *out = new conv_workspace_s();
    });
}

conv_status_t conv_workspace_wrap(conv_context_t ctx, void *memory, size_t bytes,
                                  conv_workspace_t *out) {
    return api::guarded([&] {
        api::checked(ctx, "ctx");
        api::require(out, "out");
        if (!memory && bytes > 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "memory is NULL but bytes is %zu", bytes);
        *out = new conv_workspace_s(memory, bytes);
    });
}

conv_status_t conv_workspace_get_size(conv_workspace_t ws, size_t *bytes) {
    return api::guarded([&] {
        Workspace &w = api::checked(ws, "ws").impl;
        api::require(bytes, "bytes");
        std::lock_guard<std::mutex> lock(w.mutex());
        *bytes = w.size();
    });
}

void conv_workspace_destroy(conv_workspace_t ws) { api::destroy(ws); }

}  // extern "C"
