// direct_avx512: 1-D, 2-D and 3-D convolutions (forward and backward-data)
// as direct register tiles with the OUTPUT CHANNELS in the vector -- the
// shape of oneDNN's jit_avx512_common / brgemm forward kernels, the design
// opposite to implicit_gemm's (positions in the vector).
//
// A register tile is NV vectors of 16 consecutive destination channels x UR
// consecutive positions of one output row (2 x 14, 3 x 9, 4 x 6, ...: the
// accumulators, the NV weight vectors and a broadcast fit 32 registers;
// chosen per problem by a cost model, choose_tile). Per (source channel,
// tap) it loads NV aligned weight vectors and FMAs each with UR broadcast
// source scalars: no lane is wasted on a small plane, and no load straddles
// a cache line.
//
// - Weights are packed into [group][K/16][C][tap][16] (zero past K; for
//   backward-data the filters rotated by 180 degrees and transposed,
//   [C/16][K][tap][16]): once per plan (prepare_weights), else per call --
//   the whole filter into the workspace, or, where there are channel blocks
//   for every thread, each block by its work item into the thread's slot
//   (packs_per_item); channels-first filters by 16 x 16 transposes in
//   registers. Per call that packing costs, 1 thread, batch 1, on
//   ResNet-50's 3x3 layers: ~10% on 14x14 (136 vs 150 GFLOP/s with prepared
//   weights), ~25% on 512->512 7x7 (112 vs 150: the 9.4 MB filter is read
//   from memory before the tiles start); backward-data's rotated filters
//   by transposes of each filter's 16 x taps blocks (3x3: by permutes,
//   rotate_block9_avx512), read a block of vectors at a time and
//   prefetched a few filters ahead (the hardware prefetcher does not follow
//   the filter-sized stride): 1.1-1.4x on 512->512 layers.
//   Backward-data's filters of 4 MB and more go source-major instead
//   (runs_source_major): a block of dy's channels packed for all of a
//   thread's vectors at once -- one run of memory -- and every item's tiles
//   run over it, their sums carried in L2 (1.1-1.3x on 512+ channels);
//   the next block's filters are asked into L2 under the tiles
//   (filter_ahead).
//   Where a source image outgrows L2, an item walks several channel
//   blocks together, row by row (blocks_together), so that each source
//   row is read from L3 once rather than once per block.
// - The source (x, or dy) is copied once per call into zero-padded,
//   channel-major planes whose rows are split into their `stride_w` column
//   phases, so the broadcasts of a tile are consecutive scalars at any
//   stride and channels-last sources need nothing else. Image by image into
//   the thread's slot where the threads take whole images (it is then read
//   from L2), not at all where x's planes already are those planes, nor
//   where the generated tiles, which leave out the padding's products,
//   read a 2-D channels-first source at unit width stride in place
//   (reads_in_place).
// - Backward-data at stride s splits dx into its s_h x s_w phases; each is a
//   unit-stride correlation of dy with the taps that reach it (phase_steps).
// - Channels are summed in blocks (an L1-sized share of the item's source
//   rows and weights); each output's sum runs on in registers within a
//   block and through the item's tile buffer between blocks -- one running
//   sum, or under CONV_MATH_STRICT blocks of at most 32 channels summed from
//   zero and then added (two-level summation, as implicit_gemm's kStrictBlock).
// - 3-D: the padded source holds each channel's depth slices one after the
//   other, and a (channel, tap) step's offset includes its slice; work
//   items are rows of one destination slice, so the tiles, stores and
//   phases are the 2-D ones with a slice's offset added (backward-data's
//   depth stride: more phases). A slice's depth taps that read only the
//   padding are left out (depth_mask). Backward-filter's columns (a
//   channel and tap) carry their slice the same way.
// - The generated tiles leave out the products that read the padding: a
//   tile of a border row or column is made for its taps' live positions
//   (Borders), as oneDNN's kernels are (a tenth of the products on 14x14 at
//   3x3, a sixth on 7x7). A call's tiles come from a memo of recent calls'
//   sets (GeneratedTiles): one lookup, not one a spec.
// - Finished sums get bias + ReLU and are written out: transposed into
//   channels-first rows, straight for channels-last.
// Every output is a plain dot product, in an order that does not depend on
// the thread count: a strict context may choose it, and it is deterministic.
// With AVX2 the same tiles run in two ymm halves a vector (tile_avx2), over
// an item's positions in row order across its rows (tiles_wrap); without
// either, or in float64, through portable C++.
#include <algorithm>
#include <cmath>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/checked.h"
#include "core/dtype.h"
#include "core/plan_cache.h"
#include "cpu/algorithm.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/isa.h"
#include "cpu/jit/direct_tile.h"
#include "cpu/jit/jit.h"
#include "cpu/pointwise_avx512.h"
#include "cpu/thread_copies.h"
#include "cpu/trickle.h"

namespace conv::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxVectors = 4;         // channel vectors per register tile
constexpr int kMaxPositions = 16;      // positions per register tile
constexpr int kRegisters = 32;         // zmm
constexpr int kAvx2Registers = 16;     // ymm
constexpr int kAccumulators = 28;      // the most a tile holds
constexpr int64_t kItemSums = 4096;    // a work item's sums (its tile buffer): 16 KiB of fp32
constexpr int64_t kL1Budget = 24 << 10; // bytes of source and weights a channel block reads
constexpr int64_t kStrictBlock = 32;   // source channels summed apart under CONV_MATH_STRICT
constexpr int64_t kRotatedTaps = 64;   // the most taps backward-data's filters pack by transposes
constexpr int64_t kPackAhead = 4;      // filters ahead that packing them rotated prefetches
constexpr int64_t kFewChannels = 8;    // channels-last sources padded a pixel at a time

// Per tile the accumulators, the NV weight vectors and one broadcast must
// fit the 32 registers (4 x 7 spilled an accumulator in the inner loop).
// One vector takes up to 16 positions: a scratch loop of the generated
// tile's steps (L1-resident, AMX Xeon) ran 1 x 16 at 213 GFLOP/s against
// 1 x 14's 202 (4 x 6 and 3 x 8: 229, 4 x 4: 218; the FMA peak 236), and
// rows of 32 split 16 + 16, not 14 + 14 + 4: ResNet-20's 16->16 32x32
// forward 1.04x at batch 32 (1 thread, 3 alternated runs).
// With AVX2 a vector of 16 channels is two ymm halves, and there are 16
// registers: 1 x 6 (12 accumulators) or 2 x 2.
int max_positions(int nv) {
    if (cpu_isa() == Isa::avx2) return std::min(kMaxPositions, (kAvx2Registers - 1 - 2 * nv) / (2 * nv));
    return std::min(kMaxPositions, (kRegisters - 1 - nv) / nv);
}

// The correlation both passes reduce to. Forward: destination channel m of
// group gi at (oh, ow) = sum over source channels c of the group and taps
// (r, s) of weight(m, c, r, s) * padded_source(c, oh * sh + r * dh, ow * sw + s * dw).
// Backward-data: dx splits into stride_h x stride_w phases (rows ih = ph +
// j * stride_h, columns likewise); each phase is a stride-1 correlation of
// dy with the taps that reach it (see phase_steps).
struct Shape {
    bool backward, last;
    int64_t n, groups, cs, cd, csg, cdg;   // channels: total and per group
    int64_t hs, ws;                        // source plane
    int64_t hdst, wdst;                    // destination plane
    int64_t fh, fw;                        // destination phases (backward-data: the stride)
    int64_t hd, wd;                        // the largest phase's rows and columns
    int64_t pt, pl;                        // the pass's padding (backward-data's phases)
    int64_t kr, ks, dh, dw, sh, sw, top, left, taps;
    // Depth (3-D), as the rows: a 1-D or 2-D problem is one slice deep.
    int64_t kz, dz, sz;      // kernel depth, dilation, stride (forward)
    int64_t zs, zdst, fz, zd;  // source and destination depth; its phases (backward-data); the largest phase's
    int64_t pz, front;       // the pass's depth padding (backward-data's phases); padded slices before the source's
    int64_t hp, wq, plane;   // padded rows; width of a row's column phase; elements per channel
    int64_t dp, slice;       // padded slices a channel (plane = dp * slice); elements per slice
    int64_t dst_plane;       // a destination channel's elements: zdst * hdst * wdst
    int64_t variants;        // step lists a phase may need (depth_mask): 1 in 1-D and 2-D
    int64_t rstep;           // padded elements from one destination row (of a phase) to the next
    int64_t dvec;            // destination vectors per group: ceil(cdg / 16)
    int64_t wvec;            // packed weights of one vector: csg * taps * 16
    int nv, ur;              // the register tile: channel vectors x positions
    bool wrap;               // tiles run on from a row into the next (tiles_wrap)
    int64_t seg, rows;       // a work item: up to `rows` rows of `seg` positions
    int64_t cblock;          // source channels summed per pass over an item
    // Workspace, bytes: the steps, the step lists' tables, the padded
    // source, then the packed weights (`packed` bytes) or the threads'
    // slots for them.
    size_t steps_at, lists_at, source_at, packed_at;
    int64_t packed;
    int64_t image_bytes;     // one image's padded source
};

// Cycles of one (channel, tap) step of a tile of nv vectors x u positions:
// 2 FMAs a cycle, 2 loads (weights and broadcasts) a cycle, and each
// accumulator's 4-cycle FMA latency; a hair per load breaks ties toward
// fewer loads. With AVX2 each vector is two halves: twice the FMAs and
// weight loads, and a step of 8 accumulators (1 x 4, 2 x 2) costs 5 cycles,
// not 4: on Zen 3 (AMD EPYC, batch 32, 1 thread, 7 interleaved rounds) the
// 1 x 6 tile ran ResNet-20's 16->16 32x32 forward and backward-data 1.21x
// and 1.22x faster than 1 x 4, MNIST's 32->64 forward 1.08-1.21x faster
// than 2 x 2 -- though its backward-data 0.62-0.86x.
double step_cycles(int nv, int u) {
    const bool avx2 = cpu_isa() == Isa::avx2;
    const int halves = avx2 ? 2 : 1;
    const double latency = avx2 ? 5.0 : 4.0;
    return std::max({halves * nv * u / 2.0, (halves * nv + u) / 2.0, latency}) + 0.01 * (halves * nv + u);
}

// Whether a tile may take positions from two or more rows of an item, so
// that only an item's last tile is narrower than the rest, not each row's:
// the AVX2 tiles, which read each position through a pointer of its own
// (Tile::at). A row's remainder was 8% of ResNet-20's 16->16 32x32 forward
// (32 = 5 x 6 + 2, a 1 x 2 tile at half the FMA rate), and rows of 8
// (64->64 8x8) took 1 x 4 tiles, 5 cycles a step for 4 cycles' FMAs.
// Across rows (Zen 3, batch 32, one process alternating the two): 1.03-1.08x
// on 16->16 32x32, 1.09-1.11x on 64->64 8x8, even where 1-3 source channels
// leave a tile few steps.
bool tiles_wrap(size_t es) {
#if CONV_HAVE_AVX512_KERNELS
    return es == sizeof(float) && cpu_isa() == Isa::avx2;
#else
    (void)es;
    return false;
#endif
}

bool takes_images(const Shape &s, int threads);

// Packing a vector's weights for one (source channel, tap) step, in
// step_cycles' units (half a cycle on Zen 4, whose FMA unit takes one 512-bit
// FMA a cycle): ~8 cycles a vector there, measured as what a thread saved
// packing two vectors of a 64-channel filter instead of four (below).
constexpr double kPackUnits = 4.0;

// The tile (nv, ur) with the fewest modelled cycles for every channel
// vector: the full tiles and the remainder tile of a row (of the whole
// plane where tiles wrap), and the last, narrower channel block.
// Where several threads split an image (too few images to share out whole),
// each thread packs the channel blocks its items use into its own copy
// (mirrors_weights), so a thread's cost is its share of the tiles plus the
// vectors of its blocks: with one block of four vectors (64 channels) every
// thread packed the whole filter. Batch 1, 2 threads: ResNet-20's 64->64 8x8
// and 32->64 16x16 s2 as 2 x 8 tiles, a block a thread, 1.11-1.15x over one
// block of 4 x 4 (even at 1 thread, where the model ties them); ResNet-50's
// 512->512 7x7 as 4 x 5 rather than 3 x 7, 1.06-1.09x.
void choose_tile(Shape &s, int threads) {
    s.nv = s.ur = 1;  // where nothing is summed (no channels): sizes only
    const int64_t run = s.wrap ? s.hd * s.wd : s.wd;  // positions a tile's run covers
    const bool splits_images = threads > 1 && !takes_images(s, threads);
    // Tile rows a (source channel, tap) step runs over.
    const double rows = (double)(s.n * s.zd * s.hd * s.fz * s.fh * s.fw) / (s.wrap ? (double)s.hd : 1.0);
    double best = 0;
    for (int nv = 1; nv <= std::min<int64_t>(kMaxVectors, s.dvec); ++nv)
        for (int u = 1; u <= std::min<int64_t>(max_positions(nv), run); ++u) {
            auto row = [&](int v) {
                return (double)(run / u) * step_cycles(v, u) +
                       (run % u ? step_cycles(v, (int)(run % u)) : 0.0);
            };
            int64_t full = s.dvec / nv, rest = s.dvec % nv;
            double cost = (double)full * row(nv) + (rest ? row((int)rest) : 0.0);
            if (splits_images) {
                // A thread's items are a contiguous share of the blocks' rows:
                // ceil(blocks / threads) blocks, one more where shares straddle.
                const int64_t blocks = ceil_div(s.dvec, nv);
                const int64_t held = std::min(blocks, ceil_div(blocks, threads) + (blocks % threads ? 1 : 0));
                cost = cost * rows / threads + kPackUnits * (double)std::min<int64_t>(held * nv, s.dvec);
            }
            if (best == 0 || cost < best) best = cost, s.nv = nv, s.ur = u;
        }
}

// `threads`: those the pass runs on (the tile's choice weighs their packing).
Shape make_shape(const ConvGeometry &g, conv_op_t op, size_t es, bool strict, int threads) {
    Shape s;
    s.backward = op == CONV_OP_BACKWARD_DATA;
    s.last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    s.n = g.n, s.groups = g.groups;
    s.kr = g.kernel[1], s.ks = g.kernel[2], s.dh = g.dilation[1], s.dw = g.dilation[2];
    s.kz = g.kernel[0], s.dz = g.dilation[0];
    s.taps = s.kz * s.kr * s.ks;
    if (!s.backward) {
        s.zs = g.in[0], s.zd = s.zdst = g.out[0], s.sz = g.stride[0], s.fz = 1, s.pz = 0, s.front = g.pad_begin[0];
        s.dp = (s.zd - 1) * s.sz + (s.kz - 1) * s.dz + 1;
    } else {  // as the rows below
        s.zs = g.out[0], s.zdst = g.in[0], s.fz = g.stride[0], s.zd = ceil_div(s.zdst, s.fz), s.sz = 1;
        s.pz = g.pad_begin[0], s.front = ceil_div((s.kz - 1) * s.dz, s.fz);
        s.dp = s.zd + (s.fz - 1 + s.pz) / s.fz + s.front;
    }
    if (!s.backward) {
        s.cs = g.c, s.cd = g.k, s.hs = g.in[1], s.ws = g.in[2], s.hd = g.out[1], s.wd = g.out[2];
        s.sh = g.stride[1], s.sw = g.stride[2], s.top = g.pad_begin[1], s.left = g.pad_begin[2];
        s.hdst = s.hd, s.wdst = s.wd, s.fh = s.fw = 1, s.pt = s.pl = 0;
        s.hp = (s.hd - 1) * s.sh + (s.kr - 1) * s.dh + 1;
        s.wq = ceil_div((s.wd - 1) * s.sw + (s.ks - 1) * s.dw + 1, s.sw);
        s.rstep = s.sh * s.sw * s.wq;
    } else {  // dx from dy: per phase a correlation of unit stride, rows top apart
        s.cs = g.k, s.cd = g.c, s.hs = g.out[1], s.ws = g.out[2];
        s.hdst = g.in[1], s.wdst = g.in[2], s.fh = g.stride[1], s.fw = g.stride[2];
        s.hd = ceil_div(s.hdst, s.fh), s.wd = ceil_div(s.wdst, s.fw);
        s.pt = g.pad_begin[1], s.pl = g.pad_begin[2];
        s.sh = s.sw = 1;
        // Phase row j of tap r reads dy row j + e, e = (ph + pt - r * dh) / fh
        // >= -top; the padded copy starts `top` rows (columns) before dy's.
        s.top = ceil_div((s.kr - 1) * s.dh, s.fh), s.left = ceil_div((s.ks - 1) * s.dw, s.fw);
        s.hp = s.hd + (s.fh - 1 + s.pt) / s.fh + s.top;
        s.wq = s.wd + (s.fw - 1 + s.pl) / s.fw + s.left;
        s.rstep = s.wq;
    }
    s.csg = s.cs / s.groups, s.cdg = s.cd / s.groups;
    s.slice = checked_mul(checked_mul(s.hp, s.sw, "workspace"), s.wq, "workspace");
    s.plane = checked_mul(s.dp, s.slice, "workspace");
    s.dst_plane = s.zdst * s.hdst * s.wdst;
    s.variants = s.kz > 1 ? 2 * s.kz + 1 : 1;
    s.dvec = ceil_div(s.cdg, kLanes);
    s.wvec = checked_mul(checked_mul(s.csg, s.taps, "workspace"), kLanes, "workspace");
    s.wrap = tiles_wrap(es);
    choose_tile(s, threads);
    const int64_t width = s.nv * kLanes;
    s.seg = s.wd * width <= kItemSums ? s.wd : kItemSums / (width * s.ur) * s.ur;
    s.rows = std::clamp<int64_t>(kItemSums / (width * s.seg), 1, s.hd);
    // An item's channel reads: its source rows, and its weights.
    int64_t span = s.backward ? s.rows + s.top + 1 : (s.rows - 1) * s.sh + (s.kr - 1) * s.dh + 1;
    // A phase of backward-data reads about taps / phases of them, and at
    // least 64 steps a pass keep a tile's entry and exit (its sums loaded
    // and stored) small beside its FMAs.
    const int64_t phase_taps = std::max<int64_t>(1, s.taps / (s.fz * s.fh * s.fw));
    const int64_t slices = std::max<int64_t>(1, s.kz / s.fz);  // the slices an item's channel reads
    // In 3-D on rows of up to 32 columns, only the rows one output row's
    // taps read (and the next one's) count, in each slice: the item's rows
    // pass through L1 a window at a time. Counting its whole span left 3-5
    // channels a block; 1 thread, one process, 7 alternated calls, ResNet3D's
    // 256->256 4x14x14 forward 1.08x, backward-data 1.19x, 128->128
    // 8x28x28 1.03x / 1.07x, 512->512 2x7x7 even; on 56x56 0.93-1.03x, so
    // not there.
    if (slices > 1 && s.wq <= 32) span = std::min(span, s.backward ? s.top + 2 : (s.kr - 1) * s.dh + 1 + s.sh);
    int64_t per_channel = (slices * span * s.sw * s.wq + width * phase_taps) * (int64_t)es;
    const int64_t most = strict ? std::min<int64_t>(s.csg, kStrictBlock) : s.csg;
    s.cblock = std::clamp<int64_t>(kL1Budget / per_channel, std::min(ceil_div(64, phase_taps), most),
                                   most);
    auto align = [](int64_t bytes) { return (size_t)round_up(bytes, 64); };
    s.packed = checked_mul(checked_mul(s.groups * s.dvec, s.wvec, "workspace"), (int64_t)es, "workspace");
    s.image_bytes = checked_mul(checked_mul(s.cs, s.plane, "workspace"), (int64_t)es, "workspace");
    const int64_t source = checked_mul(s.n, s.image_bytes, "workspace");
    // Steps of each phase for the largest channel block either math mode takes.
    // Then the step lists' tables (StepLists): nothing a pass allocates.
    const int64_t lists = s.fz * s.fh * s.fw * s.variants;
    s.steps_at = 0;
    s.lists_at = align(checked_mul(checked_mul(lists, s.csg * s.taps, "workspace"), 16, "workspace"));
    const int64_t tables = checked_add(checked_mul(lists, 12, "workspace"),
                                       checked_mul(s.fz * s.fh * s.fw, s.zd * 8, "workspace"), "workspace");
    s.source_at = align(checked_add((int64_t)s.lists_at, tables, "workspace"));
    s.packed_at = align(checked_add((int64_t)s.source_at, source, "workspace"));
    return s;
}

// ---- preparation: packed weights, the padded source

// Weight (m, c, tap) of group gi as the tiles read it -- destination
// channel m, source channel c; for backward-data the filter w[c][m] rotated
// -- lies at w[first(m, c) + tap * step].
struct FilterWalk {
    int64_t mstride, cstride, base, step;
};

FilterWalk filter_walk(const Shape &s, int64_t gi) {
    const int64_t taps = s.taps;
    if (!s.backward)  // w[gi * cdg + m][c][tap] or w[gi * cdg + m][tap][c]
        return s.last ? FilterWalk{taps * s.csg, 1, gi * s.cdg * taps * s.csg, s.csg}
                      : FilterWalk{s.csg * taps, taps, gi * s.cdg * s.csg * taps, 1};
    // w[gi * csg + c][m][taps - 1 - tap] or w[gi * csg + c][taps - 1 - tap][m]
    return s.last ? FilterWalk{1, taps * s.cdg, gi * s.csg * taps * s.cdg + (taps - 1) * s.cdg, -s.cdg}
                  : FilterWalk{taps, s.cdg * taps, gi * s.csg * s.cdg * taps + taps - 1, -1};
}

// What one call of the packing below writes: source channels [begin, end)
// of each vector (the whole filter, or a block of channels of it), the
// vectors `wvec` elements apart from `out`, channel `begin` first.
struct PackTarget {
    int64_t begin, end, wvec;
};

// Vector v of group gi: [c][tap][16 destination channels], zero past cdg,
// one source channel at a time (its 16 x taps block stays in L1: walking a
// lane at a time over the whole vector cost 1.8 ns a weight on 512x512 3x3).
template <class T>
void pack_vector(const Shape &s, const T *w, int64_t gi, int64_t v, PackTarget pt, T *out) {
    const FilterWalk f = filter_walk(s, gi);
    const int64_t m0 = v * kLanes, lanes = std::min<int64_t>(kLanes, s.cdg - m0);
    for (int64_t c = pt.begin; c < pt.end; ++c) {
        T *block = out + (c - pt.begin) * s.taps * kLanes;
        for (int64_t l = 0; l < lanes; ++l) {
            const T *from = w + f.base + (m0 + l) * f.mstride + c * f.cstride;
            for (int64_t t = 0; t < s.taps; ++t) block[t * kLanes + l] = from[t * f.step];
        }
        for (int64_t t = 0; t < s.taps; ++t)
            std::fill(block + t * kLanes + lanes, block + (t + 1) * kLanes, T(0));
    }
}

#if CONV_HAVE_AVX512_KERNELS
// transpose_rows_avx512 or transpose_rows_avx2: out[j * 16 + l] = row l's
// element j.
using TransposeRows = void (*)(const float *rows, int64_t stride, int64_t lanes, int64_t len, float *out);

