// The graph-API solver of a build without cudnn-frontend (or without the
// CUDA engine): it has its name (graph_solver.cpp) and says why it cannot run.
#include "core/error.h"
#include "cuda/graph.h"

namespace conv::cuda::graph {

bool built() noexcept { return false; }

std::string validate(const Problem &p) { return why_not(p); }

std::shared_ptr<const EnginePlan> plan(const Problem &p, DeviceRuntime &, const EngineConfig *) {
    fail(CONV_STATUS_UNSUPPORTED, "algorithm cudnn_graph does not apply: %s", why_not(p));
}

}  // namespace conv::cuda::graph
