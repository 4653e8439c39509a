// Plans and the per-context plan cache. A one-shot call builds a binary key
// from its tensors' shapes, the descriptor and the context's settings;
// a hit costs the key, one lookup and the per-tensor checks (device,
// overlap), so that it adds well under a microsecond to executing the plan.
#include "dispatch/plan.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/numerics.h"
#include "dispatch/engines.h"
#include "dispatch/lowering.h"

namespace conv::dispatch {
namespace {

const char *const kOpNames[] = {"fwd", "bwd_data", "bwd_filter"};

std::string dims_x(int ndim, const int64_t *d) {
    std::string s;
    for (int i = 0; i < ndim; ++i) {
        if (i) s += 'x';
        s += std::to_string(d[i]);
    }
    return s;
}

std::string axes(const ConvParams &p, const int64_t *v) { return dims_x(p.spatial, v); }

// "fwd,float32,channels_first,x=1x64x56x56,w=64x64x3x3,y=1x64x56x56,s=1x1,
// d=1x1,p=1x1:1x1,g=1[,bias][,relu][,transposed]"
std::string describe(const Plan &plan, const ConvParams &p) {
    std::string s = kOpNames[plan.op];
    s += ',';
    s += dtype_name(plan.dtype);
    s += ',';
    s += layout_name(plan.layout);
    s += ",x=" + dims_x(plan.ndim, plan.x_dims) + ",w=" + dims_x(plan.ndim, plan.w_dims) +
         ",y=" + dims_x(plan.ndim, plan.y_dims);
    s += ",s=" + axes(p, p.stride) + ",d=" + axes(p, p.dilation);
    static const char *const kAuto[] = {"", "valid", "same_upper", "same_lower"};
    if (p.auto_pad != CONV_AUTO_PAD_NOTSET && p.auto_pad <= CONV_AUTO_PAD_SAME_LOWER)
        s += std::string(",p=") + kAuto[p.auto_pad];
    else
        s += ",p=" + axes(p, p.pad_begin) + ":" + axes(p, p.pad_end);
    s += ",g=" + std::to_string(p.groups);
    if (plan.bias) s += plan.op == CONV_OP_BACKWARD_FILTER ? ",db" : ",bias";
    if (plan.problem.relu) s += ",relu";
    if (p.mode == CONV_MODE_TRANSPOSED) s += ",transposed";
    return s;
}

// The plan of a pass of geometry `g` (validated by the caller).
std::shared_ptr<Plan> build(Context &ctx, const ConvParams &params, conv_op_t op,
                            conv_dtype_t dtype, conv_layout_t layout, int ndim,
                            const int64_t *x_dims, const int64_t *w_dims, bool bias,
                            const ConvGeometry &g) {
    auto plan = std::make_shared<Plan>();
    Plan &pl = *plan;
    pl.op = op;
    pl.dtype = dtype;
    pl.layout = layout;
    pl.ndim = ndim;
    std::memcpy(pl.x_dims, x_dims, sizeof(int64_t) * (size_t)ndim);
    std::memcpy(pl.w_dims, w_dims, sizeof(int64_t) * (size_t)ndim);
    if (g.transposed)
        input_dims(g, pl.y_dims);  // the lowered convolution's input is the user's output
    else
        output_dims(g, pl.y_dims);
    pl.bias = bias && op != CONV_OP_BACKWARD_DATA;
    pl.bias_elements = g.transposed ? g.c : g.k;
    pl.ctx = &ctx;
    pl.alive = ctx.liveness();

    Lowered l = lower(op, g);
    Problem &p = pl.problem;
    p.op = l.op;
    p.g = l.g;
    p.dtype = dtype;
    p.user_op = op;
    p.bias = pl.bias;
    p.relu = op == CONV_OP_FORWARD && params.activation == CONV_ACTIVATION_RELU;
    p.threads = ctx.threads();
    p.math = ctx.math();
    p.deterministic = ctx.deterministic();
    p.workspace_limit = ctx.workspace_limit();

    const Engine &engine = ctx.engine();
    engine.check(p);
    pl.description = describe(pl, params);

    const Solver *forced = nullptr;
    if (params.algo[op] != CONV_ALGO_AUTO) {
        forced = find_solver(params.algo[op]);
        if (!forced)
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %d is not a solver of this library",
                 (int)params.algo[op]);
    }
    const Solver *tuned = nullptr;
    int id;
    if (!forced && !ctx.tuning().empty() && ctx.tuning().find(engine.tuning_key(p), &id))
        tuned = find_solver((conv_algo_t)id);
    SkipReport skip;
    if (ctx.verbose() >= 2)
        skip = [&](const Solver &s, const char *why) {
            std::fprintf(stderr, "conv_verbose,skip,%s,%s,solver=%s,%s\n", engine.name(),
                         pl.description.c_str(), s.name(), why);
        };
    pl.engine_plan = engine.plan(p, forced, tuned, ctx.runtime().get(), skip);
    return plan;
}

// The key of a one-shot call: everything its plan depends on. False when
// the call is too malformed to key (validation then says why).
bool make_key(const Context &ctx, const ConvParams &params, const Pass &pass, PlanKey &k) {
    const Tensor *ts[] = {pass.x, pass.w, pass.y};
    k.push(pass.op);
    k.push(pass.x->dtype());
    k.push(pass.x->layout());
    for (const Tensor *t : ts) {
        if (t->ndim() > kMaxDims) return false;
        k.push(t->ndim());
        for (int i = 0; i < t->ndim(); ++i) k.push(t->dim(i));
    }
    k.push(pass.bias ? pass.bias->elements() : -1);
    k.push(params.spatial);
    for (int a = 0; a < kMaxSpatial; ++a) {
        k.push(params.stride[a]);
        k.push(params.dilation[a]);
        k.push(params.pad_begin[a]);
        k.push(params.pad_end[a]);
        k.push(params.output_padding[a]);
    }
    k.push(params.auto_pad);
    k.push(params.mode);
    k.push(params.groups);
    k.push(params.activation);
    k.push(params.algo[pass.op]);
    k.push(ctx.threads());
    k.push(ctx.math());
    k.push(ctx.deterministic());
    k.push((int64_t)ctx.workspace_limit());
    return true;
}

// Every output of the user's pass, after it ran (the numerical guard).
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

}  // namespace

