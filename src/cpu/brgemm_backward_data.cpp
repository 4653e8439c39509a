// brgemm_backward_data: the backward-data pass on the batch-reduce GEMM,
// the forward tap sum over dy with the filter's roles swapped, one
// unstrided sum per stride phase of dx (brgemm_conv.h). Weights packed once
// per plan or per call; a transposed convolution's bias and ReLU applied
// before dx's one rounding.
#include "cpu/brgemm_conv.h"

namespace conv::cpu {
namespace {

class BrgemmBackwardData final : public brgemm::Solver {
public:
    BrgemmBackwardData() : Solver(CONV_OP_BACKWARD_DATA) {}
    const char *name() const override { return "brgemm_backward_data"; }
    bool fuses_transposed_epilogue() const override { return true; }

    size_t workspace_bytes(const Problem &p) const override {
        return brgemm::tap_sum_workspace_bytes(p.g, p.op, backend(p), p.threads);
    }
    using Algorithm::prepared_bytes;
    using Algorithm::prepare_weights;
    size_t prepared_bytes(const Problem &p) const override {
        return brgemm::packed_weight_bytes(p.g, backend(p), true);
    }
    void prepare_weights(const Problem &p, const void *w, void *out, ThreadPool &pool) const override {
        brgemm::pack_weights(p.g, p.dtype, backend(p), true, w, out, pool, p.threads);
    }
    void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) const override {
        brgemm::run_tap_sum(a, backend(a), ws, pool, threads);
    }
};

}  // namespace

const Algorithm &brgemm_backward_data_algorithm() {
    static const BrgemmBackwardData a;
    return a;
}

}  // namespace conv::cpu
