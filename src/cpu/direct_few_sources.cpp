// direct_avx512's channels-first forward from at most 4 source channels at
// column stride 2 (a network's first layer: MobileNet's 3->32 3x3 s2,
// ResNet-50's 3->64 7x7 s2) with the POSITIONS in the vector, on AVX2 and
// AVX-512 CPUs. The channel-vector tiles
// (direct_avx512.cpp) sum only C x taps = 27 or 147 products per output
// there, so their fixed costs weigh: the padded copy of x in column phases
// and the 8 x 8 transposes that put each tile's sums back into
// channels-first rows (a fifth of MobileNet's conv1 on Zen 3).
//
// A tile is F <= 6 filters x 16 consecutive positions of one output row (12
// sums; AVX-512: F <= 12 x 32 positions, 24 sums): per source channel and
// tap it loads the two source vectors and broadcasts F weights, and its
// sums are rows of y as they lie, stored straight. The layers' column stride is 2: a source row is first split
// into its two column phases, once per band of output rows, into the
// thread's slot (in L1/L2): tap q of output column j then reads phase q % 2
// at j + q / 2, a plain unaligned load. (At unit stride, measured with the
// phases a plain copy, it was even with the channel-vector tiles: 0.84-1.28x,
// ResNet-20's 3->16 32x32 stem 0.84x, VGG-16's 3->64 224x224 1.18x.)
//
// Each output is one running sum over (channel, tap row, tap column) -- at
// most 4 x kh x 16 products -- then the bias and ReLU; the order does not
// depend on the thread count.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/past_cache.h"

