// The CPU engine: the ordered list of its solvers, the choice among them,
// and the plan that runs one -- including the parts of a pass no solver
// needs to know: the empty reductions (zero channels, filters, images or
// positions), and the bias and activation a transposed convolution applies
// around its lowered pass.
#include "cpu/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "core/dtype.h"
#include "core/error.h"
#include "cpu/algorithm.h"
#include "cpu/amx.h"
#include "cpu/blas.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"
#include "cpu/jit/jit.h"

namespace conv::cpu {
namespace {

// Every CPU solver, in order of preference: the first that applies, is
// allowed by the math mode and expects to win (Algorithm::competitive) runs.
// Solvers without a conv.h value are numbered from kFirstPrivateSolverId.
const std::vector<const Solver *> &solver_list() {
    static const SolverList list({
        &gemm_1x1_algorithm(),
        &depthwise_direct_algorithm(),
        &winograd_4x4_3x3_algorithm(),
        &direct_avx512_algorithm(),
        &implicit_gemm_algorithm(),
        &im2col_gemm_algorithm(),
        &bf16_gemm_algorithm(),
        &brgemm_forward_algorithm(),
        &brgemm_backward_data_algorithm(),
        &brgemm_backward_filter_algorithm(),
    }, kFirstPrivateSolverId);
    return list.all();
}

const Algorithm &cpu_solver(const Solver &s) { return static_cast<const Algorithm &>(s); }

bool allowed(const Solver &s, const Problem &p) { return s.strict() || p.math != CONV_MATH_STRICT; }

// A solver whose workspace exceeds 8x the smallest need among the
// applicable solvers, 8x the pass's own tensors and 4 MiB is not chosen
// automatically: scratch that grows with padding or dilation (implicit
// GEMM's padded copy) must not turn a problem im2col computes in kilobytes
// into gigabytes. Scratch in proportion to the data is fine (Winograd's
// transformed filters are 4x the weights), and below 4 MiB any workspace is
// cheap next to the pass.
constexpr size_t kWorkspaceFloor = 4u << 20;
constexpr size_t kWorkspaceRatio = 8;

// A pass with nothing to sum: no images, channels, filters, input or
// output positions. Its outputs are zeros (plus the bias and activation,
// or the bias gradient): the engine writes them, no solver needs to.
bool empty_reduction(const ConvGeometry &g) {
    return g.n == 0 || g.c == 0 || g.k == 0 || g.in_size() == 0 || g.out_size() == 0;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            size_t colon = line.find(':');
            if (colon != std::string::npos) {
                size_t b = line.find_first_not_of(" \t", colon + 1);
                return b == std::string::npos ? "unknown" : line.substr(b);
            }
        }
    return "unknown";
}

// memset that accepts the null data of an empty tensor.
void zero(void *p, int64_t elements, size_t size) {
    if (elements > 0) std::memset(p, 0, (size_t)elements * size);
}

int64_t x_elements(const ConvGeometry &g) { return g.n * g.c * g.in_size(); }
int64_t w_elements(const ConvGeometry &g) { return g.k * g.cg() * g.kernel_size(); }
int64_t y_elements(const ConvGeometry &g) { return g.n * g.k * g.out_size(); }

// The most workspace AUTO may take for a problem whose leanest solver needs `least`.
size_t workspace_bound(const Problem &p, size_t least) {
    const double tensors = ((double)x_elements(p.g) + (double)w_elements(p.g) + (double)y_elements(p.g)) *
                           (double)dtype_size(p.dtype);
    const double bound = std::max({(double)kWorkspaceFloor, (double)least * kWorkspaceRatio,
                                   tensors * kWorkspaceRatio});
    return bound >= (double)SIZE_MAX ? SIZE_MAX : (size_t)bound;
}

// The threads a problem's plan runs on: the context's, but no more than
// each get kFlopsPerThread of work. Handing a share to another thread and
// waiting for it costs about what a share that small takes. 2 threads
// against 1 (Zen 4, batch 1, 9 alternated runs): 8->8 8x8 3x3 (74 KFLOP)
// 0.63-0.69x as fast on 2, the digits' 1->16 8x8 backward-filter (18 KFLOP)
// 0.31x; from LeNet-5's 1->6 5x5 (235 KFLOP) on, 2 threads mostly pay
// (its forward 1.28x, MNIST's 1->32 (389 KFLOP) 1.53x, the digits' 16->32
// 8x8 (590 KFLOP) 1.15-1.23x). The sums do not depend on the threads.
// CONV_CPU_THREAD_KFLOPS (read once per process) sets the share in KFLOP;
// 0 gives every plan the context's threads (the tests run so, to keep the
// threaded paths of small problems covered).
constexpr double kFlopsPerThread = 128e3;
double flops_per_thread() {
    static const double v = [] {
        const char *e = std::getenv("CONV_CPU_THREAD_KFLOPS");
        if (!e || !*e) return kFlopsPerThread;
        char *end = nullptr;
        const double k = std::strtod(e, &end);
        return *end == '\0' && k >= 0 ? k * 1e3 : kFlopsPerThread;  // (not a number: the default)
    }();
    return v;
}
Problem on_useful_threads(const Problem &p) {
    Problem q = p;
    const double share = flops_per_thread();
    if (share > 0)
        q.threads = (int)std::clamp<double>(std::ceil(p.g.flops() / share), 1.0, (double)std::max(p.threads, 1));
    return q;
}

class CpuPlan final : public EnginePlan {
public:
    CpuPlan(const Algorithm &a, const Problem &p)
        : algo_(a), p_(p), ws_(empty_reduction(p.g) ? 0 : a.workspace_bytes(p)),
          planned_(empty_reduction(p.g) ? nullptr : a.plan_run(p)) {}

