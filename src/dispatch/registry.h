// The algorithms of each engine in a fixed order, and the choice among them.
// The only place that names the algorithms.
#pragma once

#include "core/geometry.h"
#include "cpu/algorithm.h"

namespace conv::dispatch {

// The CPU algorithm for a pass: the forced one (UNSUPPORTED with the reason
// when it does not apply), or the heuristic's pick for CONV_ALGO_AUTO.
const cpu::Algorithm &choose_cpu(const ConvGeometry &g, conv_op_t op, conv_algo_t forced);

// The CPU algorithm with this id, or null when there is none.
const cpu::Algorithm *find_cpu(conv_algo_t id);

}  // namespace conv::dispatch