namespace conv::cpu {
namespace {

constexpr int64_t kMaxSources = 4;
constexpr int kFilters = 6;       // filters a tile: 6 x 2 sums, 2 source vectors, a broadcast
constexpr int kFilters512 = 12;   // AVX-512: 12 x 2 sums of 16 lanes, 2 source vectors, a broadcast
constexpr int64_t kMaxTapColumns = 16;  // the phase offsets kept per tap column
constexpr int64_t kBand = 8;      // output rows an item

// The pass in the kernel's terms (forward, channels-first, 2-D).
struct Few {
    int64_t n, c, k, h, w, oh, ow, kh, kw, sh, pt, pl;
    int64_t lp;       // floats a phase row holds: whole vectors of every tile's columns, plus the taps' reach
    int64_t in_rows;  // source rows a band of (at most) kBand output rows reads
    int64_t row_floats() const { return c * 2 * lp; }  // one source row's two phases, all channels
    int64_t slot_floats() const { return checked_mul(in_rows, row_floats(), "workspace"); }
    // Filters in groups of at most `most`, as even as they come (32 as
    // 6 6 5 5 5 5, not five 6s and a 2 whose 4 sums wait on the FMA
    // latency).
    EvenPieces filters{1, 1};
    int64_t most;  // filters a group at most: kFilters, or kFilters512 on AVX-512
    int64_t packed_floats() const {
        return round_up(checked_mul(filters.count * most, c * kh * kw, "workspace"), (int64_t)16);
    }
};

Few few_shape(const ConvGeometry &g) {
    Few s;
    s.n = g.n, s.c = g.c, s.k = g.k, s.h = g.in[1], s.w = g.in[2], s.oh = g.out[1], s.ow = g.out[2];
    s.kh = g.kernel[1], s.kw = g.kernel[2], s.sh = g.stride[1];
    s.pt = g.pad_begin[1], s.pl = g.pad_begin[2];
    // A tile's loads: whole vectors (8 floats, 16 on AVX-512) from a column
    // of the row, each tap column's up to (kw - 1) / 2 further.
    const int64_t lanes = cpu_isa() == Isa::avx512 ? 16 : 8;
    s.lp = round_up(round_up(s.ow, lanes) + (s.kw - 1) / 2, lanes);
    s.in_rows = checked_add(checked_mul(std::min(kBand, s.oh) - 1, s.sh, "workspace"), s.kh, "workspace");
    s.most = cpu_isa() == Isa::avx512 ? kFilters512 : kFilters;
    s.filters = EvenPieces(s.k, s.most);
    return s;
}

#if CONV_HAVE_AVX512_KERNELS
// w[k][c][r][q] into the filter groups, [group][c][r][q][most] (zeros
// past a group's size): a tap's F weights are consecutive broadcasts.
void pack(const Few &s, const float *w, float *out) {
    const int64_t taps = s.c * s.kh * s.kw;
    for (int64_t grp = 0; grp < s.filters.count; ++grp)
        for (int64_t t = 0; t < taps; ++t)
            for (int f = 0; f < s.most; ++f)
                out[(grp * taps + t) * s.most + f] =
                    f < s.filters.size(grp) ? w[(s.filters.start(grp) + f) * taps + t] : 0.0f;
}

// split_row's start, all but its vector steps: an out-of-range row all
// zeros (null returned), else the columns left of the row (2j < pl) one by
// one; `first` is then the first phase column the vector steps write.
const float *split_row_start(const Few &s, const float *src, int64_t row, float *out, int64_t &first) {
    if (row < 0 || row >= s.h) {
        std::memset(out, 0, (size_t)(2 * s.lp) * sizeof(float));
        return nullptr;
    }
    const float *x = src + row * s.w;
    first = std::min(ceil_div(s.pl, (int64_t)2), s.lp);
    for (int64_t p = 0; p < 2; ++p)
        for (int64_t j = 0; j < first; ++j) {
            const int64_t col = 2 * j + p - s.pl;
            out[p * s.lp + j] = col >= 0 && col < s.w ? x[col] : 0.0f;
        }
    return x;
}

// Source row `row` of one channel (`src`: the channel's plane) as its two
// column phases at `out` (2 rows of s.lp floats): phase p holds at j the
// padded column 2j + p, that is source column 2j + p - pl, zero outside the
// row. Out-of-range rows are all zeros.
CONV_TARGET_AVX2 void split_row(const Few &s, const float *src, int64_t row, float *out) {
    int64_t first = 0;
    const float *x = split_row_start(s, src, row, out, first);
    if (!x) return;
    // 8 of each phase a step from 16 source columns, loaded no further than
    // the row's end (zeros past it).
    for (int64_t j = first; j < s.lp; j += 8) {
        const int64_t t = 2 * j - s.pl, have = std::max<int64_t>(0, s.w - t), n = std::min<int64_t>(8, s.lp - j);
        const __m256 a = load_first_avx2(x + t, std::min<int64_t>(have, 8));
        const __m256 b = load_first_avx2(x + t + 8, std::clamp<int64_t>(have - 8, 0, 8));
        store_first_avx2(out + j, even_lanes_avx2(a, b), n);
        store_first_avx2(out + s.lp + j, odd_lanes_avx2(a, b), n);
    }
}

// split_row with 16 of each phase a step (AVX-512: one permute each from 32
// source columns). Timed even with split_row on MobileNet's conv1, where
// the split is 10% of the pass in perf. Its inner steps whole vectors, with
// no masks made: that loop's masks and reloaded bounds were most of its
// instructions (MobileNet's conv1 1.02x at batch 1 and 8, 1 thread; split
// 8.5 -> 7% of the pass). Asking for the next band's rows into L2 under
// the tiles did not shorten it (0.99x).
CONV_TARGET_AVX512 void split_row512(const Few &s, const float *src, int64_t row, float *out) {
    int64_t first = 0;
    const float *x = split_row_start(s, src, row, out, first);
    if (!x) return;
    const __m512i even = even_lanes(), odd = odd_lanes();
    // Whole vectors while both the 32 source columns and the 16 phase
    // columns lie inside; then the masked steps at the row's end.
    const int64_t lp = s.lp, w = s.w, pl = s.pl;
    int64_t j = first;
    for (; j + 16 <= lp && 2 * j - pl + 32 <= w; j += 16) {
        const float *at = x + 2 * j - pl;
        const __m512 a = _mm512_loadu_ps(at), b = _mm512_loadu_ps(at + 16);
        _mm512_storeu_ps(out + j, _mm512_permutex2var_ps(a, even, b));
        _mm512_storeu_ps(out + lp + j, _mm512_permutex2var_ps(a, odd, b));
    }
    for (; j < lp; j += 16) {
        const int64_t t = 2 * j - pl, have = std::max<int64_t>(0, w - t);
        const __mmask16 n = first_lanes(lp - j);
        const __m512 a = _mm512_maskz_loadu_ps(first_lanes(std::min<int64_t>(have, 16)), x + t);
        const __m512 b = _mm512_maskz_loadu_ps(first_lanes(std::clamp<int64_t>(have - 16, 0, 16)), x + t + 16);
        _mm512_mask_storeu_ps(out + j, n, _mm512_permutex2var_ps(a, even, b));
        _mm512_mask_storeu_ps(out + lp + j, n, _mm512_permutex2var_ps(a, odd, b));
    }
}

// Where the tiles of one output row find their source: the band's phase
// rows and the offset of each tap column within a channel's phases.
struct TileArgs {
    const float *rows;  // the phases of the output row's first source row (tap row 0), channel 0
    int64_t row_floats;  // one source row's phases, all channels (a channel's: 2 * lp)
    const int64_t *tap;  // tap column q: phase (q % 2) * lp + q / 2
    int64_t c, kh, kw;
    const float *weights;  // the filter group's packed taps
    int64_t lp;
};

// One tap: V source vectors at `at`, F broadcast weights from `w`.
template <int F, int V>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void tap_step(__m256 *acc, const float *at, const float *w) {
    __m256 v[V];
#pragma GCC unroll 2
    for (int u = 0; u < V; ++u) v[u] = _mm256_loadu_ps(at + 8 * u);
#pragma GCC unroll 6
    for (int f = 0; f < F; ++f) {
        const __m256 b = _mm256_broadcast_ss(w + f);
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) acc[f * V + u] = _mm256_fmadd_ps(b, v[u], acc[f * V + u]);
    }
}

// F filters x V vectors of positions from column j0 of one output row; y:
// filter 0's row, `plane` floats to the next filter's; `lanes` the last
// vector's columns in the row. KW: the tap columns made a constant (each
// tap a load at a fixed offset from its phase), or 0 for any (a.tap).
template <int F, int V, int KW>
CONV_TARGET_AVX2 void tile(const TileArgs &a, int64_t j0, float *y, int64_t plane, int lanes, const float *bias,
                           bool relu) {
    static_assert(F * V <= 12, "the sums, the source vectors and a broadcast in 16 registers");
    __m256 acc[F * V];
#pragma GCC unroll 12
    for (int i = 0; i < F * V; ++i) acc[i] = _mm256_setzero_ps();
    const float *wt = a.weights;
    const int64_t kh = a.kh, kw = KW ? KW : a.kw, row_floats = a.row_floats, lp = a.lp;
    for (int64_t c = 0; c < a.c; ++c)
        for (int64_t r = 0; r < kh; ++r, wt += kw * kFilters) {
            const float *row = a.rows + c * 2 * lp + r * row_floats + j0;
            if constexpr (KW != 0) {
                // Tap columns 2i and 2i + 1 (the two phases at i) a loop
                // step; fully unrolled, GCC 12 spilled sums at 7 taps.
#pragma GCC unroll 1
                for (int i = 0; i < KW / 2; ++i) {
                    tap_step<F, V>(acc, row + i, wt + 2 * i * kFilters);
                    tap_step<F, V>(acc, row + lp + i, wt + (2 * i + 1) * kFilters);
                }
                if constexpr (KW % 2 != 0) tap_step<F, V>(acc, row + KW / 2, wt + (KW - 1) * kFilters);
            } else {
                for (int64_t q = 0; q < kw; ++q) tap_step<F, V>(acc, row + a.tap[q], wt + q * kFilters);
            }
        }
#pragma GCC unroll 6
    for (int f = 0; f < F; ++f)
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) {
            __m256 x = acc[f * V + u];
            if (bias) x = _mm256_add_ps(x, _mm256_broadcast_ss(bias + f));
            if (relu) x = _mm256_max_ps(_mm256_setzero_ps(), x);  // NaN stays NaN (the second operand)
            float *at = y + f * plane + j0 + 8 * u;
            if (u == V - 1 && lanes < 8)
                store_first_avx2(at, x, lanes);
            else
                _mm256_storeu_ps(at, x);
        }
}

