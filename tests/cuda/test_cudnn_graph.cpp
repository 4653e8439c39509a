// The graph-API solver's graphs, without a GPU (src/cuda/graph.h): for every
// pass, dtype, layout, rank, group count, dilation and padding the engine
// takes, the cudnn-frontend graph is built and validated (validation needs
// cuDNN's library, not a device); the cases the graph API cannot express
// are refused by name; the solver is listed by the CUDA engine under its
// name; engine-configuration strings round-trip. What runs on a GPU is
// tests/gpu's (test_gpu_conv forces cudnn_graph too).
//
// Links libconv's static archive for the engine's internals. Exit 77
// (skipped) when cuDNN's library cannot be loaded on this machine.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "conv.h"
#include "core/solver.h"
#include "cuda/engine.h"
#include "cuda/graph.h"

using namespace conv;

static int failures = 0;

#define EXPECT(cond, ...)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            std::fprintf(stderr, __VA_ARGS__);              \
            std::fprintf(stderr, "\n");                     \
            ++failures;                                     \
        }                                                   \
    } while (0)

struct Case {
    int rank;
    int64_t groups, c, k;
    int64_t kernel, stride, dilation, pad_begin, pad_end;
};

static ConvGeometry geometry(const Case &cs, conv_layout_t layout, bool transposed) {
    ConvGeometry g;
    g.spatial = cs.rank;
    g.layout = layout;
    g.n = 2;
    g.c = cs.c;
    g.k = cs.k;
    g.groups = cs.groups;
    g.transposed = transposed;
    const int64_t sizes[3] = {5, 7, 9};
    for (int a = 3 - cs.rank; a < 3; ++a) {  // leading axes stay 1 (geometry.h)
        g.in[a] = sizes[a];
        g.kernel[a] = cs.kernel;
        g.stride[a] = cs.stride;
        g.dilation[a] = cs.dilation;
        g.pad_begin[a] = cs.pad_begin;
        g.pad_end[a] = cs.pad_end;
        g.out[a] = (g.in[a] + cs.pad_begin + cs.pad_end - cs.dilation * (cs.kernel - 1) - 1) / cs.stride + 1;
    }
    return g;
}

static Problem problem(conv_op_t op, conv_dtype_t dtype, const ConvGeometry &g, bool bias, bool relu) {
    Problem p;
    p.op = op;
    p.user_op = op;
    p.g = g;
    p.dtype = dtype;
    p.bias = bias;
    p.relu = relu;
    return p;
}

// Every supported case validates.
static void test_every_case_validates() {
    const Case cases[] = {
        {2, 1, 8, 16, 3, 1, 1, 1, 1},  // plain 3x3
        {2, 1, 8, 16, 1, 1, 1, 0, 0},  // pointwise
        {2, 2, 8, 12, 3, 2, 1, 1, 1},  // groups, stride
        {2, 8, 8, 8, 3, 1, 1, 1, 1},   // depthwise
        {2, 1, 4, 4, 3, 1, 2, 2, 2},   // dilation
        {2, 1, 4, 6, 3, 2, 1, 0, 2},   // asymmetric padding
        {1, 1, 4, 6, 3, 1, 1, 1, 0},   // 1-D (as 2-D of height 1), asymmetric
        {1, 2, 4, 6, 3, 2, 2, 2, 1},   // 1-D, groups, dilation
        {3, 1, 4, 6, 3, 1, 1, 1, 1},   // 3-D
        {3, 2, 4, 6, 2, 2, 1, 1, 0},   // 3-D, groups, asymmetric
    };
    const conv_dtype_t dtypes[] = {CONV_DTYPE_FLOAT32, CONV_DTYPE_FLOAT16, CONV_DTYPE_BFLOAT16,
                                   CONV_DTYPE_FLOAT64};
    const conv_layout_t layouts[] = {CONV_LAYOUT_CHANNELS_FIRST, CONV_LAYOUT_CHANNELS_LAST};
    const conv_op_t ops[] = {CONV_OP_FORWARD, CONV_OP_BACKWARD_DATA, CONV_OP_BACKWARD_FILTER};
    int validated = 0;
    for (const Case &cs : cases)
        for (conv_dtype_t dt : dtypes)
            for (conv_layout_t l : layouts)
                for (conv_op_t op : ops)
                    for (int epi = 0; epi < 4; ++epi) {  // bias, relu: forward only fuses them
                        bool bias = epi & 1, relu = epi & 2;
                        if (op != CONV_OP_FORWARD && relu) continue;
                        Problem p = problem(op, dt, geometry(cs, l, false), bias, relu);
                        std::string why = cuda::graph::validate(p);
                        EXPECT(why.empty(), "op %d dtype %d layout %d %s bias %d relu %d: %s", (int)op,
                               (int)dt, (int)l, p.g.describe().c_str(), bias, relu, why.c_str());
                        ++validated;
                    }
    std::printf("%d graphs validated\n", validated);
}

