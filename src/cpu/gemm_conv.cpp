#include "cpu/gemm_conv.h"

#include <algorithm>
#include <cstring>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/blas.h"
#include "cpu/epilogue.h"
#include "cpu/unfold.h"

namespace conv::cpu {
namespace {

// Scratch per thread: large enough for GEMMs near peak, small enough to stay
// in the 1-2 MiB of L2 a core has on current x86 parts.
constexpr int64_t kSlotBudgetBytes = 2 << 20;
constexpr int64_t kMinTile = 64;
// Fewest GEMM columns per thread worth splitting positions for (see forward).
constexpr int64_t kMinColumns = 128;

// Positions per tile so that a tile of `per_position` elements fits the budget.
int64_t position_tile(int64_t P, int64_t per_position, size_t esize) {
    int64_t fit = kSlotBudgetBytes / std::max<int64_t>(1, per_position * (int64_t)esize);
    int64_t pt = std::clamp<int64_t>(fit, kMinTile, std::max<int64_t>(P, 1));
    if (pt < P) pt = std::max<int64_t>(16, pt / 16 * 16);
    return std::min(pt, std::max<int64_t>(P, 1));
}

// A position tile of at most `pt` such that the items (work x tiles) split
// evenly over the threads when they are few: 56x56 = 3136 positions in
// tiles of 2048 gave one thread 2048 columns and the other 1088, and the
// pass took as long as the larger share.
int64_t balance_tiles(int64_t P, int64_t pt, int64_t work, int threads) {
    int64_t tiles = ceil_div(P, pt);
    if (threads <= 1 || work * tiles >= 4 * threads || P <= 16) return pt;
    while ((work * tiles) % threads != 0) ++tiles;
    return std::min(P, round_up(ceil_div(P, tiles), 16));
}

}  // namespace

int64_t block_for_threads(int64_t total, int64_t work, int threads) {
    if (total <= 1 || work >= threads) return std::max<int64_t>(total, 1);
    int64_t parts = std::min<int64_t>(total, ceil_div(threads, std::max<int64_t>(work, 1)));
    return ceil_div(total, parts);
}

GemmConvPlan plan_gemm_conv(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype, bool unfold,
                            int threads) {
    const size_t es = dtype_size(dtype);
    const int64_t P = g.out_size(), KK = g.kernel_size(), CK = g.reduction();
    const int64_t G = g.groups, Cg = g.cg(), Kg = g.kg();
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    GemmConvPlan p;
    int64_t slot_elems = 0;
    switch (op) {
    case CONV_OP_FORWARD: {
        int64_t work = last ? g.n : g.n * G;  // channels-last tiles span all groups
        p.pt = position_tile(P, CK, es);
        p.kt = std::max<int64_t>(1, last ? g.k : Kg);
        if (work * ceil_div(P, p.pt) < threads) {
            // Too few images and tiles for the threads. Splitting positions
            // gives each GEMM fewer columns; below kMinColumns per thread it
            // is better to split the filters (GEMM rows) and let each thread
            // unfold the small input itself (res5's 7x7 layers).
            if (P / ceil_div(threads, std::max<int64_t>(work, 1)) >= kMinColumns)
                p.pt = std::min(p.pt, round_up(block_for_threads(P, work, threads), 16));
            else
                p.kt = block_for_threads(p.kt, work * ceil_div(P, p.pt), threads);
        }
        p.pt = balance_tiles(P, p.pt, work * ceil_div(last ? g.k : Kg, p.kt), threads);
        p.items = work * ceil_div(P, p.pt) * ceil_div(last ? g.k : Kg, p.kt);
        slot_elems = CK * p.pt;
        break;
    }
    case CONV_OP_BACKWARD_DATA: {
        p.ct = block_for_threads(Cg, g.n * G, threads);
        // Channels-last: a block narrower than the group is unfolded by one
        // small GEMM per kernel tap (its channels are strided within each
        // tap); with few channels per group that costs more than the idle
        // thread it saves (conv1, 3 channels, 49 taps: 5.6-7.2 ms against
        // channels-first's 2.2).
        if (last && Cg < 16) p.ct = std::max<int64_t>(Cg, 1);
        p.pt = position_tile(P, p.ct * KK, es);
        p.items = g.n * G * ceil_div(Cg, p.ct);
        if (last && unfold && g.is_planar() && p.items < threads) {
            // Bands of at least `least` rows: band b's last row folds into
            // dx rows below band b + 2's first.
            const int64_t rows = g.out[1], least = std::max<int64_t>(1, floor_div((g.kernel[1] - 1) * g.dilation[1], g.stride[1]));
            const int64_t bands = std::min<int64_t>(4 * threads, rows / least);
            if (bands >= 2) {
                p.band_rows = ceil_div(rows, bands);
                p.bands = ceil_div(rows, p.band_rows);
                p.pt = std::min(p.pt, p.band_rows * g.out[2]);
            }
        }
        slot_elems = p.ct * KK * p.pt;
        break;
    }
    case CONV_OP_BACKWARD_FILTER: {
        p.ct = last ? std::max<int64_t>(Cg, 1) : block_for_threads(Cg, G, threads);
        int64_t cblocks = ceil_div(Cg, p.ct);
        p.kt = block_for_threads(Kg, G * std::max<int64_t>(cblocks, 1), threads);
        p.pt = position_tile(P, p.ct * KK, es);
        p.items = G * cblocks * ceil_div(Kg, p.kt);
        slot_elems = p.ct * KK * p.pt;
        break;
    }
    default: break;  // unknown values
    }
    p.slot_bytes = unfold ? (size_t)round_up(checked_mul(slot_elems, (int64_t)es, "workspace"), 64)
                          : 0;
    return p;
}

namespace {

template <class T>
struct GemmConv {
    const ConvGeometry &g;
    const GemmConvPlan &p;
    bool unfold;
    char *ws;
    // Sizes every pass uses.
    int64_t N = g.n, C = g.c, K = g.k, G = g.groups, Cg = g.cg(), Kg = g.kg();
    int64_t P = g.out_size(), I = g.in_size(), KK = g.kernel_size(), CK = g.reduction();
    bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;

