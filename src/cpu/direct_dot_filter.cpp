// direct_avx512's channels-first backward-filter from at most 4 source
// channels (a network's first layer: ResNet-20's and VGG-16's 3-channel
// 3x3, LeNet-5's 1->6 5x5, MobileNet's 3->32 3x3 s2 over a batch) as dot
// products along the positions, on AVX-512 CPUs.
//
// dW[k][j] for column j = (c, r, s) is the sum over images and output
// positions p of dy[k][p] * x[c][p's tap (r, s)]. dy's rows run along p in
// memory as they are; x is copied, a band of output rows at a time, into
// rows that tap (c, r, s) of output row oh reads as they lie: at unit
// column stride one row per (channel, tap column s) and padded source row,
// holding what tap column s reads at each output column (zeros where it
// reads padding); at column stride 2 x's two column phases (even and odd
// columns) a row each, tap column s reading phase s % 2 from column s / 2
// on (with dilation, s * d). A tile of 6 filters x 4 columns keeps 24
// vectors of partial sums, each step (16 positions) loading 6 vectors of dy
// and 4 of the copy for 24 FMAs: no broadcast, no transpose. At unit
// strides consecutive output rows are consecutive in both, so a band is one
// run of positions (8-wide planes fill vectors); else a run a row.
// The filter-vector tiles (direct_avx512_filter.cpp) instead lay dy out
// as vectors of 16 filters (16 x 16 transposes) and read a padded copy of
// x: with 27 columns a filter their transposes and copy were 41% of
// MobileNet's conv1 backward-filter at batch 8 (Zen 4), and their filter
// vectors are half empty onto 8 filters.
//
// The partial sums stay in vectors in the workspace between bands and are
// added across their lanes once at the end (lane_sums16: a column's 16
// lanes to one sum). Threads split the filters (or, onto few, the
// columns), never the positions: each output is the same sum in the same
// order at any thread count.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMaxSources = 4;
constexpr int kTileFilters = 6;   // filters a tile (dy vectors a step)
constexpr int kTileColumns = 4;   // columns of dW a tile (copy vectors a step)
// Positions a band, about: a tile's 6 rows of dy and 4 of the copy (40
// KiB) pass through L1 once per band, its 24 partial sums are loaded and
// stored once per band (3% of its 1536 FMAs).
constexpr int64_t kBandPositions = 2048;
// dW's outputs at most (their partial sums, 64 B each, 256 KiB): the sums
// pass through L2 once a band. ResNet-50's conv1 (3->64 7x7 s2, 9408
// sums) was even with the filter-vector tiles on one thread, 0.89-0.96x
// on two.
constexpr int64_t kMostSums = 4096;

// The pass in the kernel's terms (channels-first, 2-D, column stride 1 or
// 2; 1-D has one row).
struct DotShape {
    int64_t n, c, k, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t cols;         // dW's row: c * kh * kw columns (c, r, s)
    int64_t band_rows;    // output rows a band of one image, at most
    int64_t band_images;  // whole images a band (1 where a band is part of one)
    int64_t xrows;        // padded source rows a band's image reads, at most
    int64_t parts;        // threads' shares: of the filters, or of the column tiles
    bool by_columns;
    int64_t segments;     // runs of positions a band, at most
    int64_t vecs;         // vectors an output row: ceil(ow / 16)
    // The copy's rows a channel and source row: a tap column each (column
    // stride 1), or x's two column phases (stride 2); floats a copy row.
    int64_t lanes, xpitch, xvecs;

    int64_t image_floats() const { return c * lanes * xrows * xpitch; }  // one image's copy in a band
    int64_t copy_floats() const { return round_up(band_images * image_floats(), (int64_t)16); }
    int64_t part_filters() const { return by_columns ? k : ceil_div(k, parts); }
    int64_t sums_floats() const { return part_filters() * cols * 16; }
    int64_t segment_floats() const { return round_up(segments * 3 * 2, (int64_t)16); }  // int64 triples
    // Each column's first row in the copy (int64), and the copy's load
    // masks for each tap column and vector of an output row (16 bits).
    int64_t mask_count() const { return sw == 1 ? kw * vecs : 2 * xvecs; }
    int64_t table_floats() const { return round_up(cols * 2 + ceil_div(mask_count(), (int64_t)2), (int64_t)16); }
    int64_t slot_floats() const { return copy_floats() + sums_floats() + segment_floats() + table_floats(); }
};