using TileFn = void (*)(const TileArgs &, int64_t, float *, int64_t, int, const float *, bool);

using TileTable = std::array<std::array<TileFn, 2>, kFilters>;
template <int KW, int... F>
constexpr TileTable tile_table(std::integer_sequence<int, F...>) {
    return {{{tile<F + 1, 1, KW>, tile<F + 1, 2, KW>}...}};
}
template <int KW>
constexpr TileTable kTilesFor = tile_table<KW>(std::make_integer_sequence<int, kFilters>{});

// The tiles for the pass's tap columns: the first layers' kernels (3x3, 5x5,
// 7x7) with constant taps, any other through the tap table.
const TileTable &tiles_for(const Few &s) {
    if (s.kw == 3) return kTilesFor<3>;
    if (s.kw == 5) return kTilesFor<5>;
    if (s.kw == 7) return kTilesFor<7>;
    return kTilesFor<0>;
}

// AVX-512: the same tile with 16 positions a vector and up to 12 filters
// (24 sums of the 32 registers).
template <int F, int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void tap_step512(__m512 *acc, const float *at,
                                                                          const float *w) {
    __m512 v[V];
#pragma GCC unroll 2
    for (int u = 0; u < V; ++u) v[u] = _mm512_loadu_ps(at + 16 * u);
#pragma GCC unroll 12
    for (int f = 0; f < F; ++f) {
        const __m512 b = _mm512_set1_ps(w[f]);
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) acc[f * V + u] = _mm512_fmadd_ps(b, v[u], acc[f * V + u]);
    }
}

