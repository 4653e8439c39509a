// CONV_ALGO_IMPLICIT_GEMM: 1-D and 2-D convolutions in both layouts (any
// kernel, stride, dilation, padding, groups) summed straight from the input,
// with no unfolded matrix -- forward, backward-filter, and backward-data at
// stride 1.
//
// The source (x; dy for backward-data) is first copied, once per call, into
// a zero-padded, channel-major buffer and, for stride > 1, split into stride_h x stride_w
// phase planes (rows and columns of one residue each). Every phase plane has
// the same width wq, and output position (oh, ow) of kernel tap (r, s) then
// reads one fixed offset from oh * wq + ow: a run of consecutive positions
// needs one contiguous load per tap, whatever the stride. Positions are
// walked in that flattened form across row ends, so a micro-tile of 32 or 48
// positions is full even on 7x7 planes; the wq - out_w columns it computes
// at each row end are dropped on the store.
//
// A micro-tile is 8 filters x 48 (or 32) positions held in 24 (16) AVX-512
// registers: per (channel, tap) one load of the source per 16 positions and
// one broadcast weight per filter, read in place from the filter tensor
// (each filter's weights are a sequential stream). Backward-data is the
// same correlation of dy with the filters rotated and transposed: read in
// place too, the taps walked backwards, filter stride and channel stride
// exchanged -- no copy of the weights is made on any pass.
//
// Accuracy: each output is a plain sum of its products (a dot product's
// bound); a strict context may choose it. Without AVX-512, or in float64,
// the same tiles run through portable C++.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/algorithm.h"
#include "cpu/avx512.h"
#include "cpu/batch_parts.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"
#include "cpu/pointwise_avx512.h"