DotShape make_dot_shape(const ConvGeometry &g, int threads) {
    DotShape s{};
    s.n = g.n, s.c = g.c, s.k = g.k;
    s.h = g.in[1], s.w = g.in[2], s.oh = g.out[1], s.ow = g.out[2];
    s.kh = g.kernel[1], s.kw = g.kernel[2];
    s.sh = g.stride[1], s.sw = g.stride[2], s.dh = g.dilation[1], s.dw = g.dilation[2];
    s.pt = g.pad_begin[1], s.pl = g.pad_begin[2];
    s.cols = s.c * s.kh * s.kw;
    const int64_t plane = s.oh * s.ow;
    s.band_rows = std::clamp<int64_t>(kBandPositions / s.ow, 1, s.oh);
    s.band_images = s.band_rows < s.oh ? 1 : std::clamp<int64_t>(kBandPositions / plane, 1, s.n);
    s.xrows = (s.band_rows - 1) * s.sh + (s.kh - 1) * s.dh + 1;
    // Threads share the filters where each gets two tiles' worth; else the
    // columns (ResNet-20's 16 filters at 2 threads: tiles of 6, 5, 5
    // filters each rather than of 4, whose 16 sums a step load 8 vectors).
    s.by_columns = s.k < 2 * kTileFilters * threads;
    s.parts = std::clamp<int64_t>(threads, 1, s.by_columns ? s.cols : s.k);
    s.segments = s.band_images * (s.sh == 1 && s.sw == 1 ? 1 : s.band_rows);
    s.vecs = ceil_div(s.ow, (int64_t)16);
    // A phase row holds the columns its taps read, ow + (kw - 1) * dw / 2,
    // in whole vectors (its rows then stay aligned).
    s.lanes = s.sw == 1 ? s.kw : 2;
    s.xpitch = s.sw == 1 ? s.ow : round_up(s.ow + (s.kw - 1) * s.dw / 2, (int64_t)16);
    s.xvecs = s.xpitch / 16;
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
};

template <int MR, int T>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void dot_step(const float *const (&d)[MR],
                                                                       const float *const (&x)[T], int64_t p,
                                                                       __mmask16 lanes, __m512 (&acc)[MR * T]) {
    __m512 b[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) b[t] = _mm512_maskz_loadu_ps(lanes, x[t] + p);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        const __m512 v = _mm512_maskz_loadu_ps(lanes, d[i] + p);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[i * T + t] = _mm512_fmadd_ps(v, b[t], acc[i * T + t]);
    }
}

template <int MR, int T>
CONV_TARGET_AVX512 void dot_tile(const TileArgs &a) {
    __m512 acc[MR * T];
#pragma GCC unroll 24
    for (int i = 0; i < MR * T; ++i)
        acc[i] = a.first ? _mm512_setzero_ps() : _mm512_load_ps(a.sums + (i / T) * a.sums_row + (i % T) * 16);
    for (int64_t e = 0; e < a.nsegs; ++e) {
        const Segment &seg = a.segs[e];
        const float *d[MR];
        const float *x[T];
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) d[i] = a.dy + seg.dy + i * a.filter_pitch;
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) x[t] = a.col[t] + seg.x;
        int64_t p = 0;
        if (a.ahead > 0)
            for (; p + 16 <= seg.len; p += 16) {
#pragma GCC unroll 6
                for (int i = 0; i < MR; ++i) _mm_prefetch((const char *)(d[i] + p + a.ahead), _MM_HINT_T0);
                dot_step<MR, T>(d, x, p, 0xFFFF, acc);
            }
        for (; p + 16 <= seg.len; p += 16) dot_step<MR, T>(d, x, p, 0xFFFF, acc);
        if (p < seg.len) dot_step<MR, T>(d, x, p, first_lanes(seg.len - p), acc);
    }
    // Unrolled: an indexed acc[] would live on the stack.
#pragma GCC unroll 24
    for (int i = 0; i < MR * T; ++i) _mm512_store_ps(a.sums + (i / T) * a.sums_row + (i % T) * 16, acc[i]);
}

using TileFn = void (*)(const TileArgs &);
template <int T, int... Rows>
constexpr std::array<TileFn, kTileFilters> tile_row(std::integer_sequence<int, Rows...>) {
    return {{dot_tile<Rows + 1, T>...}};
}
// kTiles[T - 1][MR - 1]: the full tile and the edges' smaller ones.
const std::array<TileFn, kTileFilters> kTiles[kTileColumns] = {
    tile_row<1>(std::make_integer_sequence<int, kTileFilters>{}),
    tile_row<2>(std::make_integer_sequence<int, kTileFilters>{}),
    tile_row<3>(std::make_integer_sequence<int, kTileFilters>{}),
    tile_row<4>(std::make_integer_sequence<int, kTileFilters>{})};

