// One convolution pass from start to end: validate every argument (before
// anything is written), resolve the geometry, choose the algorithm, take a
// workspace, run.
#pragma once

#include <cstddef>
#include <vector>

#include "core/context.h"
#include "core/geometry.h"
#include "core/params.h"
#include "core/tensor.h"
#include "core/workspace.h"

namespace conv::dispatch {

// Tensors in their roles (see cpu::ConvArgs): for BACKWARD_DATA x is dx and
// y is dy; for BACKWARD_FILTER w is dw, y is dy and bias is db.
struct Pass {
    conv_op_t op;
    const Tensor *x, *w, *y, *bias;  // bias may be null
};

// Validates the pass and returns its geometry; throws with the numbers.
ConvGeometry validate(const Context &ctx, const ConvParams &params, const Pass &pass);

// Workspace bytes the pass needs with this context (0 when none).
size_t workspace_size(Context &ctx, const ConvParams &params, const Pass &pass);

// The algorithm run() would use.
conv_algo_t chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass);

// Runs the pass; `ws` null means a workspace from the context's pool.
void run(Context &ctx, const ConvParams &params, const Pass &pass, Workspace *ws);

// One benchmarked candidate of find_algorithms.
struct Trial {
    conv_algo_t algo;
    double ms;
    size_t workspace_bytes;
};

// Times every algorithm that applies (sorted fastest first), remembers the
// fastest in the context's tuning table, and leaves the pass's result,
// computed with it, in the output. Candidates a wrapped workspace is too
// small for are skipped.
std::vector<Trial> find_algorithms(Context &ctx, const ConvParams &params, const Pass &pass,
                                   Workspace *ws, int repeats);

}  // namespace conv::dispatch
