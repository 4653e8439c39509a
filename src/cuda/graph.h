// The CUDA engine's graph-API solver, "cudnn_graph" (docs/gpu.md): a pass as
// a cudnn-frontend v1 graph (forward with its bias and ReLU fused as
// pointwise operations, backward-data, backward-filter), built and
// finalized once per problem in the plan; running it is a variant pack and
// one execute. Plain C++ like cuda/engine.h: only graph.cpp includes the
// frontend (its headers cost ~30 s of compile time per file).
//
// AUTO's first choice (measured 1.4-6x the legacy families on an H200,
// docs/performance.md), falling back to the legacy choice where it does not
// apply; conv_find_algorithms times it beside them. CONV_CUDNN_GRAPH=0 in
// the environment leaves it to forcing by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device_runtime.h"
#include "core/engine.h"
#include "core/solver.h"

namespace conv::cuda::graph {

// Whether this libconv was built with cudnn-frontend (cmake/ConvCudnnGraph.cmake).
bool built() noexcept;

// The solver, in every build (cuda/graph_solver.cpp).
const Solver &solver();

// Whether AUTO and conv_find_algorithms use the solver: built with
// cudnn-frontend and not turned off by CONV_CUDNN_GRAPH=0 (read once).
bool enabled();

// Why the graph API cannot express the problem at all (null: it may; only
// cuDNN's engines can say whether one runs it, and they need a GPU).
const char *why_not(const Problem &p);

// An engine configuration as a tuning file would keep it: cuDNN's engine
// index and its knob choices, "eng<id>[_k<knob>=<value>...]" (the format of
// the frontend's own plan names).
struct EngineConfig {
    int64_t engine = -1;
    std::vector<std::pair<int64_t, int64_t>> knobs;  // (the frontend's KnobType_t, value)
};
std::string format_config(const EngineConfig &c);
// False (nothing written) when `text` is not such a string.
bool parse_config(const std::string &text, EngineConfig *c);

// Builds the problem's graph, validates it and lowers it to cuDNN's backend
// descriptors (which cuDNN finalizes, checking shapes and groups), which
// needs cuDNN's library but no GPU: "" when cuDNN accepts the operations,
// else the reason. Whether an engine runs them is only known on a GPU.
std::string validate(const Problem &p);

// The plan (needs the device): the graph finalized with `config` when
// given, else the first engine configuration of cuDNN's heuristics (modes A,
// then fallback) that the problem's settings allow. UNSUPPORTED with the
// reason when none applies.
std::shared_ptr<const EnginePlan> plan(const Problem &p, DeviceRuntime &rt,
                                       const EngineConfig *config);

}  // namespace conv::cuda::graph
