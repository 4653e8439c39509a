// The engines libconv has, and their solvers by id and by name: the only
// place that names the engines (each through its one public header).
#pragma once

#include <string>

#include "conv.h"
#include "core/engine.h"

namespace conv::dispatch {

// The engine of a device kind (every kind has one; a build without CUDA has
// a CUDA engine that reports no device).
const Engine &engine_for(conv_device_t device);

// A solver of any engine by id or by name; null when there is none.
const Solver *find_solver(conv_algo_t id);
const Solver *find_solver(const char *name);

// "im2col_gemm, gemm_1x1, ..." for messages.
std::string solver_names();

}  // namespace conv::dispatch