namespace conv::cpu {
namespace {

constexpr int kMR = 8;                 // filters per micro-tile
constexpr int64_t kKChunk = 64;        // filters per work item
constexpr int64_t kTilesPerItem = 2;   // micro-tiles of positions per work item
constexpr int64_t kL1Budget = 24 << 10; // bytes of source a channel block may read
constexpr int64_t kStrictBlock = 32;   // source channels summed apart under CONV_MATH_STRICT

// The correlation both passes reduce to: destination channel m of group gi
// at (oh, ow) = sum over source channels c of the group and taps (r, s) of
// weight(m, c, r, s) * padded_source(c, oh * sh + r * dh, ow * sw + s * dw),
// where padded row 0 is source row -top (column 0: column -left).
struct Problem {
    bool backward;                         // backward-data: source dy, destination dx
    // Element strides of source and destination: channel, row, column.
    int64_t src_cs, src_rs, src_ps, dst_cs, dst_ps;
    int64_t n, groups, cs, cd, csg, cdg;   // channels: total and per group
    int64_t hs, ws, hd, wd;                // source and destination planes
    int64_t kr, ks, dh, dw, sh, sw, top, left;
    int64_t hq, wq, phases, plane;         // phase planes; floats per source channel
    int64_t positions;                     // hd * wq: flattened positions per plane
    int nr;                                // positions per micro-tile (32 or 48)
    int64_t ck;                            // weights per destination channel: csg * taps
    int64_t cblock;                        // source channels summed per pass over a tile
    // Weight (m, c, tap) of group gi: w[gi * w_group + m * w_row + c * w_chan + w_tap0 + tap * w_tapdir].
    int64_t w_group, w_row, w_chan, w_tap0, w_tapdir;
    // Backward-filter: dy laid out at the flattened positions (zero in the
    // dropped columns), qv positions per channel (a multiple of 16).
    bool filter;
    int64_t qv;
    int64_t parts;  // backward-filter: parts of the batch (cpu/batch_parts.h)
    // Workspace, in elements: tap offsets and a channel block's steps (as
    // int64), the source, dy, the batch parts' copies of dw.
    int64_t taps_at, steps_at, source_at, dy_at, partials_at, total;
};

// Positions per micro-tile: the width that wastes fewest lanes past the
// last position (48 on ties: fewer weight reloads per position).
int choose_nr(int64_t positions) {
    int64_t waste48 = round_up(positions, 48) - positions;
    int64_t waste32 = round_up(positions, 32) - positions;
    return waste32 < waste48 ? 32 : 48;
}

Problem make_problem(const ConvGeometry &g, conv_op_t op, size_t es, bool strict = false) {
    Problem p;
    p.backward = op == CONV_OP_BACKWARD_DATA;
    p.filter = op == CONV_OP_BACKWARD_FILTER;
    p.n = g.n;
    p.groups = g.groups;
    p.kr = g.kernel[1], p.ks = g.kernel[2], p.dh = g.dilation[1], p.dw = g.dilation[2];
    if (!p.backward) {
        p.cs = g.c, p.cd = g.k, p.hs = g.in[1], p.ws = g.in[2], p.hd = g.out[1], p.wd = g.out[2];
        p.sh = g.stride[1], p.sw = g.stride[2];
        p.top = g.pad_begin[1], p.left = g.pad_begin[2];
    } else {  // stride 1: dx = dy, padded so that every tap lands, with rotated filters
        p.cs = g.k, p.cd = g.c, p.hs = g.out[1], p.ws = g.out[2], p.hd = g.in[1], p.wd = g.in[2];
        p.sh = p.sw = 1;
        p.top = (p.kr - 1) * p.dh - g.pad_begin[1];
        p.left = (p.ks - 1) * p.dw - g.pad_begin[2];
    }
    p.csg = p.cs / p.groups;
    p.cdg = p.cd / p.groups;
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    p.src_cs = last ? 1 : p.hs * p.ws;
    p.src_ps = last ? p.cs : 1;
    p.src_rs = p.ws * p.src_ps;
    p.dst_cs = last ? 1 : p.hd * p.wd;
    p.dst_ps = last ? p.cd : 1;
    // Padded rows and columns the destination reaches, split into phases.
    int64_t hp = (p.hd - 1) * p.sh + (p.kr - 1) * p.dh + 1;
    int64_t wp = (p.wd - 1) * p.sw + (p.ks - 1) * p.dw + 1;
    p.hq = ceil_div(hp, p.sh);
    p.wq = ceil_div(wp, p.sw);
    p.phases = p.sh * p.sw;
    p.positions = p.hd * p.wq;
    p.nr = choose_nr(p.positions);
    // Past the last phase's last row, the dropped columns of the last row
    // read up to wq further and a micro-tile past the last position nr.
    p.plane = round_up(checked_mul(checked_mul(p.phases, p.hq, "workspace"), p.wq, "workspace") +
                           p.wq + p.nr, 16);
    p.ck = p.csg * p.kr * p.ks;
    const int64_t taps = p.kr * p.ks;
    // The filter tensor as it lies: [k][c][r][s], channels-last [k][r][s][c].
    const int64_t f_chan = last ? 1 : taps, f_tap = last ? (p.backward ? p.cdg : p.csg) : 1;
    if (!p.backward) {
        p.w_group = p.cdg * p.ck, p.w_row = p.ck, p.w_chan = f_chan, p.w_tap0 = 0;
        p.w_tapdir = f_tap;
    } else {  // dx channel c from dy channel k: w[k][c] rotated by 180 degrees
        p.w_group = p.csg * p.cdg * taps, p.w_row = f_chan, p.w_chan = p.cdg * taps;
        p.w_tap0 = (taps - 1) * f_tap, p.w_tapdir = -f_tap;
    }
    // Source channels per block: what one micro-tile's taps read of them
    // (rows of each phase plane the kernel spans, plus the tile) stays in
    // L1 while the item's filters pass over it.
    int64_t rows = ceil_div((p.kr - 1) * p.dh + 1, p.sh);
    int64_t phases_read = std::min(p.sh, (p.kr - 1) * p.dh + 1) * std::min(p.sw, (p.ks - 1) * p.dw + 1);
    int64_t per_channel = phases_read * (rows * p.wq + p.nr) * (int64_t)es;
    // Under CONV_MATH_STRICT at most 32 channels a block, each summed apart
    // and then added to the blocks before it (Tile::partial): 32-channel
    // blocks bring a 256-channel 3x3 layer's error to im2col + OpenBLAS's
    // (8.3e-5 vs 8.4e-5 max against float64 on 2x256x28x28; one running sum
    // over all 2304 products: 4.7e-4, 8x torch's, outside
    // torch.testing.assert_close for 15.6% of elements). It costs 4-6% on
    // 14x14 and 7x7 forward layers single-threaded (and gains 15-20% on
    // 512-channel 7x7 backward-data), so the default keeps one running sum.
    const int64_t most = strict ? std::min<int64_t>(p.csg, kStrictBlock) : p.csg;
    p.cblock = std::clamp<int64_t>(kL1Budget / std::max<int64_t>(per_channel, 1), 4,
                                   std::max<int64_t>(most, 1));
    auto align = [es](int64_t elems) { return round_up(elems * (int64_t)es, 64) / (int64_t)es; };
    int64_t tap_elems = ceil_div(taps * 8, (int64_t)es);
    int64_t step_elems = ceil_div(checked_mul(p.cblock * taps, 16, "workspace"), (int64_t)es);
    p.taps_at = 0;
    p.steps_at = align(tap_elems);
    p.source_at = p.steps_at + align(step_elems);
    int64_t source = checked_mul(checked_mul(p.n, p.cs, "workspace"), p.plane, "workspace");
    p.dy_at = checked_add(p.source_at, align(source), "workspace");
    p.qv = round_up(p.positions, 16);
    int64_t dy = p.filter ? checked_mul(checked_mul(p.n, p.cd, "workspace"), p.qv, "workspace") : 0;
    p.partials_at = checked_add(p.dy_at, align(dy), "workspace");
    p.parts = p.filter ? batch_parts(p.n, (double)p.cd * (double)p.ck * (double)es) : 1;
    p.total = checked_add(p.partials_at, checked_mul(p.parts - 1, p.cd * p.ck, "workspace"), "workspace");
    return p;
}

// ---- preparation, once per call

// Offsets of the taps into one channel's phase planes, in the weights' order.
void tap_offsets(const Problem &p, int64_t *taps) {
    for (int64_t r = 0; r < p.kr; ++r)
        for (int64_t s = 0; s < p.ks; ++s) {
            int64_t pr = r * p.dh, pc = s * p.dw;
            int64_t phase = (pr % p.sh) * p.sw + pc % p.sw;
            taps[r * p.ks + s] = (phase * p.hq + pr / p.sh) * p.wq + pc / p.sw;
        }
}

#if CONV_HAVE_AVX512_KERNELS
// row[j] = in[first + j * sw] for j in [lo, hi), 0 elsewhere in [0, wq);
// sw is 1 or 2. Masked loads: lanes outside the source are never read.
// (Rows are short -- 9 to 230 -- so per-row memset/memcpy calls were 14% of
// a 14x14 layer.)
CONV_TARGET_AVX512 void pad_row_avx512(float *row, const float *in, int64_t first, int64_t lo,
                                       int64_t hi, int64_t wq, int64_t sw) {
    const __m512i even = even_lanes();
    for (int64_t j = 0; j < wq; j += 16) {
        int64_t a = std::clamp<int64_t>(lo - j, 0, 16), b = std::clamp<int64_t>(hi - j, 0, 16);
        __mmask16 keep = lane_range(a, b);
        __m512 v = _mm512_setzero_ps();
        if (keep && sw == 1) {
            v = _mm512_maskz_loadu_ps(keep, in + first + j);
        } else if (keep) {  // source lanes 2a .. 2b - 2 of the 32 from in + first + 2j
            const float *from = in + first + 2 * j;
            __m512 x0 = _mm512_maskz_loadu_ps(lane_range(2 * a, 2 * b - 1), from);
            __m512 x1 = _mm512_maskz_loadu_ps(lane_range(2 * a - 16, 2 * b - 17), from + 16);
            v = _mm512_maskz_permutex2var_ps(keep, x0, even, x1);
        }
        _mm512_mask_storeu_ps(row + j, first_lanes(wq - j), v);
    }
}
#endif

// One source channel plane (its first element at `src`) into its
// zero-padded phase planes.
template <class T>
void pad_plane(const Problem &p, const T *src, T *dst) {
    const int64_t ps = p.src_ps;
    for (int64_t a = 0; a < p.sh; ++a)
        for (int64_t b = 0; b < p.sw; ++b) {
            T *phase = dst + (a * p.sw + b) * p.hq * p.wq;
            for (int64_t i = 0; i < p.hq; ++i) {
                T *row = phase + i * p.wq;
                int64_t sr = a + i * p.sh - p.top;
                if (sr < 0 || sr >= p.hs) {
                    std::fill(row, row + p.wq, T(0));
                    continue;
                }
                const T *in = src + sr * p.src_rs;
                // Columns j with source column b + j * sw - left in [0, ws).
                int64_t first = b - p.left;
                int64_t lo = first >= 0 ? 0 : ceil_div(-first, p.sw);
                int64_t hi = first >= p.ws ? 0 : (p.ws - 1 - first) / p.sw + 1;
                lo = std::min(lo, p.wq);
                hi = std::clamp(hi, lo, p.wq);
#if CONV_HAVE_AVX512_KERNELS
                if constexpr (std::is_same_v<T, float>)
                    if (ps == 1 && p.sw <= 2 && cpu_isa() == Isa::avx512) {
                        pad_row_avx512(row, in, first, lo, hi, p.wq, p.sw);
                        continue;
                    }
#endif
                std::fill(row, row + lo, T(0));
                if (p.sw == 1 && ps == 1)
                    std::memcpy(row + lo, in + first + lo, (hi - lo) * sizeof(T));
                else
                    for (int64_t j = lo; j < hi; ++j) row[j] = in[(first + j * p.sw) * ps];
                std::fill(row + hi, row + p.wq, T(0));
            }
        }
    T *slack = dst + p.phases * p.hq * p.wq;
    std::fill(slack, dst + p.plane, T(0));
}

// ---- the micro-tiles: out[m][i] = sum over steps s of w[m][s.w] * src[s.x + i]

// One (channel, tap) of a channel block: where its source run and its
// weights are, relative to the block's first channel. One flat list per
// call (the blocks differ by a base offset only), so the tiles run a single
// loop: nested channel and tap loops made GCC shuffle the accumulators
// between registers at every channel.
struct Step {
    int64_t x, w;
};

void block_steps(const Problem &p, const int64_t *taps, Step *steps) {
    const int64_t ntaps = p.kr * p.ks;
    for (int64_t c = 0; c < p.cblock; ++c)
        for (int64_t t = 0; t < ntaps; ++t)
            steps[c * ntaps + t] = {c * p.plane + taps[t], c * p.w_chan + p.w_tap0 + t * p.w_tapdir};
}

struct Tile {
    const void *src;      // the block's first source channel, at the tile's first position
    const void *w[kMR];   // each filter's weights for the block (past the last filter: repeats)
    const Step *steps;
    int64_t count;        // steps of this block: its channels x taps
    bool accumulate;      // a later channel block: continue the running sum in `out`
    bool partial;         // a later channel block: sum it from zero, then add it to `out`
};

// A later channel block either continues the running sum (`accumulate`) or
// is summed from zero and added at the end (`partial`: two-level
// summation, the strict mode's; see make_problem).
template <class T, int NR>
void tile_portable(const Tile &t, T *out) {
    T acc[kMR][NR] = {};
    if (t.accumulate) std::memcpy(acc, out, sizeof acc);
    const T *src = static_cast<const T *>(t.src);
    for (int64_t s = 0; s < t.count; ++s) {
        const T *x = src + t.steps[s].x;
        for (int m = 0; m < kMR; ++m) {
            T wv = static_cast<const T *>(t.w[m])[t.steps[s].w];
            for (int i = 0; i < NR; ++i) acc[m][i] += wv * x[i];
        }
    }
    if (t.partial)
        for (int m = 0; m < kMR; ++m)
            for (int i = 0; i < NR; ++i) acc[m][i] += out[m * NR + i];
    std::memcpy(out, acc, sizeof acc);
}

#if CONV_HAVE_AVX512_KERNELS
template <int NR>
CONV_TARGET_AVX512 void tile_avx512(const Tile &t, float *out) {
    constexpr int V = NR / 16;
    __m512 acc[kMR][V];
    for (int m = 0; m < kMR; ++m)
        for (int v = 0; v < V; ++v)
            acc[m][v] = t.accumulate ? _mm512_loadu_ps(out + m * NR + 16 * v) : _mm512_setzero_ps();
    const float *src = static_cast<const float *>(t.src);
    const float *w[kMR];
    for (int m = 0; m < kMR; ++m) w[m] = static_cast<const float *>(t.w[m]);
    for (int64_t s = 0; s < t.count; ++s) {
        const float *x = src + t.steps[s].x;
        const int64_t j = t.steps[s].w;
        __m512 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_ps(x + 16 * v);
        for (int m = 0; m < kMR; ++m) {
            __m512 wv = _mm512_set1_ps(w[m][j]);
            for (int v = 0; v < V; ++v) acc[m][v] = _mm512_fmadd_ps(wv, xv[v], acc[m][v]);
        }
    }
    if (t.partial)
        for (int m = 0; m < kMR; ++m)
            for (int v = 0; v < V; ++v)
                acc[m][v] = _mm512_add_ps(acc[m][v], _mm512_loadu_ps(out + m * NR + 16 * v));
    for (int m = 0; m < kMR; ++m)
        for (int v = 0; v < V; ++v) _mm512_storeu_ps(out + m * NR + 16 * v, acc[m][v]);
}
#endif

template <class T, int NR>
void run_tile(const Tile &t, T *out) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() == Isa::avx512) return tile_avx512<NR>(t, out);
#endif
    tile_portable<T, NR>(t, out);
}

