// Channels-first pointwise backward-filter onto few filters as dot products.
//
// dW[k][c] = sum over images n and positions p of dy[n][k][p] * x[n][c][p]:
// both operands run along p in memory, so a tile of 6 filters x 4 channels
// keeps 24 vectors of partial sums, each step (16 positions) loading 6
// vectors of dy and 4 of x for 24 FMAs, no broadcast and no copy; the
// lanes are added once a chunk of positions. pointwise_avx512.cpp's GEMM
// instead copies x^T into panels per chunk (16 x 16 transposes, which on
// Zen 4 take the FMAs' issue slots) and broadcasts dy into tiles of 8
// filters: onto few filters its tiles run short (64->1: one filter of 8)
// and the copy is a large share of the pass.
//
// Positions go in chunks of kChunk of one image: a chunk's dy rows stay in
// L2 (32 filters: 256 KiB, 64: 512 KiB) while 4 rows of x at a time pass through L1, a
// tile of filters after another. Each output's sum is its chunks' partial
// sums added in order, each of those its lanes' sums along p: the same
// bits at any thread count (threads split dW, never the positions).
#include "cpu/pointwise_dot_filter.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"
#include "cpu/past_cache.h"

namespace conv::cpu {
namespace {

constexpr int kTileRows = 6;      // filters a tile
constexpr int kTileCols = 4;      // channels a tile
constexpr int64_t kChunk = 2048;  // positions a chunk (16 x 128 steps)
// Filters it takes at most (pw_dot_filter_covers says why): any pass onto
// kMostFilters, onto kMostCachedFilters where x and dy stay in the caches.
constexpr int64_t kMostFilters = 32;
constexpr int64_t kMostCachedFilters = 64;

// One item of work: dW's rows [i0, i1) x columns [j0, j1).
struct Block {
    int64_t i0, i1, j0, j1;
};

#if CONV_HAVE_AVX512_KERNELS

// Where a tile reads and writes: MR rows of dy and T rows of x, `ld`
// floats apart, over positions [q0, q1); dW's MR x T block at dw (ldw
// floats a row), written (first chunk) or added to.
struct TileArgs {
    const float *dy, *x;
    int64_t ld, q0, q1;
    float *dw;
    int64_t ldw;
    bool first;
};

template <int MR, int T>
CONV_TARGET_AVX512 void dot_tile(const TileArgs &a) {
    __m512 acc[MR * T];
#pragma GCC unroll 24
    for (int i = 0; i < MR * T; ++i) acc[i] = _mm512_setzero_ps();
    const float *d[MR];
    const float *x[T];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) d[i] = a.dy + i * a.ld;
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) x[t] = a.x + t * a.ld;
    int64_t p = a.q0;
    for (; p + 16 <= a.q1; p += 16) dot_outer_step<MR, T>(d, x, p, 0xFFFF, acc);
    if (p < a.q1) dot_outer_step<MR, T>(d, x, p, first_lanes(a.q1 - p), acc);
    // The lanes added 16 sums at a time (lane_sums_of), not each alone.
    alignas(64) float sums[32];
    lane_sums_of<MR * T>(acc, sums);
    for (int i = 0; i < MR; ++i)
        for (int t = 0; t < T; ++t) {
            float &o = a.dw[i * a.ldw + t];
            o = a.first ? sums[i * T + t] : o + sums[i * T + t];
        }
}

using TileFn = void (*)(const TileArgs &);
template <int T, int... Rows>
constexpr std::array<TileFn, kTileRows> tile_row(std::integer_sequence<int, Rows...>) {
    return {{dot_tile<Rows + 1, T>...}};
}
// kTiles[T - 1][MR - 1]: the full tile and the edges' smaller ones.
const std::array<TileFn, kTileRows> kTiles[kTileCols] = {
    tile_row<1>(std::make_integer_sequence<int, kTileRows>{}), tile_row<2>(std::make_integer_sequence<int, kTileRows>{}),
    tile_row<3>(std::make_integer_sequence<int, kTileRows>{}), tile_row<4>(std::make_integer_sequence<int, kTileRows>{})};