    T *slot(int s) const { return reinterpret_cast<T *>(ws + s * p.slot_bytes); }

    // Item = (image[, group], position tile, filter block). Filters are
    // split only when positions are too few (see plan_gemm_conv).
    void forward(int64_t item, int s, const T *x, const T *w, const T *bias, T *y) const {
        const bool relu = g.activation == CONV_ACTIVATION_RELU;
        int64_t kblocks = ceil_div(last ? K : Kg, p.kt), kb = item % kblocks;
        int64_t tiles = ceil_div(P, p.pt), t = item / kblocks % tiles, rest = item / kblocks / tiles;
        int64_t p0 = t * p.pt, p1 = std::min(P, p0 + p.pt), rows = p1 - p0;
        if (!last) {
            int64_t n = rest / G, gi = rest % G;
            int64_t k0 = kb * p.kt, kt = std::min(Kg, k0 + p.kt) - k0;
            const T *xg = x + (n * C + gi * Cg) * I;
            const T *b = xg + p0;
            int64_t ldb = P;
            if (unfold) {
                im2col_tile(g, xg, 0, Cg, p0, p1, slot(s));
                b = slot(s);
                ldb = rows;
            }
            T *yg = y + (n * K + gi * Kg + k0) * P + p0;
            gemm(false, false, kt, rows, CK, T(1), w + (gi * Kg + k0) * CK, CK, b, ldb, T(0), yg,
                 P);
            bias_act_rows(yg, kt, rows, P, bias ? bias + gi * Kg + k0 : nullptr, relu);
            return;
        }
        // Channels-last: a filter block [k0, k1) of all K, crossing groups.
        int64_t n = rest, k0 = kb * p.kt, k1 = std::min(K, k0 + p.kt);
        for (int64_t gi = k0 / std::max<int64_t>(Kg, 1); Kg > 0 && gi * Kg < k1; ++gi) {
            int64_t a0 = std::max(k0, gi * Kg), a1 = std::min(k1, (gi + 1) * Kg);
            const T *xg = x + n * I * C + gi * Cg;
            const T *a = xg + p0 * C;
            int64_t lda = C;
            if (unfold) {
                im2row_tile(g, xg, 0, Cg, p0, p1, slot(s));
                a = slot(s);
                lda = CK;
            }
            gemm(false, true, rows, a1 - a0, CK, T(1), a, lda, w + a0 * CK, CK, T(0),
                 y + (n * P + p0) * K + a0, K);
        }
        T *yb = y + (n * P + p0) * K + k0;
        for (int64_t r = 0; r < rows; ++r)
            bias_act_cols(yb + r * K, 1, k1 - k0, bias ? bias + k0 : nullptr, relu);
    }