// A block of `lanes` filters' `taps` weights (contiguous, a filter `taps`
// floats after the last) as `taps` vectors of 16 lanes with the taps
// reversed, stored straight to `to` (no staging block), 16 taps at a time:
// through the staging block 3-D and 5x5 layers' backward-data ran 0.88-0.96x
// as fast (1 thread, 3 alternated runs).
CONV_TARGET_AVX512 void rotate_block_avx512(const float *from, int64_t taps, int64_t lanes, float *to) {
    for (int64_t t0 = 0; t0 < taps; t0 += kLanes) {
        __m512 v[16];
        const int64_t n = std::min<int64_t>(kLanes, taps - t0);
        load_transposed16(from + t0, taps, lanes, first_lanes(n), v);
        for (int64_t t = 0; t < n; ++t) _mm512_store_ps(to + (taps - 1 - t0 - t) * kLanes, v[t]);
    }
}

// rotate_block_avx512 for 3x3 filters, 16 of them: the block is 9 whole
// vectors (filter l's tap t at 9 l + t), and out[(8 - t) * 16 + l] takes
// 37 two-source permutes and 4 blends where the 16 x 16 transpose of 16
// nine-float rows takes 16 loads across lines and 64 shuffles. Alone, 512 x
// 512 filters (9.4 MB) packed in 0.55-0.65x the time; on 512->512 7x7
// backward-data one-shot calls the packing was a third of the pass.
CONV_TARGET_AVX512 void rotate_block9_avx512(const float *from, float *to) {
    __m512 v[9];
    for (int j = 0; j < 9; ++j) v[j] = _mm512_loadu_ps(from + j * kLanes);
    // Filters 2a and 2a + 1's taps 0-7, one filter a half (from v[a], v[a + 1]).
    const __m512i pair = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16);
    __m512 p[8];
    for (int a = 0; a < 8; ++a)
        p[a] = _mm512_permutex2var_ps(v[a], _mm512_add_epi32(pair, _mm512_set1_epi32(2 * a)), v[a + 1]);
    // Tap 8 (the rotated tap 0): filter l's at 9 l + 8, vectors 0-8 giving
    // filters 0-2, 3-6, 7-9, 10-13 and 14-15.
    const __m512i last = _mm512_setr_epi32(8, 17, 26, 3, 12, 21, 30, 7, 16, 25, 2, 11, 20, 29, 6, 15);
    __m512 t8 = _mm512_permutex2var_ps(v[0], last, v[1]);
    t8 = _mm512_mask_blend_ps(0x0078, t8, _mm512_permutex2var_ps(v[2], last, v[3]));
    t8 = _mm512_mask_blend_ps(0x0380, t8, _mm512_permutex2var_ps(v[4], last, v[5]));
    t8 = _mm512_mask_blend_ps(0x3c00, t8, _mm512_permutex2var_ps(v[6], last, v[7]));
    t8 = _mm512_mask_blend_ps(0xc000, t8, _mm512_permutexvar_ps(last, v[8]));
    _mm512_store_ps(to, t8);
    // p as a 16 x 8 matrix (vector a: filters 2a, 2a + 1) transposed in three
    // levels, each swapping a bit of the vector index (a filter's bits 3, 2,
    // 1) with one of the lane's (a tap's bits 2, 1, 0).
    const __m512i lo1 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i hi1 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    const __m512i lo2 = _mm512_setr_epi32(0, 1, 4, 5, 16, 17, 20, 21, 8, 9, 12, 13, 24, 25, 28, 29);
    const __m512i hi2 = _mm512_setr_epi32(2, 3, 6, 7, 18, 19, 22, 23, 10, 11, 14, 15, 26, 27, 30, 31);
    __m512 q[8];
    for (int x = 0; x < 4; ++x) {
        q[x] = _mm512_permutex2var_ps(p[x], lo1, p[x + 4]);
        q[x + 4] = _mm512_permutex2var_ps(p[x], hi1, p[x + 4]);
    }
    for (int x : {0, 1, 4, 5}) {
        p[x] = _mm512_permutex2var_ps(q[x], lo2, q[x + 2]);
        p[x + 2] = _mm512_permutex2var_ps(q[x], hi2, q[x + 2]);
    }
    for (int x = 0; x < 8; x += 2) {  // the last level within 128-bit lanes
        _mm512_store_ps(to + (8 - x) * kLanes, _mm512_shuffle_ps(p[x], p[x + 1], _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_store_ps(to + (7 - x) * kLanes, _mm512_shuffle_ps(p[x], p[x + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
}

// Channels-last filters, vectors [v0, v0 + count) of group gi, each s.wvec
// floats after the last ([c][tap][16]; weight (m, c, tap) at
// f.base + m * f.mstride + c * f.cstride + tap * f.step). Backward-data's
// 16 destination channels of a (c, tap) are consecutive (mstride 1): a copy
// of a vector; the forward's filters, rows of taps x C, go through 16 x 16
// transposes whose 16 columns (tap, c) are each stored at (c, tap). Against
// the scalar walk (pack_vector), 1 thread, channels-last, 3 alternated
// rounds: 256->256 28x28 forward 1.07x, backward-data 1.03x, 128->256
// 56x56 1.03x, 128->128 28x28 forward 1.05x; small filters even.
CONV_TARGET_AVX512 void pack_last_avx512(const Shape &s, const float *w, int64_t gi, int64_t v0, int64_t count,
                                         PackTarget pt, float *out) {
    const FilterWalk f = filter_walk(s, gi);
    if (f.mstride == 1) {
        // A source channel's taps x vectors are one run of memory: each
        // vector's taps (a tap's run apart, read as parallel ascending
        // streams) go to one run of the packed vector. Tap by tap across
        // the vectors, the stores went to a line of every vector in turn:
        // 0.83x on 512->512 14x14 at stride 2.
        for (int64_t c = pt.begin; c < pt.end; ++c)
            for (int64_t v = v0; v < v0 + count; ++v) {
                const int64_t m0 = v * kLanes;
                const __mmask16 keep = first_lanes(std::min<int64_t>(kLanes, s.cdg - m0));
                const float *from = w + f.base + m0 + c * f.cstride;
                float *to = out + (v - v0) * pt.wvec + (c - pt.begin) * s.taps * kLanes;
                for (int64_t t = 0; t < s.taps; ++t)
                    _mm512_store_ps(to + t * kLanes, _mm512_maskz_loadu_ps(keep, from + t * f.step));
            }
        return;
    }
    for (int64_t v = v0; v < v0 + count; ++v) {
        const int64_t m0 = v * kLanes, lanes = std::min<int64_t>(kLanes, s.cdg - m0);
        float *to = out + (v - v0) * pt.wvec;
        // Forward: row l is filter m0 + l, its element tap * C + c (f.cstride
        // 1, f.step C): each tap's run of the range's channels, 16 at a time.
        const float *rows = w + f.base + m0 * f.mstride;
        for (int64_t t = 0; t < s.taps; ++t)
            for (int64_t c0 = pt.begin; c0 < pt.end; c0 += kLanes) {
                __m512 x[16];
                const int64_t n = std::min<int64_t>(kLanes, pt.end - c0);
                load_transposed16(rows + t * s.csg + c0, f.mstride, lanes, first_lanes(n), x);
                for (int64_t u = 0; u < n; ++u) _mm512_store_ps(to + ((c0 - pt.begin + u) * s.taps + t) * kLanes, x[u]);
            }
    }
}

// Backward-data's vectors [v0, v0 + count) of group gi from channels-first
// filters, each s.wvec floats after the last: per source channel c (a
// filter), each vector's 16 x taps block of destination channels transposed,
// then written with the taps reversed (the 180-degree rotation). The
// vectors' blocks of one filter are one contiguous span, read together.
void pack_rotated(const Shape &s, const float *w, int64_t gi, int64_t v0, int64_t count, PackTarget pt,
                  float *out, TransposeRows transpose) {
    alignas(64) float block[kRotatedTaps * kLanes];
    const bool rotate_in_place = cpu_isa() == Isa::avx512;  // rotate_block_avx512
    const int64_t m0 = v0 * kLanes, m1 = std::min(s.cdg, (v0 + count) * kLanes);
    const int64_t bytes = (m1 - m0) * s.taps * (int64_t)sizeof(float);
    for (int64_t c = pt.begin; c < pt.end; ++c) {
        const float *from = w + ((gi * s.csg + c) * s.cdg + m0) * s.taps;
        // The spans lie a filter apart (18 KB on 512->512 3x3): too far for
        // the hardware prefetcher, so each would wait on memory. Spans of a
        // page or more (all of a filter's vectors) it follows itself.
        if (bytes < 4096 && c + kPackAhead < s.csg) {
            const char *next = reinterpret_cast<const char *>(from + kPackAhead * s.cdg * s.taps);
            for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
        }
        for (int64_t i = 0; i < count; ++i) {
            const int64_t lanes = std::min<int64_t>(kLanes, m1 - m0 - i * kLanes);
            float *to = out + i * pt.wvec + (c - pt.begin) * s.taps * kLanes;
            if (rotate_in_place) {
                if (s.taps == 9 && lanes == kLanes)
                    rotate_block9_avx512(from + i * kLanes * s.taps, to);
                else
                    rotate_block_avx512(from + i * kLanes * s.taps, s.taps, lanes, to);
                continue;
            }
            transpose(from + i * kLanes * s.taps, s.taps, lanes, s.taps, block);
            for (int64_t t = 0; t < s.taps; ++t)
                std::memcpy(to + t * kLanes, block + (s.taps - 1 - t) * kLanes, kLanes * sizeof(float));
        }
    }
}
#endif

// The packed vectors [v0, v0 + count) of group gi, where pt says;
// channels-first fp32 filters by transposes (with AVX2 as well: the scalar
// walk took 18-21% of a 256->256 14x14 pass at batch 1), and channels-last
// ones on AVX-512 (pack_last_avx512).
template <class T>
void pack(const Shape &s, const T *w, int64_t gi, int64_t v0, int64_t count, PackTarget pt, T *out) {
    if (pt.begin >= pt.end) return;
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) {
        const Isa isa = cpu_isa();
        if (!s.last && (isa == Isa::avx512 || isa == Isa::avx2)) {
            const TransposeRows transpose = isa == Isa::avx512 ? transpose_rows_avx512 : transpose_rows_avx2;
            if (!s.backward) {  // a filter's row: [c][tap]
                const int64_t row = s.csg * s.taps, first = pt.begin * s.taps;
                for (int64_t v = v0; v < v0 + count; ++v)
                    transpose(w + (gi * s.cdg + v * kLanes) * row + first, row,
                              std::min<int64_t>(kLanes, s.cdg - v * kLanes), (pt.end - pt.begin) * s.taps,
                              out + (v - v0) * pt.wvec);
                return;
            }
            if (s.taps <= kRotatedTaps) return pack_rotated(s, w, gi, v0, count, pt, out, transpose);
        }
        if (s.last && isa == Isa::avx512) return pack_last_avx512(s, w, gi, v0, count, pt, out);
    }
#endif
    for (int64_t v = v0; v < v0 + count; ++v) pack_vector(s, w, gi, v, pt, out + (v - v0) * pt.wvec);
}

// The caller's weights that backward-data's pack(s, w, gi, v0, count, {c0,
// c1, ...}) reads from channels-first filters, as a Trickle over `steps`
// steps: a run for each filter [c0, c1), its share of the vectors (one run
// where the vectors are all of them). Else none: the forward's filters are
// read as 16 parallel streams, which the hardware prefetcher follows
// (trickled, 512->512 7x7 and 14x14 forward moved 0.97-1.04x: noise).
template <class T>
Trickle filter_ahead(const Shape &s, const T *w, int64_t gi, int64_t v0, int64_t count, int64_t c0, int64_t c1,
                     int64_t steps) {
    if (!s.backward || s.last || c0 >= c1) return Trickle();
    const int64_t m0 = v0 * kLanes, m1 = std::min(s.cdg, (v0 + count) * kLanes), es = sizeof(T);
    // w[gi * csg + c][m][tap]
    return Trickle(w + ((gi * s.csg + c0) * s.cdg + m0) * s.taps, (m1 - m0) * s.taps * es, c1 - c0,
                   s.cdg * s.taps * es, steps)
        .paced();
}

// The whole filter, by blocks of the tiles' vectors.
template <class T>
void pack_weights(const Shape &s, const T *w, T *packed, ThreadPool &pool, int threads) {
    const int64_t blocks = ceil_div(s.dvec, s.nv);
    pool.parallel_for(
        s.groups * blocks,
        [&](int64_t i, int) {
            const int64_t gi = i / blocks, v0 = i % blocks * s.nv;
            pack(s, w, gi, v0, std::min<int64_t>(s.nv, s.dvec - v0), PackTarget{0, s.csg, s.wvec},
                 packed + (gi * s.dvec + v0) * s.wvec);
        },
        threads);
}

// Column phase p of a padded row: its column j holds source column
// first + j * sw, which lies in the source row for j in [lo, hi).
struct PhaseColumns {
    int64_t first, lo, hi;
};
PhaseColumns phase_columns(const Shape &s, int64_t p) {
    const int64_t first = p - s.left;
    int64_t lo = first >= 0 ? 0 : ceil_div(-first, s.sw);
    int64_t hi = first >= s.ws ? 0 : (s.ws - 1 - first) / s.sw + 1;
    lo = std::min(lo, s.wq);
    return {first, lo, std::clamp(hi, lo, s.wq)};
}

// `count` source channels, adjacent (channels-last; first element at `src`,
// positions `ps` apart), into their padded planes: row i, column phase p,
// column j of channel c's holds source (i - top, j * sw + p - left), zero
// outside. A phase's bounds are worked out once for all its rows: small
// planes have many short rows, where a division per row cost as much as the
// copy. Every channel of a pixel at once: a channels-last source a channel
// at a time read each row once per channel, a pixel apart -- 17% of
// MobileNet-v1's 3->32 224x224 forward -- so up to kFewChannels go in one
// call (pad_source_channels).
template <class T>
void pad_channels(const Shape &s, const T *src, int64_t ps, int64_t count, T *out) {
    for (int64_t p = 0; p < s.sw; ++p) {
        const auto [first, lo, hi] = phase_columns(s, p);
        const bool dense = s.sw == 1 && ps == 1 && count == 1;
        for (int64_t i = 0; i < s.hp; ++i) {
            T *row = out + (i * s.sw + p) * s.wq;
            const int64_t sr = i - s.top;
            if (sr < 0 || sr >= s.hs) {
                for (int64_t c = 0; c < count; ++c) std::fill(row + c * s.plane, row + c * s.plane + s.wq, T(0));
                continue;
            }
            for (int64_t c = 0; c < count; ++c) {
                std::fill(row + c * s.plane, row + c * s.plane + lo, T(0));
                std::fill(row + c * s.plane + hi, row + c * s.plane + s.wq, T(0));
            }
            const T *in = src + sr * s.ws * ps;
            if (dense) {
                std::copy(in + (first + lo), in + (first + hi), row + lo);
                continue;
            }
            for (int64_t j = lo; j < hi; ++j) {
                const T *px = in + (first + j * s.sw) * ps;
                for (int64_t c = 0; c < count; ++c) row[c * s.plane + j] = px[c];
            }
        }
    }
}

#if CONV_HAVE_AVX512_KERNELS
// Zeros `count` consecutive elements.
CONV_TARGET_AVX512 inline void zero_span(float *at, int64_t count) {
    for (int64_t j = 0; j < count; j += kLanes) _mm512_mask_storeu_ps(at + j, first_lanes(count - j), _mm512_setzero_ps());
}

// Zeros columns [from, to) of `rows` rows, `pitch` apart, in `count`
// planes: each mask worked out once for every row.
CONV_TARGET_AVX512 inline void zero_columns(const Shape &s, float *at, int64_t count, int64_t rows,
                                            int64_t pitch, int64_t from, int64_t to) {
    for (int64_t j = from; j < to; j += kLanes) {
        const __mmask16 m = first_lanes(to - j);
        for (int64_t c = 0; c < count; ++c)
            for (int64_t i = 0; i < rows; ++i)
                _mm512_mask_storeu_ps(at + c * s.plane + i * pitch + j, m, _mm512_setzero_ps());
    }
}

// The padded rows [begin, end) that hold a source row (i - top); the rows
// before and after are zeros, each row of a padded plane `pitch` elements
// (its column phases) from the next: they are zeroed here, in `count`
// planes.
struct SourceRows {
    int64_t begin, end;
};
CONV_TARGET_AVX512 inline SourceRows zero_outer_rows(const Shape &s, int64_t pitch, int64_t count, float *out) {
    const int64_t begin = std::clamp<int64_t>(s.top, 0, s.hp);
    const int64_t end = std::clamp<int64_t>(s.top + s.hs, begin, s.hp);
    for (int64_t c = 0; c < count; ++c) {
        zero_span(out + c * s.plane, begin * pitch);
        zero_span(out + c * s.plane + end * pitch, (s.hp - end) * pitch);
    }
    return {begin, end};
}

// The pad_planes_*_avx512 copies of `count` channels-first fp32 planes
// (the source's `hs * ws` apart, the padded ones `plane`) work their masks
// and bounds out once per call, not once a row or plane: per row they took
// 100 cycles a 32-column row, as much as 4 memcpy's (ResNet-20's 16x32x32
// input at stride 2: 0.7 ms of a 2.1 ms pass at batch 32), and per plane,
// on 8x8 planes, 200 cycles for a dozen stores. The padding columns are
// zeroed a column block down every row; the data is copied row by row.

// Unit stride: each 16 columns in one masked load (lanes outside the
// source row masked off, which does not fault) and one store; only the
// padding columns zeroed apart.
CONV_TARGET_AVX512 void pad_planes_avx512(const Shape &s, const float *src, int64_t count, float *out) {
    const auto [first, lo, hi] = phase_columns(s, 0);
    const auto [begin, end] = zero_outer_rows(s, s.wq, count, out);
    const int64_t rows = end - begin, splane = s.hs * s.ws;
    if (rows == 0) return;
    float *at = out + begin * s.wq;
    const float *in = src + (begin - s.top) * s.ws + first + lo;
    if (s.wq <= kLanes) {
        // A padded row in one vector: one expanding load puts the source
        // row's columns in lanes [lo, hi) and zeros around them, one store
        // (2.6x as fast on 8x8 planes as zeroing the padding apart).
        const __mmask16 data = lane_range(lo, hi), row = first_lanes(s.wq);
        for (int64_t c = 0; c < count; ++c)
            for (int64_t i = 0; i < rows; ++i)
                _mm512_mask_storeu_ps(at + c * s.plane + i * s.wq, row,
                                      _mm512_maskz_expandloadu_ps(data, in + c * splane + i * s.ws));
        return;
    }
    zero_columns(s, at, count, rows, s.wq, 0, lo);
    zero_columns(s, at, count, rows, s.wq, hi, s.wq);
    // Loads start at the source row's first used column: no lane before it
    // (masked-off lanes before a row cost a split load each). Row by row
    // (walking a column block down a 224x224 plane and then the next read
    // it back from L2), whole blocks unmasked, the last one's mask once.
    const int64_t len = hi - lo, whole = len / kLanes * kLanes;
    const __mmask16 tail = first_lanes(len - whole);
    for (int64_t c = 0; c < count; ++c)
        for (int64_t i = 0; i < rows; ++i) {
            float *to = at + c * s.plane + i * s.wq + lo;
            const float *from = in + c * splane + i * s.ws;
            for (int64_t j = 0; j < whole; j += kLanes) _mm512_storeu_ps(to + j, _mm512_loadu_ps(from + j));
            if (tail) _mm512_mask_storeu_ps(to + whole, tail, _mm512_maskz_loadu_ps(tail, from + whole));
        }
}

// Stride 2: each 32 source columns, from the row's first, in two loads;
// the even columns go to one column phase and the odd ones to the other,
// each by one two-source permute. Loads that began at a phase's first
// column (one before the row's where `left` is odd) straddled cache lines
// and read every column twice: 2.4x the time in isolation.
CONV_TARGET_AVX512 void pad_planes_stride2_avx512(const Shape &s, const float *src, int64_t count, float *out) {
    const int64_t pitch = 2 * s.wq;
    const auto [begin, end] = zero_outer_rows(s, pitch, count, out);
    const int64_t rows = end - begin, splane = s.hs * s.ws;
    if (rows == 0) return;
    float *at = out + begin * pitch;
    const float *in = src + (begin - s.top) * s.ws;
    // Source columns of parity q (32k + 2l + q) go to column 16k + l +
    // off[q] of phase row `phase[q]`; its columns from stop[q] on lie past
    // the source row.
    int64_t phase[2], off[2], stop[2];
    for (int q = 0; q < 2; ++q) {
        phase[q] = (q + s.left) % 2, off[q] = std::min((q + s.left) / 2, s.wq);
        stop[q] = std::clamp<int64_t>(off[q] + (s.ws - q + 1) / 2, off[q], s.wq);
        zero_columns(s, at + phase[q] * s.wq, count, rows, pitch, 0, off[q]);
        zero_columns(s, at + phase[q] * s.wq, count, rows, pitch, stop[q], s.wq);
    }
    // Per block of 32 source columns its four masks, worked out once (row
    // by row below: walking a block down a 224x224 plane and then the next
    // read it back from L2).
    struct Block {
        __mmask16 la, lb, m0, m1;
    };
    constexpr int64_t kBlocks = 16;  // rows of up to 512 columns; wider ones work masks out per row
    Block blocks[kBlocks];
    auto block = [&](int64_t b) {
        const int64_t col = b * 2 * kLanes, j = col / 2;
        // Lanes past the row's end masked off: no fault past x's end.
        return Block{first_lanes(s.ws - col), first_lanes(s.ws - col - kLanes), first_lanes(stop[0] - j - off[0]),
                     first_lanes(stop[1] - j - off[1])};
    };
    const int64_t nblocks = std::min(ceil_div(s.ws, 2 * kLanes), ceil_div(s.wq, (int64_t)kLanes));
    for (int64_t b = 0; b < std::min(nblocks, kBlocks); ++b) blocks[b] = block(b);
    float *to0 = at + phase[0] * s.wq + off[0], *to1 = at + phase[1] * s.wq + off[1];
    for (int64_t c = 0; c < count; ++c)
        for (int64_t i = 0; i < rows; ++i) {
            const float *row = in + c * splane + i * s.ws;
            const int64_t o = c * s.plane + i * pitch;
            for (int64_t b = 0; b < nblocks; ++b) {
                const Block k = b < kBlocks ? blocks[b] : block(b);
                const int64_t col = b * 2 * kLanes, j = col / 2;
                const __m512 lo = _mm512_maskz_loadu_ps(k.la, row + col);
                const __m512 hi = _mm512_maskz_loadu_ps(k.lb, row + col + kLanes);
                _mm512_mask_storeu_ps(to0 + o + j, k.m0, _mm512_permutex2var_ps(lo, even_lanes(), hi));
                _mm512_mask_storeu_ps(to1 + o + j, k.m1, _mm512_permutex2var_ps(lo, odd_lanes(), hi));
            }
        }
}

// Stride 3 or more: each 16 columns of a column phase gathered from the
// source row's every sw-th element.
CONV_TARGET_AVX512 void pad_planes_phases_avx512(const Shape &s, const float *src, int64_t count, float *out) {
    const int64_t pitch = s.sw * s.wq;
    const auto [begin, end] = zero_outer_rows(s, pitch, count, out);
    const int64_t rows = end - begin, splane = s.hs * s.ws;
    if (rows == 0) return;
    const __m512i spread = lanes_apart(s.sw);
    for (int64_t p = 0; p < s.sw; ++p) {
        const auto [first, lo, hi] = phase_columns(s, p);
        float *at = out + begin * pitch + p * s.wq;
        const float *in = src + (begin - s.top) * s.ws + first;
        zero_columns(s, at, count, rows, pitch, 0, lo);
        zero_columns(s, at, count, rows, pitch, hi, s.wq);
        for (int64_t j = lo; j < hi; j += kLanes) {
            const __mmask16 keep = first_lanes(hi - j);
            for (int64_t c = 0; c < count; ++c)
                for (int64_t i = 0; i < rows; ++i)
                    _mm512_mask_storeu_ps(at + c * s.plane + i * pitch + j, keep,
                                          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, spread,
                                                                   in + c * splane + i * s.ws + j * s.sw, 4));
        }
    }
}
#endif

#if CONV_HAVE_AVX512_KERNELS
// Channels-last fp32 channels (`count` of them from `src`, positions `ps`
// apart) at a width stride of 2 or more into their padded planes, as
// pad_channels lays them out: each 16 columns of a channel's column phase
// one gather (positions sw * ps apart), one store. Element by element it
// took a quarter of MobileNet's 3->32 224x224 stride-2 forward and
// backward-filter.
CONV_TARGET_AVX512 void pad_strided_last_avx512(const Shape &s, const float *src, int64_t ps, int64_t count,
                                                float *out) {
    const __m512i spread = lanes_apart(s.sw * ps);
    for (int64_t p = 0; p < s.sw; ++p) {
        const auto [first, lo, hi] = phase_columns(s, p);
        for (int64_t i = 0; i < s.hp; ++i) {
            float *row = out + (i * s.sw + p) * s.wq;
            const int64_t sr = i - s.top;
            if (sr < 0 || sr >= s.hs) {
                for (int64_t c = 0; c < count; ++c) zero_span(row + c * s.plane, s.wq);
                continue;
            }
            for (int64_t c = 0; c < count; ++c) {
                zero_span(row + c * s.plane, lo);
                zero_span(row + c * s.plane + hi, s.wq - hi);
            }
            const float *in = src + (sr * s.ws + first) * ps;
            for (int64_t j = lo; j < hi; j += kLanes) {
                const __mmask16 keep = first_lanes(hi - j);
                for (int64_t c = 0; c < count; ++c)
                    _mm512_mask_storeu_ps(row + c * s.plane + j, keep,
                                          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, spread,
                                                                   in + j * s.sw * ps + c, 4));
            }
        }
    }
}

// Channels [c0, c0 + count) of a channels-last fp32 image at unit width
// stride into their padded planes (channel c0's at `out`): 16 positions of
// 16 channels at a time, one masked load a position, transposed in
// registers, one store a channel. A scalar copy a channel at a time, C
// apart, took 12% of a channels-last 64->64 56x56 pass.
CONV_TARGET_AVX512 void pad_channels_last_avx512(const Shape &s, const float *image, int64_t c0,
                                                 int64_t count, float *out) {
    const auto [first, lo, hi] = phase_columns(s, 0);
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t cb = c0; cb < c0 + count; cb += kLanes) {
        const int64_t k = std::min<int64_t>(kLanes, c0 + count - cb);
        const __mmask16 channels = first_lanes(k);
        float *planes = out + (cb - c0) * s.plane;
        for (int64_t i = 0; i < s.hp; ++i) {
            for (int64_t c = 0; c < k; ++c)
                for (int64_t j = 0; j < s.wq; j += kLanes)
                    _mm512_mask_storeu_ps(planes + c * s.plane + i * s.wq + j, first_lanes(s.wq - j), zero);
            const int64_t sr = i - s.top;
            if (sr < 0 || sr >= s.hs) continue;
            const float *in = image + (sr * s.ws + first + lo) * s.cs + cb;
            for (int64_t j = 0; j < hi - lo; j += kLanes) {
                const int64_t np = std::min<int64_t>(kLanes, hi - lo - j);
                __m512 v[16];
#pragma GCC unroll 16
                for (int q = 0; q < 16; ++q)
                    v[q] = q < np ? _mm512_maskz_loadu_ps(channels, in + (j + q) * s.cs) : zero;
                transpose16(v);
#pragma GCC unroll 16
                for (int c = 0; c < 16; ++c)
                    if (c < k) _mm512_mask_storeu_ps(planes + c * s.plane + i * s.wq + lo + j, first_lanes(np), v[c]);
            }
        }
    }
}
#endif

#if CONV_HAVE_AVX512_KERNELS
// AVX2: channels-first planes at unit stride, a row at a time: whole
// vectors, the row's last partial one through a buffer (never read past
// the source row), the padding zeroed by vectors.
CONV_TARGET_AVX2 void pad_planes_avx2(const Shape &s, const float *src, int64_t count, float *out) {
    const auto [first, lo, hi] = phase_columns(s, 0);
    const __m256 zero = _mm256_setzero_ps();
    auto zero_from = [&](float *row, int64_t j) CONV_TARGET_AVX2 {
        for (; j + 8 <= s.wq; j += 8) _mm256_storeu_ps(row + j, zero);
        for (; j < s.wq; ++j) row[j] = 0.0f;
    };
    for (int64_t c = 0; c < count; ++c) {
        const float *plane_in = src + c * s.hs * s.ws;
        float *plane_out = out + c * s.plane;
        for (int64_t i = 0; i < s.hp; ++i) {
            float *row = plane_out + i * s.wq;
            const int64_t sr = i - s.top;
            if (sr < 0 || sr >= s.hs) {
                zero_from(row, 0);
                continue;
            }
            const float *in = plane_in + sr * s.ws + first;
            for (int64_t j = 0; j < lo; ++j) row[j] = 0.0f;
            int64_t j = lo;
            for (; j + 8 <= hi; j += 8) _mm256_storeu_ps(row + j, _mm256_loadu_ps(in + j));
            if (j < hi) {
                const __m256 v = load_first_avx2(in + j, hi - j);  // zeros past the row
                if (j + 8 <= s.wq) {
                    _mm256_storeu_ps(row + j, v);
                    j += 8;
                } else {
                    store_first_avx2(row + j, v, hi - j);
                    j = hi;
                }
            }
            zero_from(row, j);
        }
    }
}
#endif

#if CONV_HAVE_AVX512_KERNELS
// AVX2, channels-first at stride 2 (conv1): pad_channels's layout, each
// phase row's 8 columns from 16 source ones by one even-lane shuffle (the
// scalar copy took 30% of MobileNet's 3->32 forward); a row's last source
// vector through a buffer, never read past the row.
CONV_TARGET_AVX2 void pad_planes_stride2_avx2(const Shape &s, const float *src, int64_t count, float *out) {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t p = 0; p < 2; ++p) {
        const auto [first, lo, hi] = phase_columns(s, p);
        for (int64_t c = 0; c < count; ++c)
            for (int64_t i = 0; i < s.hp; ++i) {
                float *row = out + c * s.plane + (i * 2 + p) * s.wq;
                const int64_t sr = i - s.top;
                const int64_t stop = sr < 0 || sr >= s.hs ? 0 : hi;  // zeros where no source row
                int64_t j = 0;
                for (; j < std::min(lo, stop); ++j) row[j] = 0.0f;
                const float *in = stop > 0 ? src + c * s.hs * s.ws + sr * s.ws : src;
                for (; j + 8 <= stop; j += 8) {
                    // Source columns first + 2j .. first + 2j + 15, of which
                    // those before the row's end are read.
                    const int64_t at = first + 2 * j, left = s.ws - at;
                    _mm256_storeu_ps(row + j, even_lanes_avx2(load_first_avx2(in + at, left),
                                                              load_first_avx2(in + at + 8, left - 8)));
                }
                for (; j < stop; ++j) row[j] = in[first + 2 * j];
                for (; j + 8 <= s.wq; j += 8) _mm256_storeu_ps(row + j, zero);
                for (; j < s.wq; ++j) row[j] = 0.0f;
            }
    }
}
#endif