    const Solver &solver() const override { return algo_; }
    size_t workspace_bytes() const override { return ws_; }
    size_t prepared_bytes() const override {
        return empty_reduction(p_.g) ? 0 : algo_.prepared_bytes(p_);
    }
    void prepare_weights(const void *w, void *out, const ExecEnv &env) const override {
        algo_.prepare_weights(p_, w, out, *env.pool);
    }

    void run(const Operands &o, const ExecEnv &env) const override {
        const ConvGeometry &g = p_.g;
        ThreadPool &pool = *env.pool;
        const int threads = p_.threads;
        // A transposed convolution's bias and activation act on the user's
        // output, the lowered pass's x; a plain one's are the solver's.
        void *solver_bias = g.transposed ? nullptr : o.bias;
        const bool fused = g.transposed && p_.user_op == CONV_OP_FORWARD &&
                           algo_.fuses_transposed_epilogue() && !empty_reduction(g);
        if (empty_reduction(g))
            run_empty(o, solver_bias, pool);
        else
            algo_.run({p_.op, &g, p_.dtype, o.x, o.w, o.y, fused ? o.bias : solver_bias,
                       o.prepared, p_.math == CONV_MATH_STRICT, fused && p_.relu, p_.math, planned_.get()},
                      env.scratch, pool, threads);
        if (!g.transposed || fused) return;
        ChannelShape out{g.layout, g.n, g.c, g.in_size()};
        if (p_.user_op == CONV_OP_FORWARD)
            bias_act_tensor(out, p_.dtype, o.x, o.bias, p_.relu, pool, threads);
        else if (p_.user_op == CONV_OP_BACKWARD_FILTER && o.bias)
            channel_sums(out, p_.dtype, o.x, o.bias, pool, threads);
    }

private:
    void run_empty(const Operands &o, void *bias, ThreadPool &pool) const {
        const ConvGeometry &g = p_.g;
        const size_t es = dtype_size(p_.dtype);
        const int threads = p_.threads;
        switch (p_.op) {
        case CONV_OP_FORWARD:
            zero(o.y, y_elements(g), es);
            if (bias || g.activation == CONV_ACTIVATION_RELU)
                bias_act_tensor({g.layout, g.n, g.k, g.out_size()}, p_.dtype, o.y, bias,
                                g.activation == CONV_ACTIVATION_RELU, pool, threads);
            return;
        case CONV_OP_BACKWARD_DATA: zero(o.x, x_elements(g), es); return;
        default:
            zero(o.w, w_elements(g), es);
            if (bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, p_.dtype, o.y, bias, pool, threads);
            return;
        }
    }

