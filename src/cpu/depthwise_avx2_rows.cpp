// Channels-first (NCHW) depthwise 3x3 backward-filter at stride 1,
// multiplier 1, fp32, on CPUs with AVX2 and FMA but no AVX-512: vectors
// along a plane's rows (8 dy positions of a row per ymm), read in place.
//
// dw(tap) = sum over the batch and positions of dy(p) * x(p + tap): the 9
// taps' sums stay in 9 vectors over a channel's whole batch, one work item
// per channel, so the order of the sums does not depend on the thread
// count; they are reduced across lanes once. A block of 4 dy rows is swept
// 8 columns at a time: each input row's three taps of a column vector
// (three unaligned loads: columns c - 1, c, c + 1 for padding 1) are loaded
// once and summed against every dy row of the block whose window covers
// that row: 18 loads and 4 dy loads for 36 FMAs.
//
// Nothing is copied or transposed. The column vectors that reach past a
// row's ends (the first, the last one or two) clear, with a mask (AND: an
// infinity there becomes 0, not NaN), the lanes whose column is padding or
// lies past the row, in x and in dy. Rows in the padding read a row of
// zeros. A load past a row's end reads the plane's next row, or the next
// plane; only the tensor's first and last planes could read outside it,
// and those are first copied, with zeros around, into the thread's scratch.
//
// Why not depthwise_avx2.cpp's 8-channel blocks on wide planes: they
// transpose every 8 x 8 positions of x and dy (as many shuffles as FMAs)
// into padded tiles (416 KiB at 112x112, past Zen 3's L2). On planes under
// 16 dy columns the blocks stay ahead (their transposes are shared among 8
// channels, while masked edge vectors are most of such a row). The same
// form at stride 2 (taps split into even and odd columns by shuffles) and
// for forward measured mixed and is not kept (docs/performance.md).
// Every output is a plain sum of products (a dot product's bound).
#include "cpu/depthwise_avx2_rows.h"

#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/epilogue.h"
#include "cpu/plane_bounce.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;          // window size
constexpr int kTaps = kK * kK;
constexpr int kVec = 8;        // floats per ymm
constexpr int kMaxEdges = 4;   // column vectors of a row that need masks
constexpr int kRows = 4;       // dy rows per block

// A column vector's lane masks (RowPlan::mask).
using Masks = const int32_t (*)[kVec];

// How a plane's rows are swept: the geometry, which column vectors are
// interior (every lane's taps in the row, every lane an output) and the
// masks of the others.
struct RowPlan {
    int64_t ih, iw, oh, ow, pt, pl;
    int64_t vecs;    // column vectors per output row
    int64_t ib, ie;  // interior vectors: [ib, ie)
    // Floats a row's loads reach before its start and past its end; a
    // plane whose reads could leave the tensor is copied with this much
    // zeroed room around it.
    int64_t x_before, x_after, dy_after;
    // Per edge vector: the lanes each tap column keeps, then the lanes that
    // are outputs (all bits set or clear, for vandps).
    alignas(32) int32_t mask[kMaxEdges][kK + 1][kVec];

    // The first float a column vector's loads read, relative to the row.
    int64_t first_read(int64_t v) const { return v * kVec - pl; }
    int64_t end_read(int64_t v) const { return first_read(v) + kVec + kK - 1; }
    bool interior(int64_t v) const { return v >= ib && v < ie; }
    int64_t edge_slot(int64_t v) const { return v < ib ? v : ib + (v - ie); }
    Masks masks(int64_t v) const { return mask[edge_slot(v)]; }
    // A row of zeros that stands for the padding rows: x_before floats,
    // then as many as a row's reads reach.
    int64_t zero_floats() const { return round_up(x_before + std::max<int64_t>(end_read(vecs - 1), iw), kVec); }
    int64_t edges() const { return ib + (vecs - ie); }
};

RowPlan make_plan(const ConvGeometry &g) {
    RowPlan p{};
    p.ih = g.in[1], p.iw = g.in[2], p.oh = g.out[1], p.ow = g.out[2];
    p.pt = g.pad_begin[1], p.pl = g.pad_begin[2];
    p.vecs = ceil_div(p.ow, kVec);
    p.ib = 0;
    while (p.ib < p.vecs && p.first_read(p.ib) < 0) ++p.ib;
    p.ie = p.vecs;
    while (p.ie > p.ib && (p.end_read(p.ie - 1) > p.iw || p.ie * kVec > p.ow)) --p.ie;
    p.x_before = std::max<int64_t>(0, -p.first_read(0));
    p.x_after = std::max<int64_t>(0, p.end_read(p.vecs - 1) - p.iw);
    p.dy_after = p.vecs * kVec - p.ow;
    if (p.edges() > kMaxEdges) return p;  // not covered (dw_rows_covers)
    for (int64_t v = 0; v < p.vecs; ++v) {
        if (p.interior(v)) continue;
        int32_t(*m)[kVec] = p.mask[p.edge_slot(v)];
        for (int lane = 0; lane < kVec; ++lane) {
            const int64_t col = v * kVec + lane;
            const bool out = col < p.ow;
            for (int kw = 0; kw < kK; ++kw) {
                const int64_t in = col + kw - p.pl;
                m[kw][lane] = out && in >= 0 && in < p.iw ? -1 : 0;
            }
            m[kK][lane] = out ? -1 : 0;
        }
    }
    return p;
}