// Writes rows [0, rows) of a tile of positions [q0, q0 + nr) to the
// destination planes, dropping the columns past the row end, with bias and
// ReLU when given.
template <class T>
void store_tile(const Problem &p, const T *tile, int rows, int64_t q0, T *dst, const T *bias,
                bool relu) {
    const int64_t q1 = std::min(p.positions, q0 + p.nr), ps = p.dst_ps;
    for (int m = 0; m < rows; ++m) {
        const T *in = tile + m * p.nr;
        T *out = dst + m * p.dst_cs;
        const T b = bias ? bias[m] : T(0);
        for (int64_t q = q0; q < q1;) {
            int64_t oh = q / p.wq, ow = q % p.wq;
            int64_t run = std::min(p.wq - ow, q1 - q), valid = std::max<int64_t>(0, std::min(run, p.wd - ow));
            const T *from = in + (q - q0);
            T *to = out + (oh * p.wd + ow) * ps;
            for (int64_t i = 0; i < valid; ++i) {
                T v = from[i] + b;
                to[i * ps] = relu && v < T(0) ? T(0) : v;
            }
            q += run;
        }
    }
}

// Every source channel plane of images [first, first + count) into
// `source` (the batch's planes, image by image).
template <class T>
void pad_source(const Problem &p, const T *src, T *source, ThreadPool &pool, int threads, int64_t first = 0,
                int64_t count = -1) {
    const int64_t image = p.cs * p.hs * p.ws;
    if (count < 0) count = p.n;
    pool.parallel_for(
        count * p.cs,
        [&](int64_t i, int) {
            const int64_t n = first + i / p.cs;
            pad_plane(p, src + n * image + i % p.cs * p.src_cs, source + (n * p.cs + i % p.cs) * p.plane);
        },
        threads);
}

