// Plans: a user's pass prepared once (the public conv_plan_t), and the
// per-context cache the one-shot calls look their plans up in.
#pragma once

#include <memory>
#include <string>

#include "core/context.h"
#include "core/engine.h"
#include "core/params.h"
#include "core/plan_cache.h"
#include "core/tensor.h"
#include "dispatch/operation.h"

namespace conv::dispatch {

class Plan final : public CachedPlan {
public:
    // The user's pass and shapes, in the roles of Pass (x: dx, w: dw, y: dy ...).
    conv_op_t op;
    conv_dtype_t dtype;
    conv_layout_t layout;
    int ndim;
    int64_t x_dims[kMaxDims], w_dims[kMaxDims], y_dims[kMaxDims];
    bool bias;
    int64_t bias_elements;  // output channels

    Context *ctx;                 // valid while `alive` has not expired
    std::weak_ptr<void> alive;    // the context's liveness
    Problem problem;              // the engine's pass
    std::shared_ptr<const EnginePlan> engine_plan;
    std::string description;      // the trace's problem fields

    // Workspace bytes of an execution, with the 64 bytes of alignment slack.
    size_t workspace_bytes() const;

    // Prepared weights (conv_plan_prepare_weights); null: read w.
    std::shared_ptr<void> prepared;
};

// Makes a plan from shapes (conv_plan_create): validated as the pass would be.
std::shared_ptr<Plan> make_plan(Context &ctx, const ConvParams &params, conv_op_t op,
                                conv_dtype_t dtype, conv_layout_t layout, int ndim,
                                const int64_t *x_dims, const int64_t *w_dims, bool bias);

// The plan of a one-shot call, from the context's cache or made (and kept)
// now; `*hit` says which.
std::shared_ptr<const Plan> cached_plan(Context &ctx, const ConvParams &params, const Pass &pass,
                                        bool *hit);

// Runs a plan on a pass whose tensors match it (execute_checked checks
// that first). `cache`: "hit", "miss", or "plan" for an explicit plan, for
// the trace.
void execute(const Plan &plan, const Pass &pass, Workspace *ws, const char *cache);
void execute_checked(const Plan &plan, const Pass &pass, Workspace *ws);

// conv_plan_prepare_weights / release_weights; returns whether the plan
// prepares anything.
bool prepare_weights(Plan &plan, const Tensor &w);
void release_weights(Plan &plan);

// The plan's context, or INVALID_HANDLE once it was destroyed.
Context &plan_context(const Plan &plan);

}  // namespace conv::dispatch