// A thread's scratch: the row of zeros, then room for copies of x's plane
// and dy's, for the planes whose reads could leave their tensor.
int64_t slot_floats(const RowPlan &p, const ConvGeometry &g) {
    return p.zero_floats() + bounce_floats(p.x_before, g.in_size(), p.x_after) +
           bounce_floats(0, g.out_size(), p.dy_after);
}

#if CONV_HAVE_AVX512_KERNELS

CONV_TARGET_AVX2 inline __m256 keep(__m256 v, const int32_t *mask) {
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i *>(mask))));
}

// The three taps of a column vector in an input row, from `at` (the row
// plus first_read(v)): t[kw] lane L holds x(row, v * 8 + L + kw - pl);
// with Edge, 0 where the column is padding or its lane no output.
template <bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void row_taps(const float *at, Masks m,
                                                                       __m256 (&t)[kK]) {
#pragma GCC unroll 3
    for (int kw = 0; kw < kK; ++kw) {
        t[kw] = _mm256_loadu_ps(at + kw);
        if constexpr (Edge) t[kw] = keep(t[kw], m[kw]);
    }
}

// The input rows a block of dy rows from y0 reads: block row i is x's row
// y0 - pt + i, or `zeros` (a row of zeros as long as any row's reads)
// where that lies in the padding. No bound is then checked per tap.
CONV_TARGET_AVX2 inline void block_rows(const RowPlan &p, const float *x, const float *zeros, int64_t y0,
                                        int n, const float **in) {
    for (int i = 0; i < n; ++i) {
        const int64_t r = y0 - p.pt + i;
        in[i] = r >= 0 && r < p.ih ? x + r * p.iw : zeros;
    }
}

// The rows [first, last) of a plane `pitch` floats wide, asked for now (a
// hint: never faults).
CONV_TARGET_AVX2 inline void prefetch_rows(const float *plane, int64_t pitch, int64_t first, int64_t last) {
    if (first >= last) return;
    const char *at = reinterpret_cast<const char *>(plane + first * pitch);
    for (int64_t b = 0; b < (last - first) * pitch * (int64_t)sizeof(float); b += 64)
        _mm_prefetch(at + b, _MM_HINT_T0);
}

// dy rows [y0, y0 + R) of one column vector (its dy at `dy`, its taps at
// `off` in the block's rows): sums[t] += dy(p) * x(p + t). With Edge the
// masks clear dy's lanes past the row as well as x's.
template <int R, bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_block(const float *const *in, int64_t off,
                                                                           const float *dy, int64_t ow, Masks m,
                                                                           __m256 (&sums)[kTaps]) {
    __m256 d[R];
#pragma GCC unroll 4
    for (int u = 0; u < R; ++u) {
        d[u] = _mm256_loadu_ps(dy + u * ow);
        if constexpr (Edge) d[u] = keep(d[u], m[kK]);
    }
#pragma GCC unroll 6
    for (int i = 0; i < R - 1 + kK; ++i) {
        __m256 t[kK];
        row_taps<Edge>(in[i] + off, m, t);
#pragma GCC unroll 4
        for (int u = 0; u < R; ++u) {
            const int kh = i - u;
            if (kh < 0 || kh >= kK) continue;
#pragma GCC unroll 3
            for (int kw = 0; kw < kK; ++kw) sums[kh * kK + kw] = _mm256_fmadd_ps(d[u], t[kw], sums[kh * kK + kw]);
        }
    }
}

