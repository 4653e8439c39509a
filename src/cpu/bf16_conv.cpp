// "bf16_gemm": bfloat16 convolutions on CPUs with AVX-512, the three
// passes, both layouts, every geometry. Lowered to GEMM as im2col_gemm is
// (gemm_conv.h), over the bf16 GEMM of bf16_gemm.h: products of bf16
// values summed in float, each output rounded to bf16 once, to nearest with
// ties to even -- after the bias and ReLU (forward), after the fold of
// overlapping windows (backward-data, into a float copy of the block), after
// the sum over the whole batch (backward-filter, a float copy of the block).
//
// Work items are split as gemm_conv's are (no two threads write one output
// element; each item sums in a fixed order), so results are identical from
// run to run with the same thread count.
#include <algorithm>
#include <cstring>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/algorithm.h"
#include "cpu/bf16_gemm.h"
#include "cpu/epilogue.h"
#include "cpu/gemm_conv.h"
#include "cpu/isa.h"
#include "cpu/unfold.h"

namespace conv::cpu {
namespace {

// Scratch budgets per thread (bytes): the unfolded tile and the float tile
// of GEMM results, each well inside the L2 of a core.
constexpr int64_t kUnfoldBudget = 1 << 20;
constexpr int64_t kResultBudget = 256 << 10;
// Positions per tile of channels-first backward-data: the GEMM's rows are
// the block's channels x taps, its columns positions; tiling positions
// finely would pack the filter once per tile (res5's 3x3: 49 positions in
// tiles of 32 took 7 ms, in one tile 2.5).
constexpr int64_t kFoldPositions = 1024;

int64_t tile(int64_t total, int64_t per_unit_bytes, int64_t budget, int64_t multiple) {
    int64_t fit = budget / std::max<int64_t>(1, per_unit_bytes);
    if (fit >= total) return std::max<int64_t>(total, 1);
    return std::max(multiple, fit / multiple * multiple);
}

size_t bytes64(int64_t elements, int64_t size) {
    return (size_t)round_up(checked_mul(elements, size, "workspace"), 64);
}

// How a problem is cut: tiles, blocks, and the parts of a thread's slot.
struct Bf16Plan {
    int64_t pt = 1;  // output positions per tile
    int64_t ct = 1;  // input channels per block (backward passes)
    int64_t kt = 1;  // filters per block (forward: per thread's share; backward-filter)
    int64_t rt = 1;  // GEMM result rows (channels-first) or columns per float tile
    int64_t items = 0;
    size_t unfold_bytes = 0, result_bytes = 0, acc_bytes = 0;
    size_t slot_bytes() const {
        return gemm_bf16_pack_bytes() + unfold_bytes + result_bytes + acc_bytes;
    }
};

Bf16Plan make_plan(const ConvGeometry &g, conv_op_t op, int threads) {
    const int64_t P = g.out_size(), I = g.in_size(), KK = g.kernel_size(), CK = g.reduction();
    const int64_t G = g.groups, Cg = g.cg(), Kg = g.kg();
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST, unfold = !g.is_pointwise();
    Bf16Plan p;
    switch (op) {
        case CONV_OP_FORWARD: {
            const int64_t work = g.n * G;
            p.pt = tile(P, CK * 2, kUnfoldBudget, 32);
            // Too few images and tiles for the threads: split the filters.
            p.kt = block_for_threads(Kg, work * ceil_div(P, p.pt), threads);
            p.items = work * ceil_div(P, p.pt) * ceil_div(Kg, p.kt);
            p.rt = last ? std::min(p.kt, tile(p.kt, p.pt * 4, kResultBudget, 32))
                        : std::min(p.kt, tile(p.kt, p.pt * 4, kResultBudget, 14));
            if (unfold) p.unfold_bytes = bytes64(CK * p.pt, 2);
            p.result_bytes = bytes64(p.rt * p.pt, 4);
            break;
        }
        case CONV_OP_BACKWARD_DATA: {
            // Channels-last blocks narrower than the group cost a GEMM per tap
            // (their channels are strided in each tap): only for idle threads.
            p.ct = block_for_threads(Cg, g.n * G, threads);
            if (last) {
                p.pt = tile(P, p.ct * KK * 4, kUnfoldBudget, 32);
            } else {  // tiles of rt channels x pt positions: all positions when they are few
                p.pt = std::min(P, kFoldPositions);
                p.rt = std::min(p.ct, std::max<int64_t>(1, kUnfoldBudget / (KK * p.pt * 4)));
            }
            p.items = g.n * G * ceil_div(Cg, p.ct);
            p.acc_bytes = bytes64(checked_mul(p.ct, I, "workspace"), 4);
            if (unfold) p.result_bytes = bytes64((last ? p.ct : p.rt) * KK * p.pt, 4);
            break;
        }
        case CONV_OP_BACKWARD_FILTER: {
            p.ct = last ? std::max<int64_t>(Cg, 1) : block_for_threads(Cg, G, threads);
            const int64_t cblocks = ceil_div(Cg, p.ct);
            p.kt = block_for_threads(Kg, G * std::max<int64_t>(cblocks, 1), threads);
            p.pt = tile(P, p.ct * KK * 2, kUnfoldBudget, 32);
            p.items = G * cblocks * ceil_div(Kg, p.kt);
            if (unfold) p.unfold_bytes = bytes64(p.ct * KK * p.pt, 2);
            p.acc_bytes = bytes64(checked_mul(p.kt, p.ct * KK, "workspace"), 4);
            break;
        }
        default:
            break;  // unknown values
    }
    return p;
}

// Float block -> bf16 rows (no bias, no activation).
void round_rows(const float *c, int64_t ldc, int64_t rows, int64_t cols, bf16_t *y, int64_t ldy) {
    store_bf16(c, ldc, rows, cols, y, ldy, nullptr, false, false);
}

struct Bf16Conv {
    const ConvGeometry &g;
    const Bf16Plan &p;
    char *ws;
    int64_t N = g.n, C = g.c, K = g.k, G = g.groups, Cg = g.cg(), Kg = g.kg();
    int64_t P = g.out_size(), I = g.in_size(), KK = g.kernel_size(), CK = g.reduction();
    bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST, unfold = !g.is_pointwise();

