// Tensors: creation, queries, host copies.
#include <cstring>

#include "api/guard.h"
#include "api/handles.h"

using namespace conv;

static conv_status_t make_tensor(conv_context_t ctx, conv_dtype_t dtype, conv_layout_t layout,
                                 int ndim, const int64_t *dims, void *data, bool borrow,
                                 conv_tensor_t *out) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        api::require(out, "out");
        api::require(dims, "dims");
        // A CUDA context's tensors live in device memory (its runtime).
        *out = api::make_handle<conv_tensor_s>(c.device(), c.device_index(), dtype, layout, ndim,
                                               dims, data, borrow, c.allocator(), c.runtime());
    });
}

template <class V, class F>
static conv_status_t get(conv_tensor_t t, V *value, const char *name, F &&read) {
    return api::guarded([&] {
        const Tensor &x = api::checked(t, "t").impl;
        api::require(value, name);
        *value = read(x);
    });
}

static void check_copy(const Tensor &t, const void *host, size_t bytes) {
    api::require(host, "host");
    if (bytes != t.bytes())
        fail(CONV_STATUS_INVALID_ARGUMENT, "bytes %zu != tensor size %zu (%s)", bytes, t.bytes(),
             dims_string(t.ndim(), t.dims()).c_str());
}

extern "C" {

conv_status_t conv_tensor_create(conv_context_t ctx, conv_dtype_t dtype, conv_layout_t layout,
                                 int ndim, const int64_t *dims, conv_tensor_t *out) {
    return make_tensor(ctx, dtype, layout, ndim, dims, nullptr, false, out);
}

conv_status_t conv_tensor_wrap(conv_context_t ctx, conv_dtype_t dtype, conv_layout_t layout,
                               int ndim, const int64_t *dims, void *data, conv_tensor_t *out) {
    return make_tensor(ctx, dtype, layout, ndim, dims, data, true, out);
}

void conv_tensor_destroy(conv_tensor_t t) { api::destroy(t); }

conv_status_t conv_tensor_get_dtype(conv_tensor_t t, conv_dtype_t *dtype) {
    return get(t, dtype, "dtype", [](const Tensor &x) { return x.dtype(); });
}
conv_status_t conv_tensor_get_layout(conv_tensor_t t, conv_layout_t *layout) {
    return get(t, layout, "layout", [](const Tensor &x) { return x.layout(); });
}
conv_status_t conv_tensor_get_ndim(conv_tensor_t t, int *ndim) {
    return get(t, ndim, "ndim", [](const Tensor &x) { return x.ndim(); });
}
conv_status_t conv_tensor_get_elements(conv_tensor_t t, int64_t *elements) {
    return get(t, elements, "elements", [](const Tensor &x) { return x.elements(); });
}
conv_status_t conv_tensor_get_bytes(conv_tensor_t t, size_t *bytes) {
    return get(t, bytes, "bytes", [](const Tensor &x) { return x.bytes(); });
}
conv_status_t conv_tensor_get_data(conv_tensor_t t, void **data) {
    return get(t, data, "data", [](const Tensor &x) { return x.data(); });
}

conv_status_t conv_tensor_get_dim(conv_tensor_t t, int axis, int64_t *dim) {
    return api::guarded([&] {
        const Tensor &x = api::checked(t, "t").impl;
        api::require(dim, "dim");
        if (axis < 0 || axis >= x.ndim())
            fail(CONV_STATUS_INVALID_ARGUMENT, "axis %d out of range for a rank-%d tensor", axis,
                 x.ndim());
        *dim = x.dim(axis);
    });
}

conv_status_t conv_tensor_copy_from(conv_tensor_t t, const void *host, size_t bytes) {
    return api::guarded([&] {
        const Tensor &x = api::checked(t, "t").impl;
        check_copy(x, host, bytes);
        if (x.runtime())
            x.runtime()->host_to_device(x.data(), host, bytes);
        else if (bytes)
            std::memcpy(x.data(), host, bytes);
    });
}

conv_status_t conv_tensor_copy_to(conv_tensor_t t, void *host, size_t bytes) {
    return api::guarded([&] {
        const Tensor &x = api::checked(t, "t").impl;
        check_copy(x, host, bytes);
        if (x.runtime())
            x.runtime()->device_to_host(host, x.data(), bytes);
        else if (bytes)
            std::memcpy(host, x.data(), bytes);
    });
}

}  // extern "C"
