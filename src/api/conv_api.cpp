// Shape and cost inference, workspace sizes and the convolution passes.
#include <algorithm>
#include <vector>

#include "api/guard.h"
#include "api/handles.h"
#include "core/dtype.h"
#include "core/geometry.h"
#include "core/numerics.h"
#include "dispatch/operation.h"
#include "dispatch/plan.h"

using namespace conv;

namespace {

ConvGeometry geometry_from_dims(const ConvParams &p, int ndim, const int64_t *x_dims,
                                const int64_t *w_dims) {
    api::require(x_dims, "x_dims");
    api::require(w_dims, "w_dims");
    if (ndim != p.spatial + 2)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "ndim %d does not match the descriptor's %d spatial dims (expected %d)", ndim,
             p.spatial, p.spatial + 2);
    return make_pass_geometry(p, CONV_LAYOUT_CHANNELS_FIRST, ndim, x_dims, w_dims);
}

const Tensor *tensor(conv_tensor_t t, const char *name) { return &api::checked(t, name).impl; }
const Tensor *optional_tensor(conv_tensor_t t, const char *name) {
    return t ? tensor(t, name) : nullptr;
}
void check_op(int op) {
    if (op < CONV_OP_FORWARD || op > CONV_OP_BACKWARD_FILTER)
        fail(CONV_STATUS_INVALID_ARGUMENT, "unknown op %d", op);
}

Workspace *optional_workspace(conv_workspace_t ws) {
    conv_workspace_s *h = api::checked_optional(ws, "ws");
    return h ? &h->impl : nullptr;
}

}  // namespace

extern "C" {

conv_status_t conv_output_dims(conv_desc_t desc, int ndim, const int64_t *x_dims,
                               const int64_t *w_dims, int64_t *y_dims) {
    return api::guarded([&] {
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(y_dims, "y_dims");
        ConvGeometry g = geometry_from_dims(p, ndim, x_dims, w_dims);
        if (g.transposed)
            input_dims(g, y_dims);  // the lowered convolution's input is the output
        else
            output_dims(g, y_dims);
    });
}

conv_status_t conv_cost(conv_desc_t desc, conv_op_t op, conv_dtype_t dtype, int ndim,
                        const int64_t *x_dims, const int64_t *w_dims, double *flops,
                        double *bytes) {
    return api::guarded([&] {
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(flops, "flops");
        api::require(bytes, "bytes");
        if (!dtype_valid(dtype)) fail(CONV_STATUS_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
        check_op(op);
        ConvGeometry g = geometry_from_dims(p, ndim, x_dims, w_dims);
        double x = (double)g.n * g.c * g.in_size(), w = (double)g.k * g.cg() * g.kernel_size();
        double y = (double)g.n * g.k * g.out_size();
        // Each pass reads two of the three tensors and writes the third.
        double bias = op == CONV_OP_BACKWARD_DATA ? 0 : (double)(g.transposed ? g.c : g.k);
        double elements = x + w + y + bias;
        *flops = g.flops();
        *bytes = elements * (double)dtype_size(dtype);
    });
}

conv_status_t conv_workspace_size(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                  conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                  size_t *bytes) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(bytes, "bytes");
        check_op(op);
        dispatch::Pass pass{op, tensor(x, "x"), tensor(w, "w"), tensor(y, "y"), nullptr};
        *bytes = dispatch::workspace_size(c, p, pass);
    });
}

conv_status_t conv_forward(conv_context_t ctx, conv_desc_t desc, conv_tensor_t x, conv_tensor_t w,
                           conv_tensor_t b, conv_tensor_t y, conv_workspace_t ws) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        dispatch::Pass pass{CONV_OP_FORWARD, tensor(x, "x"), tensor(w, "w"), tensor(y, "y"),
                            optional_tensor(b, "b")};
        dispatch::run(c, p, pass, optional_workspace(ws));
    });
}

conv_status_t conv_backward_data(conv_context_t ctx, conv_desc_t desc, conv_tensor_t w,
                                 conv_tensor_t dy, conv_tensor_t dx, conv_workspace_t ws) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        dispatch::Pass pass{CONV_OP_BACKWARD_DATA, tensor(dx, "dx"), tensor(w, "w"),
                            tensor(dy, "dy"), nullptr};
        dispatch::run(c, p, pass, optional_workspace(ws));
    });
}

conv_status_t conv_backward_filter(conv_context_t ctx, conv_desc_t desc, conv_tensor_t x,
                                   conv_tensor_t dy, conv_tensor_t dw, conv_tensor_t db,
                                   conv_workspace_t ws) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        dispatch::Pass pass{CONV_OP_BACKWARD_FILTER, tensor(x, "x"), tensor(dw, "dw"),
                            tensor(dy, "dy"), optional_tensor(db, "db")};
        dispatch::run(c, p, pass, optional_workspace(ws));
    });
}

}  // extern "C"

