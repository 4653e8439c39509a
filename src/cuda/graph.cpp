// The graph-API solver (cuda/graph.h) over cudnn-frontend v1: the only
// translation unit that includes the frontend (its headers are heavy).
//
// Tensors are described by dims and strides, so both layouts are the same
// graph with other strides; 1-D and 2-D problems are 4-D (height 1 for
// 1-D), 3-D ones 5-D. Groups are the filter's channel count: W is (k, c/g,
// kernel...) while X has c channels, which is how cuDNN's backend infers
// them. Asymmetric padding is the convolution's pre- and post-padding.
//
// The frontend is built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: its
// cuDNN calls go through cudnn_frontend::cudnn_dlhandle, set here to the
// library cuda/cudnn_library.h opened, so libconv links no libcudnn. The SM
// version is given to the graph (set_sm_version) so that the frontend does
// not open a shared CUDA runtime of its own to ask for it.
#include <cudnn_frontend.h>

#include <mutex>
#include <unordered_map>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/cudnn_library.h"
#include "cuda/device.h"
#include "cuda/engine.h"
#include "cuda/graph.h"
#include "cuda/kernels.h"

// The handle the frontend's dynamic loading looks its cuDNN symbols up in.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
}

namespace conv::cuda::graph {

namespace fe = cudnn_frontend;

bool built() noexcept { return true; }

namespace {

// Variant-pack uids of the graph's tensors, in the order run() passes their
// pointers (the frontend's sorted-pointer execute: no map per call).
enum Uid : int64_t { kX = 1, kW, kY, kBias };

// Points the frontend at the engine's cuDNN (NOT_AVAILABLE when there is none).
void attach_cudnn() {
    static std::once_flag once;
    std::call_once(once, [] { fe::cudnn_dlhandle = require_loaded<Cudnn>().library.handle(); });
}

fe::DataType_t io_type(conv_dtype_t d) {
    switch (d) {
    case CONV_DTYPE_FLOAT64: return fe::DataType_t::DOUBLE;
    case CONV_DTYPE_FLOAT16: return fe::DataType_t::HALF;
    case CONV_DTYPE_BFLOAT16: return fe::DataType_t::BFLOAT16;
    default: return fe::DataType_t::FLOAT;
    }
}

struct Shape {
    std::vector<int64_t> dim, stride;
};

// A dense (n, c, spatial...) tensor of the layout; `first` is the first of
// the three spatial axes the graph sees (1 for ranks 1 and 2, else 0).
Shape shape(bool cl, int first, int64_t n, int64_t c, const int64_t sp[3]) {
    Shape s;
    s.dim = {n, c};
    for (int a = first; a < 3; ++a) s.dim.push_back(sp[a]);
    const size_t nd = s.dim.size();
    s.stride.assign(nd, 1);
    // Innermost first: channels-last orders (c, w, h, d, n), else (w, h, d, c, n).
    std::vector<size_t> order;
    if (cl) order.push_back(1);
    for (size_t i = nd - 1; i >= 2; --i) order.push_back(i);
    if (!cl) order.push_back(1);
    order.push_back(0);
    int64_t step = 1;
    for (size_t i : order) {
        s.stride[i] = step;
        step *= s.dim[i];
    }
    return s;
}

std::shared_ptr<fe::graph::Tensor_attributes> tensor(fe::graph::Graph &g, const char *name, Uid uid,
                                                     const Shape &s) {
    return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(s.dim).set_stride(s.stride));
}

void describe(std::shared_ptr<fe::graph::Tensor_attributes> &t, const char *name, Uid uid,
              const Shape &s, fe::DataType_t type) {
    t->set_output(true).set_name(name).set_uid(uid).set_dim(s.dim).set_stride(s.stride).set_data_type(type);
}

// Whether the forward's bias and ReLU are operations of the graph (else our
// kernel applies them after it, as on the legacy path).
bool fuses(const Problem &p) {
    return p.op == CONV_OP_FORWARD && !p.g.transposed && (p.bias || p.relu) &&
           p.dtype != CONV_DTYPE_FLOAT64;
}

// The convolution's window: what its fprop, dgrad and wgrad attributes share.
struct Window {
    std::vector<int64_t> pre, post, stride, dilation;
};
template <class Attributes>
Attributes attributes(const char *name, const Window &w) {
    Attributes a;
    a.set_name(name).set_pre_padding(w.pre).set_post_padding(w.post).set_stride(w.stride).set_dilation(w.dilation);
    return a;
}

struct Built {
    std::shared_ptr<fe::graph::Graph> graph;
    fe::error_t status;
};

// The problem's graph, validated (no device needed).
Built build(const Problem &p) {
    attach_cudnn();
    const ConvGeometry &g = p.g;
    const bool cl = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    const int first = g.spatial == 3 ? 0 : 1;
    Window win;
    for (int a = first; a < 3; ++a) {
        win.pre.push_back(g.pad_begin[a]);
        win.post.push_back(g.pad_end[a]);
        win.stride.push_back(g.stride[a]);
        win.dilation.push_back(g.dilation[a]);
    }
    const Shape x = shape(cl, first, g.n, g.c, g.in), y = shape(cl, first, g.n, g.k, g.out),
                w = shape(cl, first, g.k, g.cg(), g.kernel);
    const fe::DataType_t io = io_type(p.dtype);
    const fe::DataType_t compute = p.dtype == CONV_DTYPE_FLOAT64 ? fe::DataType_t::DOUBLE : fe::DataType_t::FLOAT;

    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(io).set_intermediate_data_type(compute).set_compute_data_type(compute);
    switch (p.op) {
    case CONV_OP_FORWARD: {
        auto X = tensor(*graph, "x", kX, x), W = tensor(*graph, "w", kW, w);
        auto Y = graph->conv_fprop(X, W, attributes<fe::graph::Conv_fprop_attributes>("fprop", win));
        if (fuses(p)) {
            Y->set_data_type(compute);  // virtual: the pointwise operations read it in fp32
            if (p.bias) {
                Shape b;
                b.dim.assign(y.dim.size(), 1);
                b.dim[1] = g.k;
                b.stride.assign(y.dim.size(), g.k);
                b.stride[1] = 1;
                auto B = tensor(*graph, "bias", kBias, b);
                Y = graph->pointwise(Y, B, fe::graph::Pointwise_attributes().set_name("bias")
                                               .set_mode(fe::PointwiseMode_t::ADD).set_compute_data_type(compute));
            }
            if (p.relu)
                Y = graph->pointwise(Y, fe::graph::Pointwise_attributes().set_name("relu")
                                            .set_mode(fe::PointwiseMode_t::RELU_FWD).set_compute_data_type(compute));
        }
        describe(Y, "y", kY, y, io);
        break;
    }
    case CONV_OP_BACKWARD_DATA: {
        auto DY = tensor(*graph, "dy", kY, y), W = tensor(*graph, "w", kW, w);
        auto DX = graph->conv_dgrad(DY, W, attributes<fe::graph::Conv_dgrad_attributes>("dgrad", win));
        describe(DX, "dx", kX, x, io);
        break;
    }
    default: {
        auto X = tensor(*graph, "x", kX, x), DY = tensor(*graph, "dy", kY, y);
        auto DW = graph->conv_wgrad(DY, X, attributes<fe::graph::Conv_wgrad_attributes>("wgrad", win));
        describe(DW, "dw", kW, w, io);
        break;
    }
    }
    fe::error_t st = graph->validate();
    return {graph, st};
}

// Filters the heuristics' candidates by the context's settings: their
// numerical notes say what an engine does to the numbers.
void filter(fe::graph::Graph &g, const Problem &p) {
    std::vector<fe::NumericalNote_t> banned;
    // fp32 on tensor cores is TF32 (inputs converted down): only when FAST.
    if (p.dtype == CONV_DTYPE_FLOAT32 && p.math != CONV_MATH_FAST) {
        banned.push_back(fe::NumericalNote_t::TENSOR_CORE);
        banned.push_back(fe::NumericalNote_t::DOWN_CONVERT_INPUTS);
    }
    // FFT and Winograd round differently from a direct sum (the legacy
    // families' `exact`, CONV_MATH_STRICT).
    if (p.math == CONV_MATH_STRICT) {
        banned.push_back(fe::NumericalNote_t::FFT);
        banned.push_back(fe::NumericalNote_t::WINOGRAD);
        banned.push_back(fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION);
    }
    if (p.deterministic) banned.push_back(fe::NumericalNote_t::NONDETERMINISTIC);
    if (!banned.empty()) g.deselect_numeric_notes(banned);
    // Run-time compiled engines take seconds to build: not on a plan's first call.
    g.deselect_behavior_notes({fe::BehaviorNote_t::RUNTIME_COMPILATION});
    if (p.workspace_limit) g.deselect_workspace_greater_than((int64_t)p.workspace_limit);
}

// Engine configurations known to compute wrong results for the problem,
// as frontend names to bar. cuDNN 9.19's engine 1 ("eng1", with or without
// knobs) gave wrong backward-filter results on an H200 for 16 of the 56
// random problems it ran, every one with asymmetric padding (pre != post on
// an axis); no other engine failed on 2000 backward-filter problems
// (test_gpu_conv with cudnn_graph forced, 2026-11-30). The legacy path never
// gives cuDNN asymmetric padding (it pads explicitly). The frontend bars by
// substring, so "eng1" also bars engines 10-19 for these problems.
std::vector<std::string> known_bad(const Problem &p) {
    if (p.op != CONV_OP_BACKWARD_FILTER) return {};
    for (int a = 0; a < 3; ++a)
        if (p.g.pad_begin[a] != p.g.pad_end[a]) return {"eng1"};
    return {};
}

[[noreturn]] void refuse(const Problem &p, const char *stage, const fe::error_t &e) {
    fail(CONV_STATUS_UNSUPPORTED, "algorithm cudnn_graph does not apply to %s %s: %s: %s",
         dtype_name(p.dtype), p.g.describe().c_str(), stage, e.err_msg.c_str());
}

class GraphPlan final : public EnginePlan {
public:
    GraphPlan(const Problem &p, std::shared_ptr<fe::graph::Graph> g, size_t ws)
        : p_(p), graph_(std::move(g)), cudnn_ws_(ws) {
        if (graph_->get_plan_name(engine_).is_bad()) engine_.clear();
        const ConvGeometry &gm = p.g;
        epilogue_ = (p.op == CONV_OP_FORWARD && !gm.transposed && (p.bias || p.relu) && !fuses(p)) ||
                    (p.op == CONV_OP_BACKWARD_DATA && gm.transposed && (p.bias || p.relu));
        if (p.op == CONV_OP_BACKWARD_FILTER && p.bias)
            sums_ = gm.transposed ? kernels::channel_sums_scratch(p.dtype, gm.n, gm.c, gm.in_size())
                                  : kernels::channel_sums_scratch(p.dtype, gm.n, gm.k, gm.out_size());
        sums_ = (sums_ + 255) / 256 * 256;
        w_scratch_ = (wgrad_scratch_bytes(gm, p.op, p.dtype) + 255) / 256 * 256;
    }
    const Solver &solver() const override { return graph::solver(); }
    size_t workspace_bytes() const override { return sums_ + w_scratch_ + cudnn_ws_; }
    const char *detail() const override { return engine_.c_str(); }
    void run(const Operands &o, const ExecEnv &env) const override {
        if (!env.runtime) fail(CONV_STATUS_INTERNAL_ERROR, "a CUDA plan run without its device");
        Device &d = static_cast<Device &>(*env.runtime);
        DeviceGuard guard(d.index());
        cudaStream_t st = d.stream();
        // By uid; the frontend checks the count against its variant pack.
        char *scratch = static_cast<char *>(env.scratch);
        void *w = w_scratch_ ? scratch + sums_ : o.w;  // dw's room (wgrad_scratch_bytes)
        void *pack[] = {o.x, w, o.y, o.bias};
        const int n = fuses(p_) && p_.bias ? 4 : 3;
        // Thread-safe (the frontend copies its variant-pack template per call).
        fe::error_t e = graph_->execute(cudnn_handle(d.index(), st), pack, n, scratch + sums_ + w_scratch_);
        if (e.is_bad()) fail(CONV_STATUS_BACKEND_ERROR, "cuDNN graph execute: %s", e.err_msg.c_str());
        if (w_scratch_)
            check_cuda(cudaMemcpyAsync(o.w, w, filter_bytes(p_.g, p_.dtype), cudaMemcpyDeviceToDevice, st),
                       "cudaMemcpyAsync");
        epilogues(o, st, scratch);
    }

private:
    // What the graph does not fuse, by the legacy path's kernels.
    void epilogues(const Operands &o, cudaStream_t st, void *scratch) const {
        const ConvGeometry &g = p_.g;
        const bool cl = g.layout == CONV_LAYOUT_CHANNELS_LAST;
        if (epilogue_) {
            if (g.transposed)  // the user's output is x
                check_cuda(kernels::bias_act(st, p_.dtype, cl, g.n, g.c, g.in_size(), o.x, o.bias, p_.relu),
                           "bias/activation kernel");
            else
                check_cuda(kernels::bias_act(st, p_.dtype, cl, g.n, g.k, g.out_size(), o.y, o.bias, p_.relu),
                           "bias/activation kernel");
        }
        if (p_.op == CONV_OP_BACKWARD_FILTER && p_.bias) {
            if (g.transposed)
                check_cuda(kernels::channel_sums(st, p_.dtype, cl, g.n, g.c, g.in_size(), o.x, o.bias, scratch),
                           "bias-gradient kernel");
            else
                check_cuda(kernels::channel_sums(st, p_.dtype, cl, g.n, g.k, g.out_size(), o.y, o.bias, scratch),
                           "bias-gradient kernel");
        }
    }

