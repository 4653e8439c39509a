#include <charconv>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/solver.h"

namespace conv {
namespace {

// Appends decimal digits (keys are built on plan-cache misses; printf would
// cost 42k instructions per key).
void append_int(std::string &s, int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
}

void append_axes(std::string &s, const char *tag, const int64_t *v) {
    s += tag;
    append_int(s, v[0]);
    s += 'x';
    append_int(s, v[1]);
    s += 'x';
    append_int(s, v[2]);
}

}  // namespace

std::string problem_key(const Problem &p) {
    static const char *const kOps[] = {"fwd", "bwd_data", "bwd_filter"};
    const ConvGeometry &g = p.g;
    std::string s;
    s.reserve(160);
    s += kOps[p.op];
    s += ' ';
    s += dtype_name(p.dtype);
    s += g.layout == CONV_LAYOUT_CHANNELS_LAST ? " cl n" : " cf n";
    append_int(s, g.n);
    s += " c";
    append_int(s, g.c);
    s += " k";
    append_int(s, g.k);
    s += " g";
    append_int(s, g.groups);
    append_axes(s, " in", g.in);
    append_axes(s, " k", g.kernel);
    append_axes(s, " s", g.stride);
    append_axes(s, " d", g.dilation);
    append_axes(s, " pb", g.pad_begin);
    append_axes(s, " pe", g.pad_end);
    if (g.activation == CONV_ACTIVATION_RELU) s += " relu";
    return s;
}

SolverList::SolverList(std::initializer_list<const Solver *> solvers, int first_private_id)
    : solvers_(solvers) {
    int next = first_private_id;
    for (size_t i = 0; i < solvers_.size(); ++i) {
        const Solver &s = *solvers_[i];
        if (s.public_id() == CONV_ALGO_AUTO) {
            if (next >= first_private_id + kPrivateIdsPerEngine)
                fail(CONV_STATUS_INTERNAL_ERROR, "more than %d private solvers in one engine",
                     kPrivateIdsPerEngine);
            s.assigned_id_ = (conv_algo_t)next++;
        }
        for (size_t j = 0; j < i; ++j)
            if (solvers_[j]->id() == s.id() || std::strcmp(solvers_[j]->name(), s.name()) == 0)
                fail(CONV_STATUS_INTERNAL_ERROR, "solvers %s and %s share a name or an id (%d)",
                     solvers_[j]->name(), s.name(), (int)s.id());
    }
}

}  // namespace conv
