// direct_avx512's backward-filter: dw(m, c, tap) = sum over images and
// output positions p of dy(m, p) * x(c, p + tap), with 16 FILTERS (dw's
// rows m) in the vector -- the forward tiles' orientation, and the
// opposite of implicit_gemm's backward-filter, which keeps positions in
// the vector and pays a 16-lane reduction for every output (0.45x on
// 14x14 planes).
//
// - dy is laid out as [image][group][16 filters a vector][position][16]
//   (channels-first by 16 x 16 transposes; zero lanes past the group's
//   filters), x copied into the forward pass's padded planes
//   (direct_source), so that a position of any tap is one scalar: a block
//   of images at a time, one that stays in L2 for the items that read it
//   (or, where an image outgrows that and one item reads each filter
//   vector, dy a chunk at a time by that item, in L1).
// - A register tile is NV vectors of filters x NC columns (a column is one
//   (source channel, tap) of dw's row, in dw's own order): 4 x 6, 3 x 8,
//   2 x 12 or 1 x 16 accumulators. Per position it loads NV aligned dy
//   vectors and FMAs each with NC broadcast x scalars.
// - A work item is a group, NV filter vectors and up to kMaxTilesPerItem
//   tiles of columns; it walks the positions in chunks whose dy rows stay
//   in L1 (kChunkBytes), each tile's sums carried between chunks in the
//   thread's slot ([column][vector][16]), and finally transposes them into
//   dw 16 columns at a time (16 x 16 in registers, a row store a filter).
// - 3-D: a tile whose columns' depth taps all read the depth padding of an
//   output slice adds nothing there and is skipped (depth_taps_inside).
// - Every output is one item's sum over the positions in order (n, oh,
//   ow) -- or, where few filter blocks meet large planes (conv1 layers),
//   the sums of kRowParts items over parts of the rows, added in part
//   order: deterministic at any thread count, a plain dot product; under
//   CONV_MATH_STRICT each chunk is summed from zero and then added (two
//   levels, as the forward tiles' channel blocks).
// With AVX2 one vector of filters x 6 columns in ymm halves (tile_avx2);
// without either, or in float64, the same tiles through portable C++.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/batch_parts.h"
#include "cpu/direct_avx512.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"
#include "cpu/jit/filter_tile.h"
#include "cpu/jit/jit.h"
#include "cpu/past_cache.h"
#include "cpu/thread_copies.h"

namespace conv::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxColumns = 16;        // columns a tile: one 16 x 16 transpose a vector
constexpr int kAvx2Columns = 6;        // columns of the AVX2 tile (one vector)
constexpr int64_t kMaxTilesPerItem = 32;  // tiles of columns a work item carries
constexpr int64_t kChunkBytes = 24 << 10;  // dy an item reads per chunk of positions
constexpr int64_t kBlockBytes = 512 << 10; // padded x and laid-out dy of a block of images
constexpr int64_t kInPlaceDyBytes = 256;   // channels-last dy of a position read in place up to this
constexpr int64_t kDyCopyBytes = 256 << 10; // laid-out dy of a block of images a thread copies for itself up to this
// Rows split into kRowParts items where at most kRowPartBlocks filter blocks
// meet planes of kRowPartRows rows or more (conv1 layers; make_shape).
constexpr int64_t kRowParts = 4;
constexpr int64_t kRowPartBlocks = 2;
constexpr int64_t kRowPartRows = 64;

struct FilterShape {
    bool last;
    // Columns in blocks of `cblock` source channels, a block's ordered (tap,
    // channel): 1 is a channels-first dw row's own order (channel, tap), a
    // group's channels a channels-last row's (tap, channel); channels-first
    // blocks of a tile's columns (nc) give each tile one tap, and so one
    // window of positions that read x rather than its padding (Window).
    int64_t cblock;
    int64_t n, groups, csg, cdg, k, dout, ho, wo, positions, kz, kr, ks, dz, dh, dw, taps, ck, dvec;
    int64_t stride_h, stride_w, pad_top, pad_left, in_h, in_w;  // rows and columns of a slice, for the windows
    DirectSource src;
    int nv, nc;             // the register tile: filter vectors x columns
    int64_t chunk_rows;     // output rows per chunk
    int64_t kblocks, tiles; // per group: blocks of nv filter vectors, tiles of columns
    int64_t item_tiles;     // tiles a work item carries
    int64_t row_parts;      // parts of each slice's rows, an item each, their sums added at the end
    int64_t items;          // work items: row parts x groups x kblocks x blocks of tiles
    int64_t slot;           // elements of a slot: an item's sums
    int64_t block_images, image_blocks;  // images laid out at a time, and how many times
    bool dy_in_place;       // channels-last dy read as it lies (few filters: kInPlaceDyBytes)
    bool chunked;           // dy laid out chunk by chunk by each item, into the thread's buffer
    bool chunk_ahead;       // chunked: the next chunk's dy asked for under the current one's lay-out
    bool dy_per_thread;     // each thread lays out the filter blocks' dy its items read, for itself
    int64_t chunk_vec;      // chunked: elements from one filter vector's chunk to the next's
    // Workspace, bytes: the column tables (ColumnTables), the padded x and
    // dy of a block of images (chunked: a chunk of dy a thread), the slots
    // (a thread's, or with several blocks of images an item's: its sums
    // carried between them).
    size_t source_at, dy_at, slots_at, total;
};

// Output rows [r0, r1) and columns [c0, c0 + len) of a slice: where a tap
// reads x rather than its padding, or (a tile's) where any of its columns'
// taps does. Empty: all zero.
struct Window {
    int64_t r0, r1, c0, len;
};

// Outputs o < out with 0 <= o * stride + at - pad < in: [lo, hi).
std::pair<int64_t, int64_t> inside(int64_t out, int64_t in, int64_t stride, int64_t at, int64_t pad) {
    const int64_t lo = std::min(out, pad - at <= 0 ? 0 : ceil_div(pad - at, stride));
    const int64_t last = in - 1 + pad - at;  // o * stride <= last
    return {lo, std::clamp<int64_t>(last < 0 ? 0 : last / stride + 1, lo, out)};
}

// The window of plane tap `tap` (tap % (kr * ks)).
Window tap_window(const FilterShape &s, int64_t tap) {
    const auto [r0, r1] = inside(s.ho, s.in_h, s.stride_h, tap / s.ks * s.dh, s.pad_top);
    const auto [c0, c1] = inside(s.wo, s.in_w, s.stride_w, tap % s.ks * s.dw, s.pad_left);
    return r1 > r0 && c1 > c0 ? Window{r0, r1, c0, c1 - c0} : Window{0, 0, 0, 0};
}

// Whether some tap reads x's padding somewhere: the first or last of a row or column.
bool windows_matter(const FilterShape &s) {
    for (int64_t tap : {int64_t(0), s.kr * s.ks - 1}) {
        const Window w = tap_window(s, tap);
        if (w.r0 != 0 || w.r1 != s.ho || w.c0 != 0 || w.len != s.wo) return true;
    }
    return false;
}

