#include "dispatch/registry.h"

#include "core/error.h"
#include "cpu/blas.h"

namespace conv::dispatch {
namespace {

// In order of preference: the first that applies is the default.
const cpu::Algorithm *const kCpuAlgorithms[] = {
    &cpu::gemm_1x1_algorithm(),
    &cpu::depthwise_direct_algorithm(),
    &cpu::im2col_gemm_algorithm(),
};

}  // namespace

void init_cpu_engine() { cpu::blas_use_single_thread(); }

const cpu::Algorithm *find_cpu(conv_algo_t id) {
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (a->id() == id) return a;
    return nullptr;
}

std::vector<const cpu::Algorithm *> cpu_candidates(const ConvGeometry &g, conv_op_t op) {
    std::vector<const cpu::Algorithm *> out;
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (a->why_not(g, op).empty()) out.push_back(a);
    return out;
}

const cpu::Algorithm &choose_cpu(const ConvGeometry &g, conv_op_t op, conv_algo_t forced) {
    if (forced != CONV_ALGO_AUTO) {
        const cpu::Algorithm *a = find_cpu(forced);
        if (!a)
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s (%d) is not available on the CPU",
                 conv_algo_name(forced), (int)forced);
        std::string why = a->why_not(g, op);
        if (!why.empty())
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s does not apply: %s",
                 conv_algo_name(forced), why.c_str());
        return *a;
    }
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (a->why_not(g, op).empty()) return *a;
    fail(CONV_STATUS_INTERNAL_ERROR, "no CPU algorithm applies to %s", g.describe().c_str());
}

}  // namespace conv::dispatch
