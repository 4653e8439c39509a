// Device-related entry points: streams, waiting, deterministic mode, the
// workspace bound, device names, tensor-to-tensor copies (docs/gpu.md).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "api/guard.h"
#include "api/handles.h"
#include "core/dtype.h"
#include "dispatch/gpu.h"
#include "dispatch/tuning_file.h"

using namespace conv;

extern "C" {

conv_status_t conv_context_set_stream(conv_context_t ctx, void *cuda_stream) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (c.device() != CONV_DEVICE_CUDA)
            fail(CONV_STATUS_UNSUPPORTED, "a CPU context has no stream to set");
        dispatch::set_gpu_stream(c, cuda_stream);
    });
}

conv_status_t conv_context_get_stream(conv_context_t ctx, void **cuda_stream) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(cuda_stream, "cuda_stream");
        *cuda_stream = c.device() == CONV_DEVICE_CUDA ? dispatch::gpu_stream(c) : nullptr;
    });
}

conv_status_t conv_context_synchronize(conv_context_t ctx) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        if (c.runtime()) c.runtime()->synchronize();  // CPU: calls are complete already
    });
}

conv_status_t conv_context_set_deterministic(conv_context_t ctx, int on) {
    return api::guarded([&] { api::checked(ctx, "ctx").impl.set_deterministic(on != 0); });
}

conv_status_t conv_context_get_deterministic(conv_context_t ctx, int *on) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        *api::require(on, "on") = c.deterministic() ? 1 : 0;
    });
}

conv_status_t conv_context_set_workspace_limit(conv_context_t ctx, size_t bytes) {
    return api::guarded([&] { api::checked(ctx, "ctx").impl.set_workspace_limit(bytes); });
}

conv_status_t conv_context_get_workspace_limit(conv_context_t ctx, size_t *bytes) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        *api::require(bytes, "bytes") = c.workspace_limit();
    });
}

conv_status_t conv_context_get_device_name(conv_context_t ctx, char *name, size_t capacity) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(name, "name");
        if (capacity == 0) fail(CONV_STATUS_INVALID_ARGUMENT, "capacity is 0");
        std::string s = dispatch::device_signature(c);
        size_t n = std::min(s.size(), capacity - 1);
        std::memcpy(name, s.data(), n);
        name[n] = '\0';
    });
}

conv_status_t conv_tensor_get_device(conv_tensor_t t, conv_device_t *device, int *device_index) {
    return api::guarded([&] {
        const Tensor &x = api::checked(t, "t").impl;
        api::require(device, "device");
        api::require(device_index, "device_index");
        *device = x.device();
        *device_index = x.device_index();
    });
}

conv_status_t conv_tensor_copy(conv_tensor_t dst, conv_tensor_t src) {
    return api::guarded([&] {
        const Tensor &d = api::checked(dst, "dst").impl;
        const Tensor &s = api::checked(src, "src").impl;
        if (d.dtype() != s.dtype())
            fail(CONV_STATUS_TYPE_MISMATCH, "dtype mismatch: dst is %s but src is %s",
                 dtype_name(d.dtype()), dtype_name(s.dtype()));
        if (d.layout() != s.layout())
            fail(CONV_STATUS_TYPE_MISMATCH, "layout mismatch: dst is %s but src is %s",
                 layout_name(d.layout()), layout_name(s.layout()));
        bool same = d.ndim() == s.ndim();
        for (int i = 0; same && i < d.ndim(); ++i) same = d.dim(i) == s.dim(i);
        if (!same)
            fail(CONV_STATUS_SHAPE_MISMATCH, "dst dims %s != src dims %s",
                 dims_string(d.ndim(), d.dims()).c_str(), dims_string(s.ndim(), s.dims()).c_str());
        size_t bytes = d.bytes();
        if (bytes == 0 || d.data() == s.data()) return;
        auto a = reinterpret_cast<uintptr_t>(d.data()), b = reinterpret_cast<uintptr_t>(s.data());
        if (d.runtime() == s.runtime() && a < b + bytes && b < a + bytes)
            fail(CONV_STATUS_INVALID_ARGUMENT, "dst and src overlap");
        if (!d.runtime() && !s.runtime()) {
            std::memcpy(d.data(), s.data(), bytes);
        } else if (!d.runtime()) {
            s.runtime()->device_to_host(d.data(), s.data(), bytes);
        } else if (!s.runtime()) {
            d.runtime()->host_to_device(d.data(), s.data(), bytes);
        } else {
            // Between two contexts: src's work first, then the copy on dst's stream.
            if (s.runtime() != d.runtime()) s.runtime()->synchronize();
            d.runtime()->device_to_device(d.data(), s.data(), bytes);
        }
    });
}

}  // extern "C"