// Stream: whole vectors stored non-temporally (streams_output; a
// template argument: tested per store at run time, the branch cost
// MobileNet's conv1 5% at batch 1, where nothing streams).
template <int F, int V, int KW, bool Stream>
CONV_TARGET_AVX512 void tile512(const TileArgs &a, int64_t j0, float *y, int64_t plane, int lanes, const float *bias,
                                bool relu) {
    static_assert(F * V <= 24, "the sums, the source vectors and a broadcast in 32 registers");
    __m512 acc[F * V];
#pragma GCC unroll 24
    for (int i = 0; i < F * V; ++i) acc[i] = _mm512_setzero_ps();
    const float *wt = a.weights;
    const int64_t kh = a.kh, kw = KW ? KW : a.kw, row_floats = a.row_floats, lp = a.lp;
    for (int64_t c = 0; c < a.c; ++c)
        for (int64_t r = 0; r < kh; ++r, wt += kw * kFilters512) {
            const float *row = a.rows + c * 2 * lp + r * row_floats + j0;
            if constexpr (KW != 0) {
#pragma GCC unroll 1
                for (int i = 0; i < KW / 2; ++i) {
                    tap_step512<F, V>(acc, row + i, wt + 2 * i * kFilters512);
                    tap_step512<F, V>(acc, row + lp + i, wt + (2 * i + 1) * kFilters512);
                }
                if constexpr (KW % 2 != 0) tap_step512<F, V>(acc, row + KW / 2, wt + (KW - 1) * kFilters512);
            } else {
                for (int64_t q = 0; q < kw; ++q) tap_step512<F, V>(acc, row + a.tap[q], wt + q * kFilters512);
            }
        }
#pragma GCC unroll 12
    for (int f = 0; f < F; ++f)
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) {
            __m512 x = acc[f * V + u];
            if (bias) x = _mm512_add_ps(x, _mm512_set1_ps(bias[f]));
            if (relu) x = _mm512_max_ps(_mm512_setzero_ps(), x);  // NaN stays NaN (the second operand)
            float *at = y + f * plane + j0 + 16 * u;
            const __mmask16 keep = u == V - 1 ? first_lanes(lanes) : (__mmask16)0xFFFF;
            if (Stream && keep == 0xFFFF)
                _mm512_stream_ps(at, x);
            else
                _mm512_mask_storeu_ps(at, keep, x);
        }
}