    // A thread's slot: GEMM packing, unfolded tile, float results, float accumulator.
    char *slot(int s) const { return ws + (size_t)s * p.slot_bytes(); }
    bf16_t *col(int s) const {
        return reinterpret_cast<bf16_t *>(slot(s) + gemm_bf16_pack_bytes());
    }
    float *result(int s) const {
        return reinterpret_cast<float *>(slot(s) + gemm_bf16_pack_bytes() + p.unfold_bytes);
    }
    float *acc(int s) const {
        return reinterpret_cast<float *>(slot(s) + gemm_bf16_pack_bytes() + p.unfold_bytes +
                                         p.result_bytes);
    }

    // Item = (image, group, position tile, filter block).
    void forward(int64_t item, int s, const bf16_t *x, const bf16_t *w, const bf16_t *bias,
                 bf16_t *y) const {
        const bool relu = g.activation == CONV_ACTIVATION_RELU;
        int64_t kblocks = ceil_div(Kg, p.kt), kb = item % kblocks;
        int64_t tiles = ceil_div(P, p.pt), t = item / kblocks % tiles,
                rest = item / kblocks / tiles;
        int64_t n = rest / G, gi = rest % G;
        int64_t p0 = t * p.pt, p1 = std::min(P, p0 + p.pt), rows = p1 - p0;
        int64_t k0 = kb * p.kt, k1 = std::min(Kg, k0 + p.kt);
        void *pack = slot(s);
        float *r = result(s);
        const bf16_t *wg = w + gi * Kg * CK;
        if (!last) {
            const bf16_t *xg = x + (n * C + gi * Cg) * I;
            Bf16Operand b{xg + p0, P, false};
            if (unfold) {
                im2col_tile(g, xg, 0, Cg, p0, p1, col(s));
                b = {col(s), rows, false};
            }
            for (int64_t a0 = k0; a0 < k1; a0 += p.rt) {
                int64_t a1 = std::min(k1, a0 + p.rt);
                const Bf16Epilogue epi{y + (n * K + gi * Kg + a0) * P + p0, P,
                                       bias ? bias + gi * Kg + a0 : nullptr, true, relu};
                gemm_bf16(a1 - a0, rows, CK, {wg + a0 * CK, CK, false}, b, r, rows, false, pack,
                          &epi);
            }
            return;
        }
        const bf16_t *xg = x + n * I * C + gi * Cg;
        Bf16Operand a{xg + p0 * C, C, false};
        if (unfold) {
            im2row_tile(g, xg, 0, Cg, p0, p1, col(s));
            a = {col(s), CK, false};
        }
        for (int64_t a0 = k0; a0 < k1; a0 += p.rt) {
            int64_t a1 = std::min(k1, a0 + p.rt);
            const Bf16Epilogue epi{y + (n * P + p0) * K + gi * Kg + a0, K,
                                   bias ? bias + gi * Kg + a0 : nullptr, false, relu};
            gemm_bf16(rows, a1 - a0, CK, a, {wg + a0 * CK, CK, true}, r, a1 - a0, false, pack,
                      &epi);
        }
    }