template <class T>
void run_typed(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    const Problem p = make_problem(g, args.op, sizeof(T), args.strict);
    T *base = static_cast<T *>(ws);
    int64_t *taps = reinterpret_cast<int64_t *>(base + p.taps_at);
    T *source = base + p.source_at;
    const T *src = static_cast<const T *>(p.backward ? args.y : args.x);
    if (p.filter) {
        tap_offsets(p, taps);
        const T *dy = static_cast<const T *>(args.y);
        T *dw = static_cast<T *>(args.w);
        if (p.parts == 1) {
            pad_source(p, src, source, pool, threads);
            run_filter(p, g, dy, dw, source, base + p.dy_at, taps, pool, threads, 0, p.n);
        } else {
            // Each part's images padded, laid out and summed by one thread.
            run_batch_parts(pool, threads, p.parts, dw, base + p.partials_at, p.cd * p.ck,
                            [&](int64_t part, int, T *out) {
                                int64_t first, count;
                                part_images(p.n, part, p.parts, &first, &count);
                                pad_source(p, src, source, pool, 1, first, count);
                                run_filter(p, g, dy, out, source, base + p.dy_at, taps, pool, 1, first, count);
                            });
        }
        if (args.bias)
            channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool,
                         threads);
        return;
    }
    T *dst = static_cast<T *>(p.backward ? args.x : args.y);
    const T *w = static_cast<const T *>(args.w);
    const T *bias = p.backward ? nullptr : static_cast<const T *>(args.bias);
    const bool relu = !p.backward && g.activation == CONV_ACTIVATION_RELU;
    const int64_t dst_image = p.cd * p.hd * p.wd;

    tap_offsets(p, taps);
    Step *steps = reinterpret_cast<Step *>(base + p.steps_at);
    block_steps(p, taps, steps);
    pad_source(p, src, source, pool, threads);

    const int64_t ntaps = p.kr * p.ks;
    const int64_t ptiles = ceil_div(p.positions, (int64_t)p.nr);
    const int64_t pitems = ceil_div(ptiles, kTilesPerItem), kitems = ceil_div(p.cdg, kKChunk);
    pool.parallel_for(
        p.n * p.groups * kitems * pitems,
        [&](int64_t item, int) {
            int64_t pi = item % pitems, ki = item / pitems % kitems;
            int64_t gi = item / pitems / kitems % p.groups, n = item / pitems / kitems / p.groups;
            int64_t m0 = ki * kKChunk, m1 = std::min(p.cdg, m0 + kKChunk);
            int64_t t0 = pi * kTilesPerItem, t1 = std::min(ptiles, t0 + kTilesPerItem);
            const T *group_src = source + (n * p.cs + gi * p.csg) * p.plane;
            T *group_dst = dst + n * dst_image + gi * p.cdg * p.dst_cs;
            const T *group_w = w + gi * p.w_group;
            // Sums for the item's filters over one micro-tile of positions,
            // built up channel block by channel block.
            alignas(64) T sums[kKChunk * 48];
            for (int64_t pt = t0; pt < t1; ++pt) {
                int64_t q0 = pt * p.nr;
                for (int64_t c0 = 0; c0 < p.csg; c0 += p.cblock) {
                    Tile t{group_src + c0 * p.plane + q0, {}, steps,
                           std::min(p.cblock, p.csg - c0) * ntaps, c0 > 0 && !args.strict,
                           c0 > 0 && args.strict};
                    for (int64_t m = m0; m < m1; m += kMR) {
                        int64_t last = std::min<int64_t>(kMR, m1 - m) - 1;
                        for (int r = 0; r < kMR; ++r)
                            t.w[r] = group_w + (m + std::min<int64_t>(r, last)) * p.w_row +
                                     c0 * p.w_chan;
                        T *out = sums + (m - m0) * p.nr;
                        if (p.nr == 48)
                            run_tile<T, 48>(t, out);
                        else
                            run_tile<T, 32>(t, out);
                    }
                }
                for (int64_t m = m0; m < m1; m += kMR)
                    store_tile(p, sums + (m - m0) * p.nr, (int)std::min<int64_t>(kMR, m1 - m), q0,
                               group_dst + m * p.dst_cs, bias ? bias + gi * p.cdg + m : nullptr,
                               relu);
            }
        },
        threads);
}

