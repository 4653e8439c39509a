// CONV_ALGO_GEMM_1X1: pointwise convolutions (1x1 kernel, stride 1, no
// padding) need no unfolding: the input is the GEMM operand as it lies, in
// both layouts. With AVX-512, fp32 passes of ungrouped layers run this
// library's register-tile GEMM (pointwise_avx512.cpp, which packs one
// operand); everything else is OpenBLAS with no scratch memory.
#include "cpu/gemm_conv.h"
#include "cpu/pointwise_avx512.h"

namespace conv::cpu {
namespace {

bool own_kernel(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    return dtype == CONV_DTYPE_FLOAT32 && pw_avx512_covers(g, op);
}

class Gemm1x1 final : public Algorithm {
public:
    const char *name() const override { return "gemm_1x1"; }
    conv_algo_t public_id() const override { return CONV_ALGO_GEMM_1X1; }
    const char *why_not(const ConvGeometry &g, conv_op_t) const override {
        return g.is_pointwise() ? nullptr : "it needs a 1x1 kernel, stride 1 and no padding";
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        return own_kernel(g, op, dtype) ? pw_avx512_workspace_bytes(g, op, threads) : 0;
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (own_kernel(*args.g, args.op, args.dtype))
            pw_avx512_run(args, ws, pool, threads);
        else
            run_gemm_conv(args, false, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &gemm_1x1_algorithm() {
    static const Gemm1x1 algo;
    return algo;
}

}  // namespace conv::cpu
