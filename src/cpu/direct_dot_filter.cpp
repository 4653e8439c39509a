// direct_avx512's channels-first backward-filter from at most 4 source
// channels (a network's first layer: ResNet-20's and VGG-16's 3-channel
// 3x3, LeNet-5's 1->6 5x5, MobileNet's 3->32 3x3 s2 over a batch) as dot
// products along the positions, on AVX-512 CPUs.
//
// dW[k][j] for column j = (c, r, s) is the sum over images and output
// positions p of dy[k][p] * x[c][p's tap (r, s)]. dy's rows run along p in
// memory as they are; x is copied, a band of output rows at a time, into
// rows that each tap reads as they lie (tap_rows.h: a row per tap column
// at unit column stride, x's two column phases at stride 2). A tile of 3
// filters x 9 columns keeps 27 vectors of partial sums, each step (16
// positions) loading 3 vectors of dy, held, and 9 of the copy, one at a
// time, for 27 FMAs: no broadcast, no transpose. At unit strides a band is
// one run of positions (8-wide planes fill vectors); else a run a row.
// The filter-vector tiles (direct_avx512_filter.cpp) instead lay dy out
// as vectors of 16 filters (16 x 16 transposes) and read a padded copy of
// x: with 27 columns a filter their transposes and copy were 41% of
// MobileNet's conv1 backward-filter at batch 8 (Zen 4), and their filter
// vectors are half empty onto 8 filters.
//
// The partial sums stay in vectors in the workspace between bands and are
// added across their lanes once at the end (lane_sums16: a column's 16
// lanes to one sum). Threads split the filters or the columns; onto few
// filters over 4+ images, two parts of the images summed apart and added
// at the end, the parts set by the geometry alone: each output is the same
// sum in the same order at any thread count.
#include <algorithm>
#include <array>
#include <utility>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"
#include "cpu/tap_rows.h"
#include "cpu/trickle.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMaxSources = 4;
// A tile: 27 sums, 3 dy vectors and one of the copy in the 32 registers.
// Against 6 filters x 4 columns (4 copy vectors held, dy's streamed: 10
// loads for 24 FMAs, but 6 of dy's lines from L2 where this reads 3 for
// 27), 1 thread, 5 alternations: batch 32, MNIST's 1->32 28x28 (9
// columns) 1.18x, the digits' 1->16 8x8 1.05x, LeNet-5's 1->6 5x5 1.03x,
// ResNet-20's stem 1.02x; batch 1 and 8 (VGG-16's, MobileNet's conv1)
// even; 2 threads at batch 32 1.05-1.19x.
constexpr int kTileFilters = 3;   // filters a tile (dy vectors a step)
constexpr int kTileColumns = 9;   // columns of dW a tile (copy vectors a step)
// Positions a band, about: a tile loads and stores its 27 partial sums
// once a band (54 against 3456 FMAs), and the copy's extra rows (the taps'
// reach) are a few of a band's. 1.05-1.28x bands of 1024 on conv1 layers
// at batch 8 (256-8192 measured; docs/performance.md).
constexpr int64_t kBandPositions = 2048;
// dW's outputs at most (their partial sums, 64 B each, 256 KiB): the sums
// pass through L2 once a band. ResNet-50's conv1 (3->64 7x7 s2, 9408
// sums) was even with the filter-vector tiles on one thread, 0.89-0.96x
// on two.
constexpr int64_t kMostSums = 4096;
// Lines of the next band's x asked for a segment (a Trickle): with 4,
// a band's copy no longer waits on memory (15% of MobileNet's conv1
// backward-filter at batch 8 in perf). 1 thread, batch 8, 5 alternations:
// 1.10-1.14x there (0.77-0.79 -> 0.81-0.85 of oneDNN), VGG-16's conv1 even
// (1.06x at batch 1); 2 lines a segment 1.02x, 8 1.07x; 2 threads even.
constexpr int kXLinesASegment = 4;

