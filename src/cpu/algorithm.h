// The CPU engine's solver interface: a conv::Solver that also runs. Each
// CPU solver is one file in cpu/ (its applicability, its measured
// thresholds, its workspace, its name) and one line in cpu/engine.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "conv.h"
#include "core/geometry.h"
#include "core/solver.h"
#include "core/thread_pool.h"

namespace conv::cpu {

// The tensors of one pass in their convolution roles: x is the input (dx for
// BACKWARD_DATA), w the filter (dw for BACKWARD_FILTER), y the output (dy for
// the backward passes), bias the bias (db for BACKWARD_FILTER, may be null).
// `prepared`: weights the solver prepared earlier (prepare_weights), or null.
// `strict`: a CONV_MATH_STRICT context; a solver may sum more carefully.
// `relu`: with `bias`, a BACKWARD_DATA pass's epilogue on dx -- a transposed
// convolution's forward -- given only to a solver that fuses_transposed_epilogue().
// `planned`: what the solver's plan_run() worked out for this problem when
// the plan was made, or null (run() then works it out itself).
struct RunPlan;
struct ConvArgs {
    conv_op_t op;
    const ConvGeometry *g;
    conv_dtype_t dtype;
    void *x, *w, *y, *bias;
    const void *prepared = nullptr;
    bool strict = false;
    bool relu = false;
    conv_math_t math = CONV_MATH_DEFAULT;  // the context's (strict == (math == STRICT))
    const RunPlan *planned = nullptr;
};

// What a solver works out once for a problem instead of on every call
// (tables of lane masks and offsets, ...): made by Algorithm::plan_run when
// the plan is made, kept by the plan, handed to run() in ConvArgs::planned.
struct RunPlan {
    virtual ~RunPlan() = default;
};

class Algorithm : public Solver {
public:
    // Null when the algorithm computes this problem; otherwise a static
    // reason.
    virtual const char *why_not(const ConvGeometry &g, conv_op_t op) const = 0;
    // Null when it computes tensors of `dtype` (on this CPU); else a static reason.
    virtual const char *why_not_dtype(conv_dtype_t dtype) const {
        return dtype == CONV_DTYPE_FLOAT32 || dtype == CONV_DTYPE_FLOAT64
                   ? nullptr
                   : "computes float32 and float64 only";
    }
    // Scratch bytes for a run with `threads` threads (0 when none).
    virtual size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                   int threads) const = 0;
    // Whether it is expected to beat the algorithms after it in the engine's
    // list: the heuristic's thresholds, each with its measurement.
    virtual bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const {
        (void)g, (void)op, (void)dtype;
        return true;
    }
    // Computes the pass with up to `threads` threads; `ws` holds at least
    // workspace_bytes(..., threads) bytes, 64-byte aligned. The engine
    // calls it only for problems with something to sum (cpu/engine.cpp
    // computes empty reductions itself).
    virtual void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const = 0;

    // Once per plan: what run() may then find in ConvArgs::planned, or
    // null. Never required: run() without it works the same out per call
    // (for the calls that come without a plan). May throw bad_alloc.
    virtual std::shared_ptr<const RunPlan> plan_run(const Problem &p) const {
        (void)p;
        return nullptr;
    }

    // Whether it applies a transposed convolution's bias and ReLU to dx
    // itself (ConvArgs::relu), before dx is rounded to a 16-bit dtype once,
    // instead of leaving them to the engine after that rounding.
    virtual bool fuses_transposed_epilogue() const { return false; }

    // Prepared weights (conv_plan_prepare_weights): bytes of the prepared
    // copy of the filter for this problem, 0 when the algorithm prepares
    // nothing; prepare_weights writes it (`out` 64-byte aligned) and run()
    // then finds it in ConvArgs::prepared.
    virtual size_t prepared_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const {
        (void)g, (void)op, (void)dtype;
        return 0;
    }
    virtual void prepare_weights(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                 const void *w, void *out, ThreadPool &pool, int threads) const {
        (void)g, (void)op, (void)dtype, (void)w, (void)out, (void)pool, (void)threads;
    }

    // The whole problem, for a solver whose needs depend on more than the
    // geometry, pass and dtype -- the math mode: brgemm's fp32 runs on bf16
    // tiles only under CONV_MATH_FAST. What the engine calls; by default the
    // forms above.
    virtual const char *why_not_problem(const Problem &p) const {
        (void)p;
        return nullptr;
    }
    virtual size_t workspace_bytes(const Problem &p) const {
        return workspace_bytes(p.g, p.op, p.dtype, p.threads);
    }
    virtual size_t prepared_bytes(const Problem &p) const { return prepared_bytes(p.g, p.op, p.dtype); }
    virtual void prepare_weights(const Problem &p, const void *w, void *out, ThreadPool &pool) const {
        prepare_weights(p.g, p.op, p.dtype, w, out, pool, p.threads);
    }

    // conv::Solver, from the above.
    const char *why_not(const Problem &p) const final {
        const char *why = why_not_dtype(p.dtype);
        if (!why) why = why_not(p.g, p.op);
        return why ? why : why_not_problem(p);
    }
    Estimate estimate(const Problem &p) const final {
        return {workspace_bytes(p), competitive(p.g, p.op, p.dtype)};
    }
};

const Algorithm &im2col_gemm_algorithm();
const Algorithm &gemm_1x1_algorithm();
const Algorithm &depthwise_direct_algorithm();
const Algorithm &winograd_4x4_3x3_algorithm();
const Algorithm &implicit_gemm_algorithm();
const Algorithm &bf16_gemm_algorithm();
const Algorithm &direct_avx512_algorithm();
const Algorithm &brgemm_forward_algorithm();
const Algorithm &brgemm_backward_data_algorithm();
const Algorithm &brgemm_backward_filter_algorithm();

}  // namespace conv::cpu