using TileTable512 = std::array<std::array<TileFn, 2>, kFilters512>;
template <int KW, bool Stream, int... F>
constexpr TileTable512 tile_table512(std::integer_sequence<int, F...>) {
    return {{{tile512<F + 1, 1, KW, Stream>, tile512<F + 1, 2, KW, Stream>}...}};
}
template <int KW, bool Stream>
constexpr TileTable512 kTiles512For = tile_table512<KW, Stream>(std::make_integer_sequence<int, kFilters512>{});

template <bool Stream>
const TileTable512 &tiles512_with(const Few &s) {
    if (s.kw == 3) return kTiles512For<3, Stream>;
    if (s.kw == 5) return kTiles512For<5, Stream>;
    if (s.kw == 7) return kTiles512For<7, Stream>;
    return kTiles512For<0, Stream>;
}
const TileTable512 &tiles512_for(const Few &s, bool stream) {
    return stream ? tiles512_with<true>(s) : tiles512_with<false>(s);
}

// Whether an AVX-512 pass writes y with non-temporal stores
// (streams_whole_lines, as gemm_1x1's and the depthwise planes' outputs).
// A conv1 layer's output is a
// network's largest: MobileNet's 3->32 onto 112x112 at batch 8 writes 12.8
// MB, whose every line the stores first read for ownership from memory.
// 1 thread, 5 alternated rounds, batch 8: MobileNet's conv1 1.08x (0.80-0.81
// -> 0.85 of oneDNN), ResNet-50's 3->64 7x7 s2 1.02x (0.95 -> 0.98); 2
// threads 1.06x and 1.035x.
bool streams_output(const Few &s, const float *y) {
    return s.most == kFilters512 && streams_whole_lines((double)s.n * (double)s.k * (double)(s.oh * s.ow), y, s.ow);
}

// Output rows [r0, r1) of image n (r1 - r0 <= kBand): the band's source rows
// split into the slot, then every filter group's tiles along each row.
CONV_TARGET_AVX2 void run_band(const Few &s, const float *x, const float *packed, float *y, const float *bias,
                               bool relu, int64_t n, int64_t r0, int64_t r1, float *slot, bool stream) {
    const int64_t first = r0 * s.sh - s.pt, rows = (r1 - 1 - r0) * s.sh + s.kh;
    const float *image = x + n * s.c * s.h * s.w;
    for (int64_t i = 0; i < rows; ++i) {
        if (i % s.sh >= s.kh) continue;  // a row between windows (row stride past the kernel): never read
        for (int64_t c = 0; c < s.c; ++c)
            (s.most == kFilters512 ? split_row512 : split_row)(s, image + c * s.h * s.w, first + i,
                                                                 slot + i * s.row_floats() + c * 2 * s.lp);
    }
    int64_t tap[kMaxTapColumns];
    for (int64_t q = 0; q < s.kw; ++q) tap[q] = q % 2 * s.lp + q / 2;
    const int64_t plane = s.oh * s.ow, taps = s.c * s.kh * s.kw;
    TileArgs a{nullptr, s.row_floats(), tap, s.c, s.kh, s.kw, nullptr, s.lp};
    const bool wide = s.most == kFilters512;  // AVX-512
    const TileTable &narrow_tiles = tiles_for(s);
    const TileTable512 &wide_tiles = tiles512_for(s, stream);
    const int64_t step = wide ? 32 : 16, half = step / 2;  // positions a tile of two vectors, of one
    // Filter group by filter group, each down the band's rows: the group's
    // weights stay in L1 while the rows' tiles store 16 columns of 6 rows of
    // y. Row by row, every group in turn, the y lines of all the filters
    // (28 KiB a row at 64 filters) pushed the source rows and weights out of
    // L1 (1.03-1.05x this way).
    for (int64_t grp = 0; grp < s.filters.count; ++grp) {
        const int64_t k0 = s.filters.start(grp);
        const int f = (int)s.filters.size(grp);
        a.weights = packed + grp * taps * s.most;
        const float *b = bias ? bias + k0 : nullptr;
        for (int64_t r = r0; r < r1; ++r) {
            a.rows = slot + (r - r0) * s.sh * s.row_floats();
            float *out = y + (n * s.k + k0) * plane + r * s.ow;
            for (int64_t j0 = 0; j0 < s.ow; j0 += step) {
                const int64_t cols = std::min<int64_t>(step, s.ow - j0);
                const int v = cols > half ? 2 : 1;
                const TileFn tile = wide ? wide_tiles[f - 1][v - 1] : narrow_tiles[f - 1][v - 1];
                tile(a, j0, out, plane, (int)(cols - half * (v - 1)), b, relu);
            }
        }
    }
}
#endif

}  // namespace

