// Gradient reducers: configuration, layout queries, steps, the fused SGD
// update (docs/comm.md).
#include "api/comm_handles.h"
#include "api/guard.h"
#include "core/dtype.h"

using namespace conv;
using conv::comm::Reducer;

namespace {

Reducer &reducer_of(conv_reducer_t r) { return api::checked(r, "r").impl; }

}  // namespace

extern "C" {

conv_status_t conv_reducer_create(conv_comm_t comm, conv_dtype_t dtype, conv_reducer_t *out) {
    return api::guarded([&] {
        conv_comm_s &c = api::checked(comm, "comm");
        api::require(out, "out");
        if (!dtype_valid(dtype))
            fail(CONV_STATUS_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
        *out = api::make_handle<conv_reducer_s>(c.impl, dtype);
    });
}

void conv_reducer_destroy(conv_reducer_t r) { api::destroy(r); }

conv_status_t conv_reducer_add_param(conv_reducer_t r, void *weights, int64_t count, int *index) {
    return api::guarded([&] {
        int i = reducer_of(r).add_param(weights, count);
        if (index) *index = i;
    });
}

conv_status_t conv_reducer_set_bucket_bytes(conv_reducer_t r, size_t first_bucket_bytes,
                                            size_t bucket_bytes) {
    return api::guarded(
        [&] { reducer_of(r).set_bucket_bytes(first_bucket_bytes, bucket_bytes); });
}

conv_status_t conv_reducer_set_bucket_count(conv_reducer_t r, int buckets) {
    return api::guarded([&] { reducer_of(r).set_bucket_count(buckets); });
}

conv_status_t conv_reducer_set_stream(conv_reducer_t r, void *cuda_stream) {
    return api::guarded([&] { reducer_of(r).set_stream(cuda_stream); });
}

conv_status_t conv_reducer_setup(conv_reducer_t r) {
    return api::guarded([&] { reducer_of(r).setup(); });
}

conv_status_t conv_reducer_get_param_count(conv_reducer_t r, int *count) {
    return api::guarded([&] {
        Reducer &x = reducer_of(r);
        *api::require(count, "count") = x.param_count();
    });
}

conv_status_t conv_reducer_get_bucket_count(conv_reducer_t r, int *count) {
    return api::guarded([&] {
        Reducer &x = reducer_of(r);
        api::require(count, "count");
        *count = x.bucket_count();
    });
}

conv_status_t conv_reducer_get_bucket(conv_reducer_t r, int bucket, int64_t *offset,
                                      int64_t *elements, int *params) {
    return api::guarded([&] { reducer_of(r).bucket(bucket, offset, elements, params); });
}

conv_status_t conv_reducer_get_param_slot(conv_reducer_t r, int param, int *bucket,
                                          int64_t *offset) {
    return api::guarded([&] { reducer_of(r).param_slot(param, bucket, offset); });
}

conv_status_t conv_reducer_get_grad(conv_reducer_t r, int param, void **grad) {
    return api::guarded([&] {
        Reducer &x = reducer_of(r);
        api::require(grad, "grad");
        *grad = x.grad(param);
    });
}

conv_status_t conv_reducer_get_buffer(conv_reducer_t r, void **grads, int64_t *elements) {
    return api::guarded([&] {
        Reducer &x = reducer_of(r);
        api::require(grads, "grads");
        int64_t n = 0;
        void *p = x.buffer(&n);
        *grads = p;
        if (elements) *elements = n;
    });
}

conv_status_t conv_reducer_broadcast_params(conv_reducer_t r, int root) {
    return api::guarded([&] { reducer_of(r).broadcast_params(root); });
}

conv_status_t conv_reducer_mark_ready(conv_reducer_t r, int param) {
    return api::guarded([&] { reducer_of(r).mark_ready(param); });
}

conv_status_t conv_reducer_mark_unused(conv_reducer_t r, int param) {
    return api::guarded([&] { reducer_of(r).mark_unused(param); });
}

conv_status_t conv_reducer_finish(conv_reducer_t r) {
    return api::guarded([&] { reducer_of(r).finish(); });
}

conv_status_t conv_reducer_apply_sgd(conv_reducer_t r, double learning_rate, double momentum,
                                     double weight_decay) {
    return api::guarded(
        [&] { reducer_of(r).apply_sgd(learning_rate, momentum, weight_decay); });
}

conv_status_t conv_reducer_get_step_times(conv_reducer_t r, double *communication,
                                          double *exposed) {
    return api::guarded([&] { reducer_of(r).step_times(communication, exposed); });
}

}  // extern "C"
