#include "dispatch/operation.h"

#include <cstdint>
#include <mutex>

#include "core/dtype.h"
#include "core/error.h"
#include "core/numerics.h"
#include "dispatch/plan.h"

namespace conv::dispatch {

RoleNames role_names(conv_op_t op) {
    switch (op) {
    case CONV_OP_BACKWARD_DATA: return {"dx", "w", "dy", "bias"};
    case CONV_OP_BACKWARD_FILTER: return {"x", "dw", "dy", "db"};
    default: return {"x", "w", "y", "b"};
    }
}

namespace {


void check_same_kind(const Context &ctx, const Tensor &ref, const char *ref_name, const Tensor &t,
                     const char *name) {
    if (t.device() != ctx.device() || t.device_index() != ctx.device_index())
        fail(CONV_STATUS_TYPE_MISMATCH, "tensor %s is on %s:%d but the context is %s:%d", name,
             device_name(t.device()), t.device_index(), device_name(ctx.device()),
             ctx.device_index());
    if (t.dtype() != ref.dtype())
        fail(CONV_STATUS_TYPE_MISMATCH, "dtype mismatch: %s is %s but %s is %s", name,
             dtype_name(t.dtype()), ref_name, dtype_name(ref.dtype()));
    if (t.layout() != ref.layout())
        fail(CONV_STATUS_TYPE_MISMATCH, "layout mismatch: %s is %s but %s is %s", name,
             layout_name(t.layout()), ref_name, layout_name(ref.layout()));
}

bool overlaps(const Tensor &a, const Tensor &b) {
    if (a.bytes() == 0 || b.bytes() == 0) return false;
    auto a0 = reinterpret_cast<uintptr_t>(a.data()), b0 = reinterpret_cast<uintptr_t>(b.data());
    return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

// No output may be the same tensor as, or share a byte with, any other
// tensor of the call, by role: the same handle passed as input and output
// (forward w = y, backward-data dx = dy, backward-filter dw = x or db = dy)
// is refused like any overlap, and so are two outputs sharing memory.
void check_no_aliasing(const Pass &pass, const RoleNames &names) {
    struct Role {
        const Tensor *t;
        const char *name;
        bool output;
    };
    const bool fwd = pass.op == CONV_OP_FORWARD, bwd_data = pass.op == CONV_OP_BACKWARD_DATA;
    const bool bwd_filter = pass.op == CONV_OP_BACKWARD_FILTER;
    const Role roles[] = {{pass.x, names.x, bwd_data},
                          {pass.w, names.w, bwd_filter},
                          {pass.y, names.y, fwd},
                          {pass.bias, names.bias, bwd_filter}};
    for (const Role &out : roles) {
        if (!out.t || !out.output) continue;
        for (const Role &other : roles) {
            if (!other.t || &other == &out || (other.output && &other < &out)) continue;
            const char *kind = other.output ? "output" : "input";
            if (other.t == out.t)
                fail(CONV_STATUS_INVALID_ARGUMENT,
                     "output %s and %s %s are the same tensor: an output must not be any other "
                     "tensor of the call",
                     out.name, kind, other.name);
            if (overlaps(*out.t, *other.t))
                fail(CONV_STATUS_INVALID_ARGUMENT,
                     "output %s (%zu bytes at %p) overlaps %s %s (%zu bytes at %p): an output "
                     "must not share memory with any other tensor of the call",
                     out.name, out.t->bytes(), out.t->data(), kind, other.name, other.t->bytes(),
                     other.t->data());
        }
    }
}

}  // namespace

ConvGeometry validate(const Context &ctx, const ConvParams &params, const Pass &pass) {
    RoleNames names = role_names(pass.op);
    const Tensor &x = *pass.x, &w = *pass.w, &y = *pass.y;
    check_same_kind(ctx, x, names.x, x, names.x);
    check_same_kind(ctx, x, names.x, w, names.w);
    check_same_kind(ctx, x, names.x, y, names.y);
    if (pass.bias) check_same_kind(ctx, x, names.x, *pass.bias, names.bias);
    if (w.ndim() != x.ndim())
        fail(CONV_STATUS_SHAPE_MISMATCH, "%s has rank %d but %s has rank %d", names.w, w.ndim(),
             names.x, x.ndim());
    ConvGeometry g = make_pass_geometry(params, x.layout(), x.ndim(), x.dims(), w.dims());
    int64_t expect[kMaxDims];
    if (g.transposed)
        input_dims(g, expect);  // the user's output is the lowered convolution's input
    else
        output_dims(g, expect);
    bool same = y.ndim() == x.ndim();
    for (int i = 0; same && i < x.ndim(); ++i) same = y.dim(i) == expect[i];
    if (!same)
        fail(CONV_STATUS_SHAPE_MISMATCH, "%s dims %s do not match the expected %s (%s)", names.y,
             dims_string(y.ndim(), y.dims()).c_str(), dims_string(x.ndim(), expect).c_str(),
             g.describe().c_str());
    int64_t out_channels = g.transposed ? g.c : g.k;
    if (pass.bias && pass.bias->elements() != out_channels)
        fail(CONV_STATUS_SHAPE_MISMATCH, "%s has %lld elements but there are %lld output channels",
             names.bias, (long long)pass.bias->elements(), (long long)out_channels);
    check_tensors(ctx, pass);
    return g;
}

void check_tensors(const Context &ctx, const Pass &pass) {
    RoleNames names = role_names(pass.op);
    const Tensor &x = *pass.x;
    check_same_kind(ctx, x, names.x, x, names.x);
    check_same_kind(ctx, x, names.x, *pass.w, names.w);
    check_same_kind(ctx, x, names.x, *pass.y, names.y);
    if (pass.bias) check_same_kind(ctx, x, names.x, *pass.bias, names.bias);
    check_no_aliasing(pass, names);
}

void check_workspace(const Context &ctx, const Workspace *ws) {
    if (ws && (ws->device() != ctx.device() || ws->device_index() != ctx.device_index()))
        fail(CONV_STATUS_TYPE_MISMATCH,
             "workspace ws was made with a %s:%d context but the context is %s:%d",
             device_name(ws->device()), ws->device_index(), device_name(ctx.device()),
             ctx.device_index());
}

size_t workspace_size(Context &ctx, const ConvParams &params, const Pass &pass) {
    bool hit;
    return cached_plan(ctx, params, pass, &hit)->workspace_bytes();
}

conv_algo_t chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass) {
    bool hit;
    return cached_plan(ctx, params, pass, &hit)->engine_plan->solver().id();
}

void run(Context &ctx, const ConvParams &params, const Pass &pass, Workspace *ws) {
    bool hit;
    std::shared_ptr<const Plan> plan = cached_plan(ctx, params, pass, &hit);
    if (hit) check_tensors(ctx, pass);  // a miss was validated whole
    execute(*plan, pass, ws, hit ? "hit" : "miss");
}

}  // namespace conv::dispatch
