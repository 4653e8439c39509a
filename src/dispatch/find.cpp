// conv_find_algorithms: time every candidate on the caller's own tensors,
// through the engine of the context.
#include "core/error.h"
#include "dispatch/lowering.h"
#include "dispatch/plan.h"

namespace conv::dispatch {

std::vector<Trial> find_algorithms(Context &ctx, const ConvParams &params, const Pass &pass,
                                   Workspace *user_ws, int repeats) {
    check_workspace(ctx, user_ws);
    // The plan gives the problem as the engine sees it, checked by it.
    ConvParams automatic = params;
    automatic.algo[pass.op] = CONV_ALGO_AUTO;  // the search is over every solver
    bool hit;
    std::shared_ptr<const Plan> plan = cached_plan(ctx, automatic, pass, &hit);
    if (hit) check_tensors(ctx, pass);
    const Problem &p = plan->problem;
    const Engine &engine = ctx.engine();

    std::shared_ptr<ThreadPool> pool = ctx.pool();
    Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
    Workspace &ws = lease.get();
    std::lock_guard<std::mutex> hold(ws.mutex());
    // Allocated before the first trial writes the output: a search that
    // fails leaves the output untouched.
    TuningTable::Entries entry = ctx.tuning().prepare(engine.tuning_key(p));
    std::vector<Trial> trials = engine.find(p, lower_operands(pass, p.g.transposed), ws, *pool,
                                            ctx.runtime().get(), repeats);
    ctx.tuning().commit(std::move(entry), trials.front().algo);
    return trials;
}

}  // namespace conv::dispatch
