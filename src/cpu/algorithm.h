// The CPU engine's algorithm interface. Each algorithm is one file in cpu/
// and one line in dispatch/registry.cpp.
#pragma once

#include <cstddef>
#include <string>

#include "conv.h"
#include "core/geometry.h"
#include "core/thread_pool.h"

namespace conv::cpu {

// The tensors of one pass in their convolution roles: x is the input (dx for
// BACKWARD_DATA), w the filter (dw for BACKWARD_FILTER), y the output (dy for
// the backward passes), bias the bias (db for BACKWARD_FILTER, may be null).
struct ConvArgs {
    conv_op_t op;
    const ConvGeometry *g;
    conv_dtype_t dtype;
    void *x, *w, *y, *bias;
};

class Algorithm {
public:
    virtual ~Algorithm() = default;
    virtual conv_algo_t id() const = 0;
    // Null when the algorithm computes this problem; otherwise a static
    // reason (the registry adds the problem's description, only when the
    // message is needed: this runs on every call).
    virtual const char *why_not(const ConvGeometry &g, conv_op_t op) const = 0;
    // Scratch bytes for a run with `threads` threads (0 when none).
    virtual size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                   int threads) const = 0;
    // Computes the pass with up to `threads` threads; `ws` holds at least
    // workspace_bytes(..., threads) bytes, 64-byte aligned.
    virtual void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const = 0;
    // Sums products directly, so its error is that of a dot product: the
    // only kind a CONV_MATH_STRICT context chooses.
    virtual bool strict() const { return true; }
};

const Algorithm &im2col_gemm_algorithm();
const Algorithm &gemm_1x1_algorithm();
const Algorithm &depthwise_direct_algorithm();
const Algorithm &winograd_4x4_3x3_algorithm();
const Algorithm &implicit_gemm_algorithm();

}  // namespace conv::cpu