// What a call works out about its columns, at the workspace's start.
struct ColumnTables {
    int64_t *offset;  // per column: its first source element's offset in its group's padded x
    int64_t *column;  // per position of a dw row (the layout's order): its column
    int64_t *tap_at;  // per tap: its offset in a padded plane
    Window *tap;      // per plane tap: its window
    Window *tile;     // per tile of columns: its window (its columns' windows' span)
    uint64_t *depths; // per tile: the depth taps (bits) its columns read (all bits from 65 deep)
};

int64_t column_tables_bytes(const FilterShape &s) {
    const int64_t words = checked_add(checked_mul(s.ck, 2, "workspace"), s.taps, "workspace");
    const int64_t windows = checked_add(s.tiles, s.kr * s.ks, "workspace");
    return checked_add(checked_mul(checked_add(words, s.tiles, "workspace"), 8, "workspace"),
                       checked_mul(windows, (int64_t)sizeof(Window), "workspace"), "workspace");
}

ColumnTables column_tables(const FilterShape &s, char *base) {
    ColumnTables t;
    t.offset = reinterpret_cast<int64_t *>(base);
    t.column = t.offset + s.ck;
    t.tap_at = t.column + s.ck;
    t.tap = reinterpret_cast<Window *>(t.tap_at + s.taps);
    t.tile = t.tap + s.kr * s.ks;
    t.depths = reinterpret_cast<uint64_t *>(t.tile + s.tiles);
    return t;
}

// The positions of dw's rows an item's columns [j0, j1) fall in: `count`
// runs of `len`, `step` apart from `first` (with other items' columns
// between, in blocks of several channels).
struct Runs {
    int64_t first, len, count, step;
};
Runs item_runs(const FilterShape &s, int64_t j0, int64_t j1) {
    if (s.cblock == 1 && s.last) {  // (channel, tap): each tap's run of the item's channels
        const int64_t c0 = j0 / s.taps, c1 = (j1 - 1) / s.taps + 1;
        return {c0, c1 - c0, s.taps, s.csg};
    }
    if (s.cblock == 1 || s.last) return {j0, j1 - j0, 1, 0};  // positions in the columns' order
    const int64_t block = s.cblock * s.taps;  // channels-first blocks: their channels' positions
    const int64_t c0 = j0 / block * s.cblock, c1 = std::min(s.csg, ((j1 - 1) / block + 1) * s.cblock);
    return {c0 * s.taps, (c1 - c0) * s.taps, 1, 0};
}

// Fills the tables: the columns in order (block, tap, channel), each tile's
// window widened by its columns' (no division a column: on ResNet-20's
// 64->64 8x8 they were a tenth of the pass).
void fill_column_tables(const FilterShape &s, const ColumnTables &t) {
    const int64_t plane_taps = s.kr * s.ks;
    for (int64_t tap = 0; tap < s.taps; ++tap) {
        const int64_t plane_tap = tap % plane_taps;
        t.tap_at[tap] =
            tap / plane_taps * s.dz * s.src.slice + s.src.tap_offset(plane_tap / s.ks * s.dh, plane_tap % s.ks * s.dw);
    }
    for (int64_t tap = 0; tap < plane_taps; ++tap) t.tap[tap] = tap_window(s, tap);
    // The tile's span so far: rows [r0, r1), columns [c0, c1), depth taps.
    int64_t r0 = s.ho, r1 = 0, c0 = s.wo, c1 = 0, j = 0, tile = 0, in_tile = 0;
    uint64_t depths = 0;
    for (int64_t first = 0; first < s.csg; first += s.cblock) {
        const int64_t width = std::min(s.cblock, s.csg - first);
        for (int64_t tap = 0; tap < s.taps; ++tap) {
            const Window w = t.tap[tap % plane_taps];
            const int64_t at = t.tap_at[tap];
            const uint64_t depth = s.kz <= 64 ? uint64_t(1) << (tap / plane_taps) : ~uint64_t(0);
            for (int64_t c = first; c < first + width; ++c, ++j) {
                t.offset[j] = c * s.src.plane + at;
                t.column[s.last ? tap * s.csg + c : c * s.taps + tap] = j;
                depths |= depth;
                if (w.r1 > w.r0) {
                    r0 = std::min(r0, w.r0), r1 = std::max(r1, w.r1);
                    c0 = std::min(c0, w.c0), c1 = std::max(c1, w.c0 + w.len);
                }
                if (++in_tile == s.nc || j + 1 == s.ck) {
                    t.depths[tile] = depths;
                    t.tile[tile++] = r1 > r0 ? Window{r0, r1, c0, c1 - c0} : Window{0, 0, 0, 0};
                    r0 = s.ho, r1 = 0, c0 = s.wo, c1 = 0, in_tile = 0, depths = 0;
                }
            }
        }
    }
}

// Columns per tile for nv filter vectors: nv * nc accumulators (24, or 16
// for one vector: at most a transpose's 16 columns).
// With AVX2 a vector of 16 filters is two ymm halves and there are 16
// registers: one vector x 6 columns (12 accumulators, 2 dy halves and a
// broadcast).
int columns_for(int nv) {
    if (cpu_isa() == Isa::avx2) return kAvx2Columns;
    return nv == 1 ? 16 : nv == 2 ? 12 : nv == 3 ? 8 : 6;
}

// The columns a tile takes for `ck` columns in all, where each of `share`
// threads takes a share of the tiles (a layer with fewer filter vectors
// than threads splits its columns): at most columns_for(nv) and at least
// half of it, as few tiles a share x (products + 2 cycles of loads and
// loop a position) as cover them. A partial last tile repeats its last
// column, so 27 columns (MobileNet's 3->32 conv1: 3 channels x 9 taps) as
// 12 + 12 + 3 ran 36 columns' products; as 9 + 9 + 9 they run 27, and on
// two threads as 7 + 7 | 7 + 6 rather than 9 + 9 | 9.
int balanced_columns(int64_t ck, int nv, int64_t share) {
    const int widest = columns_for(nv);
    if (cpu_isa() != Isa::avx512) return widest;
    auto cost = [&](int nc) { return ceil_div(ceil_div(ck, (int64_t)nc), share) * (nv * nc + 2); };
    int best = widest;
    for (int nc = widest - 1; 2 * nc >= widest; --nc)
        if (cost(nc) < cost(best)) best = nc;
    return best;
}

