// The graph-API solver as the CUDA engine lists it (cuda/graph.h), in every
// build: its name, id and the cases the graph API cannot express are known
// without cudnn-frontend; graph.cpp (or graph_unavailable.cpp) does the rest.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "cuda/graph.h"

namespace conv::cuda::graph {
namespace {

class GraphSolver final : public Solver {
public:
    const char *name() const override { return "cudnn_graph"; }
    const char *why_not(const Problem &p) const override { return graph::why_not(p); }
    // The workspace is cuDNN's engine's, known once the plan is made.
    Estimate estimate(const Problem &) const override { return {}; }
    // FFT and Winograd engines are filtered out under CONV_MATH_STRICT by
    // their numerical notes (graph.cpp), so what it runs there is exact.
    bool strict() const override { return true; }
};

}  // namespace

const Solver &solver() {
    static const GraphSolver s;
    return s;
}

bool enabled() {
    static const bool on = [] {
        const char *v = std::getenv("CONV_CUDNN_GRAPH");
        return built() && !(v && std::strcmp(v, "0") == 0);
    }();
    return on;
}

const char *why_not(const Problem &p) {
    if (!built())
        return "this libconv was built without cudnn-frontend (scripts/cudnn_frontend.sh, "
               "CONV_CUDNN_FRONTEND_DIR; docs/gpu.md)";
    const ConvGeometry &g = p.g;
    if (g.n == 0 || g.c == 0 || g.k == 0)
        return "a tensor without elements (the legacy path writes its zeros)";
    for (int a = 0; a < 3; ++a) {
        if (g.in[a] == 0 || g.out[a] == 0) return "a tensor without elements (the legacy path writes its zeros)";
        if (g.pad_begin[a] < 0 || g.pad_end[a] < 0)
            return "negative padding (a transposed convolution's crop): the graph API's paddings "
                   "are not negative";
    }
    return nullptr;
}

std::string format_config(const EngineConfig &c) {
    std::string s = format("eng%lld", (long long)c.engine);
    for (const auto &k : c.knobs) s += format("_k%lld=%lld", (long long)k.first, (long long)k.second);
    return s;
}

bool parse_config(const std::string &text, EngineConfig *out) {
    EngineConfig c;
    long long engine, knob, value;
    int used = 0;
    const char *s = text.c_str();
    if (std::sscanf(s, "eng%lld%n", &engine, &used) != 1 || engine < 0) return false;
    c.engine = engine;
    s += used;
    while (*s) {
        used = 0;
        if (std::sscanf(s, "_k%lld=%lld%n", &knob, &value, &used) != 2 || used == 0 || knob < 0)
            return false;
        c.knobs.emplace_back(knob, value);
        s += used;
    }
    *out = c;
    return true;
}

}  // namespace conv::cuda::graph
