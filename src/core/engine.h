// An engine as dispatch sees it: an ordered list of solvers, and the plans
// it makes from them. dispatch asks the engine of a context (Context::engine)
// and never names a device or a kernel; each engine has one public header
// (cpu/engine.h, cuda/engine.h) that hands out its Engine.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device_runtime.h"
#include "core/solver.h"
#include "core/thread_pool.h"
#include "core/workspace.h"

namespace conv {

// The data of one pass in the engine's roles (as Problem::op): x the input
// (dx for BACKWARD_DATA), w the filter (dw for BACKWARD_FILTER), y the
// output (dy for the backward passes); `bias` the user's bias or db, null
// when the problem has none. `prepared`: the plan's prepared weights, or null.
struct Operands {
    void *x, *w, *y, *bias;
    const void *prepared;
};

// What a plan runs on besides its operands: scratch memory (at least the
// plan's workspace_bytes(), 64-byte aligned), the context's thread pool
// (CPU), the context's device runtime (GPU, else null).
struct ExecEnv {
    void *scratch;
    ThreadPool *pool;
    DeviceRuntime *runtime;
};

// A prepared pass: the solver's choices made once. Immutable; run() may be
// called from several threads at once.
class EnginePlan {
public:
    virtual ~EnginePlan() = default;
    virtual const Solver &solver() const = 0;
    virtual size_t workspace_bytes() const = 0;  // before the 64 bytes of slack
    // What the solver runs inside, where it picks among engines of its own
    // (cudnn_graph: cuDNN's engine and knobs); "" otherwise. For the trace.
    virtual const char *detail() const { return ""; }
    virtual void run(const Operands &o, const ExecEnv &env) const = 0;
    // Prepared weights (conv_plan_prepare_weights): bytes of host memory the
    // prepared copy takes, 0 when the solver has nothing to prepare.
    virtual size_t prepared_bytes() const { return 0; }
    // Writes the prepared copy of filter `w` to `out` (prepared_bytes(), 64-byte aligned).
    virtual void prepare_weights(const void *w, void *out, const ExecEnv &env) const {
        (void)w, (void)out, (void)env;
    }
};

// One benchmarked candidate of find_algorithms.
struct Trial {
    conv_algo_t algo;
    double ms;
    size_t workspace_bytes;  // with the 64 bytes of slack
};

// Receives the level-2 trace while a plan is chosen: a solver passed over and why.
using SkipReport = std::function<void(const Solver &, const char *why)>;

class Engine {
public:
    virtual ~Engine() = default;
    virtual const char *name() const = 0;  // "cpu", "cuda"
    // Every solver, in the engine's order of preference.
    virtual const std::vector<const Solver *> &solvers() const = 0;
    // Throws (UNSUPPORTED, OVERFLOW) for what no solver of the engine can
    // compute -- dtypes, index ranges -- naming the numbers.
    virtual void check(const Problem &p) const = 0;
    // The tuning table's key for a problem (tuning files keep it: stable).
    virtual std::string tuning_key(const Problem &p) const = 0;
    // What choices are measured on, for tuning files and device names: "cpu
    // <model> (<isa>)", or the GPU's runtime signature (`rt`, null on the CPU).
    virtual std::string device_signature(const DeviceRuntime *rt) const = 0;
    // The plan of a problem: `forced` when not null (UNSUPPORTED with the
    // reason when it does not apply), else `tuned` when it still applies
    // (null: none), else the engine's own choice. `skip` (may be empty)
    // hears of the solvers passed over.
    virtual std::shared_ptr<const EnginePlan> plan(const Problem &p, const Solver *forced,
                                                   const Solver *tuned, DeviceRuntime *rt,
                                                   const SkipReport &skip) const = 0;
    // Times every solver that may run the problem on the caller's operands,
    // fastest first, and leaves the output as the fastest computes it. `ws`
    // is locked by the caller; a wrapped one too small for a candidate
    // skips it. UNSUPPORTED when none could run.
    virtual std::vector<Trial> find(const Problem &p, const Operands &o, Workspace &ws,
                                    ThreadPool &pool, DeviceRuntime *rt, int repeats) const = 0;
};

}  // namespace conv