size_t Plan::workspace_bytes() const {
    size_t b = engine_plan->workspace_bytes();
    return b ? b + 64 : 0;  // slack so that caller memory at any alignment can be aligned
}

std::shared_ptr<Plan> make_plan(Context &ctx, const ConvParams &params, conv_op_t op,
                                conv_dtype_t dtype, conv_layout_t layout, int ndim,
                                const int64_t *x_dims, const int64_t *w_dims, bool bias) {
    if (!dtype_valid(dtype)) fail(CONV_STATUS_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (layout != CONV_LAYOUT_CHANNELS_FIRST && layout != CONV_LAYOUT_CHANNELS_LAST)
        fail(CONV_STATUS_INVALID_ARGUMENT, "unknown layout %d", (int)layout);
    if (ndim != params.spatial + 2)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "ndim %d does not match the descriptor's %d spatial dims (expected %d)", ndim,
             params.spatial, params.spatial + 2);
    ConvGeometry g = make_pass_geometry(params, layout, ndim, x_dims, w_dims);
    return build(ctx, params, op, dtype, layout, ndim, x_dims, w_dims, bias, g);
}

std::shared_ptr<const Plan> cached_plan(Context &ctx, const ConvParams &params, const Pass &pass,
                                        bool *hit) {
    PlanKey key;
    const bool keyed = make_key(ctx, params, pass, key);
    const uint64_t generation = ctx.tuning().generation();
    if (keyed)
        if (std::shared_ptr<const CachedPlan> found = ctx.plans().find(key, generation)) {
            *hit = true;
            return std::static_pointer_cast<const Plan>(found);
        }
    ConvGeometry g = validate(ctx, params, pass);
    std::shared_ptr<Plan> plan = build(ctx, params, pass.op, pass.x->dtype(), pass.x->layout(),
                                       pass.x->ndim(), pass.x->dims(), pass.w->dims(),
                                       pass.bias != nullptr, g);
    if (keyed) ctx.plans().put(key, generation, plan);
    *hit = false;
    return plan;
}

Context &plan_context(const Plan &plan) {
    if (plan.alive.expired())
        fail(CONV_STATUS_INVALID_HANDLE, "the plan's context was destroyed: a plan runs only while "
                                         "the context it was made with exists");
    return *plan.ctx;
}

void execute(const Plan &plan, const Pass &pass, Workspace *user_ws, const char *cache) {
    Context &ctx = *plan.ctx;
    check_workspace(ctx, user_ws);
    const bool trace = ctx.verbose() >= 1;
    auto t0 = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    {
        std::shared_ptr<ThreadPool> pool = ctx.pool();
        Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
        Workspace &ws = lease.get();
        // On a GPU the lock covers the enqueueing; the device uses the
        // workspace after we return, in stream order (docs/gpu.md).
        std::lock_guard<std::mutex> hold(ws.mutex());
        void *scratch = ws.reserve(plan.engine_plan->workspace_bytes());  // may throw: nothing written yet
        Operands o = lower_operands(pass, plan.problem.g.transposed);
        o.prepared = plan.prepared.get();
        plan.engine_plan->run(o, {scratch, pool.get(), ctx.runtime().get()});
    }
    if (trace) {
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const char *impl = plan.engine_plan->detail();
        std::fprintf(stderr, "conv_verbose,exec,%s,%s,solver=%s%s%s,plan=%s,%.4f\n", ctx.engine().name(),
                     plan.description.c_str(), plan.engine_plan->solver().name(), *impl ? ",impl=" : "",
                     impl, cache, ms);
    }
    if (ctx.check_numerics()) check_outputs(pass);
}