// The pass in the kernel's terms (channels-first, 2-D, column stride 1 or
// 2; 1-D has one row).
struct DotShape {
    int64_t n, k, oh, ow, sh, sw;
    TapRows t;            // x's copy a band
    int64_t cols;         // dW's row: c * kh * kw columns (c, r, s)
    int64_t band_rows;    // output rows a band of one image, at most
    int64_t band_images;  // whole images a band (1 where a band is part of one)
    int64_t row_bands;    // bands an image's rows make (1 where a band holds whole images)
    int64_t bands;        // in all: groups of band_images images x row_bands
    // The images in 1 or 2 parts of consecutive bands, each summed from
    // zero into its own vectors, the second's then added to the first's
    // (onto few filters, so that two threads share the work without each
    // copying x whole; from the geometry alone: the same bits on 1 thread).
    int64_t image_parts;
    int64_t parts;        // threads' shares: of the images, or the filters, or the columns
    bool by_columns;
    int64_t segments;     // runs of positions a band, at most

    int64_t copy_floats() const { return round_up(band_images * t.image_floats(), (int64_t)16); }
    int64_t part_filters() const { return image_parts > 1 || by_columns ? k : ceil_div(k, parts); }
    int64_t sums_floats() const { return part_filters() * cols * 16; }
    int64_t segment_floats() const { return round_up(segments * 3 * 2, (int64_t)16); }  // int64 triples
    // Each column's first row in the copy (int64), and the copy's load
    // masks (16 bits).
    int64_t table_floats() const { return round_up(cols * 2 + ceil_div(t.mask_count(), (int64_t)2), (int64_t)16); }
    int64_t slot_floats() const { return copy_floats() + sums_floats() + segment_floats() + table_floats(); }
};

DotShape make_dot_shape(const ConvGeometry &g, int threads) {
    DotShape s{};
    s.n = g.n, s.k = g.k;
    s.oh = g.out[1], s.ow = g.out[2], s.sh = g.stride[1], s.sw = g.stride[2];
    s.cols = g.c * g.kernel[1] * g.kernel[2];
    const int64_t plane = s.oh * s.ow;
    s.band_rows = std::clamp<int64_t>(kBandPositions / s.ow, 1, s.oh);
    s.band_images = s.band_rows < s.oh ? 1 : std::clamp<int64_t>(kBandPositions / plane, 1, s.n);
    // Two parts of the images onto fewer than 24 filters, from 4 images
    // (a band then holds at most half of them). Against threads sharing
    // the filters or columns, 7 alternations: 2 threads, batch 8,
    // ResNet-20's stem 1.20x, LeNet-5's 1->6 5x5 1.20x, 3->16 64x64 1.20x;
    // 1 thread 0.98-1.00x (batch 8 and 32); at batch 2 1.04-1.17x on 2
    // threads but 0.93-0.99x on 1 (a band of two images halved), at batch 1
    // (an image's rows halved) 0.90x on both.
    s.image_parts = s.k < 24 && s.n >= 4 ? 2 : 1;
    if (s.image_parts == 2) s.band_images = std::min(s.band_images, ceil_div(s.n, (int64_t)2));
    s.row_bands = ceil_div(s.oh, s.band_rows);
    s.bands = ceil_div(s.n, s.band_images) * s.row_bands;
    s.t = make_tap_rows(g, s.band_rows);
    // Threads share the image parts, or the filters where each gets 12,
    // else the columns: ResNet-20's 16 filters at 2 threads, batch 1, ran
    // 2.0x as fast by columns (13 and 14 a thread onto all 16 filters) as
    // by filters (27 columns onto 8); 32 filters 0.78-0.88x by columns.
    s.by_columns = s.k < 12 * threads;
    s.parts = s.image_parts > 1 ? s.image_parts
                                   : std::clamp<int64_t>(threads, 1, s.by_columns ? s.cols : s.k);
    s.segments = s.band_images * (s.sh == 1 && s.sw == 1 ? 1 : s.band_rows);
    return s;
}