FilterShape make_shape(const ConvGeometry &g, size_t es, int threads) {
    FilterShape s;
    s.last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    s.n = g.n, s.groups = g.groups, s.csg = g.cg(), s.cdg = g.kg(), s.k = g.k;
    s.dout = g.out[0], s.ho = g.out[1], s.wo = g.out[2], s.positions = s.dout * s.ho * s.wo;
    s.kz = g.kernel[0], s.kr = g.kernel[1], s.ks = g.kernel[2];
    s.dz = g.dilation[0], s.dh = g.dilation[1], s.dw = g.dilation[2];
    s.stride_h = g.stride[1], s.stride_w = g.stride[2], s.pad_top = g.pad_begin[1], s.pad_left = g.pad_begin[2];
    s.in_h = g.in[1], s.in_w = g.in[2];
    s.taps = s.kz * s.kr * s.ks;
    s.ck = s.csg * s.taps;
    s.dvec = ceil_div(s.cdg, kLanes);
    s.src = direct_source(g);
    s.nv = cpu_isa() == Isa::avx2 ? 1 : (int)std::clamp<int64_t>(s.dvec, 1, 4);
    s.kblocks = ceil_div(s.dvec, (int64_t)s.nv);
    const int64_t blocks = std::max<int64_t>(s.groups * s.kblocks, 1);  // 0 with no filters
    // Few filter blocks on large planes (conv1 layers: 1 block of 2-4
    // vectors, 27-147 columns) split the rows too, so that the threads need
    // not split the few columns (each re-reading all of dy, in items of 2
    // tiles against 1): kRowParts items a block, each over its share of
    // every slice's rows, their sums added in order at the end. A count
    // from the geometry alone: the sums' order does not depend on the
    // threads.
    s.row_parts = blocks <= kRowPartBlocks && s.ho >= kRowPartRows ? kRowParts : 1;
    threads = std::max(threads, 1);
    s.nc = balanced_columns(s.ck, s.nv, ceil_div(threads, blocks * s.row_parts));
    // Channels-first tiles of 16 accumulators (4 x 4, 2 x 8) where the
    // source channels come in as many (a column block of the windows, below,
    // then that many channels), against 24 (4 x 6, 2 x 12); 1 thread, batch
    // 1, 3-7 alternated rounds: ResNet-20's 64->64 8x8 1.03-1.04x,
    // ResNet-50's 3x3 layers 1.02-1.05x (its strided 128->128 0.98-1.04x),
    // 64->64 56x56 1.06x; 2 x 8: ResNet-20's 32->32 16x16 1.045x, strided
    // 16->32 1.024x, the digits' 16->32 8x8 1.033x, 32->32 56x56 1.02x;
    // 2 threads 0.97-1.12x, within the host's drift there. The same sums.
    const int narrow = kLanes / s.nv;
    if (cpu_isa() == Isa::avx512 && !s.last && s.nv >= 2 && s.taps > 1 && s.csg % narrow == 0) s.nc = narrow;
    const int64_t row_bytes = s.nv * kLanes * s.wo * (int64_t)es;
    s.chunk_rows = std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(row_bytes, 1), 1,
                                       std::max<int64_t>(s.ho, 1));
    s.tiles = ceil_div(s.ck, (int64_t)s.nc);
    // Items: every item streams its filter block's dy over all positions,
    // so where that outgrows L2 (conv1 layers: 12.8 MB for 64 filters on
    // 224x224 at batch 1) as few items as keep the threads busy -- one
    // column tile an item read it 5 times on VGG's conv1_1; else 4 a
    // thread. Either way a multiple of the threads where the tiles allow,
    // and long row segments of dw per item (each row is written once,
    // whole across the item's columns: 64 short ones per item cost ~1 ms
    // of misses on 512->512 7x7's 9.4 MB).
    // (in double: n * positions may be near 2^62 on wrapped tensors)
    const bool streams = (double)s.n * (double)s.positions * s.nv * kLanes * (double)es > (1 << 20);
    int64_t parts = std::max(ceil_div((streams ? 1 : 4) * (int64_t)threads, blocks * s.row_parts),
                             ceil_div(s.tiles, kMaxTilesPerItem));
    while ((blocks * s.row_parts * parts) % threads != 0 && parts < s.tiles) ++parts;
    parts = std::clamp<int64_t>(parts, 1, std::max<int64_t>(s.tiles, 1));
    s.item_tiles = std::max<int64_t>(1, ceil_div(s.tiles, parts));
    // Columns (channel, tap) keep an item's columns on few channels, whose
    // source rows its tiles then read from L1 for every tap. Channels-last
    // dw rows are (tap, channel), so there an item takes whole channels,
    // 16 or a multiple (each tap's run of them whole lines of dw), where
    // such a count of columns is a whole number of tiles.
    s.cblock = 1;
    if (s.last && s.item_tiles < s.tiles) {
        const int64_t unit = std::lcm<int64_t>(s.nc, kLanes * s.taps) / s.nc;  // tiles
        if (unit > kMaxTilesPerItem || unit > s.tiles)
            s.cblock = std::max<int64_t>(s.csg, 1);  // (tap, channel)
        else
            s.item_tiles = std::max(unit, s.item_tiles / unit * unit);
    }
    // Channels-first, where taps read the padding (any padding, or a last
    // row or column short of the source's end), a tile's columns are one
    // tap of nc channels, so that it sums only the positions of its window:
    // on 8x8 planes at 3x3 a sixth of the products are with the padding's
    // zeros, on 14x14 a ninth. A block of nc channels' columns still reads
    // those channels' rows for all its taps, as (channel, tap) did.
    // Items then take whole blocks (taps tiles each), each storing whole runs
    // of dw's rows, where that still makes as many items as wanted; else
    // on one thread only: items sharing a block each store its lines (with
    // their lanes in them) and, at 2 threads, both threads' stores went to
    // the same lines (ResNet-20's 16->16 32x32 0.85x, the digits' 16->32
    // 8x8 0.67x).
    if (!s.last && s.taps > 1 && s.csg > 1 && windows_matter(s)) {
        const int64_t whole = s.item_tiles >= s.tiles ? s.item_tiles : s.item_tiles / s.taps * s.taps;
        if (whole > 0 && ceil_div(s.tiles, whole) >= parts)
            s.cblock = s.nc, s.item_tiles = whole;
        else if (threads == 1)
            s.cblock = s.nc;
    }
    s.items = s.row_parts * blocks * ceil_div(s.tiles, s.item_tiles);
    s.slot = s.item_tiles * s.nv * s.nc * kLanes;
    // x padded and dy laid out a block of images at a time, a block that
    // stays in L2 for the items that read it next: the whole batch at once
    // went out to memory and came back (a quarter of a batch-32 pass on
    // CIFAR ResNet-20's 16->16 32x32). Only where an image fits such a
    // block and the items' sums, carried from block to block, stay in L2
    // too: ResNet-50's 512->512 7x7 at batch 8 (a 9.4 MB dw) lost 0.78x
    // to reading them back each time, its 64->64 56x56 (1.7 MB an image)
    // 0.82x.
    const int64_t x_image = checked_mul(g.c, s.src.plane, "workspace");
    const int64_t dy_image = checked_mul(s.groups * s.dvec, s.positions * kLanes, "workspace");
    const double image_bytes = ((double)x_image + (double)dy_image) * (double)es;
    const double sums_bytes = (double)s.items * (double)s.slot * (double)es;
    const bool blocked = image_bytes <= kBlockBytes && sums_bytes <= kBlockBytes / 2;
    s.block_images = std::clamp<int64_t>(blocked ? (int64_t)(kBlockBytes / image_bytes) : s.n, 1,
                                         std::max<int64_t>(s.n, 1));
    s.image_blocks = ceil_div(s.n, s.block_images);
    // Channels-last dy of few filters is read where it lies: a position's
    // filters are one run of at most kInPlaceDyBytes, so a chunk's
    // positions spread over L1's sets as the laid-out copy's do, and the
    // copy (a fifth of MobileNet's 3->32 224x224 backward-filter, each
    // line of dy read from L3 and written once more) goes. Whole vectors
    // only: lanes past a group's filters would read the next group's, or
    // past dy's end.
    // With AVX2 (its compiled 1 x 6 tile made to read dy in place, against
    // the copy by vectors; Zen 3, batch 1, 3 alternated rounds): MobileNet's
    // conv1 1.08x, ResNet-50's 0.99x, VGG's 3->64 224x224 0.84x: the copy stays.
    s.dy_in_place = s.last && es == sizeof(float) && cpu_isa() == Isa::avx512 && s.cdg % kLanes == 0 &&
                    s.k * (int64_t)es <= kInPlaceDyBytes;
    // Else, where an image's dy outgrows that block and one item reads each
    // filter vector's dy, that item lays out the chunk it reads next into
    // the thread's buffer, in L1, instead: laid out whole, dy went to
    // memory and came back. 1 thread, batch 1, 3 alternated rounds:
    // MobileNet's conv1 3->32 s2 1.30x, 3->64 224x224 3x3 1.32x, ResNet-50's
    // conv1 1.07x, 32->32 112x112 1.05x; where several items read the same
    // dy (column blocks), each laid it out again: 64->64 56x56 0.94x.
    // At 2+ threads also where each thread's items read their dy from
    // vectors another thread laid out, and no thread would lay them out
    // more than once (column blocks no more than threads): lines written by
    // one core and read by the other cost ~30 ns each on Zen 4. 2 threads,
    // strict, batch 1, 5 alternated runs: MNIST's 1->32 28x28 1.58x,
    // ResNet-20's 3->16 stem 1.80x, LeNet-5's 6->16 5x5 1.16x, the rest of
    // the small suite 1.00-1.04x. Every item laying out all of its dy
    // (column blocks up to 8 a thread) lost 0.95x on 32->32 16x16.
    const int64_t column_blocks = ceil_div(s.tiles, s.item_tiles);
    s.chunked = !s.dy_in_place && ((!blocked && column_blocks == 1) || (threads > 1 && column_blocks <= threads));
    s.chunk_vec = s.chunk_rows * s.wo * kLanes;
    // A chunked item asks for its next chunk's dy while it lays out the current
    // one where the pass's dy is at least kPastCacheBytes (read from memory,
    // not L3). 1 thread, strict, 6 alternated rounds: MobileNet's conv1 (3->32
    // 224x224, stride 2) at batch 8 1.04-1.10x; at batch 1 (1.6 MB) it cost
    // 0.96x, so not there.
    s.chunk_ahead = s.chunked && (double)s.n * (double)s.k * (double)s.positions * (double)es >= kPastCacheBytes;
    // Where neither, at 2+ threads, each thread lays out the filter blocks'
    // dy its items read into a copy of its own, at their first use in a
    // block of images: laid out once by all threads, half of every item's
    // dy came from the other core. 2 threads, strict, batch 1, 7 alternated
    // runs: ResNet-20's 16->16 32x32 1.21x, its other layers and the
    // digits' 16->32 8x8 1.02-1.10x, MNIST's 32->64 26x26 1.06x; ResNet-50's
    // 3x3 layers even (0.98-1.02x).
    const double dy_block_bytes = (double)s.block_images * (double)dy_image * (double)es;
    s.dy_per_thread = ThreadCopies::apply(threads, blocks) && !s.chunked && !s.dy_in_place &&
                      dy_block_bytes <= kDyCopyBytes;
    const int64_t source = checked_mul(checked_mul(s.block_images, x_image, "workspace"),
                                       (int64_t)es, "workspace");
    s.source_at = (size_t)round_up(column_tables_bytes(s), 64);
    s.dy_at = (size_t)round_up(checked_add((int64_t)s.source_at, source, "workspace"), 64);
    const int64_t dy_block = checked_mul(s.block_images, dy_image, "workspace");
    const int64_t dy = s.dy_in_place ? 0
                       : checked_mul(s.chunked         ? checked_mul(threads, s.nv * s.chunk_vec, "workspace")
                                     : s.dy_per_thread ? checked_mul(threads, dy_block, "workspace")
                                                       : dy_block,
                                     (int64_t)es, "workspace");
    s.slots_at = (size_t)round_up(checked_add((int64_t)s.dy_at, dy, "workspace"), 64);
    const int64_t slots = s.image_blocks > 1 || s.row_parts > 1 ? s.items : threads;
    s.total = (size_t)checked_add((int64_t)s.slots_at,
                                  checked_mul(checked_mul(slots, s.slot, "workspace"), (int64_t)es,
                                              "workspace"),
                                  "workspace");
    return s;
}

