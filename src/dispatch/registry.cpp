#include "dispatch/registry.h"

#include <algorithm>
#include <iterator>

#include "core/error.h"
#include "cpu/blas.h"
#include "cpu/isa.h"
#include "cpu/winograd.h"

namespace conv::dispatch {
namespace {

// Every CPU algorithm, in order of preference.
const cpu::Algorithm *const kCpuAlgorithms[] = {
    &cpu::gemm_1x1_algorithm(),
    &cpu::depthwise_direct_algorithm(),
    &cpu::winograd_4x4_3x3_algorithm(),
    &cpu::implicit_gemm_algorithm(),
    &cpu::im2col_gemm_algorithm(),
};

bool allowed(const cpu::Algorithm &a, bool strict_only) { return a.strict() || !strict_only; }

// The heuristic: where an algorithm applies but is known to lose.
// Winograd transforms every filter on every call into a 36 x K x C array
// (4x the weights), which only pays when enough 4x4 output tiles share it.
// The AVX-512 fp32 path puts tiles of all images in one block, so what
// counts is the batch's tile count: it wins from 16 tiles with <= 64x64
// channels, but the filter transform grows with C x K (37 MB at 512x512,
// beyond the caches): from 256x256 forward needs 32 tiles (res4 14x14 from
// batch 2: 1.8 vs 2.9 ms; at batch 1 about even with implicit GEMM), and
// backward-data 16 (res4 14x14 at batch 1 too), and C x K /
// 8192 beyond (res5 7x7 from batch 8, forced A/B: backward-data 12.5-16.9
// vs 17.1-18.8 ms, forward about even; at batch 2 it loses 2x). The portable path
// (fp64, or no AVX-512) keeps tile blocks within one image, so small planes
// also make its GEMMs narrow: 56x56 and 28x28 planes win once the batch
// brings >= 128 tiles; 14x14 loses even at batch 8, 7x7 always. Its
// transforms cost per channel what its GEMMs save per channel pair, so it
// also needs enough channels on both sides (docs/algorithms.md).
bool worth_it(const cpu::Algorithm &a, const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    // Implicit GEMM beats unfolding + OpenBLAS with its AVX-512 tiles (fp32;
    // the portable tiles are not a fast path) on kernels wider than 1x1:
    // 1.1-1.4x single-threaded on ResNet-50's 3x3 and 7x7 layers. 1x1
    // layers are faster as OpenBLAS GEMMs (the input read once per channel
    // gives the tiles no reuse). Backward-data reads the filters across
    // their rows, which loses once they outgrow the caches (512x512x3x3).
    if (a.id() == CONV_ALGO_IMPLICIT_GEMM) {
        if (dtype != CONV_DTYPE_FLOAT32 || cpu::cpu_isa() != cpu::Isa::avx512) return false;
        if (g.kernel_size() == 1) return false;
        // Channels-last filters ([k][r][s][c]) put each tap's weights a
        // channel row apart: the tiles' weight reads spread over 9x the
        // lines, and unfolding wins again (75 vs 85 GFLOP/s on 3x3 layers)
        // except where the unfolded rows are short (conv1: 1.5x).
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST && g.reduction() > 256) return false;
        // Backward-filter reduces over positions, one vector of 16 at a
        // time per tile: it wins on large output planes (56x56 3x3 1.5x at
        // batch 1 and 1.35x at batch 8, conv1 1.3x), and on 28x28 planes at
        // stride 1 once the batch brings 2048 positions (128->128 at batch
        // 3: 7.4 vs 8.9 ms, batch 8: 19.3 vs 23.3; batch 1 even); it loses
        // when the reduction is short (14x14: 0.45x at batch 1, even at 8),
        // and at stride 2 onto 28x28 or 14x14 at batch 8 (0.55x, 0.9x).
        if (op == CONV_OP_BACKWARD_FILTER) {
            const int64_t plane = g.out_size();
            const bool unit_stride = g.stride[1] == 1 && g.stride[2] == 1;
            return plane >= 2048 || (unit_stride && plane >= 784 && g.n * plane >= 2048);
        }
        return op != CONV_OP_BACKWARD_DATA || g.k * g.reduction() * 4 <= (4 << 20);
    }
    if (a.id() == CONV_ALGO_WINOGRAD_4X4_3X3) {
        int64_t per_image = ((g.out[1] + 3) / 4) * ((g.out[2] + 3) / 4), tiles = g.n * per_image;
        if (g.cg() < 16 || g.kg() < 16) return false;
        if (cpu::winograd::avx512_applies(dtype)) {
            const int64_t pairs = g.cg() * g.kg();
            // Backward-filter sums 36 K x C products over the tiles, then
            // reads them once more: with two threads it wins from 16 tiles
            // up to 256x256 channels (14x14 at batch 1: 1.13 vs 1.36 ms for
            // im2col + GEMM; batch 8: 6.2 vs 12.2 for implicit GEMM), while
            // 512x512 on 7x7 at batch 8 (32 tiles, 37 MB of products) is
            // 0.92x im2col + GEMM (1.4x single-threaded).
            if (op == CONV_OP_BACKWARD_FILTER) return tiles >= std::max<int64_t>(16, pairs / 4096);
            // From 256x256 channel pairs forward needs 32 tiles; backward-data
            // wins from 16 (14x14 at batch 1, one thread: 2.17-2.40 vs
            // implicit GEMM's 2.62-2.72 ms; with two threads even).
            const int64_t wide = op == CONV_OP_BACKWARD_DATA ? 16 : 32;
            return tiles >= std::max<int64_t>(pairs >= 256 * 256 ? wide : 16, pairs / 8192);
        }
        // The portable path has no backward-filter tuned for speed.
        return op != CONV_OP_BACKWARD_FILTER && per_image >= 49 && tiles >= 128;
    }
    return true;
}

// Every CUDA algorithm.
const conv_algo_t kCudaAlgorithms[] = {
    CONV_ALGO_CUDNN_IMPLICIT_GEMM, CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM,
    CONV_ALGO_CUDNN_GEMM,          CONV_ALGO_CUDNN_DIRECT,
    CONV_ALGO_CUDNN_FFT,           CONV_ALGO_CUDNN_FFT_TILING,
    CONV_ALGO_CUDNN_WINOGRAD,      CONV_ALGO_CUDNN_WINOGRAD_NONFUSED,
};

}  // namespace