    // `band`: the item's band of output rows (channels-last, GemmConvPlan::
    // bands; dx zeroed before), or -1: all of them.
    void backward_data(int64_t item, int s, T *dx, const T *w, const T *dy, int64_t band = -1) const {
        int64_t blocks = ceil_div(Cg, p.ct), cb = item % blocks;
        int64_t n = item / blocks / G, gi = item / blocks % G;
        int64_t c0 = cb * p.ct, c1 = std::min(Cg, c0 + p.ct), ct = c1 - c0;
        const T *wg = w + gi * Kg * CK;
        if (!last) {
            T *dxg = dx + (n * C + gi * Cg) * I;
            const T *dyg = dy + (n * K + gi * Kg) * P;
            if (!unfold) {
                gemm(true, false, ct, P, Kg, T(1), wg + c0, CK, dyg, P, T(0), dxg + c0 * I, I);
                return;
            }
            std::fill(dxg + c0 * I, dxg + c1 * I, T(0));
            for (int64_t p0 = 0; p0 < P; p0 += p.pt) {
                int64_t p1 = std::min(P, p0 + p.pt);
                gemm(true, false, ct * KK, p1 - p0, Kg, T(1), wg + c0 * KK, CK, dyg + p0, P, T(0),
                     slot(s), p1 - p0);
                col2im_tile_add(g, slot(s), c0, c1, p0, p1, dxg);
            }
            return;
        }
        T *dxg = dx + n * I * C + gi * Cg;
        const T *dyg = dy + n * P * K + gi * Kg;
        if (!unfold) {
            gemm(false, false, P, ct, Kg, T(1), dyg, K, wg + c0, CK, T(0), dxg + c0, C);
            return;
        }
        int64_t first = 0, end = P;
        if (band >= 0) {
            first = std::min(P, band * p.band_rows * g.out[2]);
            end = std::min(P, first + p.band_rows * g.out[2]);
        } else {
            for (int64_t i = 0; i < I; ++i) std::fill(dxg + i * C + c0, dxg + i * C + c1, T(0));
        }
        for (int64_t p0 = first; p0 < end; p0 += p.pt) {
            int64_t p1 = std::min(end, p0 + p.pt), rows = p1 - p0;
            if (ct == Cg)
                gemm(false, false, rows, CK, Kg, T(1), dyg + p0 * K, K, wg, CK, T(0), slot(s), CK);
            else  // a channel block is strided within each kernel tap: a GEMM per tap
                for (int64_t kk = 0; kk < KK; ++kk)
                    gemm(false, false, rows, ct, Kg, T(1), dyg + p0 * K, K, wg + kk * Cg + c0, CK,
                         T(0), slot(s) + kk * ct, KK * ct);
            row2im_tile_add(g, slot(s), c0, c1, p0, p1, dxg);
        }
    }

    // Whether a backward-filter GEMM ending at position p1 writes the item's
    // dW block for the last time, whole: one image and one position tile.
    bool final_block(int64_t p1) const { return N == 1 && p1 == P && p.pt >= P; }
    using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, T, const T *, int64_t,
                            const T *, int64_t, T, T *, int64_t);
    static GemmFn gemm_for(bool write_once) {
        return write_once ? static_cast<GemmFn>(gemm_write_once) : static_cast<GemmFn>(gemm);
    }