// Channels [c0, c0 + count) of one slice of a source image (`image`: its
// first channel's, channels-first channels `cstride` apart) into their
// padded slices (channel c0's at `out`, each s.plane after the last).
template <class T>
void pad_slice_channels(const Shape &s, const T *image, int64_t cstride, int64_t c0, int64_t count, T *out) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() == Isa::avx512) {
            if (s.last && s.sw == 1) return pad_channels_last_avx512(s, image, c0, count, out);
            if (s.last) return pad_strided_last_avx512(s, image + c0, s.cs, count, out);
            const float *first = image + c0 * cstride;
            if (!s.last)
                return s.sw == 1   ? pad_planes_avx512(s, first, count, out)
                       : s.sw == 2 ? pad_planes_stride2_avx512(s, first, count, out)
                                   : pad_planes_phases_avx512(s, first, count, out);
        }
    if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() == Isa::avx2 && !s.last && s.sw <= 2)
            return s.sw == 1 ? pad_planes_avx2(s, image + c0 * cstride, count, out)
                             : pad_planes_stride2_avx2(s, image + c0 * cstride, count, out);
#endif
    if (s.last && count <= kFewChannels) return pad_channels(s, image + c0, s.cs, count, out);
    const int64_t ps = s.last ? s.cs : 1;
    for (int64_t c = c0; c < c0 + count; ++c)
        pad_channels(s, image + c * (s.last ? 1 : cstride), ps, 1, out + (c - c0) * s.plane);
}

// Channels [c0, c0 + count) of image n of the source (x, or dy) into their
// padded planes (channel c0's at `out`): slice by slice, those before and
// after the source's depth zeros. (The planar copies take several
// channels-first planes at once with the planes hs * ws apart: in 3-D a
// channel's slices are, so they go a channel at a time.)
template <class T>
void pad_source_channels(const Shape &s, const T *src, int64_t n, int64_t c0, int64_t count, T *out) {
    const int64_t splane = s.hs * s.ws;
    const T *image = src + n * s.cs * s.zs * splane;
    if (s.dp == 1 && s.zs == 1 && s.front == 0) return pad_slice_channels(s, image, splane, c0, count, out);
    for (int64_t z = 0; z < s.dp; ++z) {
        const int64_t zsrc = z - s.front;
        T *slice = out + z * s.slice;
        if (zsrc < 0 || zsrc >= s.zs) {
            for (int64_t c = 0; c < count; ++c) std::fill(slice + c * s.plane, slice + c * s.plane + s.slice, T(0));
        } else if (s.last) {
            pad_slice_channels(s, image + zsrc * splane * s.cs, 0, c0, count, slice);
        } else {
            for (int64_t c = c0; c < c0 + count; ++c)
                pad_slice_channels(s, image + zsrc * splane, s.zs * splane, c, 1, slice + (c - c0) * s.plane);
        }
    }
}

// Whether a channels-first 2-D fp32 source of fewer planes than 4 a thread
// (conv1 layers: 3 channels at batch 1) is padded in bands of rows, a band
// a thread, instead of by channels: 3 channels on 2 threads left one
// thread a third of the copy idle, and each thread's tiles then read most
// of their rows from the other core's copy (padded rows the other core
// wrote cost ~30 ns a line on Zen 4). The pool gives thread t its own
// share of items first, so band t is thread t's, as the passes' row-ordered
// items are. 2 threads, batch 1, 5 alternated rounds: MobileNet's conv1
// (3->32 224x224 s2) backward-filter 1.16x (its pad was 29 us of 166 at 2
// threads against 25 us at 1), VGG-16's 3->64 224x224 1.03x, ResNet-50's
// 7x7 conv1 and the forwards (read in place) even.
bool pads_in_bands(const Shape &s, int threads) {
    return CONV_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512 && !s.last && threads > 1 && s.dp == 1 &&
           s.zs == 1 && s.front == 0 && s.n * s.cs < 4 * (int64_t)threads && s.hp >= 4 * (int64_t)threads;
}

// The padded rows [r0, r1) of every plane, seen as planes of their own (the
// pad_planes_*_avx512 copies read hp and top only to place source rows).
Shape row_band(const Shape &s, int64_t r0, int64_t r1) {
    Shape b = s;
    b.hp = r1 - r0, b.top = s.top - r0;
    return b;
}

// Every image's: channels-last 16 channels an item (a transpose's);
// channels-first as many channels as still leave 4 items a thread (a
// channel an item paid the copy's set-up per 8x8 plane), or bands of rows.
template <class T>
void pad_source(const Shape &s, const T *src, T *source, ThreadPool &pool, int threads) {
    if (std::is_same_v<T, float> && pads_in_bands(s, threads)) {
        const int64_t bands = threads, pitch = s.sw * s.wq;
        pool.parallel_for(
            s.n * bands,
            [&](int64_t i, int) {
                const int64_t n = i / bands, band = i % bands;
                const int64_t r0 = band * s.hp / bands, r1 = (band + 1) * s.hp / bands;
                pad_slice_channels(row_band(s, r0, r1), src + n * s.cs * s.hs * s.ws, s.hs * s.ws, 0, s.cs,
                                   source + n * s.cs * s.plane + r0 * pitch);
            },
            threads);
        return;
    }
    const int64_t per = s.last ? kLanes
                               : std::max<int64_t>(1, s.cs / std::max<int64_t>(1, ceil_div(4 * threads, s.n)));
    const int64_t blocks = ceil_div(s.cs, per);
    pool.parallel_for(
        s.n * blocks,
        [&](int64_t i, int) {
            const int64_t n = i / blocks, c0 = i % blocks * per;
            pad_source_channels(s, src, n, c0, std::min(per, s.cs - c0),
                                source + (n * s.cs + c0) * s.plane);
        },
        threads);
}

// Whether the source's planes are already the padded planes the tiles read:
// a channels-first forward pass at unit width stride, without padding, that
// reads every row and column (MNIST's and LeNet's unpadded layers). The
// tiles then read x itself and nothing is copied.
bool source_is_padded(const Shape &s) {
    return !s.backward && !s.last && s.sw == 1 && s.top == 0 && s.left == 0 && s.hp == s.hs &&
           s.wq == s.ws && s.front == 0 && s.dp == s.zs;
}

// ---- the register tiles

// One (source channel, tap) of a channel block, relative to the block's
// first channel: its offset in the padded source and in the packed weights.
// One flat list, so the tiles run a single loop.
struct Step {
    int64_t x, w;
};

// Taps of phase (ph, pw): where fh divides ph + pt - tap row (and fw the
// column's); every tap for the forward pass's one phase.
bool reaches(int64_t phase, int64_t pad, int64_t tap, int64_t f) {
    return ((phase + pad - tap) % f + f) % f == 0;
}

// Phase p of the destination: its depth, row and column phase.
struct Phase {
    int64_t z, h, w;
};
Phase phase_of(const Shape &s, int64_t p) { return {p / (s.fh * s.fw), p / s.fw % s.fh, p % s.fw}; }

// The positions of phase `phase` of an axis of `size` split into f phases.
int64_t phase_extent(int64_t size, int64_t phase, int64_t f) { return size > phase ? ceil_div(size - phase, f) : 0; }

// The depth taps a step list takes: bit z for tap z (every tap past 31).
bool takes(uint32_t mask, int64_t z) { return z >= 32 || ((mask >> z) & 1u); }
uint32_t all_slices(const Shape &s) { return s.kz >= 32 ? ~0u : (uint32_t)((uint64_t(1) << s.kz) - 1); }

// The depth taps of phase p's slice oz that read the source, not its
// padding: a 3-D layer's first and last slices skip the others (on 2x7x7
// at 3x3x3 a third of the products, on 4x14x14 a sixth), as oneDNN's
// kernels do. All of them where none does (the padding's zeros are summed
// then, as before) or the kernel is deeper than 31.
uint32_t depth_mask(const Shape &s, int64_t p, int64_t oz) {
    if (s.kz > 31) return all_slices(s);
    const Phase ph = phase_of(s, p);
    uint32_t mask = 0;
    bool any = false;
    for (int64_t z = 0; z < s.kz; ++z) {
        const int64_t tz = z * s.dz;
        int64_t src;  // the source slice tap z reads for slice oz
        if (!s.backward) {
            src = oz * s.sz + tz - s.front;
        } else if (!reaches(ph.z, s.pz, tz, s.fz)) {  // not in the phase's steps: either way
            mask |= 1u << z;
            continue;
        } else {
            src = oz + (ph.z + s.pz - tz) / s.fz;
        }
        if (src >= 0 && src < s.zs) mask |= 1u << z, any = true;
    }
    return any ? mask : all_slices(s);
}

int64_t phase_steps_count(const Shape &s, int64_t p, uint32_t mask) {
    const Phase ph = phase_of(s, p);
    int64_t slices = 0, rows = 0, cols = 0;
    for (int64_t z = 0; z < s.kz; ++z) slices += takes(mask, z) && (!s.backward || reaches(ph.z, s.pz, z * s.dz, s.fz));
    if (!s.backward) return slices * s.kr * s.ks;
    for (int64_t r = 0; r < s.kr; ++r) rows += reaches(ph.h, s.pt, r * s.dh, s.fh);
    for (int64_t q = 0; q < s.ks; ++q) cols += reaches(ph.w, s.pl, q * s.dw, s.fw);
    return slices * rows * cols;
}

// Phase p's steps for a channel block. Forward: the one phase, every tap.
// Backward-data: dx row ih = ph + j * fh meets tap r where fh
// divides ih + pt - r * dh, reading dy row j + (ph + pt - r * dh) / fh; the
// weights are packed rotated (tap taps - 1 - t). Backward-data walks the
// taps last to first, so that both the weights and dy are read upward (the
// other way the FMAs waited on the weights' loads: 0.85x on 256->256 13x13).
void phase_steps(const Shape &s, int64_t p, uint32_t mask, Step *steps) {
    const Phase ph = phase_of(s, p);
    int64_t per_channel = 0;  // the first channel's steps; the others' lie a plane and a filter on
    for (int64_t zz = 0; zz < s.kz; ++zz)
        for (int64_t rr = 0; rr < s.kr; ++rr)
            for (int64_t qq = 0; qq < s.ks; ++qq) {
                const int64_t z = s.backward ? s.kz - 1 - zz : zz;
                if (!takes(mask, z)) continue;
                const int64_t r = s.backward ? s.kr - 1 - rr : rr, q = s.backward ? s.ks - 1 - qq : qq;
                int64_t tz = z * s.dz, tr = r * s.dh, tc = q * s.dw, t = (z * s.kr + r) * s.ks + q, x;
                if (!s.backward) {
                    x = tz * s.slice + (tr * s.sw + tc % s.sw) * s.wq + tc / s.sw;
                } else {
                    if (!reaches(ph.z, s.pz, tz, s.fz) || !reaches(ph.h, s.pt, tr, s.fh) ||
                        !reaches(ph.w, s.pl, tc, s.fw))
                        continue;
                    x = ((ph.z + s.pz - tz) / s.fz + s.front) * s.slice +
                        ((ph.h + s.pt - tr) / s.fh + s.top) * s.wq + (ph.w + s.pl - tc) / s.fw + s.left;
                    t = s.taps - 1 - t;
                }
                steps[per_channel++] = {x, t * kLanes};
            }
    // The divisions above, once a channel, were a quarter of a 40 us pass
    // (ResNet-20's strided 32->64 backward-data, 32 channels a block).
    for (int64_t c = 1; c < s.cblock; ++c)
        for (int64_t j = 0; j < per_channel; ++j)
            steps[c * per_channel + j] = {c * s.plane + steps[j].x, c * s.taps * kLanes + steps[j].w};
}

// The step lists of a call: up to s.variants a phase (list p * variants +
// v), each one depth_mask's set of taps, the first every tap; and the list
// each slice of each phase takes. Its tables lie in the workspace (at
// s.lists_at): a pass allocates nothing, so it cannot fail half-done.
struct StepLists {
    int64_t *count;  // steps a source channel, per list
    int64_t *of;     // per (phase, slice): its list
    uint32_t *mask;  // per list, 0 where unused
    int64_t list(const Shape &s, int64_t p, int64_t oz) const { return of[p * s.zd + oz]; }
};

// The lists' tables at `tables`, as step_lists left them.
StepLists step_lists_at(const Shape &s, char *tables) {
    const int64_t phases = s.fz * s.fh * s.fw, lists = phases * s.variants;
    StepLists l;
    l.count = reinterpret_cast<int64_t *>(tables);
    l.of = l.count + lists;
    l.mask = reinterpret_cast<uint32_t *>(l.of + phases * s.zd);
    return l;
}

StepLists step_lists(const Shape &s, char *tables) {
    const int64_t phases = s.fz * s.fh * s.fw, lists = phases * s.variants;
    const StepLists l = step_lists_at(s, tables);
    std::fill(l.count, l.count + lists, int64_t(0));
    std::fill(l.mask, l.mask + lists, 0u);
    for (int64_t p = 0; p < phases; ++p) {
        uint32_t *mask = l.mask + p * s.variants;
        int64_t used = 1;
        mask[0] = all_slices(s);
        for (int64_t oz = 0; oz < s.zd; ++oz) {
            const uint32_t m = depth_mask(s, p, oz);
            int64_t v = 0;
            while (v < used && mask[v] != m) ++v;
            if (v == used) {
                if (used < s.variants)
                    mask[used++] = m;
                else
                    v = 0;  // (not reached: depth_mask's sets are at most 2 kz + 1)
            }
            l.of[p * s.zd + oz] = p * s.variants + v;
        }
        for (int64_t v = 0; v < used; ++v) l.count[p * s.variants + v] = phase_steps_count(s, p, mask[v]);
    }
    return l;
}

// How a tile meets the sums of the channel blocks before it in `out`.
enum class Mode { fresh, running, partial };

struct Tile {
    const void *x;       // the block's first channel at the tile's first position
    const void *w;       // the block's weights of the tile's first vector
    int64_t wvec;        // elements from one vector's weights to the next's
    const Step *steps;
    int64_t count;
    void *out;           // sums: [position][NV * 16]
    Mode mode;
    // The AVX2 tiles: position i's first channel, for a tile that may run
    // on into the next row (tiles_wrap); the others read x + i.
    const void *at[kMaxPositions];
};

template <class T>
void tile_portable(const Tile &t, int nv, int ur) {
    T acc[kAccumulators * kLanes];
    const int width = nv * kLanes;
    T *out = static_cast<T *>(t.out);
    for (int i = 0; i < ur * width; ++i) acc[i] = t.mode == Mode::running ? out[i] : T(0);
    const T *x = static_cast<const T *>(t.x), *w = static_cast<const T *>(t.w);
    for (int64_t s = 0; s < t.count; ++s) {
        const T *xs = x + t.steps[s].x, *ws = w + t.steps[s].w;
        for (int i = 0; i < ur; ++i)
            for (int v = 0; v < nv; ++v)
                for (int l = 0; l < kLanes; ++l)
                    acc[i * width + v * kLanes + l] += ws[v * t.wvec + l] * xs[i];
    }
    for (int i = 0; i < ur * width; ++i) out[i] = t.mode == Mode::partial ? out[i] + acc[i] : acc[i];
}

