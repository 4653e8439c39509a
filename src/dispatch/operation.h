// One convolution pass from start to end: validate every argument (before
// anything is written), find or make its plan, take a workspace, run.
#pragma once

#include <cstddef>
#include <vector>

#include "core/context.h"
#include "core/engine.h"
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

// The names of a pass's tensors in the roles of Pass, for messages:
// forward x, w, y, b; backward-data dx, w, dy; backward-filter x, dw, dy, db.
struct RoleNames {
    const char *x, *w, *y, *bias;
};
RoleNames role_names(conv_op_t op);

// Validates the pass and returns its geometry; throws with the numbers.
ConvGeometry validate(const Context &ctx, const ConvParams &params, const Pass &pass);

// The checks that depend on the tensors themselves rather than their shapes:
// the context's device, and outputs that overlap inputs.
void check_tensors(const Context &ctx, const Pass &pass);

// Workspace bytes the pass needs with this context (0 when none).
size_t workspace_size(Context &ctx, const ConvParams &params, const Pass &pass);

// The algorithm run() would use.
conv_algo_t chosen_algorithm(Context &ctx, const ConvParams &params, const Pass &pass);

// Runs the pass through the context's plan cache; `ws` null means a
// workspace from the context's pool.
void run(Context &ctx, const ConvParams &params, const Pass &pass, Workspace *ws);

// Times every algorithm that applies (sorted fastest first), remembers the
// fastest in the context's tuning table, and leaves the pass's result,
// computed with it, in the output. Candidates a wrapped workspace is too
// small for are skipped.
std::vector<Trial> find_algorithms(Context &ctx, const ConvParams &params, const Pass &pass,
                                   Workspace *ws, int repeats);

// A workspace belongs to the device of the context it was made with:
// TYPE_MISMATCH when `ws` (nullable) is another device's.
void check_workspace(const Context &ctx, const Workspace *ws);

}  // namespace conv::dispatch
