// CONV_ALGO_IM2COL_GEMM: the general algorithm. Every geometry, both layouts,
// the three passes; the input unfolded tile by tile (see gemm_conv.h).
#include "core/dtype.h"
#include "cpu/gemm_conv.h"

namespace conv::cpu {
namespace {

class Im2colGemm final : public Algorithm {
public:
    const char *name() const override { return "im2col_gemm"; }
    conv_algo_t public_id() const override { return CONV_ALGO_IM2COL_GEMM; }
    const char *why_not(const ConvGeometry &, conv_op_t) const override { return nullptr; }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        return plan_gemm_conv(g, op, dtype, true, threads).slot_bytes * (size_t)threads;
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        run_gemm_conv(args, true, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &im2col_gemm_algorithm() {
    static const Im2colGemm algo;
    return algo;
}

}  // namespace conv::cpu