// ---- backward-filter: dw[k][c][tap] = sum over images and positions q of
// dyq[k][q] * source[c][q + tap], where dyq is dy at the flattened positions
// with zeros in the dropped columns: a GEMM whose reduction (q) runs along
// memory in both operands, so the tiles accumulate vectors of 16 positions
// and reduce them once at the end.

constexpr int kFM = 4, kFN = 6;  // filters x (channel, tap) columns per tile: 24 accumulators

struct FilterTile {
    const void *dy[kFM];  // image 0's dyq row of each filter
    const void *x[kFN];   // image 0's source at each column's tap offset
    int64_t images, dy_image, x_image, qv;
};

template <class T>
void filter_tile_portable(const FilterTile &t, T *out) {
    T acc[kFM][kFN] = {};
    for (int64_t n = 0; n < t.images; ++n)
        for (int m = 0; m < kFM; ++m) {
            const T *dy = static_cast<const T *>(t.dy[m]) + n * t.dy_image;
            for (int j = 0; j < kFN; ++j) {
                const T *x = static_cast<const T *>(t.x[j]) + n * t.x_image;
                T sum = T(0);
                for (int64_t q = 0; q < t.qv; ++q) sum += dy[q] * x[q];
                acc[m][j] += sum;
            }
        }
    std::memcpy(out, acc, sizeof acc);
}

