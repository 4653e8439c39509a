// Channels-first (NCHW) depthwise 3x3 backward-filter on planes whose dy
// rows fit one or two vectors (up to 31 columns: 7x7 to 28x28 at stride 1,
// 14x14 to 56x56 at stride 2), padding 1 before, fp32, AVX-512, read in
// place: dy row by dy row, 16 output columns a vector.
//
// dw(tap) = sum over images and positions of dy(p) * x(p + tap). For a dy
// row, the inputs under tap (kh, kw) are x row S * r + kh - 1's columns
// S * j + kw - 1. At stride 1 they are one load from column -1 and the same
// shifted down by one and two lanes (valignd); at stride 2 two loads split
// into even and odd columns (vpermt2ps) give kw = 0 and 1, and kw = 2 meets
// the even ones with dy moved up a lane (a shift a dy row, not one an x
// row: 1.02-1.04x on 14x14 and 56x56 s2). An x row is loaded and shifted
// once and used by every dy row whose window covers it (three at stride 1,
// two at 2).
//
// Masks: each FMA is merge-masked to the outputs whose tap lies inside the
// row: a lane whose tap is padding, or that is no output, adds nothing,
// whatever x and dy hold there (no inf * 0 = NaN). Loads at the tensor's
// ends read only columns inside the row (masked-off lanes never fault);
// elsewhere they read whole vectors (whole_reads_inside).
// Padding rows are skipped.
//
// A channel's 9 sums stay in registers over the batch and are reduced
// across lanes (lane_sums16's tree: four levels of shuffles and adds) into
// its 9 dw values, written at once, after the next channel's rows. Where a
// batch is read image by image the sums wait in the slot in dw's order,
// channel by channel, so 16 vectors in a row reduce to 16 dw values in a
// row: one store, where a scatter of 144 floats took 9-11% of a 7x7 or
// 14x14 plane's time. One block of 16 channels is one work item, so the
// sums' order does not depend on the thread count.
//
// Where it takes over (dw_filter_rows_covers): depthwise_avx512_blocked.cpp
// transposed 16 channels' x and dy into channel-blocked tiles (two 16 x 16
// transposes, 128 shuffles, for every 16 positions' 144 FMAs: half its time
// in perf); depthwise_avx512_nchw.cpp's plane kernels ran these rows in
// blocks with every tap a masked load.
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_avx512_rows.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

using namespace dw_rows;

// Per-thread scratch: the block's sums, [channel (pair)][tap][lane].
constexpr int64_t kSlotFloats = int64_t{kTaps} * kVec * kVec;

// The slot's vector of tap t's sums of vector channel(s) i (channel i, or
// channels 2 i and 2 i + 1 with two a vector).
inline float *slot_sums(float *slot, int i, int t) { return slot + (i * kTaps + t) * kVec; }

#if CONV_HAVE_AVX512_KERNELS

// acc[kh * 3 + kw] += d * s.v[kw] in the lanes whose tap is inside the
// row (the dy row's vectors v0 ...). The merge mask leaves the others'
// sums alone.
template <int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void add_row(
    const RowShape &p, __m512 (&acc)[kTaps], int kh, const __m512 (&d)[V], const RowSet<V> &s,
    int v0 = 0) {
    for (int v = 0; v < V; ++v)
        for (int kw = 0; kw < kK; ++kw)
            acc[kh * kK + kw] =
                _mm512_mask3_fmadd_ps(s.v[kw][v], d[v], acc[kh * kK + kw], p.tap[v0 + v][kw]);
}

// Stride 2, with tap column 2's x not made (load_set_s2 without `Third`):
// its products from the even columns (tap column 0's x) and dy moved up a
// lane (`up`), lane j + 1 meeting column 2 j + 1. Both sets then share a
// shift per dy row, where shifting x took one per input row (two a dy row).
template <int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void add_row_s2(const RowShape &p,
                                                                         __m512 (&acc)[kTaps], int kh,
                                                                         const __m512 (&d)[V],
                                                                         const __m512 (&up)[V],
                                                                         const RowSet<V> &s) {
    for (int v = 0; v < V; ++v) {
        acc[kh * kK] = _mm512_mask3_fmadd_ps(s.v[0][v], d[v], acc[kh * kK], p.tap[v][0]);
        acc[kh * kK + 1] = _mm512_mask3_fmadd_ps(s.v[1][v], d[v], acc[kh * kK + 1], p.tap[v][1]);
        acc[kh * kK + 2] = _mm512_mask3_fmadd_ps(s.v[0][v], up[v], acc[kh * kK + 2], p.tap_next[v]);
    }
}