// A run of positions in a band: dy's (from the tile's filter's row, images
// included), the copy's (from a column's first row), and how many.
struct Segment {
    int64_t dy, x, len;
};

#if CONV_HAVE_AVX512_KERNELS

// What a tile reads and where its sums go.
struct TileArgs {
    const float *dy;                      // the tile's first filter's dy, image 0, position 0
    int64_t filter_pitch;                 // floats between filters' dy rows
    std::array<const float *, kTileColumns> col;  // each column's first copy row
    const Segment *segs;
    int64_t nsegs;
    float *sums;       // the first filter's first column's 16 partial sums
    int64_t sums_row;  // floats between filters' sums
    bool first;        // the first band: start from zero
    int64_t ahead;     // > 0: also ask for dy's lines this many floats on (the next band's)
    Trickle *x_ahead;  // the next band's x, a step a segment
};

// acc[t * MR + i]: column t's and filter i's partial sums. The step is
// dot_outer_step with the copy's T rows as its d and dy's MR as its x:
// dy's vectors held, the copy's streamed.
template <int MR, int T>
CONV_TARGET_AVX512 void dot_tile(const TileArgs &a) {
    auto sums = [&](int e) { return a.sums + (e % MR) * a.sums_row + (e / MR) * 16; };  // acc[e]'s
    __m512 acc[T * MR];
#pragma GCC unroll 32
    for (int e = 0; e < T * MR; ++e) acc[e] = a.first ? _mm512_setzero_ps() : _mm512_load_ps(sums(e));
    for (int64_t e = 0; e < a.nsegs; ++e) {
        const Segment &seg = a.segs[e];
        a.x_ahead->step();
        const float *d[MR];
        const float *x[T];
#pragma GCC unroll 3
        for (int i = 0; i < MR; ++i) d[i] = a.dy + seg.dy + i * a.filter_pitch;
#pragma GCC unroll 9
        for (int t = 0; t < T; ++t) x[t] = a.col[t] + seg.x;
        int64_t p = 0;
        if (a.ahead > 0)
            for (; p + 16 <= seg.len; p += 16) {
#pragma GCC unroll 3
                for (int i = 0; i < MR; ++i) _mm_prefetch((const char *)(d[i] + p + a.ahead), _MM_HINT_T0);
                dot_outer_step<T, MR>(x, d, p, 0xFFFF, acc);
            }
        for (; p + 16 <= seg.len; p += 16) dot_outer_step<T, MR>(x, d, p, 0xFFFF, acc);
        if (p < seg.len) dot_outer_step<T, MR>(x, d, p, first_lanes(seg.len - p), acc);
    }
    // Unrolled: an indexed acc[] would live on the stack.
#pragma GCC unroll 32
    for (int e = 0; e < T * MR; ++e) _mm512_store_ps(sums(e), acc[e]);
}

using TileFn = void (*)(const TileArgs &);
template <int T, int... Rows>
constexpr std::array<TileFn, kTileFilters> tile_row(std::integer_sequence<int, Rows...>) {
    return {{dot_tile<Rows + 1, T>...}};
}
// kTiles[T - 1][MR - 1]: the full tile and the edges' smaller ones.
template <int... Cols>
constexpr std::array<std::array<TileFn, kTileFilters>, kTileColumns> tile_table(std::integer_sequence<int, Cols...>) {
    return {{tile_row<Cols + 1>(std::make_integer_sequence<int, kTileFilters>{})...}};
}
constexpr auto kTiles = tile_table(std::make_integer_sequence<int, kTileColumns>{});

// A thread's share: filters [k0, k1) x columns [j0, j1) of dW over bands
// [b0, b1).
struct Part {
    int64_t k0, k1, j0, j1, b0, b1;
};