#if CONV_HAVE_AVX512_KERNELS
CONV_TARGET_AVX512 void filter_tile_avx512(const FilterTile &t, float *out) {
    __m512 acc[kFM][kFN];
    for (int m = 0; m < kFM; ++m)
        for (int j = 0; j < kFN; ++j) acc[m][j] = _mm512_setzero_ps();
    for (int64_t n = 0; n < t.images; ++n) {
        const float *dy[kFM], *x[kFN];
        for (int m = 0; m < kFM; ++m) dy[m] = static_cast<const float *>(t.dy[m]) + n * t.dy_image;
        for (int j = 0; j < kFN; ++j) x[j] = static_cast<const float *>(t.x[j]) + n * t.x_image;
        for (int64_t q = 0; q < t.qv; q += 16) {
            __m512 xv[kFN];
            for (int j = 0; j < kFN; ++j) xv[j] = _mm512_loadu_ps(x[j] + q);
            for (int m = 0; m < kFM; ++m) {
                __m512 d = _mm512_load_ps(dy[m] + q);
                for (int j = 0; j < kFN; ++j) acc[m][j] = _mm512_fmadd_ps(d, xv[j], acc[m][j]);
            }
        }
    }
    // The 24 vectors' lane sums 16 at a time (lane_sums16; the last 8 with
    // 8 zero vectors), a fixed order. One lane at a time (16 scalar adds a
    // vector) the batch parts, which reduce a tile's lanes once a part, cost
    // 6->12 5x5 16x16 0.90x at 1 thread; with these 0.96x.
    alignas(64) float sums[32][16] = {};
    for (int m = 0; m < kFM; ++m)
        for (int j = 0; j < kFN; ++j) _mm512_store_ps(sums[m * kFN + j], acc[m][j]);
    alignas(64) float lanes[32];
    _mm512_store_ps(lanes, lane_sums16<1>(sums[0]));
    _mm512_store_ps(lanes + 16, lane_sums16<1>(sums[16]));
    std::memcpy(out, lanes, kFM * kFN * sizeof(float));
}
#endif