// Small filters over a batch split the batch (cpu/batch_parts.h): each
// part swept whole by one thread, x padded and dy laid out into that
// thread's region of the workspace. Split by filters and columns instead
// (make_shape), 2 threads ran ResNet-20's 16->16 32x32 at 1.30x one
// thread's speed and MNIST's 1->32 28x28 slower than one.
struct Split {
    int64_t parts;       // parts of the batch (1: not split)
    FilterShape s;       // the shape of a part (of the largest: ceil(n / parts) images)
    size_t region;       // workspace bytes a thread sweeping a part uses (a shape's total)
    size_t partials_at;  // parts 1 ... parts - 1's copies of dw (part 0's is dw)
    size_t total;
};

Split make_split(const ConvGeometry &g, size_t es, int threads) {
    Split p;
    const double dw_bytes = (double)g.k * (double)g.cg() * (double)g.kernel_size() * (double)es;
    p.parts = batch_parts(g.n, dw_bytes);
    if (p.parts == 1) {
        p.s = make_shape(g, es, threads);
        p.region = p.partials_at = p.total = p.s.total;
        return p;
    }
    ConvGeometry part = g;
    part.n = ceil_div(g.n, p.parts);
    p.s = make_shape(part, es, 1);
    p.region = (size_t)round_up((int64_t)p.s.total, 64);
    const int64_t regions = std::clamp<int64_t>(threads, 1, p.parts);
    p.partials_at = (size_t)checked_mul((int64_t)p.region, regions, "workspace");
    p.total = (size_t)checked_add((int64_t)p.partials_at,
                                  checked_mul(p.parts - 1, (int64_t)dw_bytes, "workspace"), "workspace");
    return p;
}

// ---- dy, position-major with 16 filters a position

#if CONV_HAVE_AVX512_KERNELS
// Channels-last dy: a position's 16 filters are consecutive already, so
// laying a vector out is a copy of `lanes` floats a position (`stride`
// apart), zero past them: element by element it cost 0.36 of oneDNN on
// MobileNet's channels-last conv1.
CONV_TARGET_AVX512 void copy_positions_avx512(const float *from, int64_t stride, int64_t lanes, int64_t len,
                                              float *out) {
    const __mmask16 keep = first_lanes(lanes);
    for (int64_t p = 0; p < len; ++p) _mm512_store_ps(out + p * kLanes, _mm512_maskz_loadu_ps(keep, from + p * stride));
}

// The same with AVX2 (element by element it was a third of MobileNet's
// channels-last conv1 backward-filter on Zen 3; by vectors 1.36x that
// pass, VGG's 3->64 224x224 1.53x, ResNet-50's conv1 1.08x).
CONV_TARGET_AVX2 void copy_positions_avx2(const float *from, int64_t stride, int64_t lanes, int64_t len, float *out) {
    for (int64_t p = 0; p < len; ++p) copy_panel_step_avx2(out + p * kLanes, from + p * stride, lanes);
}
#endif

