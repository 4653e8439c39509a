// The CUDA engine as an Engine: cuDNN's algorithm families as its solvers,
// and plans over cuda::prepare / cuda::run (engine.cpp, or unavailable.cpp
// in a build without CUDA). Built in every configuration: the solvers have
// names and ids whether or not this build can run them.
//
// Unlike the CPU's, this list has no order of preference: cuDNN's heuristic
// ranks the families per problem (engine.cpp, `choose`), and only cuDNN
// knows their workspaces, which it reports when the plan is made.
#include <algorithm>
#include <memory>
#include <string>

#include "core/error.h"
#include "cuda/engine.h"
#include "cuda/graph.h"

namespace conv::cuda {
namespace {

class Family final : public Solver {
public:
    // `passes`: bit 1 << op for each pass cuDNN has the family for.
    constexpr Family(conv_algo_t id, const char *name, unsigned passes, bool exact)
        : id_(id), name_(name), passes_(passes), exact_(exact) {}
    const char *name() const override { return name_; }
    conv_algo_t public_id() const override { return id_; }
    const char *why_not(const Problem &p) const override {
        static const char *const kMissing[] = {"cuDNN has no forward algorithm of this family",
                                               "cuDNN has no backward-data algorithm of this family",
                                               "cuDNN has no backward-filter algorithm of this family"};
        return passes_ & (1u << p.op) ? nullptr : kMissing[p.op];
    }
    // cuDNN sizes the workspace when the plan is made (it needs the GPU).
    Estimate estimate(const Problem &) const override { return {}; }
    bool strict() const override { return exact_; }

private:
    conv_algo_t id_;
    const char *name_;
    unsigned passes_;
    bool exact_;
};

constexpr unsigned kFwd = 1, kBwdData = 2, kBwdFilter = 4, kAll = 7;
// The families, with the passes cuDNN implements each for (conv.h's enum
// comments; engine.cpp maps them onto cuDNN's per-pass enums). FFT and
// Winograd round like the CPU's Winograd: not for CONV_MATH_STRICT.
const Family kFamilies[] = {
    {CONV_ALGO_CUDNN_IMPLICIT_GEMM, "cudnn_implicit_gemm", kAll, true},
    {CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM, "cudnn_implicit_precomp_gemm", kAll, true},
    {CONV_ALGO_CUDNN_GEMM, "cudnn_gemm", kFwd | kBwdFilter, true},
    {CONV_ALGO_CUDNN_DIRECT, "cudnn_direct", kFwd, true},
    {CONV_ALGO_CUDNN_FFT, "cudnn_fft", kAll, false},
    {CONV_ALGO_CUDNN_FFT_TILING, "cudnn_fft_tiling", kAll, false},
    {CONV_ALGO_CUDNN_WINOGRAD, "cudnn_winograd", kFwd | kBwdData, false},
    {CONV_ALGO_CUDNN_WINOGRAD_NONFUSED, "cudnn_winograd_nonfused", kAll, false},
};

// prepare() reads only whether a bias is given: this stands for one.
char bias_given;

Call call_of(const Problem &p, const Operands *o) {
    if (!o) return {p.op, &p.g, p.dtype, nullptr, nullptr, nullptr, p.bias ? &bias_given : nullptr, p.relu};
    return {p.op, &p.g, p.dtype, o->x, o->w, o->y, o->bias, p.relu};
}

Settings settings_of(const Problem &p, const Solver *tuned) {
    // The engine's own plan cache keeps an AUTO plan while the "generation"
    // it was made with holds: here, the tuned choice it was made from.
    return {p.math, p.deterministic, p.workspace_limit, tuned ? (uint64_t)tuned->id() : 0};
}

class CudaPlan final : public EnginePlan {
public:
    CudaPlan(const Problem &p, const Solver &s, Prepared prep) : p_(p), solver_(s), prep_(std::move(prep)) {}
    const Solver &solver() const override { return solver_; }
    size_t workspace_bytes() const override { return prep_.workspace_bytes; }
    void run(const Operands &o, const ExecEnv &env) const override {
        if (!env.runtime) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA plan run without its device");
        Call c = call_of(p_, &o);
        cuda::run(*env.runtime, c, prep_, env.scratch);
    }

private:
    const Problem p_;  // owns the geometry the engine's Call points at
    const Solver &solver_;
    const Prepared prep_;
};

const Solver &family(conv_algo_t id) {
    for (const Family &f : kFamilies)
        if (f.id() == id) return f;
    fail(CONV_STATUS_INTERNAL_ERROR, "cuDNN chose algorithm %d, which has no solver", (int)id);
}

class CudaEngine final : public Engine {
public:
    CudaEngine() { solvers(); }  // numbers the solvers before any id is read
    const char *name() const override { return "cuda"; }
    const std::vector<const Solver *> &solvers() const override {
        // The graph solver last: AUTO tries it before cuDNN's heuristic ranks
        // the families (plan(), cuda/graph.h).
        static const SolverList list({&kFamilies[0], &kFamilies[1], &kFamilies[2], &kFamilies[3],
                                      &kFamilies[4], &kFamilies[5], &kFamilies[6], &kFamilies[7],
                                      &graph::solver()},
                                     kFirstPrivateSolverId + kPrivateIdsPerEngine);
        static_assert(sizeof kFamilies / sizeof kFamilies[0] == 8, "every family in the list");
        return list.all();
    }
    void check(const Problem &) const override {}  // every dtype, layout and rank
    // Its name, compute capability, cuDNN and CUDA runtime versions, so a
    // tuning file from another GPU or library is refused, not misapplied.
    std::string device_signature(const DeviceRuntime *rt) const override {
        return rt ? rt->signature() : "cuda (no device)";
    }
    std::string tuning_key(const Problem &p) const override {
        static const char *const kMath[] = {"default", "strict", "fast"};
        return problem_key(p) + format(" cuda math=%s%s", p.math >= 0 && p.math <= 2 ? kMath[p.math] : "?",
                                       p.deterministic ? " deterministic" : "");
    }
    std::shared_ptr<const EnginePlan> plan(const Problem &p, const Solver *forced,
                                           const Solver *tuned, DeviceRuntime *rt,
                                           const SkipReport &) const override {
        if (!rt) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA plan without its device");
        if (forced == &graph::solver()) return graph::plan(p, *rt, nullptr);
        // AUTO: the graph first, or where a search chose it; a search's
        // legacy family otherwise. Where no engine runs the graph, the legacy
        // choice.
        const bool tuned_graph = tuned == &graph::solver();
        if (!forced && (tuned_graph || (!tuned && graph::enabled())) && !graph::why_not(p)) {
            try {
                return graph::plan(p, *rt, nullptr);
            } catch (const Error &e) {
                if (e.status() != CONV_STATUS_UNSUPPORTED) throw;  // else the legacy choice
            }
        }
        if (forced && !is_cuda_algo(forced->id()))
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s (%d) is not available on a CUDA device",
                 forced->name(), (int)forced->id());
        const conv_algo_t tuned_id = tuned && !tuned_graph && is_cuda_algo(tuned->id()) ? tuned->id() : CONV_ALGO_AUTO;
        Call c = call_of(p, nullptr);
        Prepared prep = prepare(*rt, c, settings_of(p, tuned), forced ? forced->id() : CONV_ALGO_AUTO,
                                [tuned_id] { return tuned_id; });
        return std::make_shared<CudaPlan>(p, family(prep.algo), std::move(prep));
    }
    std::vector<conv::Trial> find(const Problem &p, const Operands &o, Workspace &ws, ThreadPool &,
                                  DeviceRuntime *rt, int) const override {
        if (!rt) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA search without its device");
        Call c = call_of(p, &o);
        Settings s = settings_of(p, nullptr);
        std::vector<conv::Trial> trials;
        std::string legacy_failed;
        try {
            for (const cuda::Trial &t : cuda::find(*rt, c, s, ws)) trials.push_back({t.algo, t.ms, t.workspace_bytes});
        } catch (const Error &e) {
            if (e.status() != CONV_STATUS_UNSUPPORTED) throw;
            legacy_failed = e.what();
        }
        std::shared_ptr<const EnginePlan> graph_plan = time_graph(p, o, ws, *rt, &trials);
        if (trials.empty()) fail(CONV_STATUS_UNSUPPORTED, "%s", legacy_failed.c_str());
        std::stable_sort(trials.begin(), trials.end(),
                         [](const conv::Trial &a, const conv::Trial &b) { return a.ms < b.ms; });
        // Leave the output as the winner computes it, epilogue included.
        if (trials.front().algo == graph::solver().id()) {
            graph_plan->run(o, {ws.reserve(graph_plan->workspace_bytes()), nullptr, rt});
        } else {
            Prepared prep = prepare(*rt, c, s, trials.front().algo, {});
            cuda::run(*rt, c, prep, ws.reserve(prep.workspace_bytes));
        }
        return trials;
    }

private:
    // The graph solver's plan timed on the caller's operands and added to
    // `trials`, where it applies and its workspace fits a wrapped workspace
    // (the context's limit is the plan's own filter); null where not.
    static std::shared_ptr<const EnginePlan> time_graph(const Problem &p, const Operands &o, Workspace &ws,
                                                        DeviceRuntime &rt, std::vector<conv::Trial> *trials) {
        if (!graph::enabled() || graph::why_not(p)) return nullptr;
        std::shared_ptr<const EnginePlan> plan;
        try {
            plan = graph::plan(p, rt, nullptr);
        } catch (const Error &e) {
            if (e.status() == CONV_STATUS_UNSUPPORTED) return nullptr;
            throw;
        }
        const size_t need = plan->workspace_bytes();
        if (!ws.owned() && ws.size() < need + 64) return nullptr;
        void *scratch = ws.reserve(need);
        const double ms = time_launches(rt, [&] { plan->run(o, {scratch, nullptr, &rt}); }, 5);
        trials->push_back({graph::solver().id(), ms, need + 64});
        return plan;
    }
};

}  // namespace

const Engine &engine() {
    static const CudaEngine e;
    return e;
}

bool is_cuda_algo(conv_algo_t a) {
    for (const Family &f : kFamilies)
        if (f.id() == a) return true;
    return a == graph::solver().id();
}

}  // namespace conv::cuda