#if CONV_HAVE_AVX512_KERNELS
template <int NV, int UR>
CONV_TARGET_AVX512 void tile_avx512(const Tile &t) {
    if constexpr (NV * UR <= kAccumulators) {
        float *out = static_cast<float *>(t.out);
        __m512 acc[NV][UR];
        for (int i = 0; i < UR; ++i)
            for (int v = 0; v < NV; ++v)
                acc[v][i] = t.mode == Mode::running ? _mm512_load_ps(out + (i * NV + v) * kLanes)
                                                    : _mm512_setzero_ps();
        const float *x = static_cast<const float *>(t.x), *w = static_cast<const float *>(t.w);
        const int64_t wvec = t.wvec;
        for (int64_t s = 0; s < t.count; ++s) {
            const float *xs = x + t.steps[s].x, *ws = w + t.steps[s].w;
            __m512 wv[NV];
            for (int v = 0; v < NV; ++v) wv[v] = _mm512_load_ps(ws + v * wvec);
            for (int i = 0; i < UR; ++i) {
                const __m512 b = _mm512_set1_ps(xs[i]);
                for (int v = 0; v < NV; ++v) acc[v][i] = _mm512_fmadd_ps(wv[v], b, acc[v][i]);
            }
        }
        for (int i = 0; i < UR; ++i)
            for (int v = 0; v < NV; ++v) {
                float *o = out + (i * NV + v) * kLanes;
                __m512 a = t.mode == Mode::partial ? _mm512_add_ps(_mm512_load_ps(o), acc[v][i]) : acc[v][i];
                _mm512_store_ps(o, a);
            }
    }
}

using TileFn = void (*)(const Tile &);

template <int NV, int... U>
constexpr std::array<TileFn, kMaxPositions> tile_row(std::integer_sequence<int, U...>) {
    return {{&tile_avx512<NV, U + 1>...}};
}

const std::array<std::array<TileFn, kMaxPositions>, kMaxVectors> kTiles = {
    tile_row<1>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row<2>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row<3>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row<4>(std::make_integer_sequence<int, kMaxPositions>{}),
};

// AVX2: the same tile with each 16-channel vector in two ymm halves (the
// packed weights and the sums keep their 16-lane layout). Only the shapes
// max_positions allows are instantiated with a body.
template <int NV, int UR>
CONV_TARGET_AVX2 void tile_avx2(const Tile &t) {
    // One flat array of accumulators, every loop over it unrolled: else GCC
    // keeps them in memory and stores each after its FMA.
    constexpr int A = 2 * NV * UR;
    if constexpr (A + 2 * NV + 1 <= kAvx2Registers) {
        float *out = static_cast<float *>(t.out);
        __m256 acc[A];  // [position][vector][half], as the sums
#pragma GCC unroll 16
        for (int a = 0; a < A; ++a)
            acc[a] = t.mode == Mode::running ? _mm256_load_ps(out + a * 8) : _mm256_setzero_ps();
        const float *at[UR];  // held in registers: a position's broadcast is at[i][step's x]
#pragma GCC unroll 16
        for (int i = 0; i < UR; ++i) at[i] = static_cast<const float *>(t.at[i]);
        const float *w = static_cast<const float *>(t.w);
        const int64_t wvec = t.wvec, count = t.count;
        const Step *steps = t.steps;
        // Four steps an iteration (as the pointwise tiles): one at a time
        // the loop's own instructions cost FMA slots.
#pragma GCC unroll 4
        for (int64_t s = 0; s < count; ++s) {
            const int64_t xo = steps[s].x;
            const float *ws = w + steps[s].w;
            __m256 wv[2 * NV];
#pragma GCC unroll 8
            for (int v = 0; v < 2 * NV; ++v) wv[v] = _mm256_load_ps(ws + (v / 2) * wvec + (v % 2) * 8);
#pragma GCC unroll 16
            for (int i = 0; i < UR; ++i) {
                const __m256 b = _mm256_broadcast_ss(at[i] + xo);
#pragma GCC unroll 8
                for (int v = 0; v < 2 * NV; ++v)
                    acc[i * 2 * NV + v] = _mm256_fmadd_ps(wv[v], b, acc[i * 2 * NV + v]);
            }
        }
#pragma GCC unroll 16
        for (int a = 0; a < A; ++a) {
            float *o = out + a * 8;
            _mm256_store_ps(o, t.mode == Mode::partial ? _mm256_add_ps(_mm256_load_ps(o), acc[a]) : acc[a]);
        }
    }
}

template <int NV, int... U>
constexpr std::array<TileFn, kMaxPositions> tile_row_avx2(std::integer_sequence<int, U...>) {
    return {{&tile_avx2<NV, U + 1>...}};
}

const std::array<std::array<TileFn, kMaxPositions>, kMaxVectors> kTilesAvx2 = {
    tile_row_avx2<1>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row_avx2<2>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row_avx2<3>(std::make_integer_sequence<int, kMaxPositions>{}),
    tile_row_avx2<4>(std::make_integer_sequence<int, kMaxPositions>{}),
};
#endif

template <class T>
void run_tile(const Tile &t, int nv, int ur) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) {
        if (cpu_isa() == Isa::avx512) return kTiles[nv - 1][ur - 1](t);
        if (cpu_isa() == Isa::avx2) return kTilesAvx2[nv - 1][ur - 1](t);  // reads t.at (tiles_wrap)
    }
#endif
    tile_portable<T>(t, nv, ur);
}

// ---- the store: sums [row][position][channel] -> bias, ReLU, destination

struct Item {
    int64_t ph, pw;               // the destination phase
    int64_t oh0, rows, ow0, len;  // rows and positions of the item, in the phase
    int64_t m0, width, valid;     // first destination channel (in the group), vectors' lanes, real ones
};

// `v < 0 ? 0 : v` (not max): a NaN stays NaN, as in epilogue.cpp.
template <class T>
T bias_relu(T v, T b, bool relu) {
    v += b;
    return relu && v < T(0) ? T(0) : v;
}

// dst: the image's group's channel 0, at the item's depth slice; bias: the
// group's (or null).
template <class T>
void store_portable(const Shape &s, const Item &it, const T *sums, T *dst, const T *bias, bool relu) {
    const int64_t plane = s.dst_plane;
    for (int64_t r = 0; r < it.rows; ++r)
        for (int64_t j = 0; j < it.len; ++j) {
            const T *in = sums + (r * it.len + j) * it.width;
            int64_t q = (it.ph + (it.oh0 + r) * s.fh) * s.wdst + it.pw + (it.ow0 + j) * s.fw;
            for (int64_t m = 0; m < it.valid; ++m) {
                int64_t ch = it.m0 + m;
                T v = bias_relu(in[m], bias ? bias[ch] : T(0), relu);
                dst[s.last ? q * s.cd + ch : ch * plane + q] = v;
            }
        }
}

#if CONV_HAVE_AVX512_KERNELS
// One block of the store below: n positions (`width` apart in the sums)
// of `chans` channels into their rows (row0: the first channel's, `plane`
// apart; bias: the first channel's). Full: 16 of each, the bounds known
// when compiled; Epilogue: bias or ReLU to apply.
template <bool Full, bool Epilogue, class Put>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_block(
    const float *in, int64_t width, int64_t n, int64_t chans, float *row0, int64_t plane,
    const float *bias, bool relu, Put &put) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 v[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) v[p] = Full || p < n ? _mm512_load_ps(in + p * width) : zero;
    transpose16(v);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c)
        if (Full || c < chans) {
            __m512 x = v[c];
            if constexpr (Epilogue) {
                if (bias) x = _mm512_add_ps(x, _mm512_set1_ps(bias[c]));
                if (relu) x = _mm512_max_ps(zero, x);  // NaN stays NaN (the second operand)
            }
            put(row0 + c * plane, x, Full ? kLanes : n);
        }
}

// Channels-first: each channel's run of positions gathered out of the sums
// (16 at a time, `width` apart) into row stores; `put(row, x, n)` stores one
// channel's n positions (transposed into x's lanes) at its row.
template <class Put>
CONV_TARGET_AVX512 inline void store_rows_with(const Shape &s, const Item &it, const float *sums,
                                               float *dst, const float *bias, bool relu, Put &&put) {
    // 16 positions x 16 channels of the sums at a time, transposed in
    // registers, so that a channel's positions leave in few stores: a gather
    // per channel and row cost 4x as much, a quarter of the time on 8x8
    // planes (small CNNs). Whole blocks without bias or ReLU, the common
    // case, run code without bounds or epilogue: with them a block cost
    // 300 cycles, 15% of ResNet-20's 16->16 32x32 layer.
    const int64_t plane = s.dst_plane;
    const bool epilogue = bias || relu;
    for (int64_t r = 0; r < it.rows; ++r) {
        float *rows = dst + (it.ph + (it.oh0 + r) * s.fh) * s.wdst + it.pw + it.ow0 * s.fw;
        for (int64_t m0 = 0; m0 < it.valid; m0 += kLanes) {
            const int64_t chans = std::min<int64_t>(kLanes, it.valid - m0);
            const float *b = bias ? bias + it.m0 + m0 : nullptr;
            for (int64_t j = 0; j < it.len; j += kLanes) {
                const int64_t n = std::min<int64_t>(kLanes, it.len - j);
                const float *in = sums + (r * it.len + j) * it.width + m0;
                float *row0 = rows + (it.m0 + m0) * plane + j * s.fw;
                if (n == kLanes && chans == kLanes) {
                    if (epilogue)
                        store_block<true, true>(in, it.width, n, chans, row0, plane, b, relu, put);
                    else
                        store_block<true, false>(in, it.width, n, chans, row0, plane, b, relu, put);
                } else if (epilogue) {
                    store_block<false, true>(in, it.width, n, chans, row0, plane, b, relu, put);
                } else {
                    store_block<false, false>(in, it.width, n, chans, row0, plane, b, relu, put);
                }
            }
        }
    }
}

// One column phase of dx for every fw-th column (a strided backward-data):
// each store spreads ceil(16 / fw) positions over every fw-th lane by a
// permute, the other phases' lanes masked. One scalar store per element
// (before) took half of a stride-2 pass on 28x28 planes.
CONV_TARGET_AVX512 void store_phase_rows_avx512(const Shape &s, const Item &it, const float *sums,
                                                float *dst) {
    if (s.fw == 2) {
        // Stride 2 (the common case) with its spreads and masks as constants:
        // the general form below kept them on the stack and reloaded them per
        // store, a quarter of ResNet-20's 16->32 s2 backward-data at 1 thread.
        const __m512i low = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(8));
        store_rows_with(s, it, sums, dst, nullptr, false, [&](float *row, __m512 x, int64_t n) CONV_TARGET_AVX512 {
            // Lane 2 j of the first store holds position j, of the second 8 + j.
            const __mmask16 even = 0x5555;
            if (n == kLanes) {
                _mm512_mask_storeu_ps(row, even, _mm512_permutexvar_ps(low, x));
                _mm512_mask_storeu_ps(row + kLanes, even, _mm512_permutexvar_ps(high, x));
                return;
            }
            // The even lanes of the first q positions: 0x5555 below bit 2 q.
            auto first = [&](int64_t q) { return (__mmask16)(even & ((1u << (2 * q)) - 1)); };
            _mm512_mask_storeu_ps(row, first(std::min<int64_t>(n, 8)), _mm512_permutexvar_ps(low, x));
            if (n > 8) _mm512_mask_storeu_ps(row + kLanes, first(n - 8), _mm512_permutexvar_ps(high, x));
        });
        return;
    }
    const int64_t fw = s.fw, npos = ceil_div(kLanes, fw);  // positions a store holds
    __m512i spread[kLanes];  // store t: lane l holds position t * npos + l / fw
    __mmask16 first[kLanes + 1];  // a store's lanes of its first q positions
    for (int64_t t = 0; t * npos < kLanes; ++t) {
        alignas(64) int32_t idx[kLanes];
        for (int64_t l = 0; l < kLanes; ++l) idx[l] = (int32_t)std::min<int64_t>(t * npos + l / fw, kLanes - 1);
        spread[t] = _mm512_load_si512(idx);
    }
    for (int64_t q = 0; q <= npos; ++q) {
        first[q] = 0;
        for (int64_t l = 0; l < kLanes; ++l)
            if (l % fw == 0 && l / fw < q) first[q] = (__mmask16)(first[q] | (1u << l));
    }
    store_rows_with(s, it, sums, dst, nullptr, false, [&](float *row, __m512 x, int64_t n) CONV_TARGET_AVX512 {
        for (int64_t t = 0; t * npos < n; ++t)
            _mm512_mask_storeu_ps(row + t * npos * fw, first[std::min(npos, n - t * npos)],
                                  _mm512_permutexvar_ps(spread[t], x));
    });
}

CONV_TARGET_AVX512 void store_rows_avx512(const Shape &s, const Item &it, const float *sums,
                                          float *dst, const float *bias, bool relu) {
    store_rows_with(s, it, sums, dst, bias, relu, [](float *row, __m512 x, int64_t n) CONV_TARGET_AVX512 {
        _mm512_mask_storeu_ps(row, first_lanes(n), x);
    });
}
#endif

#if CONV_HAVE_AVX512_KERNELS
// Channels-last: a position's channels are consecutive in the sums and in
// dst, 16 a vector (the scalar store took 11% of a 64->64 56x56 pass).
CONV_TARGET_AVX512 void store_last_avx512(const Shape &s, const Item &it, const float *sums,
                                          float *dst, const float *bias, bool relu) {
    const __m512 zero = _mm512_setzero_ps();
    // A row's positions s.fw * s.cd floats apart in dst: pointers stepped,
    // whole vectors stored unmasked, a last partial one under `tail` (the
    // position recomputed and every vector masked took 8-9% of ResNet-20's
    // 16->16 32x32 passes).
    const int64_t step = s.fw * s.cd, whole = it.valid / kLanes * kLanes;
    const __mmask16 tail = first_lanes(it.valid - whole);
    const float *b = bias ? bias + it.m0 : nullptr;
    for (int64_t r = 0; r < it.rows; ++r) {
        const float *in = sums + r * it.len * it.width;
        float *out = dst + ((it.ph + (it.oh0 + r) * s.fh) * s.wdst + it.pw + it.ow0 * s.fw) * s.cd + it.m0;
        for (int64_t j = 0; j < it.len; ++j, in += it.width, out += step) {
            for (int64_t m = 0; m < whole; m += kLanes) {
                __m512 x = _mm512_load_ps(in + m);
                if (b) x = _mm512_add_ps(x, _mm512_loadu_ps(b + m));
                if (relu) x = _mm512_max_ps(zero, x);  // NaN stays NaN (the second operand)
                _mm512_storeu_ps(out + m, x);
            }
            if (tail) {
                __m512 x = _mm512_load_ps(in + whole);
                if (b) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(tail, b + whole));
                if (relu) x = _mm512_max_ps(zero, x);
                _mm512_mask_storeu_ps(out + whole, tail, x);
            }
        }
    }
}
#endif

#if CONV_HAVE_AVX512_KERNELS
// AVX2's stores: the AVX-512 ones' blocks at 8 lanes (a partial block
// through store_first_avx2's buffer).

CONV_TARGET_AVX2 inline __m256 epilogue_avx2(__m256 x, const float *bias, bool relu) {
    if (bias) x = _mm256_add_ps(x, _mm256_broadcast_ss(bias));
    if (relu) x = _mm256_max_ps(_mm256_setzero_ps(), x);  // NaN stays NaN (the second operand)
    return x;
}

// Channels-first, a unit column phase: 8 positions x 8 channels of the sums
// transposed in registers into a row store per channel.
CONV_TARGET_AVX2 void store_rows_avx2(const Shape &s, const Item &it, const float *sums,
                                      float *dst, const float *bias, bool relu) {
    const int64_t plane = s.dst_plane;
    for (int64_t r = 0; r < it.rows; ++r) {
        float *rows = dst + (it.ph + (it.oh0 + r) * s.fh) * s.wdst + it.pw + it.ow0;
        for (int64_t m0 = 0; m0 < it.valid; m0 += 8) {
            const int64_t chans = std::min<int64_t>(8, it.valid - m0);
            const float *b = bias ? bias + it.m0 + m0 : nullptr;
            for (int64_t j = 0; j < it.len; j += 8) {
                const int64_t n = std::min<int64_t>(8, it.len - j);
                const float *in = sums + (r * it.len + j) * it.width + m0;
                float *row0 = rows + (it.m0 + m0) * plane + j;
                __m256 v[8];
                if (n == 8 && chans == 8 && !b && !relu) {  // the common block: no bound, no epilogue
#pragma GCC unroll 8
                    for (int p = 0; p < 8; ++p) v[p] = _mm256_load_ps(in + p * it.width);
                    transpose8(v);
#pragma GCC unroll 8
                    for (int c = 0; c < 8; ++c) _mm256_storeu_ps(row0 + c * plane, v[c]);
                    continue;
                }
#pragma GCC unroll 8
                for (int p = 0; p < 8; ++p)
                    v[p] = p < n ? _mm256_load_ps(in + p * it.width) : _mm256_setzero_ps();
                transpose8(v);
#pragma GCC unroll 8
                for (int c = 0; c < 8; ++c)
                    if (c < chans) store_first_avx2(row0 + c * plane, epilogue_avx2(v[c], b ? b + c : nullptr, relu), n);
            }
        }
    }
}

// Channels-last: a position's channels are consecutive in the sums and in dst.
CONV_TARGET_AVX2 void store_last_avx2(const Shape &s, const Item &it, const float *sums, float *dst,
                                      const float *bias, bool relu) {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t r = 0; r < it.rows; ++r)
        for (int64_t j = 0; j < it.len; ++j) {
            const float *in = sums + (r * it.len + j) * it.width;
            const int64_t q = (it.ph + (it.oh0 + r) * s.fh) * s.wdst + it.pw + (it.ow0 + j) * s.fw;
            float *out = dst + q * s.cd + it.m0;
            for (int64_t m = 0; m < it.valid; m += 8) {
                const int64_t n = std::min<int64_t>(8, it.valid - m);
                __m256 x = _mm256_load_ps(in + m);
                if (bias) x = _mm256_add_ps(x, load_first_avx2(bias + it.m0 + m, n));
                if (relu) x = _mm256_max_ps(zero, x);
                store_first_avx2(out + m, x, n);
            }
        }
}
#endif

// An item's destination rows are asked for ownership (DestinationLines,
// trickle.h) a few channel rows -- channels-last: positions -- per tile
// while its tiles run: the store's row writes otherwise each waited on a
// read for ownership from L3. All before the tiles, they held up the
// tiles' own loads where the tiles are short (3->32 3x3 s2: 0.88x). For
// destinations from this size on (all images), 1 thread, batch 1, 2-3
// alternated rounds: conv1 7x7 s2 forward 1.14-1.18x, VGG-16's 224x224 and
// 112x112 layers 1.10-1.25x, ResNet-50's 28x28 and 56x56 layers 1.00-1.07x
// (batch 8: 1.06-1.07x); under it (14x14 and 7x7 at batch 1, whose outputs
// stay in L2 between calls) 0.95-0.99x. Stride-2 backward-data 3x3
// 1.01-1.12x (ResNet-50's res3a_2b 1.09x), conv1's 1.04x. Channels-last
// (ResNet-50's and VGG-16's layers, forward and backward-data, 3 rounds
// each way): 1.02-1.03x.
// Not on planes under kOwnedPlane positions (CIFAR's and MNIST's 8x8 and
// 16x16, at any batch): there a tile's few products did not cover the
// prefetches' own cost. Zen 4, 1 thread, 5 alternated rounds, without
// against with: the digits' 16->32 8x8 forward 1.064x at batch 32 (its
// 256 KiB output) and 1.067x at 128, ResNet-20's 32->64 16x16 s2 forward
// 1.017x at 128 and backward-data 1.08x at 32; the large planes above
// measured even either way on that machine (0.996-1.006x at batch 1:
// VGG-16's 224x224 and 112x112, ResNet-50's 28x28 and 56x56, conv1 7x7
// s2), and so did ResNet-50's 14x14 and 7x7 3x3 layers at batch 8, which
// this takes out too (0.993-1.004x).
constexpr int64_t kOwnedBytes = 256 << 10;
constexpr int64_t kOwnedPlane = 512;

template <class T>
void store_item(const Shape &s, const Item &it, const T *sums, T *dst, const T *bias, bool relu) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) {
        if (cpu_isa() == Isa::avx512) {
            if (s.last) return store_last_avx512(s, it, sums, dst, bias, relu);
            if (s.fw == 1) return store_rows_avx512(s, it, sums, dst, bias, relu);
            if (!bias && !relu) return store_phase_rows_avx512(s, it, sums, dst);
        }
        if (cpu_isa() == Isa::avx2) {
            if (s.last) return store_last_avx2(s, it, sums, dst, bias, relu);
            if (s.fw == 1) return store_rows_avx2(s, it, sums, dst, bias, relu);
        }
    }
#endif
    store_portable(s, it, sums, dst, bias, relu);
}

// ---- the pass

// Whether whole images keep the threads evenly busy: as many images for
// each, or enough that the last round hardly matters.
bool takes_images(const Shape &s, int threads) {
    return s.n % threads == 0 || s.n >= 4 * threads;
}

// Whether a call packs each work item's channel vectors into the thread's
// own slot (in L2) rather than the whole filter into the workspace first:
// where there are channel blocks enough for every thread. The whole
// filter's copy is written out to memory and read back (512x512 3x3: 9.4 MB
// each way, 1.5-4 ms on one thread here, beside 1.5 ms of tiles); the
// slot's copy is read from the filter once and stays in L2. But such an
// item reads every image's source, so with several images a thread the
// batch's sources are read once per channel block, from L3 or memory: where
// that outweighs packing the whole filter and reading it once per image,
// the threads take whole images instead (each image's source then copied
// into L2 just before its items). 1 thread, 5 alternated runs: MNIST's
// 32->64 backward-data 1.55x at batch 32, ResNet-20's 32->32 1.08x / 1.21x
// (forward / backward-data); at batch 8 ResNet-50's 128->128 28x28 1.10x /
// 1.24x, 256->256 14x14 backward-data 1.25x, strided 256->256 28x28
// forward 1.31x.
bool packs_per_item(const Shape &s, int threads) {
    const int64_t blocks = ceil_div(s.dvec, s.nv) * s.groups;
    if (blocks < 2 * threads) return false;
    if (s.n < 2 * threads || !takes_images(s, threads)) return true;
    const double per_item = (double)(blocks - 1) * (double)s.n * (double)s.image_bytes;
    const double by_image = (double)(s.n + 1) * (double)s.packed;
    return per_item <= by_image;
}

// Whether each thread packs the weight blocks its items use into a copy
// of its own (one-shot calls whose items are not whole channel blocks):
// weights one thread packed and another read cost the reader ~30 ns a line
// on Zen 4 at 2 threads (the lines come from the other core's cache, and
// the next call's packing takes them back), so a thread reading its
// sibling's blocks ran no faster than one thread alone (ResNet-20's 64->64
// 8x8 at batch 1: 44 us at 1 thread and at 2). Up to kMirrorBytes of
// filter, so that a copy stays in L2 beside the rows (ThreadCopies: its
// pieces are the channel blocks).
constexpr int64_t kMirrorBytes = 1 << 20;
bool mirrors_weights(const Shape &s, int threads) {
    return ThreadCopies::apply(threads, s.groups * ceil_div(s.dvec, s.nv)) && s.packed <= kMirrorBytes;
}

// Whether each thread pads the image its items read into a copy of its
// own rather than all threads padding the batch's channels together first:
// every item reads all of an image's channels, so there half the padded
// lines came from the other core (the same ~30 ns a line). 2 threads,
// strict, 5 alternated runs, forward / backward-data at stride 2: 32->64
// 16x16 1.12x / 1.19x, 64->128 28x28 1.18x / 1.01x, 128->128 14x14 1.07x /
// 1.02x; 16->32 32x32 and 64->64 28x28 even. Where the items are rows (any
// batch: a thread's items go image by image) or whole channel blocks of
// one image, up to kMirrorSourceBytes.
constexpr int64_t kMirrorSourceBytes = 1 << 20;
bool mirrors_source(const Shape &s, int threads) {
    if (!ThreadCopies::apply(threads, 1) || source_is_padded(s) || s.image_bytes > kMirrorSourceBytes) return false;
    return packs_per_item(s, threads) ? s.n == 1 : !takes_images(s, threads);
}

