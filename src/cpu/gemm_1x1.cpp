// CONV_ALGO_GEMM_1X1: pointwise convolutions (1x1 kernel, stride 1, no
// padding) need no unfolding: the input is the GEMM operand as it lies, in
// both layouts, so the pass is the GEMMs alone with no scratch memory.
#include "cpu/gemm_conv.h"

namespace conv::cpu {
namespace {

class Gemm1x1 final : public Algorithm {
public:
    conv_algo_t id() const override { return CONV_ALGO_GEMM_1X1; }
    const char *why_not(const ConvGeometry &g, conv_op_t) const override {
        return g.is_pointwise() ? nullptr : "it needs a 1x1 kernel, stride 1 and no padding";
    }
    size_t workspace_bytes(const ConvGeometry &, conv_op_t, conv_dtype_t, int) const override {
        return 0;
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        run_gemm_conv(args, false, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &gemm_1x1_algorithm() {
    static const Gemm1x1 algo;
    return algo;
}

}  // namespace conv::cpu