// Vector v of group gi of image n, positions [p0, p0 + len):
// out[(p - p0) * 16 + l] = dy(filter v * 16 + l, p).
template <class T>
void lay_out_vector(const FilterShape &s, const T *dy, int64_t n, int64_t gi, int64_t v, int64_t p0,
                    int64_t len, T *out, int64_t ahead = 0) {
    const int64_t m0 = gi * s.cdg + v * kLanes, lanes = std::min<int64_t>(kLanes, s.cdg - v * kLanes);
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>)
        if (!s.last && cpu_isa() == Isa::avx512)
            return transpose_rows_ahead_avx512(dy + (n * s.k + m0) * s.positions + p0, s.positions, lanes, len,
                                               out, ahead);
    if constexpr (std::is_same_v<T, float>)
        if (!s.last && cpu_isa() == Isa::avx2)
            return transpose_rows_avx2(dy + (n * s.k + m0) * s.positions + p0, s.positions, lanes, len, out);
    if constexpr (std::is_same_v<T, float>)
        if (s.last && cpu_isa() == Isa::avx512)
            return copy_positions_avx512(dy + (n * s.positions + p0) * s.k + m0, s.k, lanes, len, out);
    if constexpr (std::is_same_v<T, float>)
        if (s.last && cpu_isa() == Isa::avx2)
            return copy_positions_avx2(dy + (n * s.positions + p0) * s.k + m0, s.k, lanes, len, out);
#endif
    const int64_t mstride = s.last ? 1 : s.positions, pstride = s.last ? s.k : 1;
    const T *image = dy + n * s.k * s.positions;
    for (int64_t p = p0; p < p0 + len; ++p)
        for (int64_t l = 0; l < kLanes; ++l)
            out[(p - p0) * kLanes + l] = l < lanes ? image[(m0 + l) * mstride + p * pstride] : T(0);
}

// ---- the register tiles

// How a chunk's sums meet those of the chunks before it in `sums`.
enum class Mode { fresh, running, partial };

struct Tile {
    const void *dy;        // the tile's first filter vector at the chunk's first row
    int64_t dy_vec;        // elements from one filter vector's dy to the next's
    int64_t dy_pos = kLanes;  // elements from one position's dy to the next's
    const void *x[kMaxColumns];  // each column's source element at the chunk's first row
    int64_t rows, wo, rstep;  // wo: positions from one row's dy to the next's
    int64_t len;           // positions summed a row, from the first (the tile's window: <= wo)
    void *sums;            // [column][nv][16]
    Mode mode;
};

template <class T>
void tile_portable(const Tile &t, int nv, int nc) {
    T *sums = static_cast<T *>(t.sums);
    for (int j = 0; j < nc; ++j)
        for (int v = 0; v < nv; ++v)
            for (int l = 0; l < kLanes; ++l) {
                const T *dy = static_cast<const T *>(t.dy) + v * t.dy_vec + l;
                const T *x = static_cast<const T *>(t.x[j]);
                T acc = T(0);
                if (t.mode == Mode::running) acc = sums[(j * nv + v) * kLanes + l];
                for (int64_t r = 0; r < t.rows; ++r)
                    for (int64_t ow = 0; ow < t.len; ++ow)
                        acc += dy[(r * t.wo + ow) * t.dy_pos] * x[r * t.rstep + ow];
                T &out = sums[(j * nv + v) * kLanes + l];
                out = t.mode == Mode::partial ? out + acc : acc;
            }
}

#if CONV_HAVE_AVX512_KERNELS
template <int NV, int NC>
CONV_TARGET_AVX512 void tile_avx512(const Tile &t) {
    float *sums = static_cast<float *>(t.sums);
    __m512 acc[NV][NC];
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[v][j] = t.mode == Mode::running ? _mm512_load_ps(sums + (j * NV + v) * kLanes)
                                                : _mm512_setzero_ps();
    const float *dy = static_cast<const float *>(t.dy);
    const float *x0 = static_cast<const float *>(t.x[0]);
    int64_t off[NC];  // each column's source relative to the first's
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j) off[j] = static_cast<const float *>(t.x[j]) - x0;
    for (int64_t r = 0; r < t.rows; ++r, dy += t.wo * t.dy_pos, x0 += t.rstep)
        for (int64_t ow = 0; ow < t.len; ++ow) {
            __m512 d[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) d[v] = _mm512_loadu_ps(dy + v * t.dy_vec + ow * t.dy_pos);
#pragma GCC unroll 16
            for (int j = 0; j < NC; ++j) {
                const __m512 b = _mm512_set1_ps(x0[off[j] + ow]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[v][j] = _mm512_fmadd_ps(d[v], b, acc[v][j]);
            }
        }
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            float *out = sums + (j * NV + v) * kLanes;
            _mm512_store_ps(out, t.mode == Mode::partial ? _mm512_add_ps(_mm512_load_ps(out), acc[v][j])
                                                         : acc[v][j]);
        }
}

// The instantiations: nv vectors (a group's last block may have fewer than
// the shape's) x the shape's columns.
using TileFn = void (*)(const Tile &);
template <int NC>
TileFn tile_for(int nv) {
    switch (nv) {
    case 1: return tile_avx512<1, NC>;
    case 2: return tile_avx512<2, NC>;
    case 3: return tile_avx512<3, NC>;
    default: return tile_avx512<4, NC>;
    }
}

// Every width balanced_columns may choose (half of 6 up to 16).
template <int... NC>
TileFn tile_for(int nv, int nc, std::integer_sequence<int, NC...>) {
    TileFn fn = nullptr;
    ((fn = nc == NC + 3 ? tile_for<NC + 3>(nv) : fn), ...);
    return fn;
}
TileFn tile_for(int nv, int nc) { return tile_for(nv, nc, std::make_integer_sequence<int, 14>()); }

// The item's sums ([column][nv][16], its tiles one after another) into 16
// positions of dw's rows (`ld` apart), position j from column cols[j]
// (none where negative): per filter vector one 16 x 16 transpose and a
// masked store per filter.
CONV_TARGET_AVX512 void store_avx512(const float *sums, int nv, const int64_t *cols, int64_t filters, float *out,
                                     int64_t ld) {
    __mmask16 keep = 0;
    for (int j = 0; j < 16; ++j) keep |= __mmask16((cols[j] >= 0) << j);
    for (int v = 0; v < nv; ++v) {
        __m512 r[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j)
            r[j] = cols[j] >= 0 ? _mm512_load_ps(sums + (cols[j] * nv + v) * kLanes) : _mm512_setzero_ps();
        transpose16(r);
        const int64_t rows = std::min<int64_t>(kLanes, filters - v * kLanes);
#pragma GCC unroll 16
        for (int l = 0; l < 16; ++l)
            if (l < rows) _mm512_mask_storeu_ps(out + (v * kLanes + l) * ld, keep, r[l]);
    }
}