// dy rows [y0, y0 + R) of a plane, column vector by column vector.
template <int R>
CONV_TARGET_AVX2 void filter_rows(const RowPlan &p, const float *x, const float *zeros, const float *dy,
                                  int64_t y0, __m256 (&sums)[kTaps]) {
    const float *in[R - 1 + kK];
    block_rows(p, x, zeros, y0, R - 1 + kK, in);
    // At batch 8 x and dy come from memory, read once: the next block's
    // rows are asked for now. 1.1-1.3x at batch 8 (MobileNet-v1's 56x56 and
    // 28x28); two blocks ahead measured slower.
    prefetch_rows(x, p.iw, std::max<int64_t>(0, y0 + R - p.pt + kK - 1), std::min(y0 + 2 * R - p.pt + kK - 1, p.ih));
    prefetch_rows(dy, p.ow, y0 + R, std::min(y0 + 2 * R, p.oh));
    const float *d = dy + y0 * p.ow;
    int64_t v = 0;
    for (; v < p.ib; ++v) filter_block<R, true>(in, p.first_read(v), d + v * kVec, p.ow, p.masks(v), sums);
    for (; v < p.ie; ++v) filter_block<R, false>(in, p.first_read(v), d + v * kVec, p.ow, nullptr, sums);
    for (; v < p.vecs; ++v) filter_block<R, true>(in, p.first_read(v), d + v * kVec, p.ow, p.masks(v), sums);
}

CONV_TARGET_AVX2 void filter_plane(const RowPlan &p, const float *x, const float *zeros, const float *dy,
                                   __m256 (&sums)[kTaps]) {
    int64_t y0 = 0;
    for (; y0 + kRows <= p.oh; y0 += kRows) filter_rows<kRows>(p, x, zeros, dy, y0, sums);
    switch (p.oh - y0) {
        case 3: return filter_rows<3>(p, x, zeros, dy, y0, sums);
        case 2: return filter_rows<2>(p, x, zeros, dy, y0, sums);
        case 1: return filter_rows<1>(p, x, zeros, dy, y0, sums);
        default: return;
    }
}

// dw of channel c: the sums over every image's plane.
CONV_TARGET_AVX2 void filter_channel(const RowPlan &p, const ConvArgs &a, int64_t c, float *scratch) {
    const ConvGeometry &g = *a.g;
    const int64_t in_plane = g.in_size(), out_plane = g.out_size(), planes = g.n * g.c;
    const float *zeros = scratch + p.x_before;
    float *x_copy = scratch + p.zero_floats();
    float *dy_copy = x_copy + bounce_floats(p.x_before, in_plane, p.x_after);
    __m256 sums[kTaps];
    for (auto &v : sums) v = _mm256_setzero_ps();
    for (int64_t n = 0; n < g.n; ++n) {
        const int64_t q = n * g.c + c;
        const float *x = static_cast<const float *>(a.x) + q * in_plane;
        const float *dy = static_cast<const float *>(a.y) + q * out_plane;
        if (near_ends(q, planes, in_plane, p.x_before, p.x_after))
            x = bounce(x, p.x_before, in_plane, p.x_after, x_copy);
        if (near_ends(q, planes, out_plane, 0, p.dy_after)) dy = bounce(dy, 0, out_plane, p.dy_after, dy_copy);
        filter_plane(p, x, zeros, dy, sums);
    }
    float *dw = static_cast<float *>(a.w) + c * kTaps;
    for (int t = 0; t < kTaps; ++t) {
        alignas(32) float lanes[kVec];
        _mm256_store_ps(lanes, sums[t]);
        float s = 0;
        for (float l : lanes) s += l;
        dw[t] = s;
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Planes at least this many dy columns wide. 1 thread, 6 interleaved
// rounds on an AMD EPYC (Zen 3), against this file's earlier form (x's rows
// copied into padded bands, 2 dy rows a block): batch 1 112x112 1.33x,
// 56x56 1.16x, 28x28 1.23x; batch 8 1.15x, 1.52x, 1.28x. At 14 columns or
// fewer 0.56-0.76x the 8-channel blocks.
constexpr int64_t kMinWidth = 16;

// What it adds to dw_avx2_covers (the layout, window, multiplier, stride,
// ISA), which its callers have checked.
bool dw_rows_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || g.stride[1] != 1 || g.out[2] < kMinWidth) return false;
    return make_plan(g).edges() <= kMaxEdges;
}

size_t dw_rows_workspace_bytes(const ConvGeometry &g, conv_op_t, int threads) {
    return (size_t)checked_mul(checked_mul(slot_floats(make_plan(g), g), std::max(threads, 1), "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

void dw_rows_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const RowPlan p = make_plan(g);
    float *scratch = static_cast<float *>(ws);
    const int64_t slot = slot_floats(p, g);
    // Each slot's row of zeros, once a call.
    for (int s = 0; s < std::max(threads, 1); ++s)
        std::fill(scratch + s * slot, scratch + s * slot + p.zero_floats(), 0.0f);
    pool.parallel_for(
        g.c, [&](int64_t c, int s) { filter_channel(p, a, c, scratch + s * slot); }, threads);
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