void execute_checked(const Plan &plan, const Pass &pass, Workspace *ws) {
    Context &ctx = plan_context(plan);
    const RoleNames names = role_names(plan.op);
    const Tensor *ts[] = {pass.x, pass.w, pass.y};
    const char *role[] = {names.x, names.w, names.y};
    const int64_t *want[] = {plan.x_dims, plan.w_dims, plan.y_dims};
    for (int r = 0; r < 3; ++r) {
        const Tensor &t = *ts[r];
        const char *name = role[r];
        if (t.dtype() != plan.dtype)
            fail(CONV_STATUS_TYPE_MISMATCH, "%s is %s but the plan was made for %s", name,
                 dtype_name(t.dtype()), dtype_name(plan.dtype));
        if (t.layout() != plan.layout)
            fail(CONV_STATUS_TYPE_MISMATCH, "%s is %s but the plan was made for %s", name,
                 layout_name(t.layout()), layout_name(plan.layout));
        if (t.ndim() != plan.ndim || std::memcmp(t.dims(), want[r], sizeof(int64_t) * (size_t)plan.ndim))
            fail(CONV_STATUS_SHAPE_MISMATCH, "%s dims %s do not match the plan's %s", name,
                 dims_x(t.ndim(), t.dims()).c_str(), dims_x(plan.ndim, want[r]).c_str());
    }
    const char *bname = names.bias;
    if (plan.op == CONV_OP_BACKWARD_DATA && pass.bias)
        fail(CONV_STATUS_INVALID_ARGUMENT, "a backward-data plan takes no bias tensor");
    if (plan.op != CONV_OP_BACKWARD_DATA && plan.bias != (pass.bias != nullptr))
        fail(CONV_STATUS_SHAPE_MISMATCH, plan.bias ? "the plan was made with %s but none was given"
                                                   : "%s given but the plan was made without one",
             bname);
    if (pass.bias && pass.bias->elements() != plan.bias_elements)
        fail(CONV_STATUS_SHAPE_MISMATCH, "%s has %lld elements but there are %lld output channels",
             bname, (long long)pass.bias->elements(), (long long)plan.bias_elements);
    check_tensors(ctx, pass);
    execute(plan, pass, ws, "plan");
}

bool prepare_weights(Plan &plan, const Tensor &w) {
    Context &ctx = plan_context(plan);
    if (plan.op == CONV_OP_BACKWARD_FILTER)
        fail(CONV_STATUS_INVALID_ARGUMENT, "a backward-filter plan computes the weights' "
                                           "gradient: it has no weights to prepare");
    if (w.dtype() != plan.dtype || w.layout() != plan.layout || w.ndim() != plan.ndim ||
        std::memcmp(w.dims(), plan.w_dims, sizeof(int64_t) * (size_t)plan.ndim))
        fail(CONV_STATUS_SHAPE_MISMATCH, "w (%s %s %s) is not the plan's filter (%s %s %s)",
             dims_x(w.ndim(), w.dims()).c_str(), dtype_name(w.dtype()), layout_name(w.layout()),
             dims_x(plan.ndim, plan.w_dims).c_str(), dtype_name(plan.dtype),
             layout_name(plan.layout));
    if (w.device() != ctx.device() || w.device_index() != ctx.device_index())
        fail(CONV_STATUS_TYPE_MISMATCH, "w is on %s:%d but the plan's context is %s:%d",
             device_name(w.device()), w.device_index(), device_name(ctx.device()),
             ctx.device_index());
    size_t bytes = plan.engine_plan->prepared_bytes();
    if (bytes == 0) {
        plan.prepared.reset();
        return false;
    }
    std::shared_ptr<void> copy(aligned_alloc_bytes(bytes, false, ctx.allocator()));
    std::shared_ptr<ThreadPool> pool = ctx.pool();
    plan.engine_plan->prepare_weights(w.data(), copy.get(), {nullptr, pool.get(), ctx.runtime().get()});
    plan.prepared = std::move(copy);  // replaced only once complete
    return true;
}

void release_weights(Plan &plan) { plan.prepared.reset(); }

}  // namespace conv::dispatch
