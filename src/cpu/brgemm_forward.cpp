// brgemm_forward: the forward pass on the batch-reduce GEMM, the kernel
// taps as the batch over a padded channels-last copy of x (brgemm_conv.h).
// Weights packed once per plan (conv_plan_prepare_weights) or per call.
#include "cpu/brgemm_conv.h"

namespace conv::cpu {
namespace {

class BrgemmForward final : public brgemm::Solver {
public:
    BrgemmForward() : Solver(CONV_OP_FORWARD) {}
    const char *name() const override { return "brgemm_forward"; }

    size_t workspace_bytes(const Problem &p) const override {
        return brgemm::tap_sum_workspace_bytes(p.g, p.op, backend(p), p.threads);
    }
    using Algorithm::prepared_bytes;
    using Algorithm::prepare_weights;
    size_t prepared_bytes(const Problem &p) const override {
        return brgemm::packed_weight_bytes(p.g, backend(p), false);
    }
    void prepare_weights(const Problem &p, const void *w, void *out, ThreadPool &pool) const override {
        brgemm::pack_weights(p.g, p.dtype, backend(p), false, w, out, pool, p.threads);
    }
    void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) const override {
        brgemm::run_tap_sum(a, backend(a), ws, pool, threads);
    }
};

}  // namespace

const Algorithm &brgemm_forward_algorithm() {
    static const BrgemmForward a;
    return a;
}

}  // namespace conv::cpu