template <class T>
void run_filter_tile(const FilterTile &t, T *out) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() == Isa::avx512) return filter_tile_avx512(t, out);
#endif
    filter_tile_portable<T>(t, out);
}

// dy (one image's channel plane) at the flattened positions, zero elsewhere.
template <class T>
void flatten_dy(const Problem &p, const T *dy, T *out) {
    std::fill(out, out + p.qv, T(0));
    for (int64_t oh = 0; oh < p.hd; ++oh)
        for (int64_t ow = 0; ow < p.wd; ++ow) out[oh * p.wq + ow] = dy[(oh * p.wd + ow) * p.dst_ps];
}

// dw from images [first, first + count) (their source planes padded).
template <class T>
void run_filter(const Problem &p, const ConvGeometry &g, const T *dy, T *dw, const T *source,
                T *dyq, const int64_t *taps, ThreadPool &pool, int threads, int64_t first, int64_t count) {
    const int64_t dst_image = p.cd * p.hd * p.wd, ntaps = p.kr * p.ks;
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    pool.parallel_for(
        count * p.cd,
        [&](int64_t i, int) {
            const int64_t n = first + i / p.cd;
            flatten_dy(p, dy + n * dst_image + i % p.cd * p.dst_cs, dyq + (n * p.cd + i % p.cd) * p.qv);
        },
        threads);
    dyq += first * p.cd * p.qv, source += first * p.cs * p.plane;
    // Items: (group, 4 filters, 8 tiles of 6 columns); columns in dw's order.
    constexpr int64_t kColumnsPerItem = kFN * 8;
    const int64_t kblocks = ceil_div(p.cdg, (int64_t)kFM), cblocks = ceil_div(p.ck, kColumnsPerItem);
    pool.parallel_for(
        p.groups * kblocks * cblocks,
        [&](int64_t item, int) {
            int64_t cb = item % cblocks, kb = item / cblocks % kblocks, gi = item / cblocks / kblocks;
            int64_t k0 = kb * kFM, rows = std::min<int64_t>(kFM, p.cdg - k0);
            int64_t j0 = cb * kColumnsPerItem, j1 = std::min(p.ck, j0 + kColumnsPerItem);
            FilterTile t{{}, {}, count, p.cd * p.qv, p.cs * p.plane, p.qv};
            for (int m = 0; m < kFM; ++m)
                t.dy[m] = dyq + (gi * p.cdg + k0 + std::min<int64_t>(m, rows - 1)) * p.qv;
            for (int64_t j = j0; j < j1; j += kFN) {
                int cols = (int)std::min<int64_t>(kFN, j1 - j);
                for (int c = 0; c < kFN; ++c) {
                    int64_t col = j + std::min(c, cols - 1);
                    int64_t ch = last ? col % p.csg : col / ntaps, tap = last ? col / p.csg : col % ntaps;
                    t.x[c] = source + (gi * p.csg + ch) * p.plane + taps[tap];
                }
                T out[kFM * kFN];
                run_filter_tile(t, out);
                for (int m = 0; m < rows; ++m)
                    for (int c = 0; c < cols; ++c)
                        dw[(gi * p.cdg + k0 + m) * p.ck + j + c] = out[m * kFN + c];
            }
        },
        threads);
}