// AVX2: one vector of filters (two ymm halves) x kAvx2Columns columns.
CONV_TARGET_AVX2 void tile_avx2(const Tile &t) {
    constexpr int NC = kAvx2Columns;
    float *sums = static_cast<float *>(t.sums);
    __m256 acc[2 * NC];  // [column][half]; flat, every loop unrolled: kept in registers
#pragma GCC unroll 16
    for (int a = 0; a < 2 * NC; ++a)
        acc[a] = t.mode == Mode::running ? _mm256_load_ps(sums + a * 8) : _mm256_setzero_ps();
    const float *dy = static_cast<const float *>(t.dy);
    const float *x0 = static_cast<const float *>(t.x[0]);
    int64_t off[NC];  // each column's source relative to the first's
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j) off[j] = static_cast<const float *>(t.x[j]) - x0;
    const int64_t rows = t.rows, wo = t.wo, len = t.len, rstep = t.rstep;
    for (int64_t r = 0; r < rows; ++r, dy += wo * kLanes, x0 += rstep)
        for (int64_t ow = 0; ow < len; ++ow) {
            const __m256 d0 = _mm256_load_ps(dy + ow * kLanes), d1 = _mm256_load_ps(dy + ow * kLanes + 8);
#pragma GCC unroll 16
            for (int j = 0; j < NC; ++j) {
                const __m256 b = _mm256_broadcast_ss(x0 + off[j] + ow);
                acc[2 * j] = _mm256_fmadd_ps(d0, b, acc[2 * j]);
                acc[2 * j + 1] = _mm256_fmadd_ps(d1, b, acc[2 * j + 1]);
            }
        }
#pragma GCC unroll 16
    for (int a = 0; a < 2 * NC; ++a) {
        float *out = sums + a * 8;
        _mm256_store_ps(out, t.mode == Mode::partial ? _mm256_add_ps(_mm256_load_ps(out), acc[a]) : acc[a]);
    }
}
#endif

template <class T>
void run_tile(const Tile &t, int nv, int nc) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) {
        if (cpu_isa() == Isa::avx512) return tile_for(nv, nc)(t);
        if (cpu_isa() == Isa::avx2) return tile_avx2(t);
    }
#endif
    tile_portable<T>(t, nv, nc);
}

// Columns cols[0..15] of an item's sums (none where negative) into each
// filter's row of dw (`ld` apart), one after the other from `out`.
template <class T>
void store(const T *sums, int nv, const int64_t *cols, int64_t filters, T *out, int64_t ld) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() == Isa::avx512) return store_avx512(sums, nv, cols, filters, out, ld);
#endif
    for (int v = 0; v < nv; ++v)
        for (int64_t l = 0; l < std::min<int64_t>(kLanes, filters - v * kLanes); ++l)
            for (int64_t j = 0; j < kLanes; ++j)
                if (cols[j] >= 0) out[(v * kLanes + l) * ld + j] = sums[(cols[j] * nv + v) * kLanes + l];
}

// The generated tiles of one call (cpu/jit/filter_tile.h), for the
// shape's filter vectors a tile (an item with fewer, the last block of a
// group's filters, runs compiled): per tile of columns
// -- tile ti of column block cb at [cb * item_tiles + ti] -- the kernel
// made for its columns' offsets. The compiled 1 x 16 tile spills six of
// its sixteen column addresses and reloads them at every position; the
// generated one, 1 thread strict at batch 32, 7 interleaved rounds:
// ResNet-20's 16->16 3x3 1.34x, its 3->16 stem 1.28x, LeNet-5's 6->16 5x5
// 1.51x, the digits example's 1->16 1.33x. With 2-4 vectors (6-12
// columns) the compiled tile keeps them in registers; the generated one
// measured even on ResNet-50's layers before (0.98-1.01x), and on the AMX
// Xeon, 1 thread, 3 alternated rounds each way round, 1.02x at batch 1
// (256->256 14x14 1.05-1.08x), 1.055x at batch 8 (1.04-1.08x), 1.016x
// channels-last: generated for every shape now. Channels-first columns
// repeat their offsets with the taps, so a layer needs few kernels; past kMaxPatterns
// distinct ones (channels-last columns of many channels) the rest run
// compiled, as does everything when the lookup fails (no memory).
class GeneratedFilterTiles {
public:
    static constexpr size_t kMaxPatterns = 64;

    GeneratedFilterTiles(const FilterShape &s, const ColumnTables &tables, int64_t item_cols, int64_t cblocks) {
        if (!jit::filter_tiles_generated() || s.ck <= 0) return;
        try {
            look_up(s, tables, item_cols, cblocks);
        } catch (...) {
            fn_.clear();
            held_.clear();
        }
    }
    jit::FilterTileFn get(int64_t tile) const { return fn_.empty() ? nullptr : fn_[tile]; }

private:
    void look_up(const FilterShape &s, const ColumnTables &tables, int64_t item_cols, int64_t cblocks) {
        const int64_t *columns = tables.offset;
        fn_.assign((size_t)(cblocks * s.item_tiles), nullptr);
        std::map<std::pair<std::vector<int64_t>, int64_t>, jit::FilterTileFn> made;  // by offsets and window length
        jit::FilterTileSpec spec;
        spec.nv = s.nv, spec.nc = s.nc, spec.wo = s.wo;
        spec.dy_vec = s.dy_in_place ? kLanes : s.chunked ? s.chunk_vec : s.positions * kLanes;
        spec.dy_pos = s.dy_in_place ? s.k : kLanes;
        spec.offsets.resize(s.nc);
        for (int64_t cb = 0; cb < cblocks; ++cb) {
            const int64_t j0 = cb * item_cols, j1 = std::min(s.ck, j0 + item_cols);
            for (int64_t ti = 0; ti < ceil_div(j1 - j0, (int64_t)s.nc); ++ti) {
                const int64_t first = j0 + ti * s.nc;
                for (int j = 0; j < s.nc; ++j)  // a partial tile repeats its last column
                    spec.offsets[j] = columns[std::min(first + j, j1 - 1)] - columns[first];
                spec.len = tables.tile[cb * s.item_tiles + ti].len;
                if (spec.len == 0) continue;  // only products with the padding: not run
                auto found = made.find({spec.offsets, spec.len});
                if (found == made.end()) {
                    if (made.size() >= kMaxPatterns) continue;
                    jit::FilterTileFn fn = nullptr;
                    if (auto k = jit::filter_tile(spec)) {
                        held_.push_back(k);
                        fn = k->fn();
                    }
                    found = made.emplace(std::make_pair(spec.offsets, spec.len), fn).first;
                }
                fn_[cb * s.item_tiles + ti] = found->second;
            }
        }
    }
    std::vector<jit::FilterTileFn> fn_;
    std::vector<std::shared_ptr<const jit::FilterTileKernel>> held_;  // alive for the call
};

// The depth taps (bits, kz of them) of output slice oz that read inside
// x rather than its depth padding. A tile of columns whose taps all read
// the padding there adds only products with zeros: it is skipped, as the
// forward tiles leave such taps out (depth_mask) -- on ResNet3D-18's 2- and
// 4-deep layers a third of an edge slice's work.
uint64_t depth_taps_inside(const ConvGeometry &g, int64_t oz, int64_t kz) {
    uint64_t inside = 0;
    for (int64_t tz = 0; tz < kz; ++tz) {
        const int64_t iz = oz * g.stride[0] + tz * g.dilation[0] - g.pad_begin[0];
        if (iz >= 0 && iz < g.in[0]) inside |= uint64_t(1) << tz;
    }
    return inside;
}