const std::vector<conv_algo_t> &cuda_algorithms() {
    static const std::vector<conv_algo_t> all(std::begin(kCudaAlgorithms), std::end(kCudaAlgorithms));
    return all;
}

bool is_cuda_algorithm(conv_algo_t id) {
    for (conv_algo_t a : kCudaAlgorithms)
        if (a == id) return true;
    return false;
}

void init_cpu_engine() { cpu::blas_use_single_thread(); }

const cpu::Algorithm *find_cpu(conv_algo_t id) {
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (a->id() == id) return a;
    return nullptr;
}

std::vector<const cpu::Algorithm *> cpu_candidates(const ConvGeometry &g, conv_op_t op,
                                                   bool strict_only) {
    std::vector<const cpu::Algorithm *> out;
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (allowed(*a, strict_only) && !a->why_not(g, op)) out.push_back(a);
    return out;
}

const cpu::Algorithm &choose_cpu(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                 conv_algo_t forced, bool strict_only) {
    if (forced != CONV_ALGO_AUTO) {
        const cpu::Algorithm *a = find_cpu(forced);
        if (!a)
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s (%d) is not available on the CPU",
                 conv_algo_name(forced), (int)forced);
        if (const char *why = a->why_not(g, op))
            fail(CONV_STATUS_UNSUPPORTED, "algorithm %s does not apply: %s; the problem is %s",
                 conv_algo_name(forced), why, g.describe().c_str());
        return *a;
    }
    for (const cpu::Algorithm *a : kCpuAlgorithms)
        if (allowed(*a, strict_only) && worth_it(*a, g, op, dtype) && !a->why_not(g, op)) return *a;
    fail(CONV_STATUS_INTERNAL_ERROR, "no CPU algorithm applies to %s", g.describe().c_str());
}

}  // namespace conv::dispatch
