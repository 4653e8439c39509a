// The CPU engine's one public header: what dispatch may know of it.
#pragma once

#include "core/engine.h"

namespace conv::cpu {

// The CPU engine: its solvers (cpu/engine.cpp lists them in order) and its
// plans. Prepares OpenBLAS once per process on first use (single-threaded:
// libconv threads its own work).
const Engine &engine();

}  // namespace conv::cpu
