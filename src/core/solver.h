// The solver interface every engine's kernels implement (MIOpen's solvers,
// oneDNN's implementation list): a solver owns everything about one kernel --
// its name and id, why it does not apply to a problem, what it expects to
// cost -- so that choosing among kernels needs no knowledge of any of them.
// Each engine keeps its solvers in one ordered list (cpu/engine.cpp,
// cuda/solvers.cpp); adding a kernel is one solver file, one line there and
// its tests (docs/architecture.md walks through it).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "conv.h"
#include "core/geometry.h"

namespace conv {

// One pass of one problem as an engine computes it, and the settings that
// decide how: everything a solver may look at, and everything a plan is
// made from (so also the plan cache's key, dispatch/plan.cpp).
struct Problem {
    conv_op_t op = CONV_OP_FORWARD;  // the engine's pass (lowered: see dispatch/lowering.h)
    ConvGeometry g;                  // its geometry; g.transposed: the user's is transposed
    conv_dtype_t dtype = CONV_DTYPE_FLOAT32;
    conv_op_t user_op = CONV_OP_FORWARD;  // the pass the user asked for
    bool bias = false;  // the user gives a bias (forward) or a db (backward-filter)
    bool relu = false;  // the user's forward applies ReLU after the bias
    int threads = 1;    // CPU threads a plan runs with (its workspace is sized for them)
    conv_math_t math = CONV_MATH_DEFAULT;
    bool deterministic = false;
    size_t workspace_limit = 0;  // bytes, 0: none
};

// What a solver expects a problem to cost it.
struct Estimate {
    size_t workspace_bytes = 0;  // scratch of one run (before 64 bytes of alignment slack)
    // Whether the solver is expected to beat the solvers after it in its
    // engine's list: the measured thresholds live in each solver's file.
    bool competitive = true;
};

class Solver {
public:
    virtual ~Solver() = default;
    // Stable across versions: forcing by name (conv_algo_from_name), the
    // trace, tuning files.
    virtual const char *name() const = 0;
    // Its conv.h value (CONV_ALGO_IM2COL_GEMM, ...), or CONV_ALGO_AUTO for a
    // solver that has none: the engine's list then numbers it (SolverList).
    virtual conv_algo_t public_id() const { return CONV_ALGO_AUTO; }
    // Its id: the public one, else the one its engine's list gave it (from
    // kFirstPrivateSolverId on; stable within one library version).
    conv_algo_t id() const { return assigned_id_ != CONV_ALGO_AUTO ? assigned_id_ : public_id(); }
    // Null when the solver computes the problem, else a static reason (for
    // UNSUPPORTED messages and the level-2 trace).
    virtual const char *why_not(const Problem &p) const = 0;
    // Asked only where why_not() said yes.
    virtual Estimate estimate(const Problem &p) const = 0;
    // Sums products directly, so its error is a dot product's: the only kind
    // a CONV_MATH_STRICT context chooses unless forced.
    virtual bool strict() const { return true; }

private:
    friend class SolverList;
    // Written once, while the engine's list is made (a function-local static:
    // before any thread can reach the solver through it).
    mutable conv_algo_t assigned_id_ = CONV_ALGO_AUTO;
};

constexpr int kFirstPrivateSolverId = 1000;
// Private ids of one engine: [first, first + kPrivateIdsPerEngine).
constexpr int kPrivateIdsPerEngine = 100;

// An engine's solvers in its order of preference: the one registry of them.
// Made once per engine (a function-local static); it gives every solver
// without a conv.h value the next id of the engine's private range, in list
// order, and refuses two solvers with one name or one id -- so a new solver
// is one line in its engine's list and nothing else (the tests list the
// solvers through conv_algo_list).
class SolverList {
public:
    SolverList(std::initializer_list<const Solver *> solvers, int first_private_id);
    const std::vector<const Solver *> &all() const { return solvers_; }

private:
    std::vector<const Solver *> solvers_;
};

// The readable key of a problem's choice ("fwd float32 cf n1 c64 k64 g1
// in1x56x56 k1x3x3 s1x1x1 d1x1x1 pb0x1x1 pe0x1x1[ relu]"): the tuning
// table's and tuning files' key (MIOpen's find-db idea). Every axis, leading
// ones included, so that a 1-D problem and a 2-D one of height 1 share a
// choice (the same computation).
std::string problem_key(const Problem &p);

}  // namespace conv