bool direct_few_sources_applies(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    const Isa isa = cpu_isa();
    if (dtype != CONV_DTYPE_FLOAT32 || op != CONV_OP_FORWARD || (isa != Isa::avx2 && isa != Isa::avx512)) return false;
    if (g.layout != CONV_LAYOUT_CHANNELS_FIRST || g.groups != 1 || !g.is_planar()) return false;
    if (g.dilation[1] != 1 || g.dilation[2] != 1 || g.kernel[2] > kMaxTapColumns) return false;
    if (g.stride[2] != 2 || g.c > kMaxSources) return false;
    // Against the channel-vector tiles, ratios to oneDNN in 3 alternated
    // runs (Zen 3, 1 thread): batch 1 MobileNet's 3->32 224x224 1.11-1.23x,
    // ResNet-50's 3->64 7x7 1.13-1.15x, 3->24 96x96 1.08x; batch 32 1->8 5x5
    // onto 14x14 1.54x (the tiles filled 8 of 16 lanes), 3->16 onto 16x16
    // even, but 3->32 onto 8x8 0.94x: rows of a vector or less. AVX-512
    // (Zen 4, 1 thread, 3-4 alternated rounds): MobileNet's conv1 1.04x
    // (batch 8 1.05x), ResNet-50's 1.03x (1.04x), batch 32 1->8 5x5 onto
    // 14x14 1.23x, 3->24 96x96 1.23x, 4->64 64x64 1.13x; but 3->16 32x32
    // onto 16x16 0.81x: rows of one vector (a tile of 16 positions) stay
    // with the channel-vector tiles there.
    return g.out[2] >= (isa == Isa::avx512 ? 32 : 16) || g.k < 16;
}

size_t direct_few_sources_workspace(const ConvGeometry &g, int threads) {
    const Few s = few_shape(g);
    const int64_t floats = checked_add(s.packed_floats(),
                                       checked_mul(s.slot_floats(), std::max(threads, 1), "workspace"), "workspace");
    return (size_t)checked_mul(floats, (int64_t)sizeof(float), "workspace");
}

void direct_few_sources_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const Few s = few_shape(*args.g);
    float *packed = static_cast<float *>(ws);
    pack(s, static_cast<const float *>(args.w), packed);
    float *slots = packed + s.packed_floats();
    const float *x = static_cast<const float *>(args.x);
    float *y = static_cast<float *>(args.y);
    const float *bias = static_cast<const float *>(args.bias);
    const bool relu = args.g->activation == CONV_ACTIVATION_RELU;
    const int64_t bands = ceil_div(s.oh, kBand);
    const bool stream = streams_output(s, y);
    pool.parallel_for(
        s.n * bands,
        [&](int64_t item, int slot) {
            const int64_t n = item / bands, r0 = item % bands * kBand;
            run_band(s, x, packed, y, bias, relu, n, r0, std::min(s.oh, r0 + kBand),
                     slots + slot * s.slot_floats(), stream);
            if (stream) _mm_sfence();  // the streamed stores before the item counts as done
        },
        threads);
#else
    (void)args, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