class ImplicitGemm final : public Algorithm {
public:
    const char *name() const override { return "implicit_gemm"; }
    conv_algo_t public_id() const override { return CONV_ALGO_IMPLICIT_GEMM; }
    const char *why_not(const ConvGeometry &g, conv_op_t op) const override {
        if (!g.is_planar()) return "it computes 1-D and 2-D convolutions only";
        if (op == CONV_OP_BACKWARD_DATA && (g.stride[1] != 1 || g.stride[2] != 1))
            return "it computes backward-data at stride 1 only";
        if (g.in_size() == 0 || g.out_size() == 0) return "it needs a non-empty input and output";
        return nullptr;
    }
    // Implicit GEMM beats unfolding + OpenBLAS with its AVX-512 tiles (fp32;
    // the portable tiles are not a fast path) on kernels wider than 1x1:
    // 1.1-1.4x single-threaded on ResNet-50's 3x3 and 7x7 layers. 1x1
    // layers are faster as OpenBLAS GEMMs (the input read once per channel
    // gives the tiles no reuse). Backward-data reads the filters across
    // their rows, which loses once they outgrow the caches (512x512x3x3).
    bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        if (dtype != CONV_DTYPE_FLOAT32 || cpu_isa() != Isa::avx512) return false;
        // Two taps or fewer: WaveNet's k2 backward-filter (64->128 on 4096
        // samples, channels-last) 39 GFLOP/s against im2col's 120-135
        // (forward and backward-data below).
        if (g.kernel_size() <= 2) return false;
        // Longer rows of 1-D layers: im2col unfolds their taps into the
        // pointwise GEMM's panels (256->256 3 taps on 1024 samples: 2.3 ms
        // against these tiles' 4.1).
        if (pw_avx512_taps_win(g, op)) return false;
        // Channels-last filters ([k][r][s][c]) put each tap's weights a
        // channel row apart: the tiles' weight reads spread over 9x the
        // lines, and unfolding wins again (75 vs 85 GFLOP/s on 3x3 layers)
        // except where the unfolded rows are short (conv1: 1.5x).
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST && g.reduction() > 256) return false;
        // Backward-data onto fewer than 16 channels a group fills a few of a
        // tile's lanes or filters (Intel Xeon with AMX, 1 thread, against
        // im2col: channels-last VGG-16's 3->64 224x224 29.8 vs 2.9 ms,
        // MNIST's 1->32 28x28 1.5 vs 0.65, LeNet-5's 6->16 5x5 0.45 vs 0.27
        // at batch 32; channels-first VGG-16's 8.4 vs 2.8, MNIST's 1.21 vs
        // 0.21).
        if (op == CONV_OP_BACKWARD_DATA && g.cg() < 16) return false;
        // Backward-filter reduces over positions, one vector of 16 at a
        // time per tile: it wins on large output planes (56x56 3x3 1.5x at
        // batch 1 and 1.35x at batch 8, conv1 1.3x), and on 28x28 planes at
        // stride 1 once the batch brings 2048 positions (128->128 at batch
        // 3: 7.4 vs 8.9 ms, batch 8: 19.3 vs 23.3; batch 1 even); it loses
        // when the reduction is short (14x14: 0.45x at batch 1, even at 8),
        // and at stride 2 onto 28x28 or 14x14 at batch 8 (0.55x, 0.9x).
        // Forward and backward-data sum each output over source channels x
        // taps; a short sum leaves the tiles' loads and stores unamortised
        // while im2col's GEMM (libconv's own SGEMM) packs once: WaveNet's
        // k2 layers (64->128, sums of 128 and 256) 60-63 vs 112-122 GFLOP/s,
        // ResNet-50's conv1 (147) 101 vs 158 at 2 threads; res2_2b's 576
        // (141 vs 103) keeps the tiles.
        const int64_t sum = op == CONV_OP_BACKWARD_DATA ? g.kg() * g.kernel_size() : g.reduction();
        if (op != CONV_OP_BACKWARD_FILTER && sum <= 256) return false;
        if (op == CONV_OP_BACKWARD_FILTER) {
            const int64_t plane = g.out_size();
            const bool unit_stride = g.stride[1] == 1 && g.stride[2] == 1;
            // Onto fewer than 16 filters (direct_avx512's tiles leave them
            // to others) any plane: against im2col, Zen 4, 1 thread, 5
            // rounds, batch 1 / 4: LeNet-5's 1->6 5x5 1.7x / -, 1->8 28x28
            // 2.6x, 1->6 14x14 1.7x / 2.9x, 1->8 8x8 1.2x / 2.5x, 3->8 16x16
            // 2.0x / 3.4x, 12->8 12x12 2.4x, 2->4 20x20 3.5x / 2.9x, 1->6 5x5
            // stride 2 2.0x; 6->12 5x5 16x16 0.93x / 1.9x. Channels-last
            // from 1-3 sources 2.9-10x (im2col's unfold of one channel is
            // all gathers), but from 6-12 0.6-0.8x at batch 1: left there.
            if (g.groups == 1 && g.kg() < 16 && (g.cg() <= 4 || g.layout == CONV_LAYOUT_CHANNELS_FIRST))
                return true;
            return plane >= 2048 || (unit_stride && plane >= 784 && g.n * plane >= 2048);
        }
        return op != CONV_OP_BACKWARD_DATA || g.k * g.reduction() * 4 <= (4 << 20);
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int) const override {
        Problem p = make_problem(g, op, dtype_size(dtype));
        return (size_t)checked_mul(p.total, (int64_t)dtype_size(dtype), "workspace");
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (args.dtype == CONV_DTYPE_FLOAT32)
            run_typed<float>(args, ws, pool, threads);
        else
            run_typed<double>(args, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &implicit_gemm_algorithm() {
    static const ImplicitGemm algo;
    return algo;
}

}  // namespace conv::cpu