// The lanes of x's row that the copy's loads keep (those inside [0, w),
// the rest zeros), the same for every row and channel, so made once a
// call. Column stride 1: vector v of tap column tc's row loads the 16
// floats from v * 16 + tc * dw - pl. Stride 2: vector v of the phase rows
// is made of the 32 floats from v * 32 - pl, two masks.
void fill_load_masks(const DotShape &s, uint16_t *masks) {
    if (s.sw == 1) {
        for (int64_t tc = 0; tc < s.kw; ++tc)
            for (int64_t v = 0; v < s.vecs; ++v) {
                const int64_t at = v * 16 + tc * s.dw - s.pl;
                masks[tc * s.vecs + v] = lane_range(-at, s.w - at);
            }
        return;
    }
    for (int64_t v = 0; v < s.xvecs; ++v) {
        const int64_t at = v * 32 - s.pl;
        masks[2 * v] = lane_range(-at, s.w - at);
        masks[2 * v + 1] = lane_range(-at - 16, s.w - at - 16);
    }
}

// dst[o] = row[o + off] for o in [0, ow), zero where o + off is outside
// [0, w): what tap column tc (off = tc * dw - pl) reads along an output
// row. Masked loads: never outside x's row, the zeros for free.
CONV_TARGET_AVX512 inline void copy_tap_row(const DotShape &s, const float *row, int64_t off, const uint16_t *masks,
                                            float *dst) {
    const __mmask16 tail = first_lanes(s.ow - (s.vecs - 1) * 16);
    for (int64_t v = 0; v < s.vecs; ++v) {
        const __m512 a = _mm512_maskz_loadu_ps(masks[v], row + v * 16 + off);
        _mm512_mask_storeu_ps(dst + v * 16, v + 1 < s.vecs ? (__mmask16)0xFFFF : tail, a);
    }
}

// Column stride 2: even[j] = row[2 j - pl], odd[j] = row[2 j + 1 - pl] for
// j in [0, xpitch), zero outside [0, w); tap column tc reads phase
// (tc * dw) % 2 from j = o + (tc * dw) / 2.
CONV_TARGET_AVX512 inline void copy_phase_rows(const DotShape &s, const float *row, const uint16_t *masks,
                                               float *even, float *odd) {
    for (int64_t v = 0; v < s.xvecs; ++v) {
        const float *at = row + v * 32 - s.pl;
        const __m512 a = _mm512_maskz_loadu_ps(masks[2 * v], at);
        const __m512 b = _mm512_maskz_loadu_ps(masks[2 * v + 1], at + 16);
        _mm512_store_ps(even + v * 16, _mm512_permutex2var_ps(a, even_lanes(), b));
        _mm512_store_ps(odd + v * 16, _mm512_permutex2var_ps(a, odd_lanes(), b));
    }
}

// Image n's copy for output rows [r0, r1), one row per (channel, lane) and
// padded source row r0 * sh + i: what tap column `lane` reads along it, or
// x's column phase `lane`.
CONV_TARGET_AVX512 void copy_band_image(const DotShape &s, const float *x, int64_t n, int64_t r0, int64_t r1,
                                        const uint16_t *masks, float *out) {
    const int64_t rows = (r1 - r0 - 1) * s.sh + (s.kh - 1) * s.dh + 1;
    for (int64_t c = 0; c < s.c; ++c)
        for (int64_t i = 0; i < rows; ++i) {
            const int64_t src = r0 * s.sh + i - s.pt;
            const bool inside = src >= 0 && src < s.h;
            const float *row = inside ? x + ((n * s.c + c) * s.h + src) * s.w : nullptr;
            for (int64_t lane = 0; lane < s.lanes; ++lane) {
                float *dst = out + ((c * s.lanes + lane) * s.xrows + i) * s.xpitch;
                if (!inside)
                    std::memset(dst, 0, (size_t)s.xpitch * sizeof(float));
                else if (s.sw == 1)
                    copy_tap_row(s, row, lane * s.dw - s.pl, masks + lane * s.vecs, dst);
                else if (lane == 0)
                    copy_phase_rows(s, row, masks, dst, dst + s.xrows * s.xpitch);
            }
        }
}

// A thread's share of dW: filters [k0, k1) x columns [j0, j1).
struct Part {
    int64_t k0, k1, j0, j1;
};

Part part_of(const DotShape &s, int64_t t) {
    if (!s.by_columns) return {s.k * t / s.parts, s.k * (t + 1) / s.parts, 0, s.cols};
    return {0, s.k, s.cols * t / s.parts, s.cols * (t + 1) / s.parts};
}