    // Item = (image, group, channel block): dx of the block summed in float,
    // then (a transposed forward) its bias and ReLU, rounded once.
    void backward_data(int64_t item, int s, bf16_t *dx, const bf16_t *w, const bf16_t *dy,
                       const bf16_t *bias, bool relu) const {
        int64_t blocks = ceil_div(Cg, p.ct), cb = item % blocks;
        int64_t n = item / blocks / G, gi = item / blocks % G;
        int64_t c0 = cb * p.ct, c1 = std::min(Cg, c0 + p.ct), ct = c1 - c0;
        void *pack = slot(s);
        float *dxf = acc(s), *r = result(s);
        const bf16_t *wg = w + gi * Kg * CK;
        if (!last) {
            const bf16_t *dyg = dy + (n * K + gi * Kg) * P;
            const Bf16Epilogue epi{dx + (n * C + gi * Cg + c0) * I, I,
                                   bias ? bias + gi * Cg + c0 : nullptr, true, relu};
            if (!unfold) {  // no fold: the GEMM rounds dx itself
                gemm_bf16(ct, P, Kg, {wg + c0, CK, true}, {dyg, P, false}, dxf, I, false, pack,
                          &epi);
                return;
            }
            std::fill(dxf, dxf + ct * I, 0.f);
            for (int64_t a0 = 0; a0 < ct; a0 += p.rt) {
                int64_t a1 = std::min(ct, a0 + p.rt);
                for (int64_t p0 = 0; p0 < P; p0 += p.pt) {
                    int64_t p1 = std::min(P, p0 + p.pt);
                    gemm_bf16((a1 - a0) * KK, p1 - p0, Kg, {wg + (c0 + a0) * KK, CK, true},
                              {dyg + p0, P, false}, r, p1 - p0, false, pack);
                    col2im_tile_add(g, r, a0, a1, p0, p1, dxf);
                }
            }
            store_bf16(dxf, I, ct, I, epi.y, epi.ldy, epi.bias, true, relu);
            return;
        }
        // Channels-last: dxf is I x ct, the block's channels of the group.
        const bf16_t *dyg = dy + n * P * K + gi * Kg;
        const Bf16Epilogue epi{dx + n * I * C + gi * Cg + c0, C,
                               bias ? bias + gi * Cg + c0 : nullptr, false, relu};
        if (!unfold) {
            gemm_bf16(P, ct, Kg, {dyg, K, false}, {wg + c0, CK, false}, dxf, ct, false, pack, &epi);
            return;
        }
        ConvGeometry gg = g;  // the block's channels as a whole image's
        gg.c = ct;
        gg.k = Kg;
        gg.groups = 1;
        std::fill(dxf, dxf + ct * I, 0.f);
        for (int64_t p0 = 0; p0 < P; p0 += p.pt) {
            int64_t p1 = std::min(P, p0 + p.pt), rows = p1 - p0;
            if (ct == Cg)
                gemm_bf16(rows, CK, Kg, {dyg + p0 * K, K, false}, {wg, CK, false}, r, CK, false,
                          pack);
            else  // a GEMM per tap: the block's columns are strided within each
                for (int64_t kk = 0; kk < KK; ++kk)
                    gemm_bf16(rows, ct, Kg, {dyg + p0 * K, K, false},
                              {wg + kk * Cg + c0, CK, false}, r + kk * ct, KK * ct, false, pack);
            row2im_tile_add(gg, r, 0, ct, p0, p1, dxf);
        }
        store_bf16(dxf, ct, I, ct, epi.y, epi.ldy, epi.bias, false, relu);
    }

    // Channels-first backward-filter: one operand of its GEMM is transposed
    // while packed, the other result is transposed once when rounded. With
    // more positions (over the batch) than filters the unfolded tile is the
    // large one, so it is packed as A and dw comes out transposed (res2's
    // 3x3: 64 filters, 3136 positions); else dw comes out as it is stored
    // (res5's: 512 filters, 49 positions, where the transposed store of
    // 2.4M sums took 16% of the pass).
    bool dw_transposed() const { return N * P >= Kg; }