// A graph whose output is not the convolution's shape is refused: the
// validation above checks something.
static void test_wrong_output_is_refused() {
    Case cs = {2, 1, 8, 16, 3, 1, 1, 1, 1};
    for (conv_op_t op : {CONV_OP_FORWARD, CONV_OP_BACKWARD_DATA, CONV_OP_BACKWARD_FILTER}) {
        ConvGeometry g = geometry(cs, CONV_LAYOUT_CHANNELS_FIRST, false);
        g.c = 9;
        g.groups = 2;  // a filter of 9/2 = 4 channels: 9 inputs are no whole number of groups
        std::string why = cuda::graph::validate(problem(op, CONV_DTYPE_FLOAT32, g, false, false));
        EXPECT(!why.empty(), "op %d: a filter of 4 channels for 9 inputs validated", (int)op);
        g = geometry(cs, CONV_LAYOUT_CHANNELS_LAST, false);
        g.out[2] += 1;  // one column more than the window makes
        why = cuda::graph::validate(problem(op, CONV_DTYPE_FLOAT16, g, false, false));
        EXPECT(!why.empty(), "op %d: an output one column too wide validated", (int)op);
    }
}

// What the graph API cannot express is refused before any graph, naming why.
static void test_legacy_only_cases() {
    Case cs = {2, 1, 4, 4, 3, 1, 1, 1, 1};
    ConvGeometry g = geometry(cs, CONV_LAYOUT_CHANNELS_FIRST, true);
    g.pad_end[2] = -1;  // a transposed convolution's crop (output padding)
    const char *why = cuda::graph::why_not(problem(CONV_OP_BACKWARD_DATA, CONV_DTYPE_FLOAT32, g, false, false));
    EXPECT(why && std::strstr(why, "negative padding"), "negative padding: %s", why ? why : "(accepted)");
    ConvGeometry empty = geometry(cs, CONV_LAYOUT_CHANNELS_FIRST, false);
    empty.n = 0;
    why = cuda::graph::why_not(problem(CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, empty, false, false));
    EXPECT(why && std::strstr(why, "without elements"), "zero batch: %s", why ? why : "(accepted)");
    // The solver answers the same through its Solver interface.
    EXPECT(cuda::graph::solver().why_not(problem(CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, empty, false, false)),
           "the solver accepts a zero batch");
}

// The CUDA engine lists it, by a stable name; AUTO tries it first unless
// CONV_CUDNN_GRAPH=0 (solvers.cpp; run on a GPU by tests/gpu).
static void test_listed_by_name() {
    bool listed = false;
    for (const Solver *s : cuda::engine().solvers()) listed = listed || s == &cuda::graph::solver();
    EXPECT(listed, "the CUDA engine does not list cudnn_graph");
    conv_algo_t id = CONV_ALGO_AUTO;
    EXPECT(conv_algo_from_name("cudnn_graph", &id) == CONV_STATUS_SUCCESS, "conv_algo_from_name(cudnn_graph)");
    EXPECT(id == cuda::graph::solver().id(), "cudnn_graph has id %d, its solver %d", (int)id,
           (int)cuda::graph::solver().id());
    EXPECT(std::strcmp(conv_algo_name(id), "cudnn_graph") == 0, "conv_algo_name(%d) = %s", (int)id,
           conv_algo_name(id));
    EXPECT(cuda::is_cuda_algo(id), "cudnn_graph is not a CUDA algorithm");
    const char *env = std::getenv("CONV_CUDNN_GRAPH");
    const bool off = env && std::strcmp(env, "0") == 0;
    EXPECT(cuda::graph::enabled() == (cuda::graph::built() && !off),
           "enabled() is %d with built() %d and CONV_CUDNN_GRAPH=%s", (int)cuda::graph::enabled(),
           (int)cuda::graph::built(), env ? env : "(unset)");
}

static void test_engine_config_strings() {
    cuda::graph::EngineConfig c;
    c.engine = 12;
    c.knobs = {{2, 1}, {5, -1}, {17, 256}};
    std::string s = cuda::graph::format_config(c);
    EXPECT(s == "eng12_k2=1_k5=-1_k17=256", "format: %s", s.c_str());
    cuda::graph::EngineConfig back;
    EXPECT(cuda::graph::parse_config(s, &back) && back.engine == 12 && back.knobs == c.knobs, "parse %s",
           s.c_str());
    EXPECT(cuda::graph::parse_config("eng0", &back) && back.engine == 0 && back.knobs.empty(), "parse eng0");
    for (const char *bad : {"", "eng", "eng-1", "engx", "eng3_k", "eng3_k2", "eng3_k2=", "eng3 k2=1", "eng3_k2=1x"}) {
        back.engine = 99;
        EXPECT(!cuda::graph::parse_config(bad, &back) && back.engine == 99, "parsed \"%s\"", bad);
    }
}

int main() {
    test_listed_by_name();
    test_engine_config_strings();
    if (!cuda::graph::built()) {
        EXPECT(cuda::graph::solver().why_not(Problem()), "an unbuilt cudnn_graph applies");
        std::printf("cudnn_graph is not built: its graphs are not checked\n");
        return failures ? 1 : 77;
    }
    test_legacy_only_cases();
    // Probe: cuDNN's library is needed to validate (not a GPU).
    Case cs = {2, 1, 4, 4, 3, 1, 1, 1, 1};
    std::string probe = cuda::graph::validate(
        problem(CONV_OP_FORWARD, CONV_DTYPE_FLOAT32, geometry(cs, CONV_LAYOUT_CHANNELS_FIRST, false), false, false));
    if (probe.find("libcudnn") != std::string::npos || probe.find("cuDNN") == 0) {
        std::printf("skipped: %s\n", probe.c_str());
        return failures ? 1 : 77;
    }
    test_every_case_validates();
    test_wrong_output_is_refused();
    if (failures) std::fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
