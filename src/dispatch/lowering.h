// How a user's pass becomes an engine pass, and which algorithm runs it.
// Shared by the pass runner and the algorithm search.
#pragma once

#include <string>

#include "core/context.h"
#include "core/geometry.h"
#include "core/params.h"
#include "cpu/algorithm.h"
#include "dispatch/operation.h"

namespace conv::dispatch {

// A pass as the convolution pass that computes it, tensors in that pass's
// roles. A transposed convolution's forward is a backward-data pass, its
// backward-data a forward pass and its backward-filter a backward-filter pass
// with x and dy exchanged; its bias and activation are applied around them.
struct Lowered {
    conv_op_t op;
    const Tensor *x, *w, *y, *bias;
    ConvGeometry g;
};

Lowered lower(const Pass &pass, const ConvGeometry &g);

// The tuning key of a lowered pass: everything that decides the choice.
std::string problem_key(const Lowered &l, conv_dtype_t dtype);

// Forced by the descriptor for the user's pass, else the context's tuned
// choice, else the heuristic's.
const cpu::Algorithm &select_algorithm(Context &ctx, const ConvParams &params, const Pass &pass,
                                       const Lowered &l);

// Runs one lowered pass with a given algorithm and workspace memory, then
// the epilogue of a transposed convolution.
void execute(const ConvParams &params, const Pass &pass, const Lowered &l,
             const cpu::Algorithm &algo, void *scratch, ThreadPool &pool, int threads);

}  // namespace conv::dispatch
