#include "dispatch/operation.h"

#include <cstdint>
#include <mutex>

#include "core/dtype.h"
#include "core/error.h"
#include "core/numerics.h"
#include "dispatch/gpu.h"
#include "dispatch/lowering.h"

namespace conv::dispatch {
namespace {

// Names of the tensor roles, per pass, for messages.
struct RoleNames {
    const char *x, *w, *y, *bias;
};
RoleNames role_names(conv_op_t op) {
    switch (op) {
    case CONV_OP_BACKWARD_DATA: return {"dx", "w", "dy", "bias"};
    case CONV_OP_BACKWARD_FILTER: return {"x", "dw", "dy", "db"};
    default: return {"x", "w", "y", "b"};
    }
}

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

// The CPU engine hands GEMM sizes and leading dimensions to OpenBLAS as
// 32-bit integers. Refused here, before anything is written, rather than by
// the GEMM wrapper half way through a pass.
void check_engine_limits(const ConvGeometry &g) {
    constexpr int64_t kMax = 0x7fffffff;
    struct Size {
        const char *what;
        int64_t value;
    } sizes[] = {{"input channels", g.c},
                 {"output channels", g.k},
                 {"input positions per image", g.in_size()},
                 {"output positions per image", g.out_size()},
                 {"channels x kernel positions per group", g.reduction()}};
    for (const Size &s : sizes)
        if (s.value > kMax)
            fail(CONV_STATUS_OVERFLOW,
                 "%s %lld exceed what the CPU engine can index (2^31 - 1 = %lld): %s", s.what,
                 (long long)s.value, (long long)kMax, g.describe().c_str());
}

// The numerical guard: every output of the user's pass, after it ran.
void check_outputs(const Pass &pass) {
    static const char *const kPass[] = {"forward", "backward-data", "backward-filter"};
    const char *name = kPass[pass.op];
    switch (pass.op) {
    case CONV_OP_FORWARD: check_finite(*pass.y, name, "y"); return;
    case CONV_OP_BACKWARD_DATA: check_finite(*pass.x, name, "dx"); return;
    default:
        check_finite(*pass.w, name, "dw");
        if (pass.bias) check_finite(*pass.bias, name, "db");
        return;
    }
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
    if (ctx.device() == CONV_DEVICE_CPU && x.dtype() != CONV_DTYPE_FLOAT32 &&
        x.dtype() != CONV_DTYPE_FLOAT64)
        fail(CONV_STATUS_UNSUPPORTED,
             "the CPU engine computes float32 and float64; %s tensors are storage only",
             dtype_name(x.dtype()));
    if (w.ndim() != x.ndim())
        fail(CONV_STATUS_SHAPE_MISMATCH, "%s has rank %d but %s has rank %d", names.w, w.ndim(),
             names.x, x.ndim());
    ConvGeometry g = make_pass_geometry(params, x.layout(), x.ndim(), x.dims(), w.dims());
    if (ctx.device() == CONV_DEVICE_CPU) check_engine_limits(g);
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
    check_no_aliasing(pass, names);
    return g;
}

size_t workspace_size(Context &ctx, const ConvParams &params, const Pass &pass) {
    Lowered l = lower(pass, validate(ctx, params, pass));
    if (ctx.device() == CONV_DEVICE_CUDA) return gpu_workspace_size(ctx, params, pass, l);
    const cpu::Algorithm &algo = select_algorithm(ctx, params, pass, l);
    size_t bytes = algo.workspace_bytes(l.g, l.op, pass.x->dtype(), ctx.threads());
    // Slack so that caller memory at any alignment can be aligned to 64.
    return bytes ? bytes + 64 : 0;
}

conv_algo_t chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass) {
    Lowered l = lower(pass, validate(ctx, params, pass));
    if (ctx.device() == CONV_DEVICE_CUDA) return gpu_chosen_algorithm(ctx, params, pass, l);
    return select_algorithm(ctx, params, pass, l).id();
}

void run(Context &ctx, const ConvParams &params, const Pass &pass, Workspace *user_ws) {
    Lowered l = lower(pass, validate(ctx, params, pass));
    if (ctx.device() == CONV_DEVICE_CUDA) {  // the CUDA engine (dispatch/gpu.cpp)
        gpu_run(ctx, params, pass, l, user_ws);
        if (ctx.check_numerics()) check_outputs(pass);
        return;
    }
    check_workspace(ctx, user_ws);  // a device workspace is no host memory
    const cpu::Algorithm &algo = select_algorithm(ctx, params, pass, l);
    std::shared_ptr<ThreadPool> pool = ctx.pool();
    int threads = pool->threads();
    size_t bytes = algo.workspace_bytes(l.g, l.op, pass.x->dtype(), threads);

    Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
    Workspace *ws = &lease.get();
    std::lock_guard<std::mutex> hold(ws->mutex());
    void *scratch = ws->reserve(bytes);  // may throw: nothing written yet
    execute(params, pass, l, algo, scratch, *pool, threads);
    if (ctx.check_numerics()) check_outputs(pass);
}

}  // namespace conv::dispatch