    // Item = (group, channel block, filter block), summed over the batch.
    void backward_filter(int64_t item, int s, const bf16_t *x, bf16_t *dw, const bf16_t *dy) const {
        int64_t cblocks = ceil_div(Cg, p.ct), kblocks = ceil_div(Kg, p.kt);
        int64_t kb = item % kblocks, cb = item / kblocks % cblocks, gi = item / kblocks / cblocks;
        int64_t c0 = cb * p.ct, c1 = std::min(Cg, c0 + p.ct), ct = c1 - c0;
        int64_t k0 = kb * p.kt, k1 = std::min(Kg, k0 + p.kt), kt = k1 - k0;
        int64_t cols = ct * KK;
        void *pack = slot(s);
        float *dwf = acc(s);
        bf16_t *dwb = dw + (gi * Kg + k0) * CK + (last ? 0 : c0 * KK);
        // One GEMM for the whole sum (one image, one tile): it rounds dw itself.
        const bool fused = N == 1 && P <= p.pt && (last || !dw_transposed());
        const Bf16Epilogue epi{dwb, CK, nullptr, false, false};
        const Bf16Epilogue *end = fused ? &epi : nullptr;
        bool first = true;
        for (int64_t n = 0; n < N; ++n)
            for (int64_t p0 = 0; p0 < P; p0 += p.pt, first = false) {
                int64_t p1 = std::min(P, p0 + p.pt), rows = p1 - p0;
                if (!last) {
                    const bf16_t *xg = x + (n * C + gi * Cg) * I;
                    Bf16Operand xcol{xg + c0 * I + p0, I, false};
                    if (unfold) {
                        im2col_tile(g, xg, c0, c1, p0, p1, col(s));
                        xcol = {col(s), rows, false};
                    }
                    Bf16Operand dyt{dy + (n * K + gi * Kg + k0) * P + p0, P, false};
                    if (dw_transposed())  // dw^T (cols x kt) += col x dy^T
                        gemm_bf16(cols, kt, rows, xcol, {dyt.p, dyt.ld, true}, dwf, kt, !first,
                                  pack);
                    else  // dw (kt x cols) += dy x col^T
                        gemm_bf16(kt, cols, rows, dyt, {xcol.p, xcol.ld, true}, dwf, cols, !first,
                                  pack, end);
                } else {
                    const bf16_t *xg = x + n * I * C + gi * Cg;
                    Bf16Operand b{xg + p0 * C, C, false};
                    if (unfold) {
                        im2row_tile(g, xg, 0, Cg, p0, p1, col(s));
                        b = {col(s), CK, false};
                    }
                    gemm_bf16(kt, CK, rows, {dy + (n * P + p0) * K + gi * Kg + k0, K, true}, b, dwf,
                              CK, !first, pack, end);
                }
            }
        if (first)  // empty batch: the gradient is zero
            for (int64_t k = 0; k < kt; ++k)
                std::fill(dwb + k * CK, dwb + k * CK + cols, bf16_t(0));
        else if (fused)
            return;
        else if (!last && dw_transposed())
            store_bf16_transposed(dwf, kt, cols, kt, dwb, CK);
        else
            round_rows(dwf, cols, kt, cols, dwb, CK);
    }
};

// Depthwise problems (one input channel per group) give the GEMM one row per
// group, which wastes most of it (MobileNet's 3x3 layers ran 20-100x slower
// than oneDNN's bf16). They are computed by depthwise_direct in float on
// widened copies of the inputs instead -- the same exact products and
// float sums -- and the float result is rounded once, with the bias and
// ReLU, as the GEMM's would be.
struct Bf16Depthwise {
    const ConvGeometry &g;
    conv_op_t op;

    static bool applies(const ConvGeometry &g, conv_op_t op) {
        return depthwise_direct_algorithm().why_not(g, op) == nullptr;
    }
    int64_t x_elems() const { return g.n * g.c * g.in_size(); }
    int64_t w_elems() const { return g.k * g.cg() * g.kernel_size(); }
    int64_t y_elems() const { return g.n * g.k * g.out_size(); }
    // The geometry the float pass runs: its ReLU is applied when rounding.
    ConvGeometry float_geometry() const {
        ConvGeometry f = g;
        f.activation = CONV_ACTIVATION_NONE;
        return f;
    }
    size_t float_bytes() const {
        return bytes64(x_elems(), 4) + bytes64(w_elems(), 4) + bytes64(y_elems(), 4);
    }
    size_t workspace_bytes(int threads) const {
        return float_bytes() + depthwise_direct_algorithm().workspace_bytes(
                                   float_geometry(), op, CONV_DTYPE_FLOAT32, threads);
    }

