// brgemm_backward_filter: the backward-filter pass on the batch-reduce
// GEMM: per output row, dy packed once as B (positions as the reduction)
// and each tap's input positions transposed as A (brgemm_conv.h); the bias
// gradient by channel sums.
#include "cpu/brgemm_conv.h"

namespace conv::cpu {
namespace {

class BrgemmBackwardFilter final : public brgemm::Solver {
public:
    BrgemmBackwardFilter() : Solver(CONV_OP_BACKWARD_FILTER) {}
    const char *name() const override { return "brgemm_backward_filter"; }

    size_t workspace_bytes(const Problem &p) const override {
        return brgemm::backward_filter_workspace_bytes(p.g, backend(p), p.threads);
    }
    void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) const override {
        brgemm::run_backward_filter(a, backend(a), ws, pool, threads);
    }
};

}  // namespace

const Algorithm &brgemm_backward_filter_algorithm() {
    static const BrgemmBackwardFilter a;
    return a;
}

}  // namespace conv::cpu
