#include "dispatch/engines.h"

#include <array>
#include <cstring>

#include "core/error.h"
#include "cpu/engine.h"
#include "cuda/engine.h"

namespace conv::dispatch {
namespace {

// Indexed by conv_device_t. Made on first use, not at load time: the CPU
// engine sets OpenBLAS up when it is made.
const std::array<const Engine *, 2> &engines() {
    static const std::array<const Engine *, 2> all = {&cpu::engine(), &cuda::engine()};
    return all;
}

}  // namespace

const Engine &engine_for(conv_device_t device) {
    if (device < 0 || (size_t)device >= engines().size())
        fail(CONV_STATUS_INVALID_ARGUMENT, "unknown device kind %d", (int)device);
    return *engines()[device];
}

const Solver *find_solver(conv_algo_t id) {
    for (const Engine *e : engines())
        for (const Solver *s : e->solvers())
            if (s->id() == id) return s;
    return nullptr;
}

const Solver *find_solver(const char *name) {
    for (const Engine *e : engines())
        for (const Solver *s : e->solvers())
            if (std::strcmp(s->name(), name) == 0) return s;
    return nullptr;
}

std::string solver_names() {
    std::string all;
    for (const Engine *e : engines())
        for (const Solver *s : e->solvers()) {
            if (!all.empty()) all += ", ";
            all += s->name();
        }
    return all;
}

}  // namespace conv::dispatch
