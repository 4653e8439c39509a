// How a user's pass becomes an engine pass: a transposed convolution's
// forward is a backward-data pass, its backward-data a forward pass and its
// backward-filter a backward-filter pass with x and dy exchanged; its bias
// and activation are applied around them (by the engine's plan).
#pragma once

#include "core/engine.h"
#include "core/geometry.h"
#include "dispatch/operation.h"

namespace conv::dispatch {

struct Lowered {
    conv_op_t op;
    ConvGeometry g;
};

// The engine's pass and geometry for the user's pass of geometry `g`.
Lowered lower(conv_op_t op, const ConvGeometry &g);

// The user's tensors in the engine pass's roles (x, w, y), the bias as given.
Operands lower_operands(const Pass &pass, bool transposed);

}  // namespace conv::dispatch
