#include "dispatch/engines.h"

#include <cstring>

#include "cpu/engine.h"
#include "cuda/engine.h"

namespace conv::dispatch {
namespace {

const Engine *const kEngines[] = {&cpu::engine(), &cuda::engine()};

}  // namespace

const Engine &engine_for(conv_device_t device) {
    return device == CONV_DEVICE_CUDA ? cuda::engine() : cpu::engine();
}

const Solver *find_solver(conv_algo_t id) {
    for (const Engine *e : kEngines)
        for (const Solver *s : e->solvers())
            if (s->id() == id) return s;
    return nullptr;
}

const Solver *find_solver(const char *name) {
    for (const Engine *e : kEngines)
        for (const Solver *s : e->solvers())
            if (std::strcmp(s->name(), name) == 0) return s;
    return nullptr;
}

std::string solver_names() {
    std::string all;
    for (const Engine *e : kEngines)
        for (const Solver *s : e->solvers()) {
            if (!all.empty()) all += ", ";
            all += s->name();
        }
    return all;
}

}  // namespace conv::dispatch