// dW's block b over all images, chunk by chunk.
CONV_TARGET_AVX512 void run_block(const ConvGeometry &g, const float *x, const float *dy, float *dw,
                                  const Block &b) {
    const int64_t P = g.out_size(), C = g.c, K = g.k;
    // The block's filters in tiles as even as they come (32 as 6 6 5 5 5 5,
    // not five of 6 and one of 2).
    const EvenPieces rows(b.i1 - b.i0, kTileRows);
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t q0 = 0; q0 < P; q0 += kChunk) {
            const int64_t q1 = std::min(P, q0 + kChunk);
            const bool first = n == 0 && q0 == 0;
            for (int64_t c0 = b.j0; c0 < b.j1; c0 += kTileCols) {
                const int T = (int)std::min<int64_t>(kTileCols, b.j1 - c0);
                for (int64_t r = 0; r < rows.count; ++r) {
                    const int64_t k0 = b.i0 + rows.start(r);
                    const int MR = (int)rows.size(r);
                    const TileArgs a{dy + (n * K + k0) * P, x + (n * C + c0) * P, P, q0, q1, dw + k0 * C + c0, C,
                                     first};
                    kTiles[T - 1][MR - 1](a);
                }
            }
        }
}

#endif  // CONV_HAVE_AVX512_KERNELS

// Part t of `parts` of [0, n), its bounds the multiples of `unit` nearest
// the even split (but the end): filters split at any filter (unit 1),
// channels at the tiles' 4.
int64_t part_edge(int64_t n, int64_t t, int64_t parts, int64_t unit) {
    return t >= parts ? n : std::min(n, (n * t / parts + unit / 2) / unit * unit);
}

}  // namespace

// Against the GEMM, AMD EPYC Zen 4, 5 alternated rounds, batch 1, 1 / 2
// threads (docs/performance.md): onto 1-32 filters 1.06-3.8x (64->1
// 128x128 3.2x / 3.8x, 512->16 32x32 1.30x / 1.39x, 128->16 55x55 1.20x /
// 1.37x, 64->32 56x56 1.06x / 1.11x; batch 8, from memory, 1.07-2.0x).
// Onto 64 filters where x and dy stay in L3 (under kPastCacheBytes
// together): 1 thread 1.04-1.05x (MobileNet's 32->64 112x112, ResNet-50's
// 64->64 and 256->64 56x56, 16->64 32x32), 2 threads 1.02-1.13x, the pack
// of x's panels (10% of 32->64's GEMM) left out; 0.81-0.86x from memory
// (32->64 112x112 at batch 8: a chunk's first tiles wait on dy), 256->64
// at batch 8 even. Onto 96-256 0.88-0.98x; on planes under 1024 positions
// 0.73-0.98x (short chunks).
bool pw_dot_filter_covers(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512) return false;
    if (op != CONV_OP_BACKWARD_FILTER || g.layout != CONV_LAYOUT_CHANNELS_FIRST) return false;
    if (!g.is_pointwise() || g.groups != 1 || g.n <= 0 || g.c <= 0 || g.k <= 0) return false;
    // Long rows: a chunk's steps outweigh its 24 lane sums a tile.
    if (g.out_size() < 1024) return false;
    if (g.k <= kMostFilters) return true;
    const double bytes = (double)g.n * (double)(g.c + g.k) * (double)g.out_size() * sizeof(float);
    return g.k <= kMostCachedFilters && bytes < kPastCacheBytes;
}

void pw_dot_filter_run(const ConvArgs &args, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *args.g;
    const float *x = static_cast<const float *>(args.x), *dy = static_cast<const float *>(args.y);
    float *dw = static_cast<float *>(args.w);
    // Threads split the side whose operand is the smaller to read twice:
    // by filters each reads all of x, by channels all of dy. Filters split
    // evenly, each part in even tiles: 64 went 30 / 34 in tiles of 6 (2
    // threads, 5-7 alternated rounds: MobileNet's 32->64 112x112 and
    // ResNet-50's 64->64 56x56 1.05x; 1 thread, onto 16 and 32 filters,
    // 1.02x).
    const int64_t parts = std::max(1, threads);
    const bool by_rows = g.c <= g.k;
    pool.parallel_for(
        parts,
        [&](int64_t t, int) {
            Block b{0, g.k, 0, g.c};
            if (by_rows)
                b.i0 = part_edge(g.k, t, parts, 1), b.i1 = part_edge(g.k, t + 1, parts, 1);
            else
                b.j0 = part_edge(g.c, t, parts, kTileCols), b.j1 = part_edge(g.c, t + 1, parts, kTileCols);
            if (b.i0 < b.i1 && b.j0 < b.j1) run_block(g, x, dy, dw, b);
        },
        threads);
    if (args.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool, threads);
#else
    (void)args, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