// The dy row's vectors v0 ... (with two channels a vector: `other` as above;
// Whole: as load_set_s1's).
template <int V, int G, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void load_dy(const RowShape &p,
                                                                      const float *row,
                                                                      const float *other,
                                                                      __m512 (&d)[V], int v0 = 0) {
    if constexpr (Whole) {
        for (int v = 0; v < V; ++v) d[v] = held(_mm512_loadu_ps(row + (v0 + v) * kVec));
        if (G == 2) d[0] = _mm512_mask_blend_ps((__mmask16)0xff00, d[0], held(_mm512_loadu_ps(other - kVec / 2)));
        return;
    }
    for (int v = 0; v < V; ++v)
        d[v] = _mm512_maskz_loadu_ps(p.out[v0 + v][0], row + (v0 + v) * kVec);
    if (G == 2) d[0] = _mm512_mask_loadu_ps(d[0], p.out[0][1], other - kVec / 2);
}

// The dy row's vectors a lane up (lane l holds lane l - 1's, the first
// lane 0; with two channels a vector lane 8 holds the first channel's lane
// 7, which no FMA adds: RowShape::tap_next leaves lane 8 out).
template <int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void dy_up(const __m512 (&d)[V], __m512 (&up)[V]) {
    for (int v = 0; v < V; ++v)
        up[v] = _mm512_castsi512_ps(_mm512_alignr_epi32(
            _mm512_castps_si512(d[v]), v > 0 ? _mm512_castps_si512(d[v - 1]) : _mm512_setzero_si512(), 15));
}

// A vector's two channels' 18 dw values from the 9 taps' sums (lane_sums16
// with two channels a vector: tap t's half h in lane (t / 4) * 8 + 4 h + t %
// 4 for taps 0-7, tap 8's half h in lane 4 h of its own): the first
// channel's taps 0-8, the second's taps 0-6, then its taps 7 and 8 (to
// `out`, or the first channel's 9 only where `lone`).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void write_pair_sums(__m512 sums, __m512 tap8,
                                                                              float *out, bool lone) {
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 4, 5, 6, 7, 12, 13, 14);
    if (lone) {
        _mm512_mask_storeu_ps(out, (__mmask16)0x1ff, _mm512_permutex2var_ps(sums, first, tap8));
        return;
    }
    _mm512_storeu_ps(out, _mm512_permutex2var_ps(sums, first, tap8));
    const __m512i rest = _mm512_setr_epi32(15, kVec + 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm512_mask_storeu_ps(out + kVec, (__mmask16)0x3, _mm512_permutex2var_ps(sums, rest, tap8));
}

// A channel's 9 dw values (two channels': 18, or 9 where `lone`) from its
// sums in registers, to `out`: lane_sums16 on the 9 vectors and zeros,
// without the trip through the slot.
template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void write_channel_sums(const __m512 (&acc)[kTaps],
                                                                                 float *out, bool lone) {
    const __m512 z = _mm512_setzero_ps();
    if (G == 1) {  // tap t's sum in lane t
        const __m512 in[16] = {acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7], acc[8]};
        _mm512_mask_storeu_ps(out, (__mmask16)0x1ff, lane_sums16_of<1>(in));
        return;
    }
    const __m512 taps[8] = {acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]};
    const __m512 tap8[8] = {acc[8], z, z, z, z, z, z, z};
    write_pair_sums(lane_sums16_of<2>(taps), lane_sums16_of<2>(tap8), out, lone);
}

// dw of a block's cb channels (from `out`, cb * 9 floats) from the slot's
// sums.
template <int G>
CONV_TARGET_AVX512 inline void write_sums(const float *slot, float *out, int cb) {
    const int64_t n = int64_t{cb} * kTaps;
    if (G == 1) {  // 16 vectors in a row (channel by channel, tap by tap) are 16 dw values in a row
        store_lane_sums(slot, n, out);
        return;
    }
    // Two channels a vector: a pair's taps 0-7 reduce to its two channels'
    // first 8 sums (8 vectors of two halves), tap 8 of the 8 pairs together.
    // lane_of_sum puts vector i's half h in lane (i / 4) * 8 + 4 h + i % 4.
    const __m512 tap8 = lane_sums16<2>(slot + (kTaps - 1) * kVec, kTaps * kVec);
    for (int i = 0; i < kVec / 2 && 2 * i < cb; ++i) {
        // Pair i's tap 8 sums (lanes (i / 4) * 8 + 4 h + i % 4) moved to lanes
        // 0 and 4, where write_pair_sums reads them.
        const int lane8 = (i / 4) * 8 + i % 4;
        const __m512i at = _mm512_mask_set1_epi32(_mm512_set1_epi32(lane8), 1 << 4, lane8 + 4);
        write_pair_sums(lane_sums16<2>(slot + i * kTaps * kVec), _mm512_permutexvar_ps(at, tap8),
                        out + int64_t{2 * i} * kTaps, 2 * i + 1 == cb);
    }
}