// One share over every band: sums in the slot, then dW.
CONV_TARGET_AVX512 void run_part(const DotShape &s, const float *x, const float *dy, float *dw, const Part &part,
                                 float *slot) {
    const int64_t k0 = part.k0, k1 = part.k1;
    float *copy = slot;
    float *sums = copy + s.copy_floats();
    Segment *segs = reinterpret_cast<Segment *>(sums + s.sums_floats());
    int64_t *col_at = reinterpret_cast<int64_t *>(sums + s.sums_floats() + s.segment_floats());
    uint16_t *masks = reinterpret_cast<uint16_t *>(col_at + s.cols);
    for (int64_t j = 0; j < s.cols; ++j) {
        const int64_t tc = j % s.kw, tr = j / s.kw % s.kh, c = j / (s.kw * s.kh);
        const int64_t lane = s.sw == 1 ? tc : tc * s.dw % 2, shift = s.sw == 1 ? 0 : tc * s.dw / 2;
        col_at[j] = ((c * s.lanes + lane) * s.xrows + tr * s.dh) * s.xpitch + shift;
    }
    fill_load_masks(s, masks);
    const int64_t plane = s.oh * s.ow, filters = k1 - k0;
    // Filters in groups of at most kTileFilters, as even as they come.
    const int64_t groups = ceil_div(filters, (int64_t)kTileFilters), low = filters / groups,
                  high = filters % groups;
    // Columns likewise (a share of 14 as 4 4 3 3, of 27 as six 4s and a 3).
    const int64_t col_tiles = ceil_div(part.j1 - part.j0, (int64_t)kTileColumns),
                  col_low = (part.j1 - part.j0) / col_tiles, col_high = (part.j1 - part.j0) % col_tiles;
    int cols = 0;
    bool first = true;
    for (int64_t n0 = 0; n0 < s.n; n0 += s.band_images) {
        const int64_t images = std::min(s.band_images, s.n - n0);
        for (int64_t r0 = 0; r0 < s.oh; r0 += s.band_rows) {
            const int64_t r1 = std::min(s.oh, r0 + s.band_rows);
            int64_t nsegs = 0;
            for (int64_t i = 0; i < images; ++i) {
                copy_band_image(s, x, n0 + i, r0, r1, masks, copy + i * s.image_floats());
                const int64_t dy_at = (n0 + i) * s.k * plane + r0 * s.ow, x_at = i * s.image_floats();
                if (s.sh == 1 && s.sw == 1)
                    segs[nsegs++] = {dy_at, x_at, (r1 - r0) * s.ow};
                else
                    for (int64_t r = 0; r < r1 - r0; ++r)
                        segs[nsegs++] = {dy_at + r * s.ow, x_at + r * s.sh * s.xpitch, s.ow};
            }
            // Columns outside, filters inside: a tile's 4 copy rows stay in
            // L1 across the filter groups, dy's rows come from L2.
            for (int64_t ti = 0, j0 = part.j0; ti < col_tiles; ++ti, j0 += cols) {
                cols = (int)(col_low + (ti < col_high ? 1 : 0));
                // The first column tile asks for the next band's dy as it goes.
                TileArgs a{nullptr, plane, {}, segs, nsegs, nullptr, s.cols * 16, first,
                           j0 == part.j0 && images == 1 && r1 < s.oh ? (r1 - r0) * s.ow : 0};
                for (int t = 0; t < cols; ++t) a.col[t] = copy + col_at[j0 + t];
                for (int64_t gi = 0, kg = k0; gi < groups; ++gi) {
                    const int mr = (int)(low + (gi < high ? 1 : 0));
                    a.dy = dy + kg * plane;
                    a.sums = sums + ((kg - k0) * s.cols + j0) * 16;
                    kTiles[cols - 1][mr - 1](a);
                    kg += mr;
                }
            }
            first = false;
        }
    }
    for (int64_t kk = k0; kk < k1; ++kk)
        store_lane_sums(sums + ((kk - k0) * s.cols + part.j0) * 16, part.j1 - part.j0, dw + kk * s.cols + part.j0);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Column stride 2 from two images: MobileNet's conv1, against the
// filter-vector tiles, 1 thread, 5 alternations: batch 8 1.11-1.13x, batch
// 1 0.96-1.00x (its x and dy stay in L2 and L3 there, where the tiles'
// layout of dy costs less).
bool direct_dot_filter_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512) return false;
    return op == CONV_OP_BACKWARD_FILTER && dtype == CONV_DTYPE_FLOAT32 &&
           g.layout == CONV_LAYOUT_CHANNELS_FIRST && g.groups == 1 && g.is_planar() && g.c <= kMaxSources &&
           (g.stride[2] == 1 || (g.stride[2] == 2 && g.n >= 2)) && g.kernel_size() > 1 && g.n > 0 && g.c > 0 && g.k > 0 &&
           g.out_size() > 0 && g.k * g.c * g.kernel_size() <= kMostSums;
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
            if (part.k0 < part.k1 && part.j0 < part.j1) run_part(s, x, dy, dw, part, base + t * s.slot_floats());
        },
        threads);
    if (args.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool, threads);
#else
    (void)args, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