    // Rounds a float tensor of `channels` x `positions` per image into bf16.
    void round_tensor(const float *f, bf16_t *out, int64_t channels, int64_t positions,
                      const bf16_t *bias, bool relu, ThreadPool &pool, int threads) const {
        const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
        const int64_t per = channels * positions;
        pool.parallel_for(
            g.n,
            [&](int64_t n, int) {
                if (last)
                    store_bf16(f + n * per, channels, positions, channels, out + n * per, channels,
                               bias, false, relu);
                else
                    store_bf16(f + n * per, positions, channels, positions, out + n * per,
                               positions, bias, true, relu);
            },
            threads);
    }

    void run(const ConvArgs &a, char *ws, ThreadPool &pool, int threads) const {
        float *x = reinterpret_cast<float *>(ws);
        float *w = reinterpret_cast<float *>(ws + bytes64(x_elems(), 4));
        float *y = reinterpret_cast<float *>(ws + bytes64(x_elems(), 4) + bytes64(w_elems(), 4));
        const auto *bx = static_cast<bf16_t *>(a.x), *bw = static_cast<bf16_t *>(a.w);
        const auto *by = static_cast<bf16_t *>(a.y);
        auto *bias = static_cast<bf16_t *>(a.bias);
        if (op != CONV_OP_BACKWARD_DATA) widen_bf16(bx, x, x_elems());
        if (op != CONV_OP_BACKWARD_FILTER) widen_bf16(bw, w, w_elems());
        if (op != CONV_OP_FORWARD) widen_bf16(by, y, y_elems());
        const ConvGeometry fg = float_geometry();
        depthwise_direct_algorithm().run({op, &fg, CONV_DTYPE_FLOAT32, x, w, y, nullptr},
                                         ws + float_bytes(), pool, threads);
        switch (op) {
        case CONV_OP_FORWARD:
            round_tensor(y, static_cast<bf16_t *>(a.y), g.k, g.out_size(), bias,
                         g.activation == CONV_ACTIVATION_RELU, pool, threads);
            return;
        case CONV_OP_BACKWARD_DATA:  // a transposed forward's bias and ReLU, if fused
            round_tensor(x, static_cast<bf16_t *>(a.x), g.c, g.in_size(), bias, a.relu, pool,
                         threads);
            return;
        default:
            store_bf16(w, 0, 1, w_elems(), static_cast<bf16_t *>(a.w), 0, nullptr, false, false);
            if (bias)
                channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, bias, pool,
                             threads);
            return;
        }
    }
};

class Bf16Gemm final : public Algorithm {
public:
    const char *name() const override { return "bf16_gemm"; }
    const char *why_not_dtype(conv_dtype_t dtype) const override {
        if (dtype != CONV_DTYPE_BFLOAT16) return "computes bfloat16 only";
        return cpu_isa() == Isa::avx512 ? nullptr : "needs AVX-512";
    }
    const char *why_not(const ConvGeometry &, conv_op_t) const override { return nullptr; }
    bool fuses_transposed_epilogue() const override { return true; }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t,
                           int threads) const override {
        if (Bf16Depthwise::applies(g, op)) return Bf16Depthwise{g, op}.workspace_bytes(threads);
        return checked_mul((int64_t)make_plan(g, op, threads).slot_bytes(), threads, "workspace");
    }
    void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) const override {
        const ConvGeometry &g = *a.g;
        if (Bf16Depthwise::applies(g, a.op))
            return Bf16Depthwise{g, a.op}.run(a, static_cast<char *>(ws), pool, threads);
        const Bf16Plan plan = make_plan(g, a.op, threads);
        const Bf16Conv conv{g, plan, static_cast<char *>(ws)};
        auto *x = static_cast<bf16_t *>(a.x), *w = static_cast<bf16_t *>(a.w);
        auto *y = static_cast<bf16_t *>(a.y), *bias = static_cast<bf16_t *>(a.bias);
        switch (a.op) {
            case CONV_OP_FORWARD:
                pool.parallel_for(
                    plan.items, [&](int64_t i, int s) { conv.forward(i, s, x, w, bias, y); },
                    threads);
                return;
            case CONV_OP_BACKWARD_DATA:
                pool.parallel_for(
                    plan.items,
                    [&](int64_t i, int s) { conv.backward_data(i, s, x, w, y, bias, a.relu); },
                    threads);
                return;
            case CONV_OP_BACKWARD_FILTER:
                pool.parallel_for(
                    plan.items, [&](int64_t i, int s) { conv.backward_filter(i, s, x, w, y); },
                    threads);
                if (bias)
                    channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool,
                                 threads);
                return;
            default:
                break;  // unknown values
        }
    }
};

}  // namespace

const Algorithm &bf16_gemm_algorithm() {
    static const Bf16Gemm algo;
    return algo;
}

}  // namespace conv::cpu