// One image's planes of a channel: x read in rows, dy (x1, dy1: the second
// channel's, with two a vector).
struct Planes {
    const float *x, *dy, *x1, *dy1;
};

// The dy rows of one image's plane(s), their products added into acc
// (walk_rows_s1 / walk_rows_s2 call them); Whole: x's and dy's rows read
// whole vectors (load_set_s1, load_set_s2).
template <int V, int G, bool Whole>
struct FilterRows {
    static constexpr bool kWhole = Whole;
    const RowShape &p;
    const Planes &q;
    __m512 (&acc)[kTaps];

    // Stride 1: dy row r's vector v.
    template <bool Checked>
    CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s1(int v, bool next, int64_t r,
                                                                     const RowSet<1> &above, const RowSet<1> &at,
                                                                     RowSet<1> &below) {
        const bool lower = !Checked || r + 1 < p.ih;
        if (lower) below = load_set_s1<G, Whole>(p, q.x + (r + 1) * p.iw, q.x1 + (r + 1) * p.iw, v, next);
        __m512 d[1];
        load_dy<1, G, Whole>(p, q.dy + r * p.ow, q.dy1 + r * p.ow, d, v);
        if (!Checked || r > 0) add_row<1>(p, acc, 0, d, above, v);
        add_row<1>(p, acc, 1, d, at, v);
        if (lower) add_row<1>(p, acc, 2, d, below, v);
    }

    // Stride 2: dy row r.
    template <bool Checked>
    CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2(int64_t r, const RowSet<V> &top,
                                                                     RowSet<V> &bottom) {
        __m512 d[V], up[V];
        load_dy<V, G, Whole>(p, q.dy + r * p.ow, q.dy1 + r * p.ow, d);
        dy_up<V>(d, up);
        if (!Checked || r > 0) add_row_s2<V>(p, acc, 0, d, up, top);
        const int64_t mid = 2 * r * p.iw, low = mid + p.iw;
        if (!Checked || 2 * r < p.ih)
            add_row_s2<V>(p, acc, 1, d, up, load_set_s2<V, G, false, Whole>(p, q.x + mid, q.x1 + mid));
        if (!Checked || 2 * r + 1 < p.ih) {
            bottom = load_set_s2<V, G, false, Whole>(p, q.x + low, q.x1 + low);
            add_row_s2<V>(p, acc, 2, d, up, bottom);
        }
    }
};

// The pass's tensors, for whole_reads_inside.
struct Bounds {
    const float *x, *x_end, *dy, *dy_end;
};

// One image's plane of one channel (or two) added into acc.
template <int S, int V, int G, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void plane_sums_with(const RowShape &p, const Planes &q,
                                                                              __m512 (&acc)[kTaps]) {
    FilterRows<V, G, Whole> rows{p, q, acc};
    if (S == 1)
        walk_rows_s1<V, G, false>(p, q.x, q.x1, rows);  // dy no taller than x (dw_filter_rows_covers)
    else
        walk_rows_s2<V>(p, rows);
}

template <int S, int V, int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void plane_sums(const RowShape &p, const Planes &q,
                                                                         const Bounds &b, __m512 (&acc)[kTaps]) {
    if (whole_reads_inside(q.x, p.ih * p.iw, G, b.x, b.x_end) &&
        whole_reads_inside(q.dy, p.oh * p.ow, G, b.dy, b.dy_end))
        plane_sums_with<S, V, G, true>(p, q, acc);
    else
        plane_sums_with<S, V, G, false>(p, q, acc);
}