Part part_of(const DotShape &s, int64_t t) {
    if (s.image_parts > 1) return {0, s.k, 0, s.cols, s.bands * t / s.parts, s.bands * (t + 1) / s.parts};
    if (!s.by_columns) return {s.k * t / s.parts, s.k * (t + 1) / s.parts, 0, s.cols, 0, s.bands};
    return {0, s.k, s.cols * t / s.parts, s.cols * (t + 1) / s.parts, 0, s.bands};
}

// One share over its bands: sums in the slot, then dW (or, for an image
// part, left there for add_image_parts).
CONV_TARGET_AVX512 void run_part(const DotShape &s, const float *x, const float *dy, float *dw, const Part &part,
                                 float *slot) {
    const int64_t k0 = part.k0, k1 = part.k1;
    float *copy = slot;
    float *sums = copy + s.copy_floats();
    Segment *segs = reinterpret_cast<Segment *>(sums + s.sums_floats());
    int64_t *col_at = reinterpret_cast<int64_t *>(sums + s.sums_floats() + s.segment_floats());
    uint16_t *masks = reinterpret_cast<uint16_t *>(col_at + s.cols);
    for (int64_t j = 0; j < s.cols; ++j) col_at[j] = s.t.column_at(j);
    fill_tap_masks(s.t, masks);
    const int64_t plane = s.oh * s.ow;
    // Filters in tiles of at most kTileFilters, as even as they come;
    // columns likewise (a share of 14 as 7 7, of 25 as 9 8 8).
    const EvenPieces groups(k1 - k0, kTileFilters), col_tiles(part.j1 - part.j0, kTileColumns);
    bool first = true;
    for (int64_t b = part.b0; b < part.b1; ++b) {
        const int64_t n0 = b / s.row_bands * s.band_images, images = std::min(s.band_images, s.n - n0);
        const int64_t r0 = b % s.row_bands * s.band_rows, r1 = std::min(s.oh, r0 + s.band_rows);
        int64_t nsegs = 0;
        for (int64_t i = 0; i < images; ++i) {
            copy_tap_rows(s.t, x, n0 + i, r0, r1, masks, copy + i * s.t.image_floats());
            const int64_t dy_at = (n0 + i) * s.k * plane + r0 * s.ow, x_at = i * s.t.image_floats();
            if (s.sh == 1 && s.sw == 1)
                segs[nsegs++] = {dy_at, x_at, (r1 - r0) * s.ow};
            else
                for (int64_t r = 0; r < r1 - r0; ++r)
                    segs[nsegs++] = {dy_at + r * s.ow, x_at + r * s.sh * s.t.xpitch, s.ow};
        }
        // A band of one image: its successor's x rows, a run a channel,
        // kXLinesASegment lines a segment (its copy otherwise waited on
        // memory at the band's start), more where the band's tiles make
        // fewer steps than that takes (VGG-16's conv1_1: 66 for 117), so
        // that all of it is asked for by the band's end (1.00-1.06x).
        Trickle next;
        if (s.band_images == 1 && b + 1 < part.b1) {
            const int64_t nn = (b + 1) / s.row_bands, q0 = (b + 1) % s.row_bands * s.band_rows;
            const int64_t q1 = std::min(s.oh, q0 + s.band_rows);
            const int64_t lo = std::max<int64_t>(0, q0 * s.sh - s.t.pt);
            const int64_t hi = std::min(s.t.h, (q1 - 1) * s.sh - s.t.pt + (s.t.kh - 1) * s.t.dh + 1);
            const int64_t bytes = (hi - lo) * s.t.w * (int64_t)sizeof(float), x_plane = s.t.h * s.t.w;
            const int64_t lines = s.t.c * (ceil_div(bytes, (int64_t)64) + 1);
            const int64_t calls = nsegs * col_tiles.count * groups.count;  // step()s the band's tiles make
            next = Trickle(x + nn * s.t.c * x_plane + lo * s.t.w, bytes, s.t.c, x_plane * (int64_t)sizeof(float),
                           std::min(calls, ceil_div(lines, (int64_t)kXLinesASegment)))
                       .into_l1();
        }
        // Columns outside, filters inside: a tile's 9 copy rows stay in
        // L1 across the filter groups, dy's rows come from L2.
        for (int64_t ti = 0; ti < col_tiles.count; ++ti) {
            const int64_t j0 = part.j0 + col_tiles.start(ti);
            const int cols = (int)col_tiles.size(ti);
            // The first column tile asks for the next band's dy as it goes.
            TileArgs a{nullptr, plane, {}, segs, nsegs, nullptr, s.cols * 16, first,
                       j0 == part.j0 && images == 1 && r1 < s.oh ? (r1 - r0) * s.ow : 0, &next};
            for (int t = 0; t < cols; ++t) a.col[t] = copy + col_at[j0 + t];
            for (int64_t gi = 0; gi < groups.count; ++gi) {
                const int64_t kg = k0 + groups.start(gi);
                a.dy = dy + kg * plane;
                a.sums = sums + ((kg - k0) * s.cols + j0) * 16;
                kTiles[cols - 1][groups.size(gi) - 1](a);
            }
        }
        first = false;
    }
    if (s.image_parts > 1) return;  // (added up by add_image_parts)
    for (int64_t kk = k0; kk < k1; ++kk)
        store_lane_sums(sums + ((kk - k0) * s.cols + part.j0) * 16, part.j1 - part.j0, dw + kk * s.cols + part.j0);
}