    void backward_filter(int64_t item, int s, const T *x, T *dw, const T *dy) const {
        int64_t cblocks = ceil_div(Cg, p.ct), kblocks = ceil_div(Kg, p.kt);
        int64_t kb = item % kblocks, cb = item / kblocks % cblocks, gi = item / kblocks / cblocks;
        int64_t c0 = cb * p.ct, c1 = std::min(Cg, c0 + p.ct), ct = c1 - c0;
        int64_t k0 = kb * p.kt, k1 = std::min(Kg, k0 + p.kt), kt = k1 - k0;
        // The block of dW this item owns: rows k0..k1, columns c0*KK..c1*KK
        // (channels-first) or all CK columns (channels-last, ct == Cg).
        T *dwb = dw + (gi * Kg + k0) * CK + (last ? 0 : c0 * KK);
        int64_t cols = ct * KK;
        bool first = true;
        for (int64_t n = 0; n < N; ++n) {
            if (!last) {
                const T *xg = x + (n * C + gi * Cg) * I;
                const T *dyg = dy + (n * K + gi * Kg + k0) * P;
                if (!unfold) {
                    gemm(false, true, kt, ct, P, T(1), dyg, P, xg + c0 * I, I, T(first ? 0 : 1),
                         dwb, CK);
                    first = false;
                    continue;
                }
                for (int64_t p0 = 0; p0 < P; p0 += p.pt, first = false) {
                    int64_t p1 = std::min(P, p0 + p.pt);
                    im2col_tile(g, xg, c0, c1, p0, p1, slot(s));
                    gemm_for(final_block(p1))(
                        false, true, kt, cols, p1 - p0, T(1), dyg + p0, P, slot(s), p1 - p0,
                        T(first ? 0 : 1), dwb, CK);
                }
                continue;
            }
            const T *xg = x + n * I * C + gi * Cg;
            const T *dyg = dy + n * P * K + gi * Kg + k0;
            if (!unfold) {
                gemm(true, false, kt, Cg, P, T(1), dyg, K, xg, C, T(first ? 0 : 1), dwb, CK);
                first = false;
                continue;
            }
            for (int64_t p0 = 0; p0 < P; p0 += p.pt, first = false) {
                int64_t p1 = std::min(P, p0 + p.pt);
                im2row_tile(g, xg, 0, Cg, p0, p1, slot(s));
                gemm_for(final_block(p1))(
                    true, false, kt, CK, p1 - p0, T(1), dyg + p0 * K, K, slot(s), CK,
                    T(first ? 0 : 1), dwb, CK);
            }
        }
        if (first)  // empty batch: the gradient is zero
            for (int64_t k = 0; k < kt; ++k) std::fill(dwb + k * CK, dwb + k * CK + cols, T(0));
    }
};

template <class T>
void run_typed(const ConvArgs &a, bool unfold, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *a.g;
    GemmConvPlan plan = plan_gemm_conv(g, a.op, a.dtype, unfold, threads);
    GemmConv<T> conv{g, plan, unfold, static_cast<char *>(ws)};
    T *x = static_cast<T *>(a.x), *w = static_cast<T *>(a.w), *y = static_cast<T *>(a.y);
    T *bias = static_cast<T *>(a.bias);
    switch (a.op) {
    case CONV_OP_FORWARD:
        pool.parallel_for(plan.items, [&](int64_t i, int s) { conv.forward(i, s, x, w, bias, y); },
                          threads);
        return;
    case CONV_OP_BACKWARD_DATA:
        if (plan.bands > 1) {
            const int64_t total = g.n * g.in_size() * g.c, parts = threads;
            pool.parallel_for(
                parts, [&](int64_t i, int) { std::fill(x + total * i / parts, x + total * (i + 1) / parts, T(0)); },
                threads);
            for (int64_t round = 0; round < 2; ++round) {
                const int64_t half = (plan.bands + 1 - round) / 2;  // even bands, then odd
                pool.parallel_for(
                    plan.items * half,
                    [&](int64_t i, int s) { conv.backward_data(i / half, s, x, w, y, i % half * 2 + round); },
                    threads);
            }
            return;
        }
        pool.parallel_for(plan.items, [&](int64_t i, int s) { conv.backward_data(i, s, x, w, y); },
                          threads);
        return;
    case CONV_OP_BACKWARD_FILTER:
        pool.parallel_for(plan.items,
                          [&](int64_t i, int s) { conv.backward_filter(i, s, x, w, y); }, threads);
        if (bias)
            channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool, threads);
        return;
    default: break;  // unknown values
    }
}

}  // namespace

void run_gemm_conv(const ConvArgs &args, bool unfold, void *ws, ThreadPool &pool, int threads) {
    if (args.dtype == CONV_DTYPE_FLOAT32)
        run_typed<float>(args, unfold, ws, pool, threads);
    else
        run_typed<double>(args, unfold, ws, pool, threads);
}

}  // namespace conv::cpu
