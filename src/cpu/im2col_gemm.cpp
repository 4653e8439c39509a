// CONV_ALGO_IM2COL_GEMM: the general algorithm. Every geometry, both layouts,
// the three passes; the input unfolded tile by tile (see gemm_conv.h).
// fp32 1-D convolutions (channels-first, stride 1: WaveNet's dilated
// layers) unfold further down, on AVX-512: into each register-tile panel of
// the pointwise GEMM (pointwise_avx512.cpp), all three passes, where the
// unfolded tile went to L2 and back and OpenBLAS packed it again.
#include "core/dtype.h"
#include "cpu/gemm_conv.h"
#include "cpu/pointwise_avx512.h"

namespace conv::cpu {
namespace {

bool unfolds_into_panels(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    return dtype == CONV_DTYPE_FLOAT32 && pw_avx512_covers_taps(g, op);
}

class Im2colGemm final : public Algorithm {
public:
    const char *name() const override { return "im2col_gemm"; }
    conv_algo_t public_id() const override { return CONV_ALGO_IM2COL_GEMM; }
    const char *why_not(const ConvGeometry &, conv_op_t) const override { return nullptr; }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        if (unfolds_into_panels(g, op, dtype)) return pw_avx512_workspace_bytes(g, op, threads);
        return plan_gemm_conv(g, op, dtype, true, threads).slot_bytes * (size_t)threads;
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (unfolds_into_panels(*args.g, args.op, args.dtype)) return pw_avx512_run(args, ws, pool, threads);
        run_gemm_conv(args, true, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &im2col_gemm_algorithm() {
    static const Im2colGemm algo;
    return algo;
}

}  // namespace conv::cpu
