// conv_find_algorithms: time every candidate on the caller's own tensors.
#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "dispatch/gpu.h"
#include "dispatch/lowering.h"
#include "dispatch/registry.h"

namespace conv::dispatch {

std::vector<Trial> find_algorithms(Context &ctx, const ConvParams &params, const Pass &pass,
                                   Workspace *user_ws, int repeats) {
    Lowered l = lower(pass, validate(ctx, params, pass));
    if (ctx.device() == CONV_DEVICE_CUDA) return gpu_find(ctx, params, pass, l, user_ws);
    check_workspace(ctx, user_ws);
    std::shared_ptr<ThreadPool> pool = ctx.pool();
    int threads = pool->threads();
    conv_dtype_t dtype = pass.x->dtype();

    Context::Lease lease(ctx, user_ws);  // the caller's, or one from the pool
    Workspace *ws = &lease.get();
    std::lock_guard<std::mutex> hold(ws->mutex());

    // Everything that can fail -- the workspace, the result list, the tuning
    // entry -- is allocated before the first trial writes the output, so a
    // failed search (OUT_OF_MEMORY included) leaves the output untouched.
    std::vector<const cpu::Algorithm *> runnable;
    std::string skipped;
    size_t most = 0;
    for (const cpu::Algorithm *algo : cpu_candidates(l.g, l.op, ctx.math() == CONV_MATH_STRICT)) {
        size_t bytes = algo->workspace_bytes(l.g, l.op, dtype, threads);
        if (!ws->owned()) {
            try {
                ws->reserve(bytes);  // a wrapped workspace: only checks the size
            } catch (const Error &e) {
                if (e.status() != CONV_STATUS_WORKSPACE_TOO_SMALL) throw;
                skipped += format(" %s (needs %zu bytes)", conv_algo_name(algo->id()), bytes + 64);
                continue;
            }
        }
        most = std::max(most, bytes);
        runnable.push_back(algo);
    }
    if (runnable.empty())
        fail(CONV_STATUS_UNSUPPORTED, "no algorithm could run: the workspace is too small for%s",
             skipped.c_str());
    ws->reserve(most);  // an owned workspace grows once, to the largest need
    std::vector<Trial> trials;
    trials.reserve(runnable.size());
    std::vector<double> times;
    times.reserve(static_cast<size_t>(repeats) + 1);
    TuningTable::Entries entry = ctx.tuning().prepare(problem_key(l, dtype));

    for (const cpu::Algorithm *algo : runnable) {
        size_t bytes = algo->workspace_bytes(l.g, l.op, dtype, threads);
        void *scratch = ws->reserve(bytes);  // allocates nothing now
        times.clear();
        for (int r = 0; r <= repeats; ++r) {  // run 0 warms caches and pages up
            auto t0 = std::chrono::steady_clock::now();
            execute(params, pass, l, *algo, scratch, *pool, threads);
            auto t1 = std::chrono::steady_clock::now();
            if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::sort(times.begin(), times.end());
        trials.push_back({algo->id(), times[times.size() / 2], bytes ? bytes + 64 : 0});
    }
    std::stable_sort(trials.begin(), trials.end(),
                     [](const Trial &a, const Trial &b) { return a.ms < b.ms; });
    ctx.tuning().commit(std::move(entry), trials.front().algo);

    // Leave the output as the winner computes it (a descriptor forcing an
    // algorithm still gets what it asked for on its next call).
    const cpu::Algorithm &best = *find_cpu(trials.front().algo);
    execute(params, pass, l, best, ws->reserve(best.workspace_bytes(l.g, l.op, dtype, threads)),
            *pool, threads);
    return trials;
}

}  // namespace conv::dispatch