// dw of channels [c0, c0 + cb): each channel's sums over the batch (G
// channels a vector), reduced and written a channel at a time, or, read
// image by image, kept in the slot and the block's reduced together.
template <int S, int V, int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void filter_block_on(
    RowShape p,  // a copy: its masks stay in registers
    const ConvGeometry &g, const float *x, const float *dy, float *dw, int64_t c0, int cb, float *slot) {
    const int64_t in_plane = p.ih * p.iw, out_plane = p.oh * p.ow, planes = g.n * g.c;
    const Bounds b{x, x + planes * in_plane, dy, dy + planes * out_plane};
    // A batch is read image by image (below) where a plane's 9 FMAs a dy
    // row pay for moving its sums in and out of the slot: from 14 dy rows
    // (batch 8, 1 thread: 56x56 s2 1.36x, 28x28 1.31x, 14x14 1.15x; 14x14
    // s2 0.98x and 7x7 0.84x, left channel by channel).
    constexpr int64_t kImageOrderRows = 14;
    if (g.n == 1 || p.oh < kImageOrderRows) {
        // A channel's sums are reduced and written after the next channel's
        // rows: reduced at once, the tree waited on the last FMAs of each
        // sum's chain and cost 15% of a 14x14 plane (1.09x so, 1.04-1.12x on
        // other planes at batch 1).
        __m512 prev[kTaps];
        for (int ch = 0; ch < cb; ch += G) {
            __m512 acc[kTaps];
            for (auto &v : acc) v = _mm512_setzero_ps();
            const bool lone = G == 2 && ch + 1 == cb;
            if (lone) keep_first_channel(p);  // a channel without its pair
            for (int64_t n = 0; n < g.n; ++n) {
                const int64_t plane = n * g.c + c0 + ch;
                const float *xp = x + plane * in_plane, *dp = dy + plane * out_plane;
                plane_sums<S, V, G>(p, {xp, dp, xp + in_plane, dp + out_plane}, b, acc);
            }
            if (ch > 0) write_channel_sums<G>(prev, dw + (c0 + ch - G) * kTaps, false);
            for (int t = 0; t < kTaps; ++t) prev[t] = acc[t];
            if (ch + G >= cb) write_channel_sums<G>(acc, dw + (c0 + ch) * kTaps, lone);
        }
        return;
    }
    {
        // A batch image by image through the block's channels, each one's
        // sums kept in the slot between its planes (added in image order as
        // above: the same bits): one channel's planes lie C planes apart, and
        // read channel by channel they came from L3 or memory a plane at a
        // time, out of the prefetchers' reach.
        for (int i = 0; i < kTaps * kVec / G; ++i) _mm512_store_ps(slot + i * kVec, _mm512_setzero_ps());
        const RowShape whole = p;
        for (int64_t n = 0; n < g.n; ++n)
            for (int ch = 0; ch < cb; ch += G) {
                if (G == 2 && ch + 1 == cb) keep_first_channel(p);
                __m512 acc[kTaps];
                for (int t = 0; t < kTaps; ++t) acc[t] = _mm512_load_ps(slot_sums(slot, ch / G, t));
                const int64_t plane = n * g.c + c0 + ch;
                const float *xp = x + plane * in_plane, *dp = dy + plane * out_plane;
                plane_sums<S, V, G>(p, {xp, dp, xp + in_plane, dp + out_plane}, b, acc);
                for (int t = 0; t < kTaps; ++t) _mm512_store_ps(slot_sums(slot, ch / G, t), acc[t]);
                if (G == 2 && ch + 1 == cb) p = whole;
            }
    }
    write_sums<G>(slot, dw + c0 * kTaps, cb);
}

// The block, with the plane's sizes as constants where the instantiation
// has them (fixed_plane).
template <int S, int V, int G>
CONV_TARGET_AVX512 void filter_block(const RowShape &p, const ConvGeometry &g, const float *x,
                                     const float *dy, float *dw, int64_t c0, int cb, float *slot) {
    if (has_fixed_plane<S, V, G>(p))
        filter_block_on<S, V, G>(fixed_plane<S, V, G>(p), g, x, dy, dw, c0, cb, slot);
    else
        filter_block_on<S, V, G>(p, g, x, dy, dw, c0, cb, slot);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

bool dw_filter_rows_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || !dw_first_3x3(g)) return false;
    if (g.pad_begin[1] != 1 || g.pad_begin[2] != 1) return false;
    // Every dy row and column reads some of x (padding after of at most 1).
    if (g.out[1] > ceil_div(g.in[1], g.stride[1]) || g.out[2] > ceil_div(g.in[2], g.stride[2]))
        return false;
    return row_span(g.in[2], g.out[2], g.stride[2]) <= kMaxSpan;
}

size_t dw_filter_rows_workspace_bytes(const ConvGeometry &, conv_op_t, int threads) {
    return (size_t)checked_mul(kSlotFloats * (int64_t)sizeof(float), threads, "workspace");
}

void dw_filter_rows_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const int64_t span = row_span(g.in[2], g.out[2], g.stride[2]);
    const RowShape p = row_shape(g.in[1], g.in[2], g.out[1], g.out[2], g.stride[2], span <= kPairSpan);
    const float *x = static_cast<const float *>(a.x), *dy = static_cast<const float *>(a.y);
    float *dw = static_cast<float *>(a.w), *scratch = static_cast<float *>(ws);
    with_row_kernel(span, g.stride[2], [&](auto S, auto V, auto G) {
        pool.parallel_for(
            ceil_div(g.c, kVec),
            [&](int64_t block, int s) {
                const int64_t c0 = block * kVec;
                filter_block<decltype(S)::value, decltype(V)::value, decltype(G)::value>(
                    p, g, x, dy, dw, c0, (int)std::min<int64_t>(kVec, g.c - c0), scratch + s * kSlotFloats);
            },
            threads);
    });
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, dy, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