// Where an image's source (its padded copy, or itself read in place)
// outgrows L2 (2 MiB here), each channel's rows lie in L3 as short runs a
// plane apart (904 bytes on VGG's 224x224), which the hardware prefetcher
// does not follow from one channel to the next: the tiles waited on L3 for
// every new row. So the first item of a row asks the rows its successor
// adds into L2 while its tiles run
// (SourceLines, a few rows a tile). 1 thread, 3 alternated runs,
// prefetching on and off in one build: VGG's 64->64 224x224 forward
// 1.06-1.08x, backward-data 1.05x, 128->128 112x112 1.05-1.06x / 1.05x,
// 64->128 1.06x / 1.10x; 2 threads (whose items are handed out in turn, so
// a thread's prefetched rows serve both) 1.05-1.13x, 256->256 56x56 1.05x;
// sources under 2 MiB even or slower (ResNet-50's 64->64 56x56 0.99x,
// strided 128->128 backward-data 0.97x).
// 3-D the same, each depth slice the taps read (ResNet3D-18's 64->64
// 16x56x56 forward 1.06-1.13x, backward-data 1.04-1.08x, 128->128 8x28x28
// 1.03-1.06x; the suite 0.966 -> 1.005 of oneDNN). Not from a few source
// channels: their rows are a few long streams the hardware follows (its
// conv1 from 3 channels 0.98x with it).
constexpr int64_t kSourceAheadBytes = 2 << 20;
constexpr int64_t kSourceAheadChannels = 16;

// Strided backward-data's phases (dx's rows and columns of each stride
// phase) were walked one after the other over the whole plane, each
// writing every other element of dx's lines: on ResNet3D-18's 64->128
// onto 16x56x56 (8 phases, a 12.8 MB dx) every line went to L3 and back
// once per phase. The phases of a row group now run one after the other
// (q = rg * phases + p), where the weights the item walks with -- all its
// phases' taps -- stay in L2 (kPhasesInnerBytes): 1 thread, 3 alternated
// runs, forced direct_avx512, that layer 1.18x (0.62 -> 0.74 of oneDNN),
// ResNet-50's strided 128->128 onto 56x56 1.02x, 256->256 even; with 1.8
// MB of weights (128->256 onto 8x28x28) the phases outer measured 1.04x
// the inner order, so they stay outer there.
constexpr int64_t kPhasesInnerBytes = 1 << 20;

bool phases_inner(const Shape &s, int64_t weight_bytes) {
    return s.fz * s.fh * s.fw > 1 && weight_bytes <= kPhasesInnerBytes;
}

// Step q of a walk over (row group, phase): phases inner or outer.
struct RowPhase {
    int64_t rg, p;
};
RowPhase row_phase(int64_t q, bool inner, int64_t rgroups, int64_t phases) {
    return inner ? RowPhase{q / phases, q % phases} : RowPhase{q % rgroups, q / rgroups};
}

// Source-major order (run_typed): a thread takes a share of the channel
// blocks (kb) of every item, and runs the source channels' blocks
// outermost -- each block of source channels packed for all its vectors at
// once, then every item's tiles over that block, their sums waiting in the
// thread's slot (in L2) between blocks. Backward-data's per-item packing
// reads each filter's span of the item's destination channels (2.3 KB runs
// a filter apart on 512->512 3x3, which the hardware prefetcher does not
// follow: a third of the pass waited on them); a block of filters' spans of
// all the thread's channels is one run in memory. 1 thread, batch 1:
// 512->512 7x7 1.22x, 1024->1024 7x7 1.21x, 512->1024 14x14 1.12x; filters
// of 2.4 MB (256->256) 0.98-1.00x, so from kSourceMajorFilter, and where
// the items' sums fit kSourceMajorSums (an L2 share).
constexpr int64_t kSourceMajorSums = 1 << 20;
constexpr int64_t kSourceMajorFilter = 4 << 20;  // bytes of packed filter

struct SourceMajor {
    int64_t parts;           // threads' shares of the channel blocks
    int64_t part_blocks;     // the most channel blocks a share holds
    int64_t items;           // a share's items: its channel blocks x images x phases x rows x segments
    int64_t block_w;         // elements from one packed vector to the next: a block of source channels'
    int64_t block;           // elements of a packed block (of the most vectors a share holds)
    int64_t slot;            // elements of a thread's slot: the packed block, then the items' sums
};

// `rows`: the call's rows per item.
SourceMajor source_major(const Shape &s, int threads, int64_t rows) {
    SourceMajor m;
    const int64_t kblocks = ceil_div(s.dvec, s.nv);
    m.parts = std::min<int64_t>(std::max(threads, 1), kblocks);
    m.part_blocks = ceil_div(kblocks, m.parts);
    // (in double, then capped: many images must not overflow a count that
    // runs_source_major only takes up to kSourceMajorSums)
    const double items = (double)m.part_blocks * (double)s.n * (double)(s.fz * s.fh * s.fw * s.zd) *
                         (double)ceil_div(s.hd, rows) * (double)ceil_div(s.wd, s.seg);
    m.items = (int64_t)std::min(items, double(int64_t(1) << 40));
    m.block_w = s.cblock * s.taps * kLanes;
    m.block = round_up(m.part_blocks * s.nv * m.block_w, 16);
    m.slot = m.block + m.items * kItemSums;
    return m;
}

bool runs_source_major(const Shape &s, int threads, size_t es) {
    if (!s.backward || s.groups != 1 || es != sizeof(float) || cpu_isa() != Isa::avx512) return false;
    if (s.packed < kSourceMajorFilter) return false;
    if (ceil_div(s.dvec, s.nv) < threads || !packs_per_item(s, threads)) return false;
    return (double)source_major(s, threads, s.rows).items * kItemSums * (double)es <= (double)kSourceMajorSums;
}

// Where an item's packed vectors (packs_per_item) would outgrow an L2 share
// (kItemSlotBytes), the item packs and runs them a range of source channels
// at a time, its sums carried between ranges in the thread's slot: each
// filter's range is still one run of memory, and the packed range stays in
// L2 for the tiles instead of going out to L3 and back.
constexpr int64_t kItemSlotBytes = 1 << 20;
constexpr int64_t kItemRangeSums = 512 << 10;  // bytes of an item's sums carried between ranges

// Channel blocks (kb) of one thread that walk an image together, row by
// row, so that each source row, read from L3 into L2, serves all of them:
// one block at a time over the whole plane read a source larger than L2
// once per block. As many as keep their packed weights within
// kTogetherBytes (an L2 of 2 MiB also holds the rows and the item's
// sums); past that the blocks' weights would be what goes out to L3.
// 1 thread, 3 alternated runs, forced direct_avx512, batch 1 and 2:
// 128->128 112x112 forward 1.06-1.08x, backward-data 1.06-1.07x, 64->128
// 112x112 forward 1.06-1.07x; 256->256 56x56 1.01x (two blocks of four
// together), 128->128 56x56 1.01x, 28x28 and 512-channel layers even.
// All of a group's blocks together (2.4 MB of weights on 256->256) lost
// 5% there, and so did two blocks together (1.2 MB) where the source and
// one block's weights fit L2 (ResNet-50's strided 256->256 28x28 and
// 128->128 56x56, 0.95x): there the blocks still go one at a time.
// Each output's sums are the same either way.
constexpr double kTogetherBytes = 1.5 * (1 << 20);

int64_t blocks_together(const Shape &s, size_t es) {
    const double per_block = (double)s.nv * (double)s.wvec * (double)es;
    if ((double)s.image_bytes + per_block <= kTogetherBytes) return 1;  // a block's pass finds the source in L2
    return std::clamp<int64_t>((int64_t)(kTogetherBytes / per_block), 1, ceil_div(s.dvec, s.nv));
}

struct ItemRanges {
    int64_t blocks = 1;     // channel blocks an item takes (walked together)
    int64_t count = 1;      // ranges of source channels
    int64_t channels = 0;   // channels a range (a multiple of s.cblock)
    int64_t range_w = 0;    // elements from one packed vector to the next: a range's
    int64_t sums_at = 0;    // elements into the thread's slot: the item's sums
    int64_t slot = 0;       // elements of a thread's slot
};

// `rows`: the call's rows per item. Whole filters of a channel block
// within kItemSlotBytes: as many blocks an item as walk together
// (blocks_together) and still leave an item for every thread.
ItemRanges item_ranges(const Shape &s, int64_t rows, size_t es, int threads) {
    ItemRanges r;
    r.channels = s.csg, r.range_w = s.wvec, r.slot = s.nv * s.wvec;
    if (es != sizeof(float) || cpu_isa() != Isa::avx512) return r;
    const double slot_bytes = (double)s.nv * (double)s.wvec * (double)es;
    const double sums = (double)s.n * (double)(s.fz * s.fh * s.fw * s.zd) * (double)ceil_div(s.hd, rows) *
                        (double)ceil_div(s.wd, s.seg) * kItemSums;
    if (slot_bytes <= kItemSlotBytes || sums * (double)es > kItemRangeSums) {
        r.blocks = std::clamp<int64_t>(ceil_div(s.dvec, s.nv) / std::max(threads, 1), 1, blocks_together(s, es));
        r.slot = r.blocks * s.nv * s.wvec;
        return r;
    }
    const int64_t blocks = ceil_div(s.csg, s.cblock);
    const int64_t want = std::min<int64_t>(blocks, (int64_t)std::ceil(slot_bytes / kItemSlotBytes));
    r.channels = ceil_div(blocks, want) * s.cblock;
    r.count = ceil_div(s.csg, r.channels);
    r.range_w = r.channels * s.taps * kLanes;
    r.sums_at = round_up(s.nv * r.range_w, 16);
    r.slot = r.sums_at + (int64_t)sums;
    return r;
}

// Where a step list's taps read the source's zero padding: per row of its
// phase and per tile of a row (tiles start at multiples of ur), which of a
// tile's (tap, position) products read the source. Rows group by the range
// of the taps' padded rows that fall in the source (top rows, the middle,
// bottom rows), tiles by their taps' live positions (left, middle, right);
// a generated tile per (row kind, tile kind) leaves the rest out, as
// oneDNN's kernels do: on 14x14 at 3x3 a tenth of the products, on 7x7 and
// 8x8 a sixth. The padded source still holds the zeros (the compiled tiles
// and the AVX2 tiles, which run across rows, read them).
class Borders {
public:
    Borders() = default;
    // The list's `taps` steps (a channel's) of phase p, rows hj and columns wj.
    Borders(const Shape &s, const Step *taps, int64_t count, int64_t hj, int64_t wj) {
        const int64_t pitch = s.sw * s.wq;
        tap_row_.resize(count);
        int64_t rmin = 0, rmax = -1;
        std::vector<int64_t> phase(count), col(count);
        for (int64_t t = 0; t < count; ++t) {
            const int64_t at = taps[t].x % s.slice;  // the tap's read relative to the tile's first position
            tap_row_[t] = at / pitch, phase[t] = at / s.wq % s.sw, col[t] = at % s.wq;
            rmin = t ? std::min(rmin, tap_row_[t]) : tap_row_[t], rmax = std::max(rmax, tap_row_[t]);
        }
        // Row j's first padded row; its taps reach rows j * down + [rmin, rmax].
        const int64_t down = s.rstep / pitch;
        row_kind_.resize(hj);
        for (int64_t j = 0; j < hj; ++j) {
            const int64_t lo = std::clamp(s.top - j * down, rmin, rmax + 1);
            const int64_t hi = std::clamp(s.top + s.hs - j * down, lo, rmax + 1);
            row_kind_[j] = kind_of(row_ranges_, std::pair<int64_t, int64_t>{lo, hi});
        }
        // Tile k's positions i read source column (k * ur + i + col) * sw + phase - left.
        const int64_t tiles = ceil_div(wj, s.ur);
        tile_kind_.resize(tiles);
        std::vector<int8_t> lo(count), hi(count);  // per tap: the tile's live positions [lo, hi)
        for (int64_t k = 0; k < tiles; ++k) {
            const int64_t b = k * s.ur, u = std::min<int64_t>(s.ur, wj - b);
            for (int64_t t = 0; t < count; ++t) {
                const int64_t first = s.left > phase[t] ? ceil_div(s.left - phase[t], s.sw) : 0;
                const int64_t end = s.ws - 1 + s.left - phase[t] >= 0 ? (s.ws - 1 + s.left - phase[t]) / s.sw + 1 : 0;
                lo[t] = (int8_t)std::clamp<int64_t>(first - b - col[t], 0, u);
                hi[t] = (int8_t)std::clamp<int64_t>(end - b - col[t], lo[t], u);
            }
            tile_kind_[k] = kind_of(tile_kinds_, TileKind{(int)u, lo, hi});
        }
    }
    int64_t kinds() const { return (int64_t)(row_ranges_.size() * tile_kinds_.size()); }
    int64_t kind(int64_t row, int64_t tile) const {
        return row_kind_[row] * (int64_t)tile_kinds_.size() + tile_kind_[tile];
    }
    // Kind k's positions and, per tap, its live positions (left empty where
    // every product reads the source).
    int ur(int64_t k) const { return tile_kinds_[k % tile_kinds_.size()].ur; }
    void live(int64_t k, std::vector<int8_t> &lo, std::vector<int8_t> &hi) const {
        const auto [rlo, rhi] = row_ranges_[k / tile_kinds_.size()];
        const TileKind &c = tile_kinds_[k % tile_kinds_.size()];
        lo.resize(tap_row_.size()), hi.resize(tap_row_.size());
        bool all = true;
        for (size_t t = 0; t < tap_row_.size(); ++t) {
            const bool in = tap_row_[t] >= rlo && tap_row_[t] < rhi;
            lo[t] = in ? c.lo[t] : 0, hi[t] = in ? c.hi[t] : 0;
            all = all && lo[t] == 0 && hi[t] == c.ur;
        }
        if (all) lo.clear(), hi.clear();
    }

private:
    struct TileKind {
        int ur;                      // the tile's positions
        std::vector<int8_t> lo, hi;  // per tap: its live positions [lo, hi)
        bool operator==(const TileKind &o) const { return ur == o.ur && lo == o.lo && hi == o.hi; }
    };
    // The index of `key` in `kinds`, added if new.
    template <class Kind>
    static int64_t kind_of(std::vector<Kind> &kinds, const Kind &key) {
        const auto at = std::find(kinds.begin(), kinds.end(), key);
        if (at != kinds.end()) return at - kinds.begin();
        kinds.push_back(key);
        return (int64_t)kinds.size() - 1;
    }
    std::vector<int64_t> tap_row_;  // per tap: the padded row it reads, relative to the tile's
    std::vector<std::pair<int64_t, int64_t>> row_ranges_;  // taps' padded rows [lo, hi) in the source
    std::vector<TileKind> tile_kinds_;
    std::vector<int64_t> row_kind_, tile_kind_;  // per row, per tile: its index in the kinds
};

// The generated tiles one call runs: per phase, per (vectors, positions) its
// items meet -- the full tile, the last channel block's and each row
// segment's remainder -- and with AVX2, whose tiles run on across rows, per
// position where a tile meets the next row (`wrap`); without AVX2 per
// border kind of a row and tile (Borders). Null entries run the compiled
// tiles: generation never fails a pass, and a conv_find_algorithms trial
// that ran before keeps its results.
struct TileSet : CachedPlan {
    std::vector<jit::DirectTileFn> fn;
    std::vector<Borders> borders;  // per step list (tiles within rows)
    std::vector<int64_t> first;    // per step list: its first kind's entry of fn / kMaxVectors
    std::vector<std::shared_ptr<const jit::DirectTileKernel>> held;  // alive with the set
    bool complete = true;  // every tile the call meets was generated

    size_t at(int64_t list, int nv, int ur, int wrap) const {
        return (size_t)(((list * kMaxVectors + nv - 1) * kMaxPositions + ur - 1) * kMaxPositions + wrap - 1);
    }
    // `rows`: the rows of the call's items (the last of a phase may have fewer).
    // `vector_w`: elements from one packed vector of weights to the next.
    // `in_place`: the tiles read the source where it lies (reads_in_place),
    // their offsets made from the padded planes' steps.
    void look_up(const Shape &s, const Step *steps, int64_t phase_len, const StepLists &lists, int64_t rows,
                 int64_t vector_w, bool in_place) {
        const int64_t phases = s.fz * s.fh * s.fw;
        const int64_t kblocks = ceil_div(s.dvec, s.nv);
        const int nvs[2] = {s.nv, (int)(s.dvec - (kblocks - 1) * s.nv)};
        if (!s.wrap) {
            borders.resize(phases * s.variants), first.assign(phases * s.variants, 0);
        } else {
            fn.assign(phases * s.variants * kMaxVectors * kMaxPositions * kMaxPositions, nullptr);
        }
        std::vector<std::pair<int64_t, jit::DirectTileSpec>> specs;  // (entry of fn, spec)
        for (int64_t list = 0; list < phases * s.variants; ++list) {
            if (!lists.mask[list]) continue;
            const int64_t p = list / s.variants;
            const Phase ph = phase_of(s, p);
            const int64_t hj = phase_extent(s.hdst, ph.h, s.fh), wj = phase_extent(s.wdst, ph.w, s.fw);
            if (hj == 0 || wj == 0 || phase_extent(s.zdst, ph.z, s.fz) == 0) continue;
            jit::DirectTileSpec spec;
            spec.ymm = s.wrap;
            spec.channel_x = in_place ? s.hs * s.ws : s.plane, spec.channel_w = s.taps * kLanes;
            spec.position_x = in_place ? s.sw : 1;
            spec.vector_w = vector_w;
            const int64_t per_channel = phase_len ? lists.count[list] : 0;
            for (int64_t j = 0; j < per_channel; ++j) {
                const int64_t x = steps[list * phase_len + j].x;  // padded row x / wq, column x % wq
                // In place: padded row x / (sw * wq), column phase x / wq % sw, column x % wq.
                spec.tap_x.push_back(in_place ? (x / (s.sw * s.wq) - s.top) * s.ws + x % s.wq * s.sw +
                                                    x / s.wq % s.sw - s.left
                                              : x);
                spec.tap_w.push_back(steps[list * phase_len + j].w);
            }
            if (!s.wrap) {  // per border kind of the phase's rows and tiles
                Borders &b = borders[list];
                b = Borders(s, steps + list * phase_len, per_channel, hj, wj);
                first[list] = (int64_t)fn.size() / kMaxVectors;
                fn.resize((first[list] + b.kinds()) * kMaxVectors, nullptr);
                for (int64_t k = 0; k < b.kinds(); ++k) {
                    spec.ur = spec.wrap = b.ur(k);
                    b.live(k, spec.live_lo, spec.live_hi);
                    for (int nv : nvs) {
                        spec.nv = nv;
                        specs.push_back({(first[list] + k) * kMaxVectors + nv - 1, spec});
                    }
                }
                continue;
            }
            // Row segments of seg positions and the last one.
            const int64_t lens[2] = {std::min(s.seg, wj), wj - (ceil_div(wj, s.seg) - 1) * s.seg};
            // Tiles of (positions, wrap) the items meet across rows (an item
            // of `r` rows, the last item's fewer): each tile's break, where it has one.
            for (int64_t len : lens) {
                const int64_t full = std::min(rows, hj), last = hj - (ceil_div(hj, full) - 1) * full;
                for (int64_t r : {full, last}) {
                    const int64_t total = r * len;
                    for (int64_t q = 0; q < total; q += s.ur) {
                        const int ur = (int)std::min<int64_t>(s.ur, total - q);
                        const int64_t before = len - q % len;  // positions left in the tile's first row
                        if (ur - before > len) continue;       // three rows: compiled
                        spec.ur = ur, spec.wrap = (int)std::min<int64_t>(ur, before);
                        for (int nv : nvs) {
                            spec.nv = nv;
                            specs.push_back({(int64_t)at(list, nv, spec.ur, spec.wrap), spec});
                        }
                    }
                }
            }
        }
        for (auto &[entry, spec] : specs) {
            if (fn[entry]) continue;
            if (auto k = jit::direct_tile(spec)) {
                held.push_back(k);
                fn[entry] = k->fn();
            }
            complete = complete && fn[entry];
        }
    }
};

// The tile sets of recent calls are kept in a PlanCache (GeneratedTiles),
// keyed by what a set is made from (the geometry but the batch, the pass,
// the element size, the math mode, the ISA, an item's rows and the weights'
// vector pitch): a repeated call finds its kernels with one lookup rather
// than one a spec (3 us a call on 8x8 layers with their border kinds).
PlanKey tile_set_key(const ConvGeometry &g, conv_op_t op, size_t es, bool strict, int64_t rows, int64_t vector_w,
                     bool in_place) {
    PlanKey k;
    for (int64_t v : {(int64_t)g.layout, g.c, g.k, g.groups, (int64_t)op, (int64_t)es, (int64_t)strict,
                      (int64_t)cpu_isa(), rows, vector_w, (int64_t)in_place})
        k.push(v);
    for (int a = 0; a < 3; ++a)
        for (int64_t v : {g.in[a], g.kernel[a], g.out[a], g.stride[a], g.dilation[a], g.pad_begin[a], g.pad_end[a]})
            k.push(v);
    return k;
}

// A call's tile set: from recent calls', else looked up spec by spec.
// `in_place`: made to read the source where it lies; then all tiles or none
// (the compiled tiles read the padded copy).
class GeneratedTiles {
public:
    static constexpr size_t kRecentTileSets = 64;

    GeneratedTiles(const ConvArgs &args, const Shape &s, const Step *steps, int64_t phase_len,
                   const StepLists &lists, int64_t rows, int64_t vector_w, bool floats, bool in_place) {
        if (!floats || !jit::enabled()) return;
        // Never destroyed: plans may outlive static destructors.
        static auto *recent = new PlanCache(kRecentTileSets);
        try {
            const PlanKey key = tile_set_key(*args.g, args.op, sizeof(float), args.strict, rows, vector_w, in_place);
            set_ = std::static_pointer_cast<const TileSet>(recent->find(key, 0));
            if (!set_) {
                auto made = std::make_shared<TileSet>();
                made->look_up(s, steps, phase_len, lists, rows, vector_w, in_place);
                set_ = made;
                recent->put(key, 0, set_);
            }
        } catch (...) {  // no memory: the compiled tiles
            set_.reset();
        }
        if (set_ && !set_->fn.empty() && (!in_place || set_->complete)) fn_ = set_->fn.data();
        in_place_ = in_place && fn_;
    }
    // Whether the tiles read the source in place (asked for, and every one generated).
    bool in_place() const { return in_place_; }
    // Tiles that run across rows (tiles_wrap). `wrap`: the tile's positions
    // before the next row's. `list`: the step list's (StepLists).
    jit::DirectTileFn get(int64_t list, int nv, int ur, int wrap) const {
        return fn_ ? fn_[set_->at(list, nv, ur, wrap)] : nullptr;
    }
    // Tiles within a row: the tile at `tile` * ur of the phase's row `row`.
    jit::DirectTileFn get_at(int64_t list, int nv, int64_t row, int64_t tile) const {
        if (!fn_) return nullptr;
        return fn_[(set_->first[list] + set_->borders[list].kind(row, tile)) * kMaxVectors + nv - 1];
    }

private:
    std::shared_ptr<const TileSet> set_;
    const jit::DirectTileFn *fn_ = nullptr;
    bool in_place_ = false;
};