// What a plan keeps for its float32 calls (Algorithm::plan_run), made for
// its thread count: the split and shape, the column tables and the
// generated tiles. Made per call they were ~10% of ResNet-20's 64->64 8x8
// pass at batch 1 (1 thread). Tables up to kPlannedTables: larger ones
// come with calls long enough not to notice them.
constexpr int64_t kPlannedTables = 1 << 20;  // bytes
struct FilterPlan final : RunPlan {
    int threads = 0;
    Split split;
    std::vector<int64_t> storage;  // the column tables'
    ColumnTables tables{};
    std::optional<GeneratedFilterTiles> generated;
    std::shared_ptr<const RunPlan> source;  // x's padding, for a block of images
};

template <class T>
void run_typed(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    const FilterPlan *plan = std::is_same_v<T, float> ? dynamic_cast<const FilterPlan *>(args.planned) : nullptr;
    if (plan && plan->threads != threads) plan = nullptr;
    std::optional<Split> own_split;  // without a plan, this call's
    const Split &split = plan ? plan->split : own_split.emplace(make_split(g, sizeof(T), threads));
    const FilterShape &s = split.s;
    char *base = static_cast<char *>(ws);
    ColumnTables own_tables{};
    if (!plan) own_tables = column_tables(s, base), fill_column_tables(s, own_tables);
    const ColumnTables &tables = plan ? plan->tables : own_tables;
    const int64_t *columns = tables.offset;
    const T *x = static_cast<const T *>(args.x), *dy = static_cast<const T *>(args.y);
    const int64_t vec_len = s.positions * kLanes, x_image = g.c * s.src.plane;
    T *dw = static_cast<T *>(args.w);
    const int64_t kblocks = s.kblocks, item_cols = s.nc * s.item_tiles;
    const int64_t cblocks = ceil_div(s.tiles, s.item_tiles);
    std::optional<GeneratedFilterTiles> own_generated;
    const GeneratedFilterTiles &generated =
        plan ? *plan->generated
             : own_generated.emplace(s, tables, item_cols, std::is_same_v<T, float> ? cblocks : 0);
    // The item (kb, gi, cb)'s sums into dw's rows, 16 positions of a run at
    // a time, each lane from its column's sums where that is the item's.
    auto store_item = [&](int64_t kb, int64_t gi, int64_t cb, const T *sums, T *out) {
        const int nv = (int)std::min<int64_t>(s.nv, s.dvec - kb * s.nv);
        const int64_t j0 = cb * item_cols, j1 = std::min(s.ck, j0 + item_cols);
        T *rows = out + (gi * s.cdg + kb * s.nv * kLanes) * s.ck;
        const Runs runs = item_runs(s, j0, j1);
        const int64_t filters = std::min<int64_t>(nv * kLanes, s.cdg - kb * s.nv * kLanes);
        int64_t lanes[kLanes];
        for (int64_t r = 0; r < runs.count; ++r) {
            const int64_t begin = runs.first + r * runs.step, end = begin + runs.len;
            for (int64_t p = begin; p < end; p += kLanes) {
                for (int l = 0; l < kLanes; ++l) {
                    const int64_t j = p + l < end ? tables.column[p + l] : -1;
                    lanes[l] = j >= j0 && j < j1 ? j - j0 : -1;
                }
                store(sums, nv, lanes, filters, rows + p, s.ck);
            }
        }
    };
    // Images [n_first, n_first + count) into `out` (dw, or a part's copy),
    // with the buffers at `region`.
    auto sweep = [&](int64_t n_first, int64_t count, char *region, T *out, int sweep_threads) {
        T *source = reinterpret_cast<T *>(region + s.source_at);
        T *dyv = reinterpret_cast<T *>(region + s.dy_at);
        T *slots = reinterpret_cast<T *>(region + s.slots_at);
        const int64_t image_blocks = ceil_div(count, s.block_images);
        for (int64_t ib = 0; ib < image_blocks; ++ib) {
            const int64_t n0 = n_first + ib * s.block_images, images = std::min(s.block_images, n_first + count - n0);
            const bool last_block = ib + 1 == image_blocks;
            ConvGeometry block = g;
            block.n = images;
            direct_pad_source(block, x + n0 * g.c * g.in_size(), source, pool, sweep_threads,
                              plan ? plan->source.get() : nullptr);
            ThreadCopies laid_out;  // dy_per_thread; pieces: the filter blocks gi * kblocks + kb
            if (!s.chunked && !s.dy_in_place && !s.dy_per_thread)
                pool.parallel_for(
                    images * s.groups * s.dvec,
                    [&](int64_t i, int) {
                        lay_out_vector(s, dy, n0 + i / (s.groups * s.dvec), i / s.dvec % s.groups, i % s.dvec, 0,
                                       s.positions, dyv + i * vec_len);
                    },
                    sweep_threads);
            pool.parallel_for(
                s.items,
                [&](int64_t item, int slot) {
                    const int64_t cb = item % cblocks, kb = item / cblocks % kblocks;
                    const int64_t gi = item / cblocks / kblocks % s.groups;
                    const int64_t part = item / cblocks / kblocks / s.groups;
                    const int64_t row0 = part * s.ho / s.row_parts, row1 = (part + 1) * s.ho / s.row_parts;
                    const int nv = (int)std::min<int64_t>(s.nv, s.dvec - kb * s.nv);
                    const int64_t j0 = cb * item_cols, j1 = std::min(s.ck, j0 + item_cols);
                    const int64_t tiles = ceil_div(j1 - j0, (int64_t)s.nc);
                    T *sums = slots + (s.image_blocks > 1 || s.row_parts > 1 ? item : slot) * s.slot;
                    // The laid-out dy the item reads: all threads', or its thread's own copy.
                    T *own_dy = s.dy_per_thread ? dyv + slot * s.block_images * s.groups * s.dvec * vec_len : dyv;
                    if (s.dy_per_thread && laid_out.first_use(slot, gi * kblocks + kb)) {
                        for (int64_t n = 0; n < images; ++n)
                            for (int v = 0; v < nv; ++v)
                                lay_out_vector(s, dy, n0 + n, gi, kb * s.nv + v, 0, s.positions,
                                               own_dy + ((n * s.groups + gi) * s.dvec + kb * s.nv + v) * vec_len);
                    }
                    const T *group_x = source + gi * s.csg * s.src.plane;
                    // dw's rows of the item, far apart and cold on large filters:
                    // asked for now (into L2) so that their misses overlap the
                    // tiles instead of stalling the copy at the end.
                    // (the runs of dw's rows its columns fall in: item_runs)
                    T *rows = out + (gi * s.cdg + kb * s.nv * kLanes) * s.ck;
                    const Runs runs = item_runs(s, j0, j1);
                    const int64_t filters = std::min<int64_t>(nv * kLanes, s.cdg - kb * s.nv * kLanes);
                    if (last_block && s.row_parts == 1)
                        for (int64_t f = 0; f < filters; ++f)
                            for (int64_t r = 0; r < runs.count; ++r)
                                for (int64_t b = 0; b < runs.len * (int64_t)sizeof(T); b += 64)
                                    __builtin_prefetch(
                                        reinterpret_cast<char *>(rows + f * s.ck + runs.first + r * runs.step) + b, 1,
                                        2);
                    const bool skips = s.kz > 1 && s.kz <= 64;  // tiles whose depth taps miss a slice
                    // Chunks of rows of one output slice (oz) at a time: the
                    // source's next slice is not a row on.
                    for (int64_t n = 0; n < images; ++n)
                        for (int64_t oz = 0; oz < s.dout; ++oz) {
                            const uint64_t inside = skips ? depth_taps_inside(g, oz, s.kz) : ~uint64_t(0);
                            for (int64_t r0 = row0; r0 < row1; r0 += s.chunk_rows) {
                                Tile t;
                                t.rows = std::min(s.chunk_rows, row1 - r0), t.wo = s.wo, t.rstep = s.src.rstep;
                                const int64_t r1 = r0 + t.rows;
                                if (s.dy_in_place) {
                                    t.dy = dy + ((n0 + n) * s.positions + (oz * s.ho + r0) * s.wo) * s.k +
                                           gi * s.cdg + kb * s.nv * kLanes;
                                    t.dy_vec = kLanes, t.dy_pos = s.k;
                                } else if (s.chunked) {  // the chunk's rows of the item's filter vectors
                                    T *chunk = dyv + slot * s.nv * s.chunk_vec;
                                    for (int v = 0; v < nv; ++v)
                                        lay_out_vector(s, dy, n0 + n, gi, kb * s.nv + v, (oz * s.ho + r0) * s.wo,
                                                       t.rows * s.wo, chunk + v * s.chunk_vec,
                                                       s.chunk_ahead ? t.rows * s.wo : 0);
                                    t.dy = chunk, t.dy_vec = s.chunk_vec;
                                } else {
                                    t.dy = own_dy + ((n * s.groups + gi) * s.dvec + kb * s.nv) * vec_len +
                                           (oz * s.ho + r0) * s.wo * kLanes;
                                    t.dy_vec = vec_len;
                                }
                                t.mode = n0 + n == n_first && oz == 0 && r0 == row0 ? Mode::fresh
                                         : args.strict                     ? Mode::partial
                                                                           : Mode::running;
                                const T *chunk_dy = static_cast<const T *>(t.dy);
                                for (int64_t ti = 0; ti < tiles; ++ti) {
                                    T *tile_sums = sums + ti * nv * s.nc * kLanes;
                                    t.sums = tile_sums;
                                    // The chunk's rows of the tile's window: products with x's
                                    // padding left out (none where a tap's depth reads only it).
                                    const Window &w = tables.tile[cb * s.item_tiles + ti];
                                    const int64_t a = std::max(r0, w.r0), b = std::min(r1, w.r1);
                                    if (b <= a || (skips && !(tables.depths[cb * s.item_tiles + ti] & inside))) {
                                        if (t.mode == Mode::fresh)
                                            std::fill(tile_sums, tile_sums + nv * s.nc * kLanes, T(0));
                                        continue;
                                    }
                                    t.rows = b - a, t.len = w.len;
                                    t.dy = chunk_dy + ((a - r0) * s.wo + w.c0) * t.dy_pos;
                                    const int64_t at =
                                        n * x_image + oz * s.src.sz * s.src.slice + a * s.src.rstep + w.c0;
                                    for (int j = 0; j < s.nc; ++j)  // a partial tile repeats its last column
                                        t.x[j] = group_x + columns[std::min(j0 + ti * s.nc + j, j1 - 1)] + at;
                                    jit::FilterTileFn fn = nv == s.nv ? generated.get(cb * s.item_tiles + ti) : nullptr;
                                    if (fn)
                                        fn(reinterpret_cast<const float *>(t.dy),
                                           reinterpret_cast<const float *>(t.x[0]), t.rows, t.rstep,
                                           reinterpret_cast<float *>(t.sums), (int64_t)t.mode);
                                    else
                                        run_tile<T>(t, nv, s.nc);
                                }
                            }
                        }
                    // Then into dw 16 columns at a time (row parts: below).
                    if (last_block && s.row_parts == 1)
                        store_item(kb, gi, cb, sums, out);
                },
                sweep_threads);
        }
        // Row parts: each block's parts' sums added in order into the first's, then stored.
        if (s.row_parts > 1)
            pool.parallel_for(
                s.items / s.row_parts,
                [&](int64_t item, int) {
                    const int64_t cb = item % cblocks, kb = item / cblocks % kblocks, gi = item / cblocks / kblocks;
                    const int nv = (int)std::min<int64_t>(s.nv, s.dvec - kb * s.nv);
                    const int64_t j0 = cb * item_cols, j1 = std::min(s.ck, j0 + item_cols);
                    const int64_t used = ceil_div(j1 - j0, (int64_t)s.nc) * nv * s.nc * kLanes;
                    T *first = slots + item * s.slot;
                    for (int64_t part = 1; part < s.row_parts; ++part) {
                        const T *other = slots + (part * (s.items / s.row_parts) + item) * s.slot;
                        for (int64_t e = 0; e < used; ++e) first[e] += other[e];
                    }
                    store_item(kb, gi, cb, first, out);
                },
                sweep_threads);
    };
    if (split.parts == 1) {
        sweep(0, g.n, base, dw, threads);
    } else {
        // Each part on one thread, in that thread's region of the workspace.
        T *partials = reinterpret_cast<T *>(base + split.partials_at);
        run_batch_parts(pool, threads, split.parts, dw, partials, g.k * s.ck, [&](int64_t part, int slot, T *out) {
            int64_t first, count;
            part_images(g.n, part, split.parts, &first, &count);
            sweep(first, count, base + slot * split.region, out, 1);
        });
    }
    if (args.bias)
        channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool,
                     threads);
}

}  // namespace