    const Algorithm &algo_;
    const Problem p_;
    const size_t ws_;
    const std::shared_ptr<const RunPlan> planned_;  // the solver's plan_run()
};

class CpuEngine final : public Engine {
public:
    CpuEngine() {
        blas_use_single_thread();
        solver_list();  // numbers the solvers before any id is read
    }

    const char *name() const override { return "cpu"; }
    const std::vector<const Solver *> &solvers() const override { return solver_list(); }

    void check(const Problem &p) const override {
        if (p.dtype == CONV_DTYPE_BFLOAT16 && cpu_isa() != Isa::avx512)
            fail(CONV_STATUS_UNSUPPORTED,
                 "the CPU engine computes bfloat16 only with AVX-512 (F, BW, DQ, VL), which this "
                 "CPU (%s) lacks%s; convert the tensors to float32",
                 cpu_model().c_str(),
                 std::getenv("CONV_CPU_ISA") ? " or CONV_CPU_ISA caps away" : "");
        if (p.dtype != CONV_DTYPE_FLOAT32 && p.dtype != CONV_DTYPE_FLOAT64 &&
            p.dtype != CONV_DTYPE_BFLOAT16)
            fail(CONV_STATUS_UNSUPPORTED,
                 "the CPU engine computes float32, float64 and (with AVX-512) bfloat16; %s "
                 "tensors are storage only",
                 dtype_name(p.dtype));
        // GEMM sizes and leading dimensions go to OpenBLAS as 32-bit
        // integers: refused here, before anything is written.
        const ConvGeometry &g = p.g;
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

    std::string tuning_key(const Problem &p) const override { return problem_key(p); }

    // The ISA too: a choice timed with AVX-512 kernels is not one for the
    // portable ones (CONV_CPU_ISA=baseline).
    // And the tiles: the brgemm solvers' bf16 and fast-fp32 work runs on them.
    // And whether kernels are generated (cpu/jit): they time differently.
    std::string device_signature(const DeviceRuntime *) const override {
        const TileBackend t = tile_backend();
        return "cpu " + cpu_model() + " (" + isa_name(cpu_isa()) +
               (t == TileBackend::hardware ? "+amx" : t == TileBackend::emulated ? "+amx-emulated" : "") +
               (jit::enabled() ? "+jit" : "") + ")";
    }

    std::shared_ptr<const EnginePlan> plan(const Problem &user, const Solver *forced,
                                           const Solver *tuned, DeviceRuntime *,
                                           const SkipReport &skip) const override {
        const Problem p = on_useful_threads(user);
        if (forced) {
            if (!is_mine(*forced))
                fail(CONV_STATUS_UNSUPPORTED, "algorithm %s (%d) is not available on the CPU",
                     forced->name(), (int)forced->id());
            if (const char *why = forced->why_not(p))
                fail(CONV_STATUS_UNSUPPORTED, "algorithm %s does not apply: %s; the problem is %s",
                     forced->name(), why, p.g.describe().c_str());
            return std::make_shared<CpuPlan>(cpu_solver(*forced), p);
        }
        if (tuned && is_mine(*tuned) && allowed(*tuned, p) && !tuned->why_not(p))
            return std::make_shared<CpuPlan>(cpu_solver(*tuned), p);
        return std::make_shared<CpuPlan>(choose(p, skip), p);
    }

    std::vector<Trial> find(const Problem &p, const Operands &o, Workspace &ws, ThreadPool &pool,
                            DeviceRuntime *, int repeats) const override;

private:
    static bool is_mine(const Solver &s) {
        for (const Solver *m : solver_list())
            if (m == &s) return true;
        return false;
    }

    // The heuristic: the first solver in the list that applies, is allowed,
    // expects to win, and whose workspace stays within kWorkspaceRatio x the
    // smallest applicable one's (or kWorkspaceFloor).
    static const Algorithm &choose(const Problem &p, const SkipReport &skip) {
        struct Candidate {
            const Solver *s;
            Estimate e;
        };
        std::vector<Candidate> found;  // on a plan-cache miss only
        found.reserve(solver_list().size());
        size_t least = SIZE_MAX;
        for (const Solver *s : solver_list()) {
            const char *why = allowed(*s, p) ? s->why_not(p) : "CONV_MATH_STRICT: not a direct sum";
            if (why) {
                if (skip) skip(*s, why);
                continue;
            }
            Estimate e;
            try {
                e = s->estimate(p);
            } catch (const Error &err) {  // a workspace too large to count: not this one
                if (err.status() != CONV_STATUS_OVERFLOW) throw;
                if (skip) skip(*s, "its workspace size overflows");
                continue;
            }
            least = std::min(least, e.workspace_bytes);
            found.push_back({s, e});
        }
        if (found.empty())
            fail(CONV_STATUS_INTERNAL_ERROR, "no CPU algorithm applies to %s", p.g.describe().c_str());
        const size_t bound = workspace_bound(p, least);
        const Candidate *smallest = &found[0];
        for (const Candidate &c : found) {
            if (c.e.workspace_bytes < smallest->e.workspace_bytes) smallest = &c;
            if (c.e.workspace_bytes > bound) {
                if (skip) skip(*c.s, format("its workspace (%zu bytes) exceeds 8x the leanest "
                                            "solver's (%zu bytes) and 8x the tensors'",
                                            c.e.workspace_bytes, least).c_str());
                continue;
            }
            if (!c.e.competitive) {
                if (skip) skip(*c.s, "expected to lose to a later solver here (its measured thresholds)");
                continue;
            }
            return cpu_solver(*c.s);
        }
        return cpu_solver(*smallest->s);  // none expects to win: the leanest
    }
};

std::vector<Trial> CpuEngine::find(const Problem &user, const Operands &o, Workspace &ws,
                                   ThreadPool &pool, DeviceRuntime *, int repeats) const {
    const Problem p = on_useful_threads(user);  // as plan() runs it
    // Everything that can fail -- the plans, the workspace, the result list
    // -- is allocated before the first trial writes the output, so a failed
    // search (OUT_OF_MEMORY included) leaves the output untouched.
    std::vector<std::shared_ptr<const EnginePlan>> runnable;
    std::string skipped;
    size_t most = 0;
    for (const Solver *s : solver_list()) {
        if (!allowed(*s, p) || s->why_not(p)) continue;
        auto plan = std::make_shared<CpuPlan>(cpu_solver(*s), p);
        size_t bytes = plan->workspace_bytes();
        if (!ws.owned()) {
            try {
                ws.reserve(bytes);  // a wrapped workspace: only checks the size
            } catch (const Error &e) {
                if (e.status() != CONV_STATUS_WORKSPACE_TOO_SMALL) throw;
                skipped += format(" %s (needs %zu bytes)", s->name(), bytes + 64);
                continue;
            }
        }
        most = std::max(most, bytes);
        runnable.push_back(std::move(plan));
    }
    if (runnable.empty())
        fail(CONV_STATUS_UNSUPPORTED, "no algorithm could run: the workspace is too small for%s",
             skipped.c_str());
    void *scratch = ws.reserve(most);  // an owned workspace grows once, to the largest need
    std::vector<Trial> trials;
    trials.reserve(runnable.size());
    std::vector<double> times;
    times.reserve(static_cast<size_t>(repeats) + 1);
    const ExecEnv env{scratch, &pool, nullptr};
    for (const auto &plan : runnable) {
        times.clear();
        for (int r = 0; r <= repeats; ++r) {  // run 0 warms caches and pages up
            auto t0 = std::chrono::steady_clock::now();
            plan->run(o, env);
            auto t1 = std::chrono::steady_clock::now();
            if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::sort(times.begin(), times.end());
        size_t bytes = plan->workspace_bytes();
        trials.push_back({plan->solver().id(), times[times.size() / 2], bytes ? bytes + 64 : 0});
    }
    std::stable_sort(trials.begin(), trials.end(),
                     [](const Trial &a, const Trial &b) { return a.ms < b.ms; });
    // Leave the output as the winner computes it.
    for (const auto &plan : runnable)
        if (plan->solver().id() == trials.front().algo) {
            plan->run(o, env);
            break;
        }
    return trials;
}

}  // namespace

const Engine &engine() {
    static const CpuEngine e;
    return e;
}

}  // namespace conv::cpu