// Whether the generated tiles may read the source where it lies rather
// than its padded copy: they leave out every product that reads the
// padding (Borders), so where the padded planes differ from the source's
// only by their border -- a 2-D channels-first pass; forward's width stride
// is the tiles' step from one position to the next, and backward-data's
// phases read dy at unit stride -- the copy is not needed. Its offsets are
// the padded steps' moved onto rows of ws; a tile's first position must lie
// in the plane (outputs no larger than the source).
// The copy was 4-7% of ResNet's 3x3 forward on 28x28 and 56x56; at stride
// 2 backward-data, 1 thread 1.01-1.06x, 2 threads 1.17x (32->64 16x16) and
// 1.41x (16->32 32x32), where each thread had padded dy for itself. Sources
// past kSourceAheadBytes kept it until the next rows' prefetch read the
// source's own rows too (Zen 4, 1 thread, batch 1: VGG-16's 64->64 224x224
// forward 1.09x, backward-data 1.05x, 128->256 56x56 backward-data 1.06x,
// 256->256 56x56 1.02-1.03x; 2 threads and batch 4 1.0-1.09x).
bool reads_in_place(const Shape &s) {
    const bool planar = s.kz == 1 && s.zs == 1 && s.zdst == 1 && s.dp == 1 && s.front == 0;  // no depth padding
    if (!planar || s.wrap || s.last || source_is_padded(s)) return false;
    if (s.image_bytes > kSourceAheadBytes && cpu_isa() != Isa::avx512)  // measured on AVX-512 only
        return false;
    const int64_t down = s.rstep / (s.sw * s.wq);  // source rows from one destination row to the next
    return (s.hd - 1) * down < s.hs && (s.wd - 1) * s.sw < s.ws;
}

// What the workspace holds past packed_at: the packed weights (the whole
// filter, the items' slots or the threads' copies), as either math mode's
// channel blocks make them; then the threads' copies of the padded source.
int64_t weights_bytes(const ConvGeometry &g, conv_op_t op, size_t es, int threads) {
    const Shape s = make_shape(g, op, es, true, threads);
    int64_t weights = packs_per_item(s, threads)
                          ? checked_mul(checked_mul(threads * s.nv, s.wvec, "workspace"), (int64_t)es, "workspace")
                      : mirrors_weights(s, threads) ? checked_mul(threads, s.packed, "workspace")
                                                    : s.packed;
    // Source-major slots, or items' ranges.
    for (bool strict : {true, false}) {
        const Shape m = make_shape(g, op, es, strict, threads);
        int64_t slot = 0;
        if (runs_source_major(m, threads, es))
            slot = source_major(m, threads, m.rows).slot;
        else if (packs_per_item(m, threads))
            slot = item_ranges(m, m.rows, es, threads).slot;
        weights = std::max(weights, checked_mul(checked_mul(threads, slot, "workspace"), (int64_t)es, "workspace"));
    }
    return weights;
}
// A thread's copy of the padded source, from a line of its own (the
// copies start at the next multiple of 64 bytes: 64 more).
int64_t source_copy_bytes(const Shape &s) { return round_up(s.image_bytes, 64); }
int64_t source_copies_bytes(const Shape &s, int threads) {
    if (!mirrors_source(s, threads)) return 0;
    return checked_add(64, checked_mul(threads, source_copy_bytes(s), "workspace"), "workspace");
}

// A call's steps and step lists (the workspace's first s.source_at bytes).
void make_steps(const Shape &s, char *tables) {
    const int64_t phases = s.fz * s.fh * s.fw, phase_len = s.cblock * s.taps;
    Step *steps = reinterpret_cast<Step *>(tables + s.steps_at);
    const StepLists lists = step_lists(s, tables + s.lists_at);
    for (int64_t list = 0; list < phases * s.variants; ++list)
        if (lists.mask[list]) phase_steps(s, list / s.variants, lists.mask[list], steps + list * phase_len);
}

// What a plan keeps for its float32 forward and backward-data calls
// (Algorithm::plan_run): the shape and the steps, made per call with the
// tile's cost model in make_shape (1-3% of a 64->64 8x8 forward). Only
// steps up to kPlannedSteps: larger ones come with calls long enough not
// to notice them, and a plan need not hold them before it runs.
constexpr int64_t kPlannedSteps = 1 << 20;  // bytes
struct DirectPlan final : RunPlan {
    bool strict = false;
    int threads = 1;
    Shape s{};
    std::vector<int64_t> tables;  // the steps and step lists, as at a call's workspace start
};

std::shared_ptr<const RunPlan> direct_plan(const ConvGeometry &g, conv_op_t op, bool strict, int threads) {
    auto plan = std::make_shared<DirectPlan>();
    plan->strict = strict;
    plan->threads = threads;
    plan->s = make_shape(g, op, sizeof(float), strict, threads);
    if ((int64_t)plan->s.source_at > kPlannedSteps) return nullptr;
    plan->tables.resize((size_t)ceil_div((int64_t)plan->s.source_at, 8));
    make_steps(plan->s, reinterpret_cast<char *>(plan->tables.data()));
    return plan;
}

template <class T>
void run_typed(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    const DirectPlan *plan = std::is_same_v<T, float> ? dynamic_cast<const DirectPlan *>(args.planned) : nullptr;
    if (plan && (plan->strict != args.strict || plan->threads != threads)) plan = nullptr;
    const Shape s = plan ? plan->s : make_shape(g, args.op, sizeof(T), args.strict, threads);
    char *base = static_cast<char *>(ws);
    const T *w_in = static_cast<const T *>(args.w);
    const T *packed = static_cast<const T *>(args.prepared);
    const bool per_item = !packed && packs_per_item(s, threads);
    const bool by_source = per_item && runs_source_major(s, threads, sizeof(T));
    const bool mirrored = !packed && !per_item && mirrors_weights(s, threads);
    if (!packed && !per_item && !mirrored) {
        T *own = reinterpret_cast<T *>(base + s.packed_at);
        pack_weights(s, w_in, own, pool, threads);
        packed = own;
    }
    T *slots = reinterpret_cast<T *>(base + s.packed_at);
    const int64_t phases = s.fz * s.fh * s.fw, phase_len = s.cblock * s.taps;
    // The steps: the plan's, or made into the workspace.
    // (read only: StepLists' pointers are the ones step_lists fills)
    char *tables = plan ? reinterpret_cast<char *>(const_cast<int64_t *>(plan->tables.data())) : base;
    if (!plan) make_steps(s, tables);
    const Step *steps = reinterpret_cast<const Step *>(tables + s.steps_at);
    const StepLists lists = step_lists_at(s, tables + s.lists_at);
    // The padded source: copied image by image into the thread's slot, right
    // before that image's items (so that it is read from L2, where copying
    // the whole batch first wrote it out to memory and read it back: 7-15% of
    // a batch-32 pass on CIFAR- and MNIST-sized layers), where whole images
    // keep the threads evenly busy and the weights are not packed per item;
    // else the whole batch first.
    const T *input = static_cast<const T *>(s.backward ? args.y : args.x);
    T *source = reinterpret_cast<T *>(base + s.source_at);
    const bool by_image = !per_item && takes_images(s, threads);

    T *dst = static_cast<T *>(s.backward ? args.x : args.y);
    const T *bias = s.backward ? nullptr : static_cast<const T *>(args.bias);
    const bool relu = !s.backward && g.activation == CONV_ACTIVATION_RELU;
    const int64_t dst_image = s.cd * s.dst_plane, dst_slice = s.hdst * s.wdst * (s.last ? s.cd : 1);
    const int64_t kblocks = ceil_div(s.dvec, s.nv), segs = ceil_div(s.wd, s.seg);
    // Block kb of group gi's packed vectors, as the thread in `slot` reads
    // them: the call's packed weights, or the thread's copy (mirrored),
    // packed at the block's first use.
    ThreadCopies packed_blocks;  // pieces: the blocks gi * kblocks + kb
    auto weights = [&](int64_t gi, int64_t kb, int slot) -> const T * {
        const int64_t at = (gi * s.dvec + kb * s.nv) * s.wvec;
        if (!mirrored) return packed + at;
        T *own = slots + slot * (s.packed / (int64_t)sizeof(T)) + at;
        if (packed_blocks.first_use(slot, gi * kblocks + kb))
            pack(s, w_in, gi, kb * s.nv, std::min<int64_t>(s.nv, s.dvec - kb * s.nv), PackTarget{0, s.csg, s.wvec},
                 own);
        return own;
    };
    // Fewer rows per item where the items would not keep every thread busy
    // (the sums' order does not depend on the items: same results).
    const int64_t others = s.n * s.groups * kblocks * phases * segs;
    const int64_t rows =
        per_item || by_image ? s.rows : std::min(s.rows, ceil_div(s.hd, ceil_div(4 * threads, others * s.zd)));
    // Row groups of every depth slice (of a phase), slice-major: rg / slice_groups is the slice.
    const int64_t slice_groups = ceil_div(s.hd, rows), rgroups = s.zd * slice_groups;
    const SourceMajor major = source_major(s, threads, rows);
    const ItemRanges ranges = per_item && !by_source ? item_ranges(s, rows, sizeof(T), threads) : ItemRanges{};
    const GeneratedTiles generated(args, s, steps, phase_len, lists, rows,
                                   by_source ? major.block_w : ranges.count > 1 ? ranges.range_w : s.wvec,
                                   std::is_same_v<T, float>, std::is_same_v<T, float> && reads_in_place(s));
    // The source's planes as the tiles read them: the padded copy, or the
    // source itself (source_is_padded, or generated.in_place()).
    const bool in_place = source_is_padded(s) || generated.in_place();
    const int64_t plane_x = generated.in_place() ? s.hs * s.ws : s.plane;
    const int64_t rstep_x = generated.in_place() ? s.rstep / (s.sw * s.wq) * s.ws : s.rstep;
    const int64_t position_x = generated.in_place() ? s.sw : 1;  // from one position to the next
    const bool source_per_thread = !in_place && mirrors_source(s, threads);
    if (!in_place && !by_image && !source_per_thread) pad_source(s, input, source, pool, threads);
    const int64_t image_source = s.cs * plane_x;
    // Image n's padded source planes as the thread in `slot` reads them:
    // the source, the batch's padded copy, or the thread's own copy
    // (source_per_thread), padded when its items come to the image.
    T *const copies = source_per_thread ? reinterpret_cast<T *>(
                                              base + round_up((int64_t)s.packed_at +
                                                                  weights_bytes(g, args.op, sizeof(T), threads),
                                                              64))
                                        : nullptr;
    std::array<int64_t, ThreadCopies::kMaxThreads> copied{};  // per slot: the image its copy holds, plus 1
    auto image_at = [&](int64_t n, int slot) -> const T * {
        if (!source_per_thread) return (in_place ? input : source) + n * image_source;
        T *own = copies + slot * (source_copy_bytes(s) / (int64_t)sizeof(T));
        if (copied[(size_t)slot] != n + 1) {
            pad_source_channels(s, input, n, 0, s.cs, own);
            copied[(size_t)slot] = n + 1;
        }
        return own;
    };
    // Rows [rg * rows, ...) and segment sg of phase p of image n, for channel
    // block kb of group gi, whose packed vectors start at w.
    // `image`: image n's padded source planes.
    // Items whose destination rows are asked for ownership under their tiles (kOwnedBytes, kOwnedPlane).
    const bool owns_lines = CONV_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512 && !s.wrap &&
                            s.dst_plane >= kOwnedPlane &&
                            (double)s.n * (double)s.cd * (double)s.dst_plane * sizeof(float) >= double(kOwnedBytes);
    // Source channels [c_begin, c_end) of the item (c_begin a multiple of
    // s.cblock), weights from w (channel c_begin's, vectors wvec apart); its sums
    // in `item_sums` (or, where null, in the item's own buffer), stored to
    // the destination after the last channel. `leads_walk`: the item that
    // fetches the next rows for the others at its rows -- the first of the
    // channel blocks walking them together, and with phases inner the
    // first phase.
    // One tile of a row walk that prefetches (compute below), out of line:
    // the common loop keeps its tile call inline (a call there cost small
    // tiles 2-4%).
    auto run_one_tile = [&](const T *at, T *out, int ur, Tile &t, int nv, int64_t list, int64_t channels,
                            int64_t row, int64_t tile) {
        t.x = at, t.out = out;
        if (jit::DirectTileFn fn = generated.get_at(list, nv, row, tile))
            fn(reinterpret_cast<const float *>(t.x), reinterpret_cast<const float *>(t.w), channels,
               reinterpret_cast<float *>(t.out), (int64_t)t.mode, nullptr);
        else
            run_tile<T>(t, nv, ur);
    };
    auto compute = [&](int64_t n, int64_t gi, int64_t kb, int64_t p, int64_t rg, int64_t sg, const T *w,
                       int64_t wvec, const T *image, Trickle &ahead, int64_t c_begin, int64_t c_end, T *item_sums,
                       bool leads_walk) {
        const int nv = (int)std::min<int64_t>(s.nv, s.dvec - kb * s.nv);
        const Phase ph = phase_of(s, p);
        const int64_t oz = rg / slice_groups;  // the item's slice of the phase
        if (oz >= phase_extent(s.zdst, ph.z, s.fz)) return;
        Item it;
        it.ph = ph.h, it.pw = ph.w;
        it.oh0 = rg % slice_groups * rows, it.ow0 = sg * s.seg;
        // The phase's rows and columns (all of them for one phase).
        const int64_t hj = phase_extent(s.hdst, ph.h, s.fh), wj = phase_extent(s.wdst, ph.w, s.fw);
        it.rows = std::min(rows, hj - it.oh0), it.len = std::min(s.seg, wj - it.ow0);
        if (it.rows <= 0 || it.len <= 0) return;
        it.m0 = kb * s.nv * kLanes, it.width = nv * kLanes;
        it.valid = std::min(it.width, s.cdg - it.m0);
        alignas(64) T own[kItemSums];
        T *sums = item_sums ? item_sums : own;
        const bool last = c_end == s.csg;
        T *item_dst = dst + n * dst_image + gi * s.cdg * (s.last ? 1 : s.dst_plane) + (ph.z + oz * s.fz) * dst_slice;
        DestinationLines lines;
        if constexpr (std::is_same_v<T, float>)
            if (owns_lines && last) {
                const int64_t tiles = ceil_div(c_end - c_begin, s.cblock) * it.rows * ceil_div(it.len, s.ur);
                const int64_t at = (it.ph + it.oh0 * s.fh) * s.wdst + it.pw + it.ow0 * s.fw;
                if (!s.last)
                    lines = DestinationLines(item_dst + at + it.m0 * s.dst_plane, s.fh * s.wdst, s.dst_plane, it.rows,
                                             it.valid, (it.len - 1) * s.fw + 1, tiles);
                else  // channels-last: each position's channels of the item, cd apart
                    lines = DestinationLines(item_dst + at * s.cd + it.m0, s.fh * s.wdst * s.cd, s.fw * s.cd, it.rows,
                                             it.len, it.valid, tiles);
            }
        // The slice the item's first tap reads: backward-data's taps carry
        // their own offsets (phase_steps), as for the rows.
        const T *x = image + gi * s.csg * plane_x + oz * (s.backward ? 1 : s.sz) * s.slice;
        // The rows of the source the item's successor in its row walk reads
        // beyond its own (kSourceAheadBytes), asked into L2 under its tiles:
        // in each depth slice its taps read, the rows below its own, or
        // after a slice's last rows the next slice's first.
        SourceLines next_rows_in;
        bool fetching_next = false;
        if (leads_walk && sg == 0 && !s.wrap && s.csg >= kSourceAheadChannels && s.image_bytes > kSourceAheadBytes) {
            const int64_t reach = s.backward ? s.top + 1 : (s.kr - 1) * s.dh + 1;  // rows a row's taps span
            const int64_t depth_taps = s.backward ? s.front + 1 : s.kz;
            const int64_t depth_step = (s.backward ? 1 : s.dz) * s.slice;
            const T *from_slice = x;
            int64_t from = 0, to = 0;  // padded rows
            const int64_t next0 = it.oh0 + it.rows;
            if (next0 < hj) {
                from = (next0 - 1) * s.sh + reach;
                to = (next0 + std::min(rows, hj - next0) - 1) * s.sh + reach;
            } else if (oz + 1 < phase_extent(s.zdst, ph.z, s.fz)) {
                from_slice = x + (s.backward ? 1 : s.sz) * s.slice;
                to = (std::min(rows, hj) - 1) * s.sh + reach;
            }
            const int64_t tiles = ceil_div(c_end - c_begin, s.cblock) * it.rows * ceil_div(it.len, s.ur);
            // Rows as the tiles read them: the padded copy's, or in place
            // the source's own (reads_in_place: 2-D, one depth tap), where
            // padded row r is its row r - top.
            int64_t row_floats = s.sw * s.wq;
            if (generated.in_place()) {
                from = std::max<int64_t>(from - s.top, 0), to = std::min(to - s.top, s.hs);
                row_floats = s.ws;
            }
            fetching_next = to > from;
            if (fetching_next)
                next_rows_in = SourceLines(
                    reinterpret_cast<const float *>(from_slice + c_begin * plane_x + from * row_floats), depth_step,
                    plane_x, depth_taps, c_end - c_begin, (to - from) * row_floats, tiles);
        }
        const int64_t list = lists.list(s, p, oz);
        const Step *phase = steps + list * phase_len;
        const int64_t per_channel = phase_len ? lists.count[list] : 0;
        for (int64_t c0 = c_begin; c0 < c_end; c0 += s.cblock) {
            const int64_t channels = std::min(s.cblock, s.csg - c0);
            Tile t{nullptr, w + (c0 - c_begin) * s.taps * kLanes, wvec, phase, channels * per_channel, nullptr,
                   c0 == 0 ? Mode::fresh : args.strict ? Mode::partial : Mode::running, {}};
            const T *block = x + c0 * plane_x + it.oh0 * rstep_x + it.ow0 * position_x;  // the item's first position
            if (s.wrap) {  // tiles over the item's positions in row order, across rows
                const int64_t total = it.rows * it.len;
                for (int64_t q = 0, r = 0, j = 0; q < total; q += s.ur) {
                    const int ur = (int)std::min<int64_t>(s.ur, total - q);
                    const int wrap = (int)std::min<int64_t>(ur, it.len - j);  // positions before the next row's
                    for (int i = 0; i < ur; ++i) {
                        t.at[i] = block + r * s.rstep + j;
                        if (++j == it.len) j = 0, ++r;
                    }
                    t.out = sums + q * it.width;
                    // A tile that reaches a third row (rows narrower than it) runs compiled.
                    jit::DirectTileFn fn = ur - wrap <= it.len ? generated.get(list, nv, ur, wrap) : nullptr;
                    if (fn) {
                        const float *first = reinterpret_cast<const float *>(t.at[0]);
                        const float *next = wrap < ur ? reinterpret_cast<const float *>(t.at[wrap]) - wrap : first;
                        fn(first, reinterpret_cast<const float *>(t.w), channels, reinterpret_cast<float *>(t.out),
                           (int64_t)t.mode, next);
                    } else {
                        run_tile<T>(t, nv, ur);
                    }
                    ahead.step();
                }
                continue;
            }
            // With the next rows' prefetch between the tiles, a loop of its
            // own: a test or a call per tile in the loop below cost small
            // tiles (VGG's 3->64 forward) 2-4%.
            if (__builtin_expect(fetching_next, 0)) {
                for (int64_t r = 0; r < it.rows; ++r)
                    for (int64_t j = 0; j < it.len; j += s.ur) {
                        const int ur = (int)std::min<int64_t>(s.ur, it.len - j);
                        run_one_tile(block + r * rstep_x + j * position_x, sums + (r * it.len + j) * it.width, ur, t, nv, list,
                                     channels, it.oh0 + r, (it.ow0 + j) / s.ur);
                        next_rows_in.step();
                        lines.step();
                    }
                continue;
            }
            for (int64_t r = 0; r < it.rows; ++r)
                for (int64_t j = 0; j < it.len; j += s.ur) {
                    t.x = block + r * rstep_x + j * position_x;
                    t.out = sums + (r * it.len + j) * it.width;
                    const int ur = (int)std::min<int64_t>(s.ur, it.len - j);
                    if (jit::DirectTileFn fn = generated.get_at(list, nv, it.oh0 + r, (it.ow0 + j) / s.ur))
                        fn(reinterpret_cast<const float *>(t.x), reinterpret_cast<const float *>(t.w),
                           channels, reinterpret_cast<float *>(t.out), (int64_t)t.mode, nullptr);
                    else
                        run_tile<T>(t, nv, ur);
                    ahead.step();
                    lines.step();
                }
        }
        if (last) store_item(s, it, sums, item_dst, bias ? bias + gi * s.cdg : nullptr, relu);
    };
    // An image of the source as the caller holds it, and about the tiles
    // an image's items run.
    const int64_t input_image = s.cs * s.zs * s.hs * s.ws;
    const int64_t tiles_per_image =
        s.groups * kblocks * phases * s.zd * ceil_div(s.csg, s.cblock) *
        (s.wrap ? ceil_div(s.hd * s.wd, s.ur) : s.hd * ceil_div(s.wd, s.ur));
    if (by_image) {  // an item: one image, everywhere
        const int64_t together = blocks_together(s, sizeof(T));
        pool.parallel_for(
            s.n,
            [&](int64_t n, int slot) {
                const T *image = (in_place ? input : source) + n * image_source;
                Trickle ahead;
                if (!in_place) {
                    T *own = source + slot * image_source;
                    pad_source_channels(s, input, n, 0, s.cs, own);
                    image = own;
                    // Items go out in turn: this thread's next image is
                    // likely `threads` on.
                    if (n + threads < s.n)
                        ahead = Trickle(input + (n + threads) * input_image, input_image * (int64_t)sizeof(T),
                                        tiles_per_image);
                }
                const bool inner = phases_inner(s, together * s.nv * s.wvec * (int64_t)sizeof(T));
                for (int64_t gi = 0; gi < s.groups; ++gi)
                    for (int64_t kb0 = 0; kb0 < kblocks; kb0 += together)
                        for (int64_t q = 0; q < rgroups * phases; ++q) {
                            const RowPhase w = row_phase(q, inner, rgroups, phases);
                            for (int64_t kb = kb0; kb < std::min(kblocks, kb0 + together); ++kb)
                                for (int64_t sg = 0; sg < segs; ++sg)
                                    compute(n, gi, kb, w.p, w.rg, sg, weights(gi, kb, slot), s.wvec, image,
                                            ahead, 0, s.csg, nullptr,
                                            kb == kb0 && (!inner || w.p == 0));
                        }
            },
            threads);
        return;
    }
    // Channel blocks [kb0, kb1) of group gi over source channels [c0, c1):
    // their vectors packed into w (`range_w` apart), then every item's
    // tiles, the blocks together row by row (blocks_together); item i's
    // sums carried at sums + i * kItemSums (null: the range is all
    // channels, each item's sums its own).
    auto pack_and_run = [&](int64_t gi, int64_t kb0, int64_t kb1, int64_t c0, int64_t c1, T *w, int64_t range_w,
                            T *sums, int slot) {
        const int64_t v0 = kb0 * s.nv, count = std::min(kb1 * s.nv, s.dvec) - v0;
        pack(s, w_in, gi, v0, count, PackTarget{c0, c1, range_w}, w);
        // The next range's weights asked into L2 under this range's tiles:
        // packed from memory after them, a 9.4 MB filter (512->512 3x3)
        // kept the pass waiting ~0.8 ms a call at this machine's ~12 GB/s.
        const int64_t tiles = tiles_per_image / (s.groups * kblocks) * (kb1 - kb0) * s.n *
                              ceil_div(c1 - c0, s.cblock) / ceil_div(s.csg, s.cblock);
        Trickle ahead = filter_ahead(s, w_in, gi, v0, count, c1, std::min(s.csg, 2 * c1 - c0), tiles);
        int64_t i = 0;
        const bool inner = phases_inner(s, (kb1 - kb0) * s.nv * range_w * (int64_t)sizeof(T));
        for (int64_t n = 0; n < s.n; ++n)
            for (int64_t q = 0; q < rgroups * phases; ++q) {
                const RowPhase at = row_phase(q, inner, rgroups, phases);
                for (int64_t kb = kb0; kb < kb1; ++kb)
                    for (int64_t sg = 0; sg < segs; ++sg, ++i)
                        compute(n, gi, kb, at.p, at.rg, sg, w + (kb - kb0) * s.nv * range_w, range_w, image_at(n, slot),
                                ahead, c0, c1, sums ? sums + i * kItemSums : nullptr,
                                kb == kb0 && (!inner || at.p == 0));
            }
    };
    if (by_source) {  // a share of the channel blocks, everywhere, source channels outermost
        pool.parallel_for(
            major.parts,
            [&](int64_t part, int slot) {
                const int64_t kb0 = part * kblocks / major.parts, kb1 = (part + 1) * kblocks / major.parts;
                T *block = slots + slot * major.slot;  // [vector][block's channel][tap][16]
                for (int64_t c0 = 0; c0 < s.csg; c0 += s.cblock)
                    pack_and_run(0, kb0, kb1, c0, std::min(c0 + s.cblock, s.csg), block, major.block_w,
                                 block + major.block, slot);
            },
            threads);
        return;
    }
    if (per_item) {  // an item: channel blocks of a group, everywhere (a range of channels at a time)
        const int64_t kparts = ceil_div(kblocks, ranges.blocks);
        pool.parallel_for(
            s.groups * kparts,
            [&](int64_t item, int slot) {
                const int64_t kb = item % kparts * ranges.blocks, gi = item / kparts;
                T *w = slots + slot * ranges.slot;
                T *sums = ranges.count > 1 ? w + ranges.sums_at : nullptr;
                for (int64_t c0 = 0; c0 < s.csg; c0 += ranges.channels)
                    pack_and_run(gi, kb, std::min(kblocks, kb + ranges.blocks), c0,
                                 std::min(c0 + ranges.channels, s.csg), w, ranges.range_w, sums, slot);
            },
            threads);
        return;
    }
    // With the phases inner, an item takes all phases of its rows: items of
    // one row group's phases on two threads at once wrote the same lines of
    // dx (128->128 strided onto 56x56 at 2 threads: 0.76x).
    const bool inner = phases_inner(s, s.nv * s.wvec * (int64_t)sizeof(T));
    const int64_t item_phases = inner ? phases : 1;
    pool.parallel_for(
        others * rgroups / item_phases,
        [&](int64_t item, int slot) {
            const int64_t sg = item % segs, q = item / segs % (rgroups * phases / item_phases);
            const int64_t rest = item / segs / (rgroups * phases / item_phases);
            const int64_t kb = rest % kblocks, gi = rest / kblocks % s.groups, n = rest / kblocks / s.groups;
            Trickle none;
            for (int64_t i = 0; i < item_phases; ++i) {
                const RowPhase at = row_phase(q * item_phases + i, inner, rgroups, phases);
                compute(n, gi, kb, at.p, at.rg, sg, weights(gi, kb, slot), s.wvec, image_at(n, slot), none, 0, s.csg,
                        nullptr, !inner || at.p == 0);
            }
        },
        threads);
}

