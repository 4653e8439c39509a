// Convolution descriptors. Every setter checks all its values before storing
// any, so a refused call leaves the descriptor as it was.
#include <algorithm>

#include "api/guard.h"
#include "api/handles.h"

using namespace conv;

namespace {

void check_values(const ConvParams &p, const int64_t *v, const char *name, int64_t min) {
    api::require(v, name);
    for (int i = 0; i < p.spatial; ++i)
        if (v[i] < min)
            fail(CONV_STATUS_INVALID_ARGUMENT, "%s[%d] = %lld must be >= %lld", name, i,
                 (long long)v[i], (long long)min);
}

void check_op(int op) {
    if (op < CONV_OP_FORWARD || op > CONV_OP_BACKWARD_FILTER)
        fail(CONV_STATUS_INVALID_ARGUMENT, "unknown op %d", op);
}

template <class F>
conv_status_t with_desc(conv_desc_t desc, F &&body) {
    return api::guarded([&] { body(api::checked(desc, "desc").impl); });
}

}  // namespace

extern "C" {

conv_status_t conv_desc_create(int spatial_dims, conv_desc_t *out) {
    return api::guarded([&] {
        api::require(out, "out");
        if (spatial_dims < 1 || spatial_dims > kMaxSpatial)
            fail(CONV_STATUS_INVALID_ARGUMENT, "spatial_dims %d out of range 1..%d", spatial_dims,
                 kMaxSpatial);
        auto *d = api::make_handle<conv_desc_s>();
        d->impl.spatial = spatial_dims;
        *out = d;
    });
}

void conv_desc_destroy(conv_desc_t desc) { api::destroy(desc); }

conv_status_t conv_desc_get_spatial_dims(conv_desc_t desc, int *spatial_dims) {
    return with_desc(desc, [&](ConvParams &p) { *api::require(spatial_dims, "spatial_dims") = p.spatial; });
}

conv_status_t conv_desc_set_strides(conv_desc_t desc, const int64_t *strides) {
    return with_desc(desc, [&](ConvParams &p) {
        check_values(p, strides, "strides", 1);
        std::copy(strides, strides + p.spatial, p.stride);
    });
}

conv_status_t conv_desc_set_dilations(conv_desc_t desc, const int64_t *dilations) {
    return with_desc(desc, [&](ConvParams &p) {
        check_values(p, dilations, "dilations", 1);
        std::copy(dilations, dilations + p.spatial, p.dilation);
    });
}

conv_status_t conv_desc_set_padding(conv_desc_t desc, const int64_t *begin, const int64_t *end) {
    return with_desc(desc, [&](ConvParams &p) {
        check_values(p, begin, "padding begin", 0);
        check_values(p, end, "padding end", 0);
        std::copy(begin, begin + p.spatial, p.pad_begin);
        std::copy(end, end + p.spatial, p.pad_end);
    });
}

conv_status_t conv_desc_get_strides(conv_desc_t desc, int64_t *strides) {
    return with_desc(desc, [&](ConvParams &p) {
        std::copy(p.stride, p.stride + p.spatial, api::require(strides, "strides"));
    });
}

conv_status_t conv_desc_get_dilations(conv_desc_t desc, int64_t *dilations) {
    return with_desc(desc, [&](ConvParams &p) {
        std::copy(p.dilation, p.dilation + p.spatial, api::require(dilations, "dilations"));
    });
}

conv_status_t conv_desc_get_padding(conv_desc_t desc, int64_t *begin, int64_t *end) {
    return with_desc(desc, [&](ConvParams &p) {
        api::require(begin, "begin");
        api::require(end, "end");
        std::copy(p.pad_begin, p.pad_begin + p.spatial, begin);
        std::copy(p.pad_end, p.pad_end + p.spatial, end);
    });
}

conv_status_t conv_desc_set_auto_pad(conv_desc_t desc, conv_auto_pad_t mode) {
    return with_desc(desc, [&](ConvParams &p) {
        if (mode < CONV_AUTO_PAD_NOTSET || mode > CONV_AUTO_PAD_SAME_LOWER)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown auto-pad mode %d", (int)mode);
        p.auto_pad = mode;
    });
}

conv_status_t conv_desc_get_auto_pad(conv_desc_t desc, conv_auto_pad_t *mode) {
    return with_desc(desc, [&](ConvParams &p) { *api::require(mode, "mode") = p.auto_pad; });
}

conv_status_t conv_desc_set_groups(conv_desc_t desc, int64_t groups) {
    return with_desc(desc, [&](ConvParams &p) {
        if (groups < 1)
            fail(CONV_STATUS_INVALID_ARGUMENT, "groups %lld must be >= 1", (long long)groups);
        p.groups = groups;
    });
}

conv_status_t conv_desc_get_groups(conv_desc_t desc, int64_t *groups) {
    return with_desc(desc, [&](ConvParams &p) { *api::require(groups, "groups") = p.groups; });
}

conv_status_t conv_desc_set_activation(conv_desc_t desc, conv_activation_t act) {
    return with_desc(desc, [&](ConvParams &p) {
        if (act != CONV_ACTIVATION_NONE && act != CONV_ACTIVATION_RELU)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown activation %d", (int)act);
        p.activation = act;
    });
}

conv_status_t conv_desc_get_activation(conv_desc_t desc, conv_activation_t *act) {
    return with_desc(desc, [&](ConvParams &p) { *api::require(act, "act") = p.activation; });
}

conv_status_t conv_desc_set_mode(conv_desc_t desc, conv_mode_t mode) {
    return with_desc(desc, [&](ConvParams &p) {
        if (mode != CONV_MODE_CONVOLUTION && mode != CONV_MODE_TRANSPOSED)
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown mode %d", (int)mode);
        p.mode = mode;
    });
}

conv_status_t conv_desc_get_mode(conv_desc_t desc, conv_mode_t *mode) {
    return with_desc(desc, [&](ConvParams &p) { *api::require(mode, "mode") = p.mode; });
}

conv_status_t conv_desc_set_output_padding(conv_desc_t desc, const int64_t *padding) {
    return with_desc(desc, [&](ConvParams &p) {
        check_values(p, padding, "output padding", 0);
        std::copy(padding, padding + p.spatial, p.output_padding);
    });
}

conv_status_t conv_desc_get_output_padding(conv_desc_t desc, int64_t *padding) {
    return with_desc(desc, [&](ConvParams &p) {
        std::copy(p.output_padding, p.output_padding + p.spatial,
                  api::require(padding, "padding"));
    });
}

conv_status_t conv_desc_set_algorithm(conv_desc_t desc, conv_op_t op, conv_algo_t algo) {
    return with_desc(desc, [&](ConvParams &p) {
        check_op(op);
        if (std::string(conv_algo_name(algo)) == "unknown")
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown algorithm %d", (int)algo);
        p.algo[op] = algo;
    });
}

conv_status_t conv_desc_get_algorithm(conv_desc_t desc, conv_op_t op, conv_algo_t *algo) {
    return with_desc(desc, [&](ConvParams &p) {
        check_op(op);
        *api::require(algo, "algo") = p.algo[op];
    });
}

}  // extern "C"