// The second part's sums added to the first's, then dW from them.
CONV_TARGET_AVX512 void add_image_parts(const DotShape &s, float *base, float *dw) {
    float *first = base + s.copy_floats(), *second = base + s.slot_floats() + s.copy_floats();
    for (int64_t e = 0; e < s.k * s.cols * 16; e += 16)
        _mm512_store_ps(first + e, _mm512_add_ps(_mm512_load_ps(first + e), _mm512_load_ps(second + e)));
    store_lane_sums(first, s.k * s.cols, dw);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Output rows of at most kBandPositions: a band holds whole rows, so its
// copy stays within c x taps x ~2048 floats (a 1-D row of a million
// samples would be copied whole). Column stride 2, against the
// filter-vector tiles: MobileNet's conv1, 1 thread, 5 alternations, batch
// 8 1.11-1.13x; at batch 1 (7 alternations, since the 3 x 9 tiles) 1.07x
// on 1 thread, even on 2; 3->16 64x64 s2 1.04x on 1 thread, 1.31x on 2.
bool direct_dot_filter_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512) return false;
    return op == CONV_OP_BACKWARD_FILTER && dtype == CONV_DTYPE_FLOAT32 &&
           g.layout == CONV_LAYOUT_CHANNELS_FIRST && g.groups == 1 && g.is_planar() && g.c <= kMaxSources &&
           g.stride[2] <= 2 && g.kernel_size() > 1 && g.n > 0 && g.c > 0 &&
           g.k > 0 && g.out_size() > 0 && g.k * g.c * g.kernel_size() <= kMostSums && g.out[2] <= kBandPositions;
}

size_t direct_dot_filter_workspace(const ConvGeometry &g, int threads) {
    const DotShape s = make_dot_shape(g, threads);
    return (size_t)checked_mul(checked_mul(s.slot_floats(), s.parts, "workspace"), (int64_t)sizeof(float),
                               "workspace");
}

void direct_dot_filter_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *args.g;
    const DotShape s = make_dot_shape(g, threads);
    const float *x = static_cast<const float *>(args.x), *dy = static_cast<const float *>(args.y);
    float *dw = static_cast<float *>(args.w);
    float *base = static_cast<float *>(ws);
    pool.parallel_for(
        s.parts,
        [&](int64_t t, int) {
            const Part part = part_of(s, t);
            if (part.k0 < part.k1 && part.j0 < part.j1 && part.b0 < part.b1)
                run_part(s, x, dy, dw, part, base + t * s.slot_floats());
        },
        threads);
    if (s.image_parts > 1) add_image_parts(s, base, dw);
    if (args.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool, threads);
#else
    (void)args, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