class DirectAvx512 final : public Algorithm {
public:
    const char *name() const override { return "direct_avx512"; }
    const char *why_not(const ConvGeometry &g, conv_op_t op) const override {
        if (g.in_size() == 0 || g.out_size() == 0) return "it needs a non-empty input and output";
        return nullptr;
    }
    // Measured on this machine (Sapphire Rapids class, 1 thread pinned,
    // strict, one-shot calls: weights packed per call), GFLOP/s, direct vs
    // the solver AUTO took before it, runs interleaved:
    //   forward  conv1 3->64 7x7 s2          124-131 vs implicit_gemm 112-114 (b8: 125 vs 71)
    //            128->128 56x56 3x3 s2       115-120 vs 108-112 (b8: 115 vs 92)
    //            256->256 28x28 3x3 s2       111 vs 104 (b8: 122 vs 99)
    //            512->512 14x14 3x3 s2       101 vs 89-92
    //            256->256 14x14 3x3 s1       135-136 vs 121-123
    //            512->512 7x7 3x3 s1         112 vs 103-104
    //            64->64 56x56, 128->128 28x28 139-142 vs 141-143 (even)
    //   bwd_data, stride 1: 133 vs 120 (14x14), 99 vs 91 (7x7), 141 vs 142
    //   (28x28).
    //   bwd_data, stride 2 (implicit_gemm and Winograd decline: im2col +
    //   OpenBLAS's SSE kernels, 14 GFLOP/s): 3x3 128/256/512 channels 106 /
    //   118 / 90, 1x1 512->1024 51. conv1's (3 dx channels: 3 of 16 lanes) 15.
    //   channels-last, against AUTO's im2col (implicit_gemm declines
    //   reductions > 256 there; conv1: implicit_gemm): conv1 fwd 102 vs 36,
    //   3x3 128/256 channels fwd 90-93 and bwd_data 109-110 vs 15-19;
    //   512->512 7x7 26-31 vs 14-19 (packing [k][r][s][c] filters per call).
    // The tiles alone (prepared weights) run at 150 GFLOP/s on 14x14 and
    // 7x7. Since then im2col runs on libconv's own SGEMM (sgemm_avx512.cpp)
    // at 3-4x OpenBLAS's SSE kernels; measured again against it (ResNet-50,
    // batch 1, strict): strided 1x1 backward-data 79-80 vs 174-236 GFLOP/s at
    // 2 threads (res3a_1, res4a_1), so 1x1 layers are left to im2col; 3x3 s2
    // backward-data 215 vs 190 (res4a_2b), 156 vs 141 (res5a_2b), 174 vs 180
    // (res3a_2b); channels-last at 1 thread: 56x56 3x3 121 vs 106 (fwd), 121
    // vs 111 (bwd_data), conv1 fwd 119 vs 52, but 28x28 even (126 vs 124) and
    // 14x14/7x7 or strided 87-116 vs 98-136. So, onto 16 or more channels a
    // group, for kernels wider than 1x1: channels-first forward layers that
    // are strided or make planes of at most 14x14, backward-data onto such
    // planes, and strided backward-data; channels-last only onto planes of
    // 56x56 and more (strided backward-data not), 28x28 at unit stride since
    // (below).
    // Backward-filter (direct_avx512_filter.cpp), measured the same way
    // against AUTO's choice before it (GFLOP/s, ResNet-50):
    //   batch 1: conv1 112 vs implicit_gemm 95; 3x3 s1 56x56 137-140 vs
    //   114, 28x28 116-132 vs 95, 14x14 129 vs 103, 7x7 95 vs 82-97 (even);
    //   s2 onto 28x28 94-105 vs 88-90, onto 14x14 91-100 vs 97-100, onto
    //   7x7 88-92 vs 95-97 (a tile's 16 x 16 transposes into dw are paid
    //   for over few positions).
    //   batch 8: conv1 105-110 vs 42-43, every 3x3 layer 120-143 vs 95-115.
    //   channels-last: conv1 96 vs 35; 3x3 layers 126-137 vs im2col's
    //   122-139 at 56x56 and 28x28, 87-126 vs 125-139 below (its unfold of
    //   channels-last x is cheap).
    // So channels-first where the batch brings 392 positions or more, or
    // 196 at unit stride; channels-last only for short rows of dw (conv1).
    // Since, on an Intel Xeon with AMX (1 thread, batch 1, 3 alternated
    // runs, forced against AUTO's im2col, ms): stride 2 onto 14x14 256->256
    // 1.60-1.69 vs 1.69-1.87 (ResNet-50's res4a_2b), 128->256 0.74-0.80 vs
    // 0.84-0.88, 64->128 0.19-0.21 vs 0.25-0.26, 512->512 even; onto 13x13
    // 1.38 vs 1.55, 12x12 1.21 vs 1.27, 10x10 and 8x8 even; unit stride
    // 12x12 1.13-1.15 vs 1.21-1.24, 10x10 even, 7x7 2.0 vs 1.7: so from 144
    // positions at either stride.
    // Channels-last on AVX-512, forced against AUTO's im2col the same way
    // (1 thread, 3 alternated runs): at unit stride from up to 128 channels
    // 1.07-1.30x (ResNet-50's 64->64 56x56 and 128->128 28x28 1.15x at batch
    // 1, 1.07-1.15x at batch 8; ResNet-20's 32->32 16x16 1.30x, 64->64 8x8
    // 1.07x, MNIST's 32->64 1.16x, batch 32); from 256 channels or strided
    // 0.64-0.90x -- strided from 16 channels too (ResNet-20's 16->32 at
    // batch 32 0.72x, 128 0.76x), so the short rows' rule keeps strided
    // layers only from fewer channels (conv1's 3: 1.5-1.7x im2col).
    // From 256 channels at unit stride (re-measured 2026-12-01, same way,
    // 2 rounds, 1 and 2 threads, 3x3): 256->512 and 512->512 28x28 at batch
    // 1 1.04-1.18x (2 threads 1.06-1.09x), batch 2 1.00-1.05x, batch 8
    // 0.92-0.97x; 256->256 and 512->512 14x14 at batch 2 1.06-1.13x (batch 8
    // 1.05-1.12x), at batch 1 1.04-1.11x but at 2 threads 0.91-0.96x; 7x7
    // lost at batch 1-2 (0.52-0.83x at 2 threads). So 14x14 planes at batch
    // 2-8 and 28x28 at batch 1 (512->512 28x28 at batch 2: 0.94x in AUTO).
    // With an item's columns on whole channels (direct_avx512_filter.cpp,
    // columns (channel, tap)), same way, 2 rounds: 28x28 and 56x56 from 256
    // channels 1.05-1.11x at batch 1-8 (2 threads 1.16-1.22x at batch 8,
    // 1.20x on 256->256 56x56 at batch 1); 14x14 unchanged. So 3x3 from
    // 28x28 planes at any batch (the 3-D kernels' 27 taps keep the old
    // order).
    // Channels-last with AVX2 (Zen 3, batch 32 / batch 1, same way): 3x3
    // from 32 source channels on planes up to 32x32 too (ResNet-20's
    // 32->32 16x16 1.63x / 1.36x, MNIST's 32->64 26x26 1.13x / 1.12x,
    // 32->32 32x32 0.92x / 1.25x); from 64 channels 0.84-1.12x (left to
    // im2col).
    // Channels-first with AVX2 under 144 positions (batch 1 of the small
    // suite's layers: 2-D, ungrouped), forced against im2col, ratios to
    // oneDNN in 3 alternated runs (Zen 3, 2026-12-02): up to 64 channels
    // both sides 1.2-1.9x (ResNet-20's 64->64 8x8 1.6x, 32->64 s2 onto 8x8
    // 1.2x, the digits' 16->32 8x8 1.4x, LeNet-5's 6->16 5x5 1.9x, 32->32
    // 4x4 1.3x); from 128 channels 0.62-0.84x (512->512 and 256->256 7x7,
    // 128->128 5x5, 512->512 s2 onto 7x7): im2col keeps those.
    // With AVX-512 the same way (Zen 4, 2026-12-03, 3 alternated runs):
    // from 4-64 channels 1.3-2.9x (64->64 8x8 0.40-0.53 -> 0.90-0.91 of
    // oneDNN, 32->64 s2 onto 8x8 0.40-0.53 -> 0.81-0.84, 16->32 8x8
    // 0.26-0.35 -> 0.64-0.70, LeNet-5's 6->16 5x5 0.33-0.57 -> 0.70-1.29,
    // 64->64 and 32->32 4x4 1.4-1.7x), but from one or two channels
    // (1->16 and 2->16 8x8) 0.7-1.0x: im2col keeps those, as 128->128 7x7
    // (0.68-0.87 -> 0.74-0.97, noise).
    static bool filter_competitive(const ConvGeometry &g) {
        const int64_t positions = g.n * g.out_size();
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST) {
            const bool unit_stride = g.stride[1] == 1 && g.stride[2] == 1;
            return (g.cg() * g.kernel_size() <= 256 && (unit_stride || g.cg() < 16)) ||
                   (cpu_isa() == Isa::avx512 && unit_stride &&
                    (g.cg() <= 128 || (g.is_planar() && g.kernel_size() == 9 && g.out_size() >= 28 * 28) ||
                     (g.out_size() >= 14 * 14 && positions >= 392 && positions <= 1568))) ||
                   (cpu_isa() == Isa::avx2 && unit_stride && g.cg() * g.kernel_size() <= 288 &&
                    g.out_size() <= 32 * 32);
        }
        return positions >= 144 || (g.groups == 1 && g.is_planar() && g.cg() <= 64 && g.kg() <= 64 &&
                                    (cpu_isa() == Isa::avx2 || g.cg() >= 4));
    }
    // Channels-last with AVX2 (generated tiles), against AUTO's choice
    // before (im2col over libconv's SGEMM), ResNet-50 at batch 1, 1 thread,
    // strict, 3 alternated runs, ms: conv1 (3->64 7x7 s2) forward 5.3 vs
    // 9.3 and backward-filter 5.9 vs 10.0 (MobileNet's 3->32 3x3 s2: 0.85
    // vs 1.71 and 0.84 vs 1.86), 64->64 56x56 forward 3.5 vs 4.6 and
    // backward-data 4.0 vs 4.8; but conv1's backward-data 21.7 vs 13.6, and
    // every layer from 128 channels or on 28x28 and smaller planes lost
    // (0.40-0.84x; 128->128 28x28 backward-data 1.06x, noise).
    // The small layers (CIFAR and MNIST sized: up to 64 channels on 8x8 to
    // 32x32 planes), measured since against im2col over libconv's SGEMM
    // (Zen 3, 1 thread, strict, 2-3 alternated rounds, batch 32 / batch 1,
    // forced): forward at unit stride 1.0-2.6x onto up to 64 channels
    // (ResNet-20's 16->16 32x32 2.4x / 2.6x, 32->32 16x16 1.9x / 1.5x,
    // 64->64 8x8 1.5x / 1.0x, 64->64 32x32 1.16x / 1.18x, MNIST's 32->64
    // 26x26 1.24x / 1.23x) and from 6-12 source channels 2.0-4.1x at batch
    // 32 (LeNet-5's 6->16 5x5 4.1x, 8->16 3.1x); backward-data onto planes
    // of 16x16 and more 0.93-2.0x (16->16 32x32 2.0x / 1.9x, 32->32 16x16
    // 1.8x / 1.3x, 64->64 32x32 1.1x / 1.0x, 32->64 32x32 0.95x / 0.93x) but
    // onto 8x8 0.68-0.94x at batch 1; backward-data onto fewer than 16
    // channels 0.4-0.7x (im2col keeps it). And on large planes, batch 1, 3
    // alternated rounds, forward / backward-data: 64 channels on 56x56 and
    // 80x80 1.06x / 1.08x and 1.04x / 1.00x, 48 on 112x112 1.12x / 1.03x,
    // 32 on 112x112 and 224x224 1.16x / 1.15x and 1.0-1.3x; but 64 on
    // 112x112 (a 3.2 MB source) 0.88x / 0.92x and on 224x224 (VGG's
    // conv1_2) 0.83-0.94x / 0.65x. Backward-filter of two taps (WaveNet's
    // 64->128 k2 on 4096 samples, the AVX-512 tiles' win there): im2col
    // 1.32-1.50x these tiles at batch 1.
    static constexpr int64_t kLastSourceBytesAvx2 = (5 << 20) / 2;  // past it, from 33+ channels: im2col
    static bool channels_last_competitive_avx2(const ConvGeometry &g, conv_op_t op) {
        const bool strided = g.stride[1] > 1 || g.stride[2] > 1;
        if (op == CONV_OP_BACKWARD_FILTER) return g.kernel_size() > 2 && filter_competitive(g);
        if (op == CONV_OP_FORWARD && g.cg() <= 4) return true;
        if (strided || g.c > 64 || g.k > 64) return false;
        const int64_t source_bytes = (op == CONV_OP_FORWARD ? g.c * g.in_size() : g.k * g.out_size()) * 4;
        if (std::max(g.c, g.k) > 32 && source_bytes > kLastSourceBytesAvx2) return false;
        if (op == CONV_OP_FORWARD) return g.kg() >= 16 && (g.cg() >= 16 || g.groups == 1);
        return g.cg() >= 16 && g.kg() >= 16 && g.in_size() >= 16 * 16;
    }
    // 3-D layers (the depth taps a loop in the generated tiles, depth
    // slices of the padded source walked as its rows), against AUTO's
    // choice before (im2col over libconv's SGEMM), ResNet3D-18's layers at
    // batch 1, 1 thread, strict, in one process (5-7 alternated calls):
    // forward at unit stride 1.16-1.63x (64->64 16x56x56 1.31x, 128->128
    // 8x28x28 1.16x, 256->256 4x14x14 1.63x, 512->512 2x7x7 1.25x), strided
    // 0.96-1.16x (64->128 onto 8x28x28 0.96x), conv1 (3->64 3x7x7, 1x2x2)
    // 1.2-1.8x; backward-data at unit stride 1.13-1.38x, strided onto 128+
    // channels 1.05-1.12x but onto 64 0.75x, onto conv1's 3 channels
    // 0.25x. Channels-last lost or broke even (0.75-1.3x, mixed), and the
    // compiled tiles were not measured.
    // With AVX-512 (Intel Xeon with AMX, 1 thread, strict, 2 alternated
    // suite runs, forced against AUTO's im2col): forward 1.24-1.81x on every
    // layer (conv1 1.81x, 64->64 16x56x56 1.35x, 512->512 2x7x7 1.71x);
    // backward-data at unit stride 1.27-1.97x, strided onto 128+ channels
    // 1.26-1.47x, onto 64 even (1.02x), onto conv1's 3 channels 0.26x.
    // Backward-filter (AVX-512 only, not measured with AVX2), the same way:
    // 1.08-1.84x on every layer (conv1 1.84x, 64->64 16x56x56 1.73x,
    // 512->512 2x7x7 1.18x, 256->512 s2 onto 2x7x7 1.08x).
    // Channels-last 3-D on AVX-512 with generated tiles, forced against
    // AUTO's im2col (Intel Xeon with AMX, ResNet3D-18 batch 1, 1 thread,
    // strict, 3 alternated runs): unit stride onto planes of 14x14 and more
    // 1.08-1.41x in every pass (64->64 16x56x56 1.25-1.37x, 256->256 4x14x14
    // 1.08-1.41x); conv1 (3 source channels) forward 2.17x and
    // backward-filter 1.91x, backward-data 0.27x; strided 0.67-1.05x,
    // 512->512 2x7x7 forward 0.68x (the others even).
    // Since the filters go a range of source channels or a block of dy's
    // channels at a time (item_ranges, runs_source_major), the same way
    // (2026-12-01, 2-3 alternated runs, batch 1 unless said): 512->512 2x7x7
    // forward 1.60x (batch 4 2.06x, 2 threads 1.82x), backward-data 2.12x
    // (2.41x, 1.97x), backward-filter 1.09x but 0.90x at 2 threads; strided
    // from 128+ channels forward 1.08-1.55x and backward-data 1.16-1.37x
    // (256->512 onto 4x7x7, 128->256 onto 4x14x14, batch 1 and 4, 1 and 2
    // threads), from 64 0.91-1.18x; strided backward-filter 0.72-1.01x.
    // Once backward-filter skipped the tiles whose depth taps all read the
    // padding (depth_taps_inside), 512->512 2x7x7 backward-filter 1.23x
    // (batch 4 1.72x, 2 threads 1.03x); strided still 0.82-1.18x.
    // With AVX2 (Zen 3, generated tiles, same suite and way, 2 alternated
    // runs), forward / backward-data / backward-filter: conv1 2.01x / 0.25x
    // / 1.65x; unit stride onto 8x28x28 1.33x / 1.22x / 1.28x, 4x14x14 1.39x
    // / 1.35x / 1.19x, 16x56x56 1.07x / 1.24x / 0.86x, 2x7x7 0.81x / 0.71x /
    // 0.99x; strided 0.67-1.08x, backward-filter 0.67-0.70x.
    static bool channels_last_competitive_3d_avx2(const ConvGeometry &g, conv_op_t op) {
        if (g.cg() <= 4) return op != CONV_OP_BACKWARD_DATA;
        const bool strided = g.stride[0] > 1 || g.stride[1] > 1 || g.stride[2] > 1;
        const int64_t plane = g.out[1] * g.out[2];
        if (strided || plane < 14 * 14) return false;
        return op != CONV_OP_BACKWARD_FILTER || plane <= 28 * 28;
    }
    static bool channels_last_competitive_3d(const ConvGeometry &g, conv_op_t op) {
        if (!jit::enabled()) return false;
        if (cpu_isa() == Isa::avx2) return channels_last_competitive_3d_avx2(g, op);
        if (cpu_isa() != Isa::avx512) return false;
        if (g.cg() <= 4) return op != CONV_OP_BACKWARD_DATA;
        const bool strided = g.stride[0] > 1 || g.stride[1] > 1 || g.stride[2] > 1;
        if (op == CONV_OP_BACKWARD_FILTER) return !strided;
        // And with the next rows prefetched (kSourceAheadBytes), strided
        // backward-data onto 64 channels (64->128 onto 16x56x56) 1.06x,
        // batch 4 1.13x, 2 threads 1.22x (channels-first: 1.09x, 1.15x,
        // 0.83x -- left to im2col).
        return !strided || g.cg() >= (op == CONV_OP_BACKWARD_DATA ? 64 : 128);
    }
    static bool competitive_3d(const ConvGeometry &g, conv_op_t op) {
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST) return channels_last_competitive_3d(g, op);
        if (op == CONV_OP_BACKWARD_FILTER) return cpu_isa() == Isa::avx512;
        if (!jit::enabled()) return false;
        if (op == CONV_OP_FORWARD) return true;
        const bool strided = g.stride[0] > 1 || g.stride[1] > 1 || g.stride[2] > 1;
        // Strided onto 64 channels since the phases of a row group run
        // together (phases_inner): 64->128 onto 16x56x56 1.29x im2col, batch
        // 4 1.33x, 2 threads 1.08x.
        return g.cg() >= (strided ? 64 : 16);
    }
    // With AVX2 (two ymm halves a vector, compiled tiles), against AUTO's
    // choice before (im2col over OpenBLAS's Zen kernels, depthwise_direct's
    // portable loops for one source channel); AMD EPYC (Zen 3), 1 thread,
    // strict, batch 32 on --suite small and 1 on ResNet-50, ms:
    //   small, forward / backward-data / backward-filter: ResNet-20's
    //   16->16 32x32 3.6 / 3.4 / 2.7 vs 7.2 / 7.5 / 8.0, 32->32 16x16 3.3 /
    //   2.4 / 2.1 vs 3.8 / 4.6 / 5.7, 64->64 8x8 3.3 / 2.5 / 2.9 vs 3.5 /
    //   4.0 / 4.8, stride 2 16->32 2.3 / 3.9 / 1.9 vs 4.1 / 4.5 / 3.6;
    //   MNIST's 32->64 26x26 13.6 / 11.5 / 9.0 vs 17.1 / 13.0 / 16.5; from
    //   one source channel (MNIST 1->32, LeNet-5 1->6 5x5) forward 1.7 and
    //   0.34 vs 4.3 and 1.04, backward-filter 0.41 and 0.65 vs 4.0 and 3.3;
    //   the channel-vector tiles' backward-data onto 1-6 channels loses
    //   (3.3-4.6 vs 1.7-2.5): the narrow kernel below takes it.
    //   ResNet-50: 3x3 on 28x28 4.8 / 5.2 / 4.2 vs 6.8 / 8.3 / 7.9, on
    //   14x14 3.3 / 3.8 / 3.1 vs 3.6 / 4.5 / 4.4, conv1 forward 4.9 vs 7.8
    //   and backward-filter 4.8 vs 8.1; but 512->512 7x7 7.6 / 8.1 / 7.5 vs
    //   5.9 / 5.1 / 4.9 (rows of 7 leave 1 x 6 tiles a 1 x 1 remainder),
    //   64->64 56x56 forward 6.9 vs 4.9, strided backward-data onto 256
    //   channels 6.7 vs 4.8. (Single runs on a noisy host; the backward-data
    //   exceptions below were measured again interleaved.)
    static bool competitive_avx2(const ConvGeometry &g, conv_op_t op) {
        if (g.kernel_size() == 1) return false;
        if (!g.is_planar()) return competitive_3d(g, op);
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST) return channels_last_competitive_avx2(g, op);
        // Backward-data onto at most 8 channels: positions in the vector
        // over a padded copy of dy (direct_narrow_avx512.cpp), against AUTO's
        // choice before, 3 interleaved rounds: the digits example's 1->16
        // 0.076 vs 0.43 ms, MNIST's 1->32 1.25 vs 3.86, LeNet-5's 1->6 5x5
        // 0.48 vs 1.83 (depthwise_direct's portable loops), its 6->16 0.73
        // vs 1.09 and ResNet-20's stem 1.00 vs 1.68 (im2col).
        if (op == CONV_OP_BACKWARD_DATA && direct_narrow_applies(g, op, CONV_DTYPE_FLOAT32)) return true;
        if (op == CONV_OP_BACKWARD_FILTER) return filter_competitive(g);
        const bool strided = g.stride[1] > 1 || g.stride[2] > 1;
        // Planes of up to 32x32, and at unit stride any plane whose image of
        // x stays within an L2 (its copy is read once per 16 filters). Since
        // the tiles run on across rows (tiles_wrap) and the filters are
        // packed by transposes, rows narrower than 8 are no loss: against
        // im2col, 1 thread, strict, 5-7 interleaved rounds, 512->512 7x7
        // 1.20x at batch 1 and 8, 128->128 7x7 1.41x, 64->64 4x4 1.9x,
        // ResNet-50's 64->64 56x56 1.10-1.50x (batch 8 1.30x); not VGG's
        // 256->256 56x56 or 128->128 112x112 (0.94-0.95x), nor strided onto
        // 7x7 (512->512 14x14: 0.96-1.01x).
        //
        // With tiles generated for the problem (cpu/jit; 1.04-1.18x the
        // compiled ones on ResNet-50's 3x3 layers, strided forward 1.34x),
        // against im2col again, 1 thread, strict, in one process (7-15
        // alternated calls; batch 1 unless said): forward from x's images of
        // 1.6-6.4 MB (512->512 28x28 1.21-1.23x, batch 8 too; 256->256 56x56
        // 1.11x; 128->128 112x112 1.03-1.2x), not 12.8 MB (64->64 224x224
        // 0.87x); strided forward onto rows under 8 (512->512 14x14 1.11x,
        // batch 8 1.16x; 1024->1024 1.05x; 64->64 16x16 at batch 32 1.55x);
        // backward-data from and onto 256+ channels 1.16-1.24x
        // (256->256 and 512->512 14x14, batch 8 1.16x), from dy's images up
        // to 1.6 MB (512->512 28x28 1.21x; 3.2-6.4 MB even, 0.98-1.00x);
        // strided backward-data from and onto 256+ channels from dy's planes
        // of 14x14 and more (256->256 28x28 1.11x, batch 8 1.16x; in
        // ResNet-50's suite 1.06x), not 7x7 at batch 1 (512->512 14x14
        // 0.94-0.99x, batch 8 1.34x: from batch 2 see below) nor from 128
        // channels (1.07x, batch 8 0.94x).
        const bool generated = jit::enabled();
        auto image_fits = [&](int64_t channels, int64_t positions) {
            const int64_t most = !generated ? 1 << 20 : op == CONV_OP_FORWARD ? 8 << 20 : 2 << 20;
            return channels * positions * (int64_t)sizeof(float) <= most;
        };
        if (op == CONV_OP_FORWARD) {
            if (g.cg() <= 4 || g.kg() < 16) return true;
            if (strided) return (generated || g.out[2] >= 8) && g.out_size() <= 32 * 32;
            return g.out_size() <= 32 * 32 || image_fits(g.c, g.in_size());
        }
        const bool wide = g.c >= 256 && g.k >= 256;  // from and onto 256+ channels
        // And onto small planes (16x16 or less) from batch 4, 32-256
        // channels: forced against im2col, ratios to oneDNN in 2
        // alternated runs (Zen 3, 2026-12-02), batch 8: ResNet-20's 32->64
        // onto 16x16 1.20x, 64->128 onto 8x8 1.73x, 64->64 16x16 1.41x,
        // 128->256 onto 8x8 1.68x, 128->128 16x16 even; batch 4 1.14-1.17x,
        // batch 32 1.29-1.75x; but at batch 1 0.83-0.92x, and from 16
        // channels onto 32x32 0.72-0.94x.
        const bool small_batched = g.n >= 4 && g.cg() >= 32 && std::max(g.c, g.k) <= 256 && g.in_size() <= 16 * 16;
        // And from dy planes of 7x7 to 13x13 from batch 2 (ResNet-50's res5a_2b,
        // 512->512 onto 14x14, and 1024->1024, forced against im2col, ratios
        // to oneDNN in 2 alternated runs, Zen 3, 2026-12-02): batch 2
        // 1.05-1.06x (2 threads 1.02-1.22x), batch 4 1.29-1.31x, batch 8
        // 1.17x; at batch 1 0.95x.
        const bool wide_batched = wide && g.n >= 2 && g.out_size() >= 7 * 7;
        if (generated && strided)
            return (wide && g.cg() >= 16 && (g.out_size() >= 14 * 14 || wide_batched)) || small_batched;
        // Backward-data at unit stride, by the same rule with dy as the
        // source. Against im2col, 1 thread, strict, 3-5 interleaved rounds:
        // MNIST's 32->64 15.7 vs 16.9 ms (batch 32), ResNet-50's 64->64 56x56
        // 1.14x at batch 1, 1.23x at batch 8, 128->128 28x28 1.02x / 1.39x,
        // 512->512 7x7 1.21x (these at batch 8 once several images a thread
        // are taken image by image, packs_per_item). Strided, it won at batch
        // 1 (1.05-1.13x on ResNet-50's) and on ResNet-20's at batch 32
        // (1.10-1.26x) but lost 256->256 28x28 at batch 8 (0.79x): left to
        // im2col.
        if (strided || g.cg() < 16) return false;
        // With libconv's own AVX2 SGEMM under im2col, from and onto 256+
        // channels on planes of 13x13 and more the GEMM is the faster (in one
        // process, 15 alternated calls: ResNet-50's 256->256 14x14 1.05x, at
        // batch 8 1.04x; 512->512 14x14 1.02x; AlexNet's 256->256 and
        // 384->384 13x13 1.11-1.15x); 128->128 28x28 is even, 512->512 7x7
        // stays direct (0.97x, batch 8 0.84x).
        if (!generated && wide && g.out_size() >= 13 * 13) return false;
        return g.in_size() <= 32 * 32 || image_fits(g.k, g.out_size());
    }
    bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        if (dtype != CONV_DTYPE_FLOAT32) return false;
        if (cpu_isa() == Isa::avx2) return competitive_avx2(g, op);
        if (cpu_isa() != Isa::avx512 || g.kernel_size() == 1) return false;
        // Two taps (WaveNet's dilated 64->128 k2 on 4096 samples): im2col's
        // unfold is twice its source and its GEMM long (K = 128). Forced
        // against these tiles, 1 thread, 5 alternated runs: channels-first
        // forward 1.01-1.32x, backward-data 1.04-1.33x, backward-filter
        // 0.90-1.01x (stays here, but see pw_avx512_taps_win); channels-last
        // 0.99-1.11x, 1.16-1.39x, 1.20-1.30x.
        if (g.kernel_size() <= 2 && (op != CONV_OP_BACKWARD_FILTER || g.layout == CONV_LAYOUT_CHANNELS_LAST))
            return false;
        // Longer rows of 1-D layers: im2col unfolds their taps into the
        // pointwise GEMM's panels (measured there).
        if (pw_avx512_taps_win(g, op)) return false;
        // Backward-filter from at most 4 channels as dot products where
        // direct_dot_filter.cpp applies, against AUTO's choice before, Zen
        // 4, 1 thread, strict, 5 interleaved rounds, batch 1 / 8: ResNet-20's
        // 3->16 stem 1.13x / 1.13x (the filter-vector tiles), VGG-16's 3->64
        // 224x224 1.26x / 1.17x (the same), LeNet-5's 1->6 5x5 1.9x / 1.5x
        // (implicit_gemm), MobileNet's 3->32 s2 at batch 8 1.11x (batch 1
        // 1.07x, direct_dot_filter_applies). One channel's 3x3 on planes
        // under 256 positions (the digits' 1->16), or strided, stays with
        // depthwise_direct's flat sums (its competitive()).
        if (direct_dot_filter_applies(g, op, dtype)) return true;
        if (!g.is_planar()) return competitive_3d(g, op);
        const bool strided = g.stride[1] > 1 || g.stride[2] > 1;
        // Backward-data onto at most 8 channels at stride 1, positions in the
        // vector (direct_narrow_avx512.cpp), against AUTO's choice before it,
        // batch 32, 1 thread, strict, 6 interleaved rounds: LeNet-5's 6->16
        // 5x5 0.63 vs implicit_gemm 1.10 ms, 1->6 5x5 0.86 vs im2col 0.88,
        // ResNet-20's 3->16 stem 0.97 vs im2col 1.61, 8->32 28x28 3.3 vs
        // implicit_gemm 7.2, 3->64 112x112 60 vs 161.
        // On an Intel Xeon with AMX (forced against im2col, batch 32, 1
        // thread, 3 alternated runs) it keeps 3-6 channels on planes up to
        // 32x32 (ResNet-20's stem 1.37x, LeNet-5's 6->16 1.9x) but not one
        // channel (LeNet-5's 1->6 5x5 0.82x; the digits' 1->16 8x8 even) nor
        // VGG-16's 3-channel 224x224 (0.76x at batch 1).
        if (op == CONV_OP_BACKWARD_DATA && direct_narrow_applies(g, op, dtype))
            return g.c >= 2 && g.in_size() <= 64 * 64;
        // Fewer than 16 destination channels a group leave lanes idle, yet an
        // ungrouped channels-first forward onto few channels still beats
        // im2col, whose unfold is paid over few outputs. Forced, 1 thread,
        // interleaved over 5 rounds (generated / compiled tiles, x im2col):
        // 3->8 3x3 32x32 b32 2.33x / 1.39x; 8->8 16x16 4.0x / 2.3x; LeNet-5's
        // 1->6 5x5 b32 2.2x / 1.3x, b1 1.7x; 12->8 7x7 b8 4.2x.
        const bool few_channel_forward =
            op == CONV_OP_FORWARD && g.groups == 1 &&
            (g.layout == CONV_LAYOUT_CHANNELS_FIRST || (jit::enabled() && g.cg() <= 4));
        if ((op == CONV_OP_BACKWARD_DATA ? g.cg() : g.kg()) < 16 && !few_channel_forward)
            return false;
        if (op == CONV_OP_BACKWARD_FILTER) return filter_competitive(g);
        // Small CNNs (convbench --suite small, batch 32, 1 thread): with up
        // to 32 destination channels im2col's unfold is paid over few outputs
        // and implicit_gemm's sums are short. CIFAR ResNet-20's 16->16 3x3 on
        // 32x32: 46-51 GFLOP/s vs im2col 25 and implicit_gemm 43-44; 32->32
        // on 16x16 forward 64-74 vs implicit_gemm 55, backward-data 2.1-2.2
        // vs 3.0 ms (interleaved, 3 rounds); MNIST's 32->64 on 26x26
        // backward-data 11.2 vs im2col 11.3-12 and implicit_gemm 13.9.
        // Forward from few source channels too: 3->16 on 32x32 0.75 vs
        // im2col 1.12 ms; backward-data onto 6 channels (LeNet-5) stays with
        // implicit_gemm (0.86 vs 1.06-1.11 ms).
        // With tiles generated for the problem (cpu/jit, 1.1-1.2x the compiled
        // ones), every channels-first layer: 3x3 stride 1 against
        // implicit_gemm, 1 thread strict, interleaved (15 rounds at batch 1,
        // 7 at batch 8 and on VGG's planes): 64->64 56x56 forward 1.29x,
        // backward-data 1.26x; 128->128 28x28 1.22x / 1.30x; batch 8 1.00-1.34x;
        // 2 threads 1.03-1.41x; VGG-16's 64->64 224x224 1.58x / 1.44x,
        // 128->128 112x112 1.22x, 256->256 56x56 1.37x / 1.32x. (The
        // compiled tiles were even with implicit_gemm there; the rules
        // below are theirs.)
        if (g.layout == CONV_LAYOUT_CHANNELS_FIRST && jit::enabled()) return true;
        const int64_t dst = op == CONV_OP_BACKWARD_DATA ? g.cg() : g.kg();
        const int64_t src = op == CONV_OP_BACKWARD_DATA ? g.kg() : g.cg();
        if (g.layout == CONV_LAYOUT_CHANNELS_FIRST && dst <= 32 &&
            (op == CONV_OP_FORWARD || src >= 16))
            return true;
        // Channels-last, since its source copy and store are vectorized:
        // 128->128 28x28 at batch 1 1.28x (forward) and 1.31x (backward-data)
        // im2col's time, medians of 5 interleaved rounds; 256->256 14x14
        // 0.94x, and 128->128 28x28 at stride 2 below that.
        // With generated tiles, forced against AUTO's choice (Intel Xeon with
        // AMX, 1 thread, 3 alternated runs; --suite small at batch 32,
        // ResNet-50 at 1): forward from 1-4 source channels 3.4-6.8x (MNIST's
        // 1->32, LeNet-5's 1->6, the digits' 1->16), at unit stride from up
        // to 64 1.32-1.80x (ResNet-20's 32->32 16x16 1.63x, 64->64 8x8 1.32x,
        // MNIST's 32->64 1.46x), strided 0.91-0.94x, from 256 0.47-0.81x;
        // backward-data between up to 128 channels 1.06-1.96x at either
        // stride (the digits' 16->32 8x8 1.96x, ResNet-20's 32->32 1.62x,
        // its strided 16->32 1.24x and 32->64 1.14x, ResNet-50's strided
        // 128->128 1.06x), from 256 0.69-0.92x at batch 1 -- where the
        // filters packed per call are a large share: from 256 channels
        // (ResNet-50's 256->256 14x14, 512->512 7x7 and its stride-2 onto
        // 7x7) backward-data 0.96-1.06x at batch 2, 1.11-1.28x at 4,
        // 1.13-1.58x at 8; forward at unit stride 0.75-0.95x, 1.00-1.05x,
        // 1.09-1.26x (strided 0.72, 0.92, 1.09x; 256->256 onto 14x14 0.90x
        // at 8).
        // Since (2026-12-01), the unit-stride forward onto 14x14 from 128-512
        // channels, forced against im2col (3 alternated runs): 1 thread
        // 1.05-1.14x (256->256, 512->512, 256->1024, 128->128), 2 threads
        // 1.04-1.17x, batch 2 1.16x; onto 7x7 even (256->256, 512->512).
        // Later the same day, against im2col again (1 thread unless said, 2-4
        // alternated runs): the unit-stride forward onto 7x7 from 256-1024
        // channels 1.07-1.12x (512->512 2 threads 1.08x), batch 2 1.22-1.29x;
        // backward-data at unit stride from 256-1024 channels onto 7x7 and
        // 14x14 1.09-1.28x (batch 2 1.18-1.45x, 2 threads 1.06x), strided
        // 256->256 onto 28x28 1.07-1.09x (batch 2 1.13x). So every ungrouped
        // unit-stride forward and backward-data, and the strided
        // backward-data between 256+ channels, take the generated tiles.
        // Once a strided channels-last source is copied by gathers
        // (pad_strided_last_avx512), the strided forward, forced against
        // im2col (1 thread, 2 alternated runs): onto 28x28 from 64 and 128
        // channels 1.12-1.20x, onto 14x14 from 256 1.05x, ResNet-20's 16->32
        // onto 16x16 1.27x (batch 32 1.35x, its 32->64 onto 8x8 1.10x);
        // batch 8 1.07-1.33x (512->512 onto 7x7 1.33x); 2 threads at batch 1
        // 0.95-1.02x; onto fewer than 196 positions 0.83-0.99x. So from 196
        // positions (all images').
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST) {
            const bool generated = jit::enabled();
            const bool ungrouped_generated = generated && g.groups == 1;
            if (op == CONV_OP_FORWARD)
                return g.out_size() >= 56 * 56 ||
                       (!strided && (ungrouped_generated || g.out_size() >= (generated ? 14 * 14 : 28 * 28))) ||
                       (ungrouped_generated && g.n * g.out_size() >= 14 * 14) ||
                       (generated && (g.cg() <= 4 || (!strided && (g.cg() <= 64 || g.n >= 8))));
            // Since filters of 4 MB and more are packed a block of dy's
            // channels at a time (runs_source_major), backward-data with
            // filters of 4-16 MB too: forced against im2col, 1 thread, batch
            // 1, 3 alternated runs: 512->512 7x7 1.33x, 14x14 1.35x, strided
            // onto 14x14 1.42x and onto 28x28 1.20x; 1024->1024 7x7 even,
            // strided onto 14x14 0.96x (so not from 16 MB).
            const double filter = (double)g.c * (double)g.kg() * (double)g.kernel_size() * sizeof(float);
            const bool big_filter = filter >= double(kSourceMajorFilter) && filter < double(4 * kSourceMajorFilter);
            const bool wide = g.c >= 256 && g.k >= 256;
            return (!strided && g.in_size() >= 28 * 28) ||
                   (ungrouped_generated && (!strided || wide)) ||
                   (generated && ((g.c <= 128 && g.k <= 128) || g.n >= 4 || (big_filter && g.groups == 1)));
        }
        if (op == CONV_OP_BACKWARD_DATA && strided) return true;
        if (op == CONV_OP_BACKWARD_DATA) return g.in_size() <= 14 * 14;
        return strided || g.out_size() <= 14 * 14;
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        if (direct_dot_filter_applies(g, op, dtype)) return direct_dot_filter_workspace(g, threads);
        if (op == CONV_OP_BACKWARD_FILTER) return direct_filter_workspace(g, dtype, threads);
        if (direct_narrow_applies(g, op, dtype)) return direct_narrow_workspace(g, op, threads);
        if (direct_few_sources_applies(g, op, dtype)) return direct_few_sources_workspace(g, threads);
        const size_t es = dtype_size(dtype);
        const Shape s = make_shape(g, op, es, true, threads);
        return (size_t)checked_add(checked_add((int64_t)s.packed_at, weights_bytes(g, op, es, threads), "workspace"),
                                   source_copies_bytes(s, threads), "workspace");
    }
    std::shared_ptr<const RunPlan> plan_run(const Problem &p) const override {
        if (direct_dot_filter_applies(p.g, p.op, p.dtype)) return nullptr;
        if (p.op == CONV_OP_BACKWARD_FILTER) return direct_filter_plan(p.g, p.dtype, p.threads);
        if (p.dtype != CONV_DTYPE_FLOAT32 || runs_own_kernel(p.g, p.op, p.dtype)) return nullptr;
        return direct_plan(p.g, p.op, p.math == CONV_MATH_STRICT, p.threads);
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (direct_dot_filter_applies(*args.g, args.op, args.dtype))
            direct_dot_filter_run(args, ws, pool, threads);
        else if (args.op == CONV_OP_BACKWARD_FILTER)
            direct_filter_run(args, ws, pool, threads);
        else if (direct_narrow_applies(*args.g, args.op, args.dtype))
            direct_narrow_run(args, ws, pool, threads);
        else if (direct_few_sources_applies(*args.g, args.op, args.dtype))
            direct_few_sources_run(args, ws, pool, threads);
        else if (args.dtype == CONV_DTYPE_FLOAT32)
            run_typed<float>(args, ws, pool, threads);
        else
            run_typed<double>(args, ws, pool, threads);
    }
    // Passes that direct_narrow_avx512.cpp or direct_few_sources.cpp run
    // instead of the channel-vector tiles (their weights packed per call).
    static bool runs_own_kernel(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
        return direct_narrow_applies(g, op, dtype) || direct_few_sources_applies(g, op, dtype);
    }
    // The packed weights, once per plan instead of once per call.
    size_t prepared_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        if (op == CONV_OP_BACKWARD_FILTER || runs_own_kernel(g, op, dtype)) return 0;
        return (size_t)make_shape(g, op, dtype_size(dtype), false, 1).packed;  // (the same at any tile)
    }
    void prepare_weights(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype, const void *w,
                         void *out, ThreadPool &pool, int threads) const override {
        if (op == CONV_OP_BACKWARD_FILTER || runs_own_kernel(g, op, dtype)) return;
        const Shape s = make_shape(g, op, dtype_size(dtype), false, threads);
        if (dtype == CONV_DTYPE_FLOAT32)
            pack_weights(s, static_cast<const float *>(w), static_cast<float *>(out), pool, threads);
        else
            pack_weights(s, static_cast<const double *>(w), static_cast<double *>(out), pool, threads);
    }
};

}  // namespace