extern "C" {

conv_status_t conv_chosen_algorithm(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                    conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                    conv_algo_t *algo) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(algo, "algo");
        check_op(op);
        dispatch::Pass pass{op, tensor(x, "x"), tensor(w, "w"), tensor(y, "y"), nullptr};
        *algo = dispatch::chosen_algorithm(c, p, pass);
    });
}

conv_status_t conv_find_algorithms(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                   conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                   conv_workspace_t ws, int capacity, conv_algo_t *algos,
                                   double *milliseconds, size_t *workspace_bytes, int *count) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(count, "count");
        check_op(op);
        if (capacity < 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "capacity %d must be >= 0", capacity);
        dispatch::Pass pass{op, tensor(x, "x"), tensor(w, "w"), tensor(y, "y"), nullptr};
        std::vector<Trial> trials =
            dispatch::find_algorithms(c, p, pass, optional_workspace(ws), CONV_FIND_REPEATS);
        if (c.check_numerics()) {  // the output the search left, as run() checks it
            static const char *const kPass[] = {"forward (algorithm search)",
                                                "backward-data (algorithm search)",
                                                "backward-filter (algorithm search)"};
            if (op == CONV_OP_FORWARD) check_finite(*pass.y, kPass[op], "y");
            else if (op == CONV_OP_BACKWARD_DATA) check_finite(*pass.x, kPass[op], "dx");
            else check_finite(*pass.w, kPass[op], "dw");
        }
        int n = std::min<int>(capacity, (int)trials.size());
        for (int i = 0; i < n; ++i) {
            if (algos) algos[i] = trials[i].algo;
            if (milliseconds) milliseconds[i] = trials[i].ms;
            if (workspace_bytes) workspace_bytes[i] = trials[i].workspace_bytes;
        }
        *count = n;
    });
}

}  // extern "C"

// Plans.
extern "C" {

conv_status_t conv_plan_create(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                               conv_dtype_t dtype, conv_layout_t layout, int ndim,
                               const int64_t *x_dims, const int64_t *w_dims, int with_bias,
                               conv_plan_t *out) {
    return api::guarded([&] {
        Context &c = api::checked(ctx, "ctx").impl;
        const ConvParams &p = api::checked(desc, "desc").impl;
        api::require(x_dims, "x_dims");
        api::require(w_dims, "w_dims");
        api::require(out, "out");
        check_op(op);
        if (with_bias != 0 && with_bias != 1)
            fail(CONV_STATUS_INVALID_ARGUMENT, "with_bias %d must be 0 or 1", with_bias);
        auto plan = dispatch::make_plan(c, p, op, dtype, layout, ndim, x_dims, w_dims, with_bias);
        *out = api::make_handle<conv_plan_s>(std::move(plan));
    });
}

void conv_plan_destroy(conv_plan_t plan) { api::destroy(plan); }

conv_status_t conv_plan_execute(conv_plan_t plan, conv_tensor_t x, conv_tensor_t w,
                                conv_tensor_t b, conv_tensor_t y, conv_workspace_t ws) {
    return api::guarded([&] {
        const dispatch::Plan &pl = *api::checked(plan, "plan").impl;
        const dispatch::RoleNames names = dispatch::role_names(pl.op);
        dispatch::Pass pass{pl.op, tensor(x, names.x), tensor(w, names.w), tensor(y, names.y),
                            optional_tensor(b, names.bias)};
        dispatch::execute_checked(pl, pass, optional_workspace(ws));
    });
}

conv_status_t conv_plan_get_workspace_size(conv_plan_t plan, size_t *bytes) {
    return api::guarded([&] {
        const dispatch::Plan &pl = *api::checked(plan, "plan").impl;
        *api::require(bytes, "bytes") = pl.workspace_bytes();
    });
}

conv_status_t conv_plan_get_algorithm(conv_plan_t plan, conv_algo_t *algo) {
    return api::guarded([&] {
        const dispatch::Plan &pl = *api::checked(plan, "plan").impl;
        *api::require(algo, "algo") = pl.engine_plan->solver().id();
    });
}

conv_status_t conv_plan_get_solver_name(conv_plan_t plan, const char **name) {
    return api::guarded([&] {
        const dispatch::Plan &pl = *api::checked(plan, "plan").impl;
        *api::require(name, "name") = pl.engine_plan->solver().name();
    });
}

conv_status_t conv_plan_prepare_weights(conv_plan_t plan, conv_tensor_t w, int *prepared) {
    return api::guarded([&] {
        dispatch::Plan &pl = *api::checked(plan, "plan").impl;
        const Tensor *wt = tensor(w, "w");
        api::require(prepared, "prepared");
        *prepared = dispatch::prepare_weights(pl, *wt) ? 1 : 0;
    });
}

conv_status_t conv_plan_release_weights(conv_plan_t plan) {
    return api::guarded([&] { dispatch::release_weights(*api::checked(plan, "plan").impl); });
}

}  // extern "C"
