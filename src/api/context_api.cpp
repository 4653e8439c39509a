// Contexts and workspaces.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "api/guard.h"
#include "api/handles.h"
#include "dispatch/gpu.h"
#include "dispatch/engines.h"
#include "dispatch/tuning_file.h"

using namespace conv;

static constexpr int kMaxThreads = 1024;

// CONV_CHECK_NUMERICS: anything but unset, "" or "0" turns the guard on.
static bool env_check_numerics() {
    const char *v = std::getenv("CONV_CHECK_NUMERICS");
    return v && v[0] && std::strcmp(v, "0") != 0;
}
static constexpr int kDefaultMaxThreads = 64;

// CONV_VERBOSE: the trace level a new context starts at (0 when unset or not a number).
static int env_verbose() {
    const char *v = std::getenv("CONV_VERBOSE");
    return v ? std::max(0, std::atoi(v)) : 0;
}

// What every new context gets besides its device: the engine, the guard and
// trace settings from the environment.
static void configure(Context &c) {
    c.set_engine(dispatch::engine_for(c.device()));
    c.set_check_numerics(env_check_numerics());
    c.set_verbose(env_verbose());
}

extern "C" {

conv_status_t conv_context_create(conv_device_t device, int device_index, conv_context_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        // A negative index names no device of any machine: a wrong argument.
        // An index past the devices there are is a device that is not there.
        if (device_index < 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "device index %d is negative", device_index);
        if (device == CONV_DEVICE_CUDA) {  // the CUDA engine (docs/gpu.md)
            std::shared_ptr<DeviceRuntime> rt = dispatch::open_gpu(device_index);
            conv_context_s *c = api::make_handle<conv_context_s>(device, device_index, 1);
            c->impl.set_runtime(std::move(rt));
            configure(c->impl);
            *out = c;
            return;
        }
        if (device != CONV_DEVICE_CPU)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown device kind %d", (int)device);
        if (device_index != 0)
            fail(CONV_STATUS_NOT_AVAILABLE,
                 "CPU device %d requested, but there is one CPU device (index 0): its threads "
                 "are set with conv_context_set_threads",
                 device_index);
        dispatch::engine_for(device);  // prepares OpenBLAS before the first pool starts
        int threads = std::min(available_cpus(), kDefaultMaxThreads);
        conv_context_s *c = api::make_handle<conv_context_s>(device, device_index, threads);
        configure(c->impl);
        *out = c;
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

conv_status_t conv_context_set_math(conv_context_t ctx, conv_math_t math) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (math != CONV_MATH_DEFAULT && math != CONV_MATH_STRICT && math != CONV_MATH_FAST)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown math mode %d", (int)math);
        c.set_math(math);
    });
}

conv_status_t conv_context_get_math(conv_context_t ctx, conv_math_t *math) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        *api::require(math, "math") = c.math();
    });
}

conv_status_t conv_context_set_allocator(conv_context_t ctx, conv_alloc_fn_t alloc,
                                         conv_free_fn_t free_fn, void *user) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (!alloc != !free_fn)
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "alloc is %s but free_fn is %s: give both, or both NULL for the default",
                 alloc ? "set" : "NULL", free_fn ? "set" : "NULL");
        if (c.device() != CONV_DEVICE_CPU)
            fail(CONV_STATUS_UNSUPPORTED,
                 "a host allocator is for CPU contexts; a CUDA context's memory is device "
                 "memory (cudaMalloc)");
        HostAllocator a;
        if (alloc) a = HostAllocator{alloc, free_fn, user};
        c.set_allocator(a);
    });
}

conv_status_t conv_context_set_verbose(conv_context_t ctx, int level) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (level < 0 || level > 2)
            fail(CONV_STATUS_INVALID_ARGUMENT, "verbose level %d out of range 0..2", level);
        c.set_verbose(level);
    });
}

conv_status_t conv_context_get_verbose(conv_context_t ctx, int *level) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        *api::require(level, "level") = c.verbose();
    });
}

conv_status_t conv_context_set_check_numerics(conv_context_t ctx, int on) {
    return api::guarded([&] { api::checked(ctx, "ctx").impl.set_check_numerics(on != 0); });
}

conv_status_t conv_context_get_check_numerics(conv_context_t ctx, int *on) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        *api::require(on, "on") = c.check_numerics() ? 1 : 0;
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
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(out, "out");
        conv_workspace_s *w = c.runtime() ? api::make_handle<conv_workspace_s>(c.runtime())
                                          : api::make_handle<conv_workspace_s>(c.allocator());
        w->impl.set_device(c.device(), c.device_index());
        *out = w;
    });
}

conv_status_t conv_workspace_wrap(conv_context_t ctx, void *memory, size_t bytes,
                                  conv_workspace_t *out) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(out, "out");
        if (!memory && bytes > 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "memory is NULL but bytes is %zu", bytes);
        conv_workspace_s *w = api::make_handle<conv_workspace_s>(memory, bytes);
        w->impl.set_device(c.device(), c.device_index());  // device memory on a GPU context
        *out = w;
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