DirectSource direct_source(const ConvGeometry &g) {
    const Shape s = make_shape(g, CONV_OP_FORWARD, sizeof(float), false, 1);  // (the planes: any tile)
    return {s.plane, s.rstep, s.wq, s.sw, s.slice, s.sz};
}

void direct_pad_source(const ConvGeometry &g, const float *x, float *out, ThreadPool &pool, int threads,
                       const RunPlan *source) {
    const DirectPlan *plan = dynamic_cast<const DirectPlan *>(source);
    Shape s = plan ? plan->s : make_shape(g, CONV_OP_FORWARD, sizeof(float), false, 1);
    s.n = g.n;  // (the plan's images may be more)
    pad_source(s, x, out, pool, threads);
}

std::shared_ptr<const RunPlan> direct_source_plan(const ConvGeometry &g) {
    return direct_plan(g, CONV_OP_FORWARD, false, 1);  // (the source's planes)
}

void direct_pad_source(const ConvGeometry &g, const double *x, double *out, ThreadPool &pool, int threads,
                       const RunPlan *) {  // (plans: float32's)
    pad_source(make_shape(g, CONV_OP_FORWARD, sizeof(double), false, 1), x, out, pool, threads);
}

const Algorithm &direct_avx512_algorithm() {
    static const DirectAvx512 algo;
    return algo;
}

}  // namespace conv::cpu