std::shared_ptr<const RunPlan> direct_filter_plan(const ConvGeometry &g, conv_dtype_t dtype, int threads) {
    if (dtype != CONV_DTYPE_FLOAT32) return nullptr;
    auto plan = std::make_shared<FilterPlan>();
    plan->threads = threads;
    plan->split = make_split(g, sizeof(float), threads);
    const FilterShape &s = plan->split.s;
    if (column_tables_bytes(s) > kPlannedTables) return nullptr;
    plan->storage.resize((size_t)ceil_div(column_tables_bytes(s), 8));
    plan->tables = column_tables(s, reinterpret_cast<char *>(plan->storage.data()));
    fill_column_tables(s, plan->tables);
    plan->generated.emplace(s, plan->tables, s.nc * s.item_tiles, ceil_div(s.tiles, s.item_tiles));
    ConvGeometry block = g;
    block.n = s.block_images;
    plan->source = direct_source_plan(block);
    return plan;
}

size_t direct_filter_workspace(const ConvGeometry &g, conv_dtype_t dtype, int threads) {
    return make_split(g, dtype_size(dtype), threads).total;
}

void direct_filter_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    if (args.dtype == CONV_DTYPE_FLOAT32)
        run_typed<float>(args, ws, pool, threads);
    else
        run_typed<double>(args, ws, pool, threads);
}

}  // namespace conv::cpu
