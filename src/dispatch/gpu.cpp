#include "dispatch/gpu.h"

#include <mutex>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/engine.h"

namespace conv::dispatch {
namespace {

cuda::Call make_call(const ConvParams &params, const Pass &pass, const Lowered &l) {
    // The user's bias (or db) and activation: the engine applies them to the
    // right tensor, also for a transposed convolution (see cuda::Call).
    return {l.op,
            &l.g,
            pass.x->dtype(),
            l.x->data(),
            l.w->data(),
            l.y->data(),
            pass.bias ? pass.bias->data() : nullptr,
            pass.op == CONV_OP_FORWARD && params.activation == CONV_ACTIVATION_RELU};
}

cuda::Settings settings(Context &ctx) {
    return {ctx.math(), ctx.deterministic(), ctx.workspace_limit(), ctx.tuning().generation()};
}

DeviceRuntime &runtime(const Context &ctx) {
    if (!ctx.runtime()) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA context without its runtime");
    return *ctx.runtime();
}

cuda::Prepared prepare(Context &ctx, const ConvParams &params, const Pass &pass, const Lowered &l,
                       const cuda::Call &c, const cuda::Settings &s) {
    // Asked only when the engine has no plan for this problem yet (or the
    // table changed since): the tuned choice, as for the CPU. One captured
    // pointer, so the std::function needs no allocation on the hot path.
    struct Args {
        Context *ctx;
        const Lowered *l;
        conv_dtype_t dtype;
    } args{&ctx, &l, pass.x->dtype()};
    const Args *a = &args;
    std::function<conv_algo_t()> tuned = [a]() -> conv_algo_t {
        int id;
        if (a->ctx->tuning().find(gpu_problem_key(*a->ctx, *a->l, a->dtype), &id) &&
            cuda::is_cuda_algo((conv_algo_t)id))
            return (conv_algo_t)id;
        return CONV_ALGO_AUTO;
    };
    return cuda::prepare(runtime(ctx), c, s, params.algo[pass.op], tuned);
}

}  // namespace

int gpu_count(std::string *why) noexcept { return cuda::device_count(why); }

std::shared_ptr<DeviceRuntime> open_gpu(int index) { return cuda::open(index); }

void set_gpu_stream(Context &ctx, void *stream) { cuda::set_stream(runtime(ctx), stream); }
void *gpu_stream(Context &ctx) { return cuda::get_stream(runtime(ctx)); }

void check_workspace(const Context &ctx, const Workspace *ws) {
    if (ws && (ws->device() != ctx.device() || ws->device_index() != ctx.device_index()))
        fail(CONV_STATUS_TYPE_MISMATCH,
             "workspace ws was made with a %s:%d context but the context is %s:%d",
             device_name(ws->device()), ws->device_index(), device_name(ctx.device()),
             ctx.device_index());
}

std::string gpu_problem_key(const Context &ctx, const Lowered &l, conv_dtype_t dtype) {
    static const char *const kMath[] = {"default", "strict", "fast"};
    conv_math_t m = ctx.math();
    return problem_key(l, dtype) +
           format(" cuda math=%s%s", m >= 0 && m <= 2 ? kMath[m] : "?",
                  ctx.deterministic() ? " deterministic" : "");
}

size_t gpu_workspace_size(Context &ctx, const ConvParams &params, const Pass &pass,
                          const Lowered &l) {
    cuda::Call c = make_call(params, pass, l);
    size_t bytes = prepare(ctx, params, pass, l, c, settings(ctx)).workspace_bytes;
    return bytes ? bytes + 64 : 0;
}

conv_algo_t gpu_chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass,
                                 const Lowered &l) {
    cuda::Call c = make_call(params, pass, l);
    return prepare(ctx, params, pass, l, c, settings(ctx)).algo;
}

void gpu_run(Context &ctx, const ConvParams &params, const Pass &pass, const Lowered &l,
             Workspace *user_ws) {
    check_workspace(ctx, user_ws);
    cuda::Call c = make_call(params, pass, l);
    cuda::Prepared p = prepare(ctx, params, pass, l, c, settings(ctx));
    Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
    Workspace *ws = &lease.get();
    // The lock covers the enqueueing; the GPU uses the workspace after we
    // return, in stream order (docs/gpu.md: one stream per workspace).
    std::lock_guard<std::mutex> hold(ws->mutex());
    void *scratch = ws->reserve(p.workspace_bytes);  // may throw: nothing written yet
    cuda::run(runtime(ctx), c, p, scratch);
}

std::vector<Trial> gpu_find(Context &ctx, const ConvParams &params, const Pass &pass,
                            const Lowered &l, Workspace *user_ws) {
    check_workspace(ctx, user_ws);
    cuda::Call c = make_call(params, pass, l);
    cuda::Settings s = settings(ctx);
    Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
    Workspace *ws = &lease.get();
    std::lock_guard<std::mutex> hold(ws->mutex());
    TuningTable::Entries entry = ctx.tuning().prepare(gpu_problem_key(ctx, l, pass.x->dtype()));
    std::vector<cuda::Trial> found = cuda::find(runtime(ctx), c, s, *ws);
    std::vector<Trial> trials;
    trials.reserve(found.size());
    for (const cuda::Trial &t : found) trials.push_back({t.algo, t.ms, t.workspace_bytes});
    ctx.tuning().commit(std::move(entry), trials.front().algo);
    // Leave the output as the winner computes it, epilogue included.
    cuda::Prepared p = cuda::prepare(runtime(ctx), c, s, trials.front().algo, {});
    cuda::run(runtime(ctx), c, p, ws->reserve(p.workspace_bytes));
    return trials;
}

}  // namespace conv::dispatch