    const Problem p_;
    const std::shared_ptr<fe::graph::Graph> graph_;  // finalized: its execution plan
    const size_t cudnn_ws_;
    std::string engine_;  // cuDNN's name for the engine configuration the plan runs
    bool epilogue_ = false;
    size_t sums_ = 0;  // bias-gradient scratch, in front of cuDNN's workspace
    size_t w_scratch_ = 0;  // then dw's room, for grouped backward-filter
};

}  // namespace

std::string validate(const Problem &p) {
    if (const char *why = graph::why_not(p)) return why;
    try {
        Built b = build(p);
        if (b.status.is_bad()) return b.status.err_msg;
        // Lowered to cuDNN's backend descriptors, which cuDNN finalizes --
        // checking shapes, groups, strides, types -- with no handle.
        fe::error_t e = b.graph->build_operation_graph(nullptr);
        return e.is_good() ? std::string() : e.err_msg;
    } catch (const Error &e) {
        return e.what();
    } catch (const std::exception &e) {  // the frontend throws when cuDNN lacks a symbol
        return e.what();
    }
}

std::shared_ptr<const EnginePlan> plan(const Problem &p, DeviceRuntime &rt, const EngineConfig *config) {
    if (const char *why = graph::why_not(p))
        fail(CONV_STATUS_UNSUPPORTED, "algorithm cudnn_graph does not apply: %s", why);
    Device &d = static_cast<Device &>(rt);
    DeviceGuard guard(d.index());
    try {
        Built b = build(p);
        if (b.status.is_bad()) refuse(p, "validate", b.status);
        fe::graph::Graph &g = *b.graph;
        int major = 0, minor = 0;
        check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d.index()), "cudaDeviceGetAttribute");
        check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d.index()), "cudaDeviceGetAttribute");
        g.set_sm_version(major * 10 + minor);
        cudnnHandle_t h = cudnn_handle(d.index(), d.stream());
        fe::error_t e = g.build_operation_graph(h);
        if (e.is_bad()) refuse(p, "operation graph", e);
        if (config) {
            std::unordered_map<fe::KnobType_t, int64_t> knobs;
            for (const auto &k : config->knobs) knobs[(fe::KnobType_t)k.first] = k.second;
            e = g.create_execution_plan(config->engine, knobs);
        } else {
            e = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
        }
        if (e.is_bad()) refuse(p, "engine configurations", e);
        if (!config) filter(g, p);
        const std::vector<std::string> bad = known_bad(p);
        if (!bad.empty()) g.deselect_engines(bad);  // a given config too: it would be wrong
        if ((e = g.check_support()).is_bad()) refuse(p, "support", e);
        if ((e = g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE)).is_bad()) refuse(p, "plans", e);
        int64_t ws = 0;
        if ((e = g.get_workspace_size(ws)).is_bad()) refuse(p, "workspace", e);
        return std::make_shared<GraphPlan>(p, b.graph, (size_t)ws);
    } catch (const Error &) {
        throw;
    } catch (const std::exception &ex) {
        fail(CONV_STATUS_BACKEND_ERROR, "cudnn-frontend: %s", ex.what());
    }
}

}  // namespace conv::cuda::graph
