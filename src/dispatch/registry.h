// The algorithms of each engine in a fixed order, and the choice among them.
// The only place that names the algorithms.
#pragma once

#include <vector>

#include "core/geometry.h"
#include "cpu/algorithm.h"

namespace conv::dispatch {

// The CPU algorithm for a pass: the forced one (UNSUPPORTED with the reason
// when it does not apply), or the heuristic's pick for CONV_ALGO_AUTO.
// `strict_only` (a CONV_MATH_STRICT context) leaves out algorithms whose
// error exceeds direct summation's, unless forced.
const cpu::Algorithm &choose_cpu(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                 conv_algo_t forced, bool strict_only);

// Prepares the CPU engine once per process (OpenBLAS single-threaded: libconv
// threads its own work).
void init_cpu_engine();

// The CPU algorithm with this id, or null when there is none.
const cpu::Algorithm *find_cpu(conv_algo_t id);

// Every CPU algorithm that computes this pass, in preference order.
std::vector<const cpu::Algorithm *> cpu_candidates(const ConvGeometry &g, conv_op_t op,
                                                   bool strict_only);

// The CUDA engine's algorithms (cuDNN's families, src/cuda/engine.cpp maps
// them onto cuDNN's per-pass enums); cuDNN's heuristic orders them per
// problem, so this list has no preference order.
const std::vector<conv_algo_t> &cuda_algorithms();
bool is_cuda_algorithm(conv_algo_t id);

}  // namespace conv::dispatch
