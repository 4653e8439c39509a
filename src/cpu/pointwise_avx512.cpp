// CONV_ALGO_GEMM_1X1 on AVX-512 (fp32, groups 1, all three passes), and on
// AVX2 CPUs (6 x 16 tiles over 16-column panels) where they measured faster
// than OpenBLAS (pw_avx512_covers).
// A pointwise pass is one GEMM, out[i][j] = sum_r A(i, r) * B(r, j), here
// computed in 8 x 48 register tiles that keep their sums in 24 registers
// over the whole reduction and are stored once, bias and ReLU applied on the
// way out.
//
// Why not sgemm: a 1x1 layer's reduction is short (64-2048 channels) and
// its matrices change every call, so OpenBLAS's packing of both operands and
// its blocking of the reduction are a large share of the work; it reached
// 75-85% of the FMA peak on ResNet-50's 1x1 layers, oneDNN ~100%. Here only
// B is packed, into 48-column panels (each tile then reads one sequential
// stream, zero-padded so no load needs a mask); A is read in place, one
// broadcast per row and reduction step.
//
//                             A (broadcast)            B (packed)
//   forward, channels-first   W (K x C)                x of one image (C x P)
//     (few channels both sides, or planes of kInPlacePlane+: x read in place)
//   forward, channels-last    x (N*P x C)              W transposed, once per call
//     (up to 1024 positions, x in L2: a panel at a time, the next one's W asked into L2, last_panel_by_panel)
//     (few positions, 1024+ channels: per image as y^T = W x^T, last_by_image_avx512)
//   bwd-data, channels-first  W^T in strips, per call  dy of one image (K x P)
//     (AVX2: strips of 6 on 1x1 layers; few channels or large planes: dy read in place)
//     on planes under 100     dy read transposed       W (K x C), once per call
//     positions, 256+ channels
//   bwd-data, channels-last   dy (N*P x K)             W (K x C), once per call
//     (128-1024 positions, dy in L2: a panel at a time, as the forward)
//     (few positions, W of 2 MiB+: W a block of rows at a time, last_w_blocks)
//   bwd-filter, channels-first  dy of one image (K x P)  x transposed, per chunk of positions
//   bwd-filter, channels-last   dy read across (K apart) x (N*P x C), per chunk of positions
//     (from up to 64 channels onto 128+ filters: dW^T = x^T dy, x read across, dy's rows packed)
//
// 1-D convolutions at stride 1 (im2col_gemm's, pw_avx512_covers_taps) are
// the same GEMMs with (channel, tap) pairs in the reduction: channels-first
// B's rows (forward, backward-data) or dW's columns (backward-filter) are
// unfolded as the panels are packed, the padding masked off; channels-last
// A's rows are read a tap's channels at a time, rows run in ranges of equal
// valid taps, and backward-filter is dW^T = x^T dy tap by tap.
//
// Channels-first backward-data on small planes computes dx transposed (rows
// are positions, columns channels): W is then B, packed once per call as a
// plain copy of its rows (for a batch of up to four, not copied: read in
// place a block of W's rows at a time, run_w_blocks), and each tile's sums
// are scattered into dx's channel rows. Otherwise, on AVX-512, it is the
// forward's GEMM with W^T in W's place, as strips of 16 of W's columns
// (strip_w); on AVX2 too (1x1 layers, the planes of 1024+ positions it
// takes), in strips of 6. A plan may prepare what is made of W per call
// (W's panels, or its strips) once (AVX-512): pw_avx512_prepare_weights.
//
// Backward-filter reduces over positions: chunks of them (an L2 share of
// B, the same chunks for any thread count, so the sums' order is too) are
// accumulated into dW, which the threads split by columns (channels), or
// by rows (filters) when the channels are too few.
//
// Accuracy: each output is a plain sum of its products (a dot product's
// bound), so a strict context keeps it.
#include "cpu/pointwise_avx512.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/epilogue.h"
#include "cpu/past_cache.h"
#include "cpu/pointwise_dot_filter.h"
#include "cpu/thread_copies.h"

namespace conv::cpu {
namespace {

constexpr int kRows = 8;                       // tile rows (broadcast operand)
constexpr int kVecs = 3;                       // tile columns, in 16-lane vectors
constexpr int64_t kPanel = 16 * kVecs;         // columns of a packed panel
// AVX2 (16 ymm registers): 6 rows x 2 vectors of 8 -- 12 accumulators, the
// two panel vectors and a broadcast -- over 16-column panels.
constexpr int kRowsAvx2 = 6;
constexpr int kVecsAvx2 = 2;
constexpr int64_t kPanelAvx2 = 8 * kVecsAvx2;

// The blocking of the ISA in use: tile rows, panel columns.
int tile_rows() { return cpu_isa() == Isa::avx2 ? kRowsAvx2 : kRows; }
int64_t panel_width() { return cpu_isa() == Isa::avx2 ? kPanelAvx2 : kPanel; }
constexpr int64_t kBlockBytes = 256 << 10;     // packed B of a channels-first item: an L2 share
constexpr int64_t kRowBlockBytes = 128 << 10;  // A rows a channels-last item walks per panel
// On AVX-512 a channels-last item's row tile stays while the panels pass where all of
// W's panels are at most this (else each panel stays while the item's row
// tiles pass): a row tile's A then comes into L1 once, not once a panel
// from L2. 1 thread, 3 alternated rounds, AMX Xeon, forward: 16->64
// 112x112 1.21x, 32->64 1.16-1.17x, 32->256 56x56 1.13x, 128->64 1.04x,
// 64->256, 128->128, 256->128 1.01-1.03x (backward-data 1.00-1.035x); W of
// 1 MiB 0.95x (512->512 28x28 at batch 4).
constexpr int64_t kRowsOuterBytes = 512 << 10;
// Channels-first backward-data runs transposed on planes of fewer positions
// (7x7, 8x8, 9x9) onto this many channels or more. 1 thread, strict,
// interleaved (7 rounds at batch 1, 5 at batch 8), against libconv's SGEMM:
// 512->2048 7x7 1.10x (batch 8 1.06x, 2 threads 1.23x), 2048->512 1.10x
// (1.40x, 1.28x), 1024->256 1.14x; 14x14 planes lost 0.75-0.85x (the
// panel is read from L2 by 25 row tiles), and 64->256 8x8 0.72-0.77x (a
// 16-column panel per 48).
constexpr int64_t kTransposedBelow = 100;
constexpr int64_t kTransposedChannels = 256;
// The transposed backward-data on up to kBlockedImages images reads W
// where it lies, a panel's columns kBlockSteps rows at a time, every row
// tile of every image running those steps (run_w_blocks), instead of
// copying it whole into panels. 1 thread, 3 alternated rounds, 512->1024,
// 1024->1024, 512->2048, 2048->512 7x7, against the whole copy made under
// the tiles (CoPack), when each block went through an L1 buffer: batch 1
// 1.06-1.18x (2 threads 1.08-1.19x), batch 2 1.01-1.17x, batch 4 1.07x,
// batch 8 even (0.97-1.04x). Read in place (Zen 4, against the L1
// buffers of 128 steps): batch 1 1.04-1.05x (256->1024 8x8 too), 2 threads
// 1.03-1.05x, batch 2 1.01-1.02x, batch 4 even; channels-last at batch 2
// 0.99-1.02x. The blocks' length now only sets how often the sums pass
// through memory: 256 steps against 128 1.005-1.009x, 64 0.98x, 1024 even.
constexpr int64_t kBlockSteps = 256;
constexpr int64_t kBlockedImages = 4;
// Channels-last forward (and backward-data) over at most this many
// positions (all images'), whose x (dy) is at most this large, runs panel
// by panel (last_panel_by_panel).
constexpr int64_t kPanelByPanelRows = 1024;
constexpr int64_t kPanelByPanelBytes = 1 << 20;
// Backward-data so from this many positions (fewer run on libconv's SGEMM).
constexpr int64_t kPanelByPanelData = 128;
// Channels-last backward-data over fewer positions (all images') than this
// runs so too, with W of 2 MiB or more (last_w_blocks).
constexpr int64_t kBlockedRows = 256;
// The widest last panel computed as dot products (dot_tail below).
constexpr int64_t kDotColumns = 4;
// Channels-first per image, B (x, or dy) is read in place, not packed,
// where the reduction is this short and the pass writes this few channels:
// the copy then cost about as much as the few row tiles that read it. A
// panel's rows (R x 48 floats, 12 KiB at most here) stay in L1 while the
// row tiles pass. 1 thread, 3 alternated rounds, AMX Xeon: 32->16 56x56
// forward 1.53-1.72x, 16->32 112x112 1.31-1.39x (backward-data 1.60-1.66x),
// MobileNet's 32->64 112x112 backward-data 1.32-1.38x, 32->32 28x28
// 1.19-1.31x, 64->32 56x56 0.99-1.12x. Onto more than 64 channels it lost
// (0.83-0.99x: 64->256 56x56 forward 0.87x): the 32-128 rows of x, each a
// stream of its own, came from L2 at a slower rate than one packed panel.
// Onto 64 (Zen 4, 5 alternated rounds): ResNet-50's 64->64 56x56 forward
// and backward-data 1.03x (2 threads 1.07-1.11x), 48->64 28x28 2 threads
// 1.16-1.18x, MobileNet's pw1 (32->64 112x112) forward 1.05x at batch 8,
// 0.985x at batch 1; onto 128 and 256 still even to 0.97x there.
constexpr int64_t kInPlaceReduction = 64;
constexpr int64_t kInPlaceOutputs = 64;
// And on planes of this many positions or more (56x56 and larger), any
// reduction onto any number of channels: there the packing was the cost
// and each row's stream of x or dy came fast enough (Zen 4, 3 alternated
// rounds, 1 thread: ResNet-50's 256->64 and 256->128 56x56 forward
// 1.02-1.03x, MobileNet's 64->128 and 128->128 56x56 forward 1.02x and
// backward-data 1.02-1.03x, 64->256 backward-data 1.04x; batch 8
// 1.01-1.06x; 2 threads 0.98-1.06x). On 28x28 planes it lost at batch 8
// (128->256 0.95x, 256->256 0.97x), on 7x7 ones 0.78x; 64x64 planes
// 0.97-1.05x (64->128 forward 0.97x, its 64 rows 16 KiB apart in few L1
// sets; backward-data 1.04x, 256->64 forward 1.03x). With several
// threads from 28x28 up: there each thread's share packed under its tiles
// waited longer (2 threads, 3 alternated rounds: MobileNet's 128->256 and
// ResNet-50's 128->512 28x28 forward 1.06-1.07x, 256->256 1.03x,
// backward-data 1.01-1.02x; batch 8 1.00-1.02x); 14x14 planes lost
// 0.92-0.97x; 32x32 0.99-1.03x.
constexpr int64_t kInPlacePlane = 2048, kInPlacePlaneThreads = 784;
// Forward reductions of at most this many channels on small planes split
// their rows between threads (make_plan).
constexpr int64_t kRowsSplitReduction = 256;
// A plane splits its positions between threads where each gets this many
// (channels-first per image, make_plan); a smaller one, its rows.
constexpr int64_t kSplitPositions = 192;
// Panels ahead that an in-place tile prefetches, row by row, as it goes:
// pw1's backward-data 1.17x, 16->32 112x112 1.06-1.13x, smaller planes even.
constexpr int64_t kInPlaceAhead = 2;
// Channels-last backward-filter with several threads reads B in place
// (filter_plan) only where it is at most this large.
constexpr int64_t kInPlaceSharedBytes = 2 << 20;
// Channels-first pointwise backward-filter on planes of at most
// kChunkPlane positions reduces over chunks of whole planes of several
// images, up to kChunkPositions positions: an image's plane a chunk, each
// tile had 49 reduction steps (7x7) between the read and the write of its
// 24 vectors of dW, and dW (4 MiB at 1024 x 1024) went through L3 once an
// image. Batch 8, 4 alternated rounds, ratios to oneDNN: 1 thread 1024->1024
// 7x7 0.90 -> 0.96, 512->1024 0.94 -> 0.97, 2048->512 0.89 -> 0.93, 512->2048
// 0.93 -> 0.94; 2 threads (each thread had read all images for its half of
// dW) 0.60-0.77 -> 0.88-0.92; 64->64 8x8 1.02x (2 threads 1.12x). 2 or 4
// images a chunk gained less (1.02-1.04x); 14x14 planes in chunks of 2
// images measured even, 28x28 0.98-0.99x.
constexpr int64_t kChunkPlane = 64;
constexpr int64_t kChunkPositions = 512;
// Rows ahead that pack_panels prefetches of a source read across its rows.
constexpr int64_t kAhead = 16;
// Backward-filter's dW written once (Gemm::stream) from this many bytes.
constexpr int64_t kStreamBytes = 1 << 20;
// Channels-first forward and backward-data write their output with
// non-temporal stores (Gemm::stream) where a call's output is at least
// kPastCacheBytes: there the tiles' stores to 8 rows (an image's plane
// apart) waited on reads for ownership from memory. 1 thread, strict,
// MobileNet-v1 at batch 8, 3 alternated runs each: pw1 (32->64 112x112)
// forward 1.11-1.22x, backward-data 1.30-1.31x, pw2 forward 1.02-1.16x, pw3
// 1.04-1.05x; outputs under it (batch 1, or 7x7 and 14x14 planes) are left
// as they were.

// AVX2: source rows this many floats apart or more (a plane of 32x32 or
// more, channels-first) are packed row by row (pack_panels_avx2).
constexpr int64_t kFarRows = 1024;

// Channels-last forward and backward-data on AVX2 read A (x or dy) in place
// from this many positions (pw_avx512_covers).
constexpr int64_t kInPlaceRows = 784;

// One pass as a GEMM, in element offsets from the tensors' pointers.
struct Gemm {
    const float *a;  // A(i, r) = a[i * a_row + r * a_red]
    int64_t a_row, a_red;
    const float *b;  // B(r, j) = b[r * b_red + j * b_col], the source of the panels
    int64_t b_red, b_col;
    float *out;  // out[i * ldo + j], or with out_cols out[j * ldo + i]
    int64_t ldo;
    bool out_cols;
    int64_t M, N, R;
    const float *bias;  // one per row (bias_rows) or per column; may be null
    bool bias_rows, relu;
    bool accumulate;  // out += the product (else out = it)
    // Nonzero: A's rows lie in strips of strip_height() (a_strip floats
    // apart), a row's steps a_red floats apart within its strip (strip_w);
    // row tiles then start at multiples of the tile's rows and stay within
    // a strip.
    int64_t a_strip = 0;
    // Nonzero: A's reduction runs in segments of a_seg steps, the pointer
    // moved a further a_jump floats after each (a channels-last 1-D
    // convolution's taps: a tap's channels, then the source row d on).
    int64_t a_seg = 0, a_jump = 0;
    // Nonzero: lines from `ahead` on that a tile asks into L2, one per
    // reduction step (the next panel's source, run_panel_by_panel).
    const char *ahead = nullptr;
    int64_t ahead_lines = 0, ahead_stride = 64;
    // Nonzero: a packed panel's rows, when the pass reads a part of them
    // (R of them from the pointer it is given); else R.
    int64_t panel_rows = 0;
    // A 1-D convolution's source unfolded as the panels are packed: B's
    // rows (forward and backward-data, b_col == 1) or its columns
    // (backward-filter, b_red == 1) are its (channel, tap) pairs. Rows:
    // B(r, j) = b[(r / taps) * b_red + s] with s = j + (r % taps) *
    // tap_step + shift; columns: B(r, j) = b[(j / taps) * b_col + s] with s
    // = r + (j % taps) * tap_step + shift; zero where s leaves [lo, hi)
    // (the padding).
    enum class Unfold { none, rows, cols } unfold = Unfold::none;
    int64_t taps = 1, tap_step = 0, shift = 0, lo = 0, hi = 0;
    // out is written once and is larger than the caches (backward-filter's
    // dW from one chunk): whole 64-byte-aligned vectors go out with
    // non-temporal stores, without the read for ownership (the caller
    // fences after the last).
    bool stream = false;
    // A last panel of up to kDotColumns columns may run as dot products
    // (dot_tail). Not where items split the columns at other places than
    // the panels' edges (channels-first backward-filter's column blocks):
    // one thread's last panel of 4 columns, dot products, was two threads'
    // block of 36 in a tile, summed in another order.
    bool dots = true;
};

// B(r, j), unfolded or not.
inline float b_value(const Gemm &m, int64_t r, int64_t j) {
    if (m.unfold == Gemm::Unfold::none) return m.b[r * m.b_red + j * m.b_col];
    const bool rows = m.unfold == Gemm::Unfold::rows;
    const int64_t tap = (rows ? r : j) % m.taps, line = (rows ? r : j) / m.taps;
    const int64_t s = (rows ? j : r) + tap * m.tap_step + m.shift;
    return s >= m.lo && s < m.hi ? m.b[line * (rows ? m.b_red : m.b_col) + s] : 0.0f;
}

// A 1-D convolution (groups 1, stride 1), run as this GEMM with its taps
// (g.kernel[2]; a 1x1's: 1) in the reduction (channels-first: Gemm::unfold;
// channels-last: Gemm::a_seg, and dW^T's rows).
bool row_conv(const ConvGeometry &g) {
    for (int i = 0; i < 2; ++i)
        if (g.in[i] != 1 || g.out[i] != 1 || g.kernel[i] != 1 || g.pad_begin[i] != 0 || g.pad_end[i] != 0)
            return false;
    return g.stride[2] == 1 && g.groups == 1;
}

// Rows in a strip of A (strip_w): a 64-byte line of each of W's rows. AVX2:
// kRowsAvx2, a row tile's.
constexpr int64_t kStrip = 16;
int64_t strip_height() { return cpu_isa() == Isa::avx2 ? kRowsAvx2 : kStrip; }

// Where row i0 of A starts, its strips (if any) Height rows each.
template <int64_t Height = kStrip>
inline const float *a_rows(const Gemm &m, int64_t i0) {
    return m.a_strip ? m.a + i0 / Height * m.a_strip + i0 % Height : m.a + i0 * m.a_row;
}

// Channels-last pointwise backward-data over fewer than kBlockedRows
// positions (7x7 up to batch 5, 14x14 at batch 1) runs as the transposed
// one does, W read in place a block of rows at a time (run_w_blocks), where
// W is 2 MiB or more and dx has 1024+ channels or there are two images;
// else the regular channels-last GEMM or, under 128 positions, libconv's SGEMM
// (pw_avx512_covers). 1 thread, 3 alternated rounds: against the SGEMM,
// batch 1 1024->1024 and 2048->512 7x7 1.21-1.22x, 512->2048 and 512->1024
// 1.01-1.02x (2 threads 0.94-0.97x), batch 2 1.08-1.30x, W of 256 KiB lost
// (256->256, 128->512: 0.85-0.89x); against the channels-last GEMM, batch
// 4 7x7 1.11-1.34x (512->1024, 512->2048 too; 2 threads 1.26-1.33x), 14x14
// at batch 1 1.00-1.14x.
bool last_w_blocks(const ConvGeometry &g) {
    return cpu_isa() == Isa::avx512 && g.layout == CONV_LAYOUT_CHANNELS_LAST && g.is_pointwise() &&
           g.n * g.in_size() < kBlockedRows && g.c * g.k >= 512 * 1024 && (g.c >= 1024 || g.n >= 2);
}

// Channels-last pointwise forward on few positions (up to 28x28 at batch
// 1, 7x7 at batch 16) with x (dy) in L2: W^T's panels are made one at a time,
// each as its item reaches it, every row tile run on it, and the next
// panel's source (48 of W's rows, one run of memory) asked into L2 a line
// per reduction step of those tiles (Gemm::ahead). Made whole first, W^T
// was a transpose from L3 that nothing overlapped: against it, 1 thread,
// 3 alternated rounds, AMX Xeon, batch 1: 512->1024 7x7 1.34x (it ran on
// libconv's SGEMM), 512->2048 7x7 1.34x, 1024->512 14x14 1.24x, 512->512
// 14x14 1.05-1.06x, 256->1024 and 1024->256 14x14 1.06-1.08x, 28x28 even;
// batch 4 512->2048 and 1024->1024 7x7 1.25-1.37x; 2 threads, MobileNet's
// 512->512 14x14 1.34x. Over more positions (64->256 56x56 0.94x) W is
// small next to x and its panels stay made once for all rows.
// Backward-data (dy's rows against W's, a panel's width of each of W's
// rows copied) the same way from 128 positions: 14x14 512->512,
// 1024->256, 256->1024 1.04-1.06x, others even; on 7x7 it lost to the
// SGEMM (512->2048 0.64x: 2048 steps of 8 KiB-apart rows of dy a tile).
bool last_panel_by_panel(const ConvGeometry &g, conv_op_t op) {
    const int64_t rows = g.n * g.out_size(), reduction = op == CONV_OP_FORWARD ? g.c : g.k;
    if (op != CONV_OP_FORWARD && (op != CONV_OP_BACKWARD_DATA || rows < kPanelByPanelData)) return false;
    return cpu_isa() == Isa::avx512 && g.layout == CONV_LAYOUT_CHANNELS_LAST && g.is_pointwise() &&
           rows <= kPanelByPanelRows && rows * reduction * 4 <= kPanelByPanelBytes;
}

// Channels-last pointwise forward over fewer than 128 positions from 1024+
// channels, or fewer than 256 from 2048+, runs per image as the
// channels-first one, y^T = W x^T (Plan::last_by_image, as with AVX2): W
// read in place, not copied transposed per call. 1 thread, 3 alternated
// rounds, against libconv's SGEMM: 1024->1024, 2048->512, 1024->2048,
// 1024->256 7x7 1.16-1.30x at batch 1 (2 threads 1.09-1.23x, batch 2
// 1.19-1.29x); from fewer channels it lost (512->2048 and 512->1024 0.95x,
// 128->512 0.47x: short reductions, the sums scattered across y). Against
// the channels-last GEMM over 196 positions: 2048->512 1.26x (7x7, batch 4)
// and 1.36x (14x14), from 1024 channels 0.92-1.04x (W, streamed once per
// image, then read four times). Onto as many channels or more, panel by
// panel won where it applies (1024->1024 7x7 1.14x, 1024->2048 1.12x;
// 2048->512 and 1024->256 7x7 0.95-0.99x).
bool last_by_image_avx512(const ConvGeometry &g) {
    if (last_panel_by_panel(g, CONV_OP_FORWARD) && g.k >= g.c) return false;
    return cpu_isa() == Isa::avx512 && g.layout == CONV_LAYOUT_CHANNELS_LAST && g.is_pointwise() &&
           (g.n * g.out_size() < kBlockedRows / 2 ? g.c >= 1024 : g.n * g.out_size() < kBlockedRows && g.c >= 2048);
}

// A thread's workspace for run_w_blocks over `rows` positions (all
// images'): the tiles' sums, a panel wide.
size_t w_blocks_slot_bytes(int64_t rows) { return (size_t)checked_mul(rows, kPanel * 4, "workspace"); }

// How a pass is cut into work items.
struct Plan {
    bool last;          // channels-last: one GEMM over all images, B packed once
    bool transposed;    // channels-first backward-data on a small plane: dx^T = dy^T W
    bool w_transposed;  // channels-first backward-data otherwise (AVX-512; AVX2 1x1): dx = W^T dy, W^T in strips made first
    bool last_by_image;  // channels-last forward on small planes (AVX2; AVX-512 from 1024+ channels): y^T = W x^T per image
    bool w_blocks;      // transposed, AVX-512, few images: W taken a block of rows at a time (run_w_blocks)
    bool b_in_place;    // AVX-512, B read as it lies: channels-first per image (a short reduction or a large plane),
                        // channels-last backward-filter onto few filters
    int64_t cols;       // columns (B panels) per item
    int64_t panels;     // channels-first per image: whole panels of a row, dealt out over its column blocks (block_columns)
    int64_t last_cols;  // and the dot-product tail (kDotColumns at most): the last block's, or shared (run)
    int64_t rows;       // rows per item
    int64_t col_blocks, row_blocks, items;
    size_t shared_bytes, slot_bytes;  // packed B: once per call, or per thread
    int64_t chunk, chunks;            // backward-filter: positions per chunk, chunks per image
    int64_t chunk_images;             // channels-first pointwise backward-filter: images a chunk (whole planes), or 0
    int64_t a_ld;                     // channels-last backward-filter: dy's copy, floats a position
    bool swapped;                     // channels-last backward-filter as dW^T = x^T dy, a block at a time
    bool last_taps;                   // channels-last 1-D forward and backward-data (run_last_taps)
    bool panel_by_panel;              // channels-last forward, backward-data: each panel made as its item reaches it (last_panel_by_panel)
    bool strips_per_thread;           // w_transposed: each thread makes the strips of its items' rows, its own copy
};

// Backward-filter: dW (K x C), or dW^T (`swapped`), is split into column
// blocks (no B packed twice) or, with too few columns for the threads, row
// blocks; positions are reduced in chunks whose B fits an L2 share.
Plan filter_plan(const ConvGeometry &g, int threads) {
    const int64_t rows_tile = tile_rows(), panel = panel_width();
    Plan p{};
    p.last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    // C: the GEMM's columns, dW's (channels x taps); K: its rows, dW's
    // filters -- or, swapped, dW^T's.
    int64_t C = g.c * g.kernel[2], K = g.k;
    const int64_t positions = p.last ? checked_mul(g.n, g.out_size(), "positions") : g.out_size();
    if (g.n <= 0 || positions <= 0 || C <= 0 || K <= 0) return p;
    // Channels-last from at most 64 channels onto 128+ filters: dW^T = x^T
    // dy, whose panels (dy's rows, a plain copy) hold 128+ columns, in
    // place of dW = dy^T x, whose 64 columns were a 48- and a 16-column
    // panel (8 x 1 tiles at 57% of the 8 x 3 tiles' speed a product) and
    // whose dy was copied to spread its rows over L1's sets; x^T's rows,
    // C floats apart, need no copy. Intel Xeon with AMX, 1 thread, 3
    // alternated runs: 64->256 on 4096 samples 1.11x (WaveNet's skip),
    // 64->128 56x56 1.12x, 64->256 56x56 1.09x, 32->128 1.05-1.15x, 16->128
    // 1.35x, 64->512 28x28 even; from 128 channels 0.96-0.97x.
    // A channels-last 1-D layer's always (only this form unfolds its taps:
    // dW^T's rows are (tap, channel) pairs).
    p.swapped = p.last && cpu_isa() == Isa::avx512 && (!g.is_pointwise() || (K >= 128 && C <= 64));
    if (p.swapped) std::swap(C, K);
    const int64_t panels = ceil_div(C, panel);
    // Channels-last pointwise onto at least as many filters as channels
    // (128+) splits the filters, each thread then packing all of x's
    // chunk: split by channels, 128->512 28x28 ran two items of 48 + 16
    // columns. 2 threads, 3 alternated rounds, AMX Xeon: 128->512 56x56
    // 1.16x, 128->256 28x28 1.10x, 256->256 1.09x, 128->128 56x56 1.07x,
    // 512->512 14x14 and 28x28 1.04x; 1024->1024 7x7 1.17x.
    const bool filters_split = p.last && g.is_pointwise() && !p.swapped && K >= C && K >= 128;
    const int64_t col_parts = panels >= threads && !filters_split ? threads : 1;
    p.cols = std::min(C, round_up(ceil_div(C, col_parts), 16));
    p.col_blocks = ceil_div(C, p.cols);
    const int64_t row_parts = p.col_blocks >= threads ? 1 : ceil_div(threads, p.col_blocks);
    p.rows = round_up(ceil_div(K, row_parts), rows_tile);
    p.row_blocks = ceil_div(K, p.rows);
    p.items = p.col_blocks * p.row_blocks;
    // From C, not from the block: the chunks, and so the order of each
    // output's sums, do not depend on the thread count. At least 256
    // positions even when B then outgrows the budget: every chunk reads and
    // writes the item's whole dW block (1 MiB at 1024 x 256), and 64-position
    // chunks made that 4-15% of the time (1024->256 14x14 at batch 8: 8.2
    // vs 8.6-9.9 ms; 2048->512 7x7 channels-last: 7.8 vs 8.2-9.0 ms).
    const int64_t most = std::max<int64_t>(256, kBlockBytes / (4 * round_up(C, panel)));
    p.chunks = ceil_div(positions, most);
    p.chunk = ceil_div(positions, p.chunks);
    // Channels-first on small planes: chunks of whole planes of several
    // images (an image's plane alone was each tile's whole reduction).
    if (!p.last && g.is_pointwise() && g.n > 1 && cpu_isa() == Isa::avx512 && positions <= kChunkPlane) {
        p.chunk_images = std::min<int64_t>(g.n, kChunkPositions / positions);
        p.chunk = p.chunk_images * positions, p.chunks = 1;
    }
    p.slot_bytes = (size_t)checked_mul(p.chunk, round_up(p.cols, panel) * 4, "workspace");
    if (p.swapped) {
        // A pointwise layer's dy read in place (its rows one stream, K
        // floats apart), not copied into panels per chunk, onto up to 256
        // filters. 1 thread, 3 alternated rounds, AMX Xeon: 16->128 56x56
        // 1.57x, 32->128 1.31x, 64->128 1.08x, 64->256 1.02x; 64->512 28x28
        // 0.98x. 2 threads (5 rounds) 1.05-1.52x, but 64->256 56x56 0.94x:
        // at 2 threads only where dy is 2 MiB or less, as x above.
        p.b_in_place = cpu_isa() == Isa::avx512 && g.is_pointwise() && g.k <= 256 &&
                       (threads == 1 || positions * g.k * 4 <= kInPlaceSharedBytes);
        if (p.b_in_place) p.slot_bytes = 0;
        p.slot_bytes = (size_t)round_up(checked_add((int64_t)p.slot_bytes, checked_mul(p.rows, p.cols * 4, "workspace"),
                                                    "workspace"), 64);
        return p;
    }
    // On AVX-512, from at most 64 filters onto 64+ channels, x read in
    // place (B's steps C floats apart, one stream), no panels: with 8 row
    // tiles a panel, the copy cost more than it saved. 1 thread, 3
    // alternated rounds, AMX Xeon: 64->64 56x56 1.16x, 128->64 1.09x,
    // 256->32 1.12x, 256->64 1.03x, 512->64 28x28 1.15x; 2 threads (5
    // rounds) 1.06-1.11x, but 256->64 56x56 0.95x: at 2 threads only
    // where x is 2 MiB or less. Onto 256 filters it lost (256->256 28x28
    // 0.96x).
    p.b_in_place = p.last && cpu_isa() == Isa::avx512 && K <= 64 && C >= 64 &&
                   (threads == 1 || positions * C * 4 <= kInPlaceSharedBytes);
    if (p.b_in_place) p.slot_bytes = 0;
    // AVX-512 from 512 filters (8 x 48 tiles): 128 and 256 filters ran
    // 1.02-1.05x without the copy below (128->128 and 256->128 56x56,
    // 256->256 28x28).
    if (p.last && K >= (cpu_isa() == Isa::avx512 ? 512 : 128)) {
        // dy's rows of the item, K floats apart in dy (4 KiB at 1024
        // filters: a tile's reduction steps all fell into one L1 set and
        // were re-read from L2 for every panel), copied a chunk at a time
        // with a stride that spreads them over the sets. AVX2, 1 thread,
        // channels-last, 6 alternated runs, ratio to oneDNN without -> with:
        // 512->2048 7x7 0.45 -> 0.83, 1024->1024 7x7 0.47 -> 0.84, 2048->512
        // 7x7 0.76 -> 0.93, 512->512 14x14 0.85 -> 0.97, 64->256 56x56 0.62
        // -> 0.83, 64->128 56x56 0.80 -> 0.85; at 64 filters (256 B apart,
        // no conflict) the copy lost: 32->64 112x112 0.76 -> 0.55.
        p.a_ld = round_up(p.rows, 8);
        if (p.a_ld % 128 == 0) p.a_ld += 8;
        p.slot_bytes = (size_t)round_up(checked_add((int64_t)p.slot_bytes, checked_mul(p.chunk, p.a_ld * 4, "workspace"),
                                                    "workspace"), 64);
    }
    return p;
}

Plan make_plan(const ConvGeometry &g, conv_op_t op, int threads) {
    const int64_t rows_tile = tile_rows(), panel = panel_width();
    threads = std::max(threads, 1);
    if (op == CONV_OP_BACKWARD_FILTER) return filter_plan(g, threads);
    const bool fwd = op == CONV_OP_FORWARD;
    // P: the positions the pass writes; R: the reduction (input channels
    // of the pass, times the taps of a 1-D convolution); outc: the channels
    // it writes.
    const int64_t taps = g.kernel[2];
    const int64_t P = fwd ? g.out_size() : g.in_size(), R = (fwd ? g.c : g.k) * taps, outc = fwd ? g.k : g.c;
    Plan p{};
    p.last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    if (g.n <= 0 || P <= 0 || R <= 0 || outc <= 0) return p;
    if (!p.last && !fwd && g.is_pointwise() && P < kTransposedBelow && outc >= kTransposedChannels) {
        // An item: a block of dx's channels (W's panels, an L2 share) for
        // every position of every image.
        p.transposed = true;
        const int64_t panels = ceil_div(outc, panel);
        const int64_t fit = std::max<int64_t>(1, kBlockBytes / (4 * R * panel));
        int64_t blocks = ceil_div(panels, std::min(fit, panels));
        if (blocks < threads) blocks = std::min(panels, (int64_t)threads);
        p.cols = ceil_div(panels, blocks) * panel;
        p.col_blocks = ceil_div(outc, p.cols);
        p.rows = P, p.row_blocks = 1;
        p.items = p.col_blocks;
        p.slot_bytes = (size_t)checked_mul(R, p.cols * 4, "workspace");
        p.w_blocks = cpu_isa() == Isa::avx512 && g.n <= kBlockedImages;
        if (p.w_blocks)  // or the panels, if prepared
            p.slot_bytes = std::max(p.slot_bytes, w_blocks_slot_bytes(g.n * P));
        return p;
    }
    // Channels-last forward onto few positions (AVX2) as the channels-first
    // one: W read in place, x's positions as packed columns (a transposed
    // copy of a small image), y written across (out_cols). The in-place
    // form below packs all of W per call, transposed. 1 thread, 6
    // alternated runs, against the SGEMM path (OpenBLAS under 97 rows),
    // ratio to oneDNN: 7x7 0.65-0.69 -> 0.86-0.92 (512->2048, 2048->512,
    // 1024->1024, 512->1024); 14x14 0.97-1.07x. Backward-data so (W read
    // across its rows, C floats apart) lost 0.34-0.79x.
    if (p.last && fwd && ((cpu_isa() == Isa::avx2 && g.n * P < kInPlaceRows) || last_by_image_avx512(g)))
        p.last = false, p.last_by_image = true;
    if (!p.last) {
        // Per image: rows are channels, columns positions. An item packs
        // `cols` positions of the image (an L2 share) and runs its tiles.
        int64_t fit = std::max<int64_t>(64, kBlockBytes / (4 * R) / panel * panel);
        int64_t blocks = ceil_div(P, std::min(fit, P));
        // Occupy the threads by splitting positions while blocks stay wide;
        // on small planes (res5's 7x7) split the rows instead, so that each
        // thread reads only its share of the (large) filters.
        const int64_t want = ceil_div(threads, g.n);
        if (blocks < want && P / want >= kSplitPositions) blocks = want;
        // Whole panels a block: 14x14's 196 positions as 96 + 96 + 4 (the 4
        // as dot products), not 80 + 80 + 36 with a 32-column panel in each
        // (1.04-1.10x on 512->512 and 1024->256 14x14 forward, AVX-512). A
        // last panel of a dot-product tail's width is not counted: the tail
        // joins the last block (on its own it read all of A again, W's 1 MiB
        // at 512 x 512, for 2% of the products), or with fewer images than
        // threads each block takes a share of its rows (pw_avx512_run).
        const int64_t tail = P % panel <= kDotColumns ? P % panel : 0;
        p.panels = std::max<int64_t>(1, ceil_div(P - tail, panel));
        // The blocks that `b` of them at most make: as many panels each.
        auto blocks_of = [&](int64_t b) { return ceil_div(p.panels, ceil_div(p.panels, b)); };
        // A few items per thread split evenly: 3136 positions in blocks of
        // 1008 would leave one of two threads a block behind the other. But
        // not a small plane's forward over at most kRowsSplitReduction
        // channels, where the rows make a row tile for every thread: its
        // rows split, each thread reads half of W and packs all of x, the
        // smaller (2 threads, 14x14, 5 alternated rounds: 128->256 1.07x,
        // 256->256, 256->512, 256->1024 1.04-1.05x; from 512 channels even,
        // backward-data 0.99-1.04x; AVX2's 16-column panels, on Zen 4 with
        // CONV_CPU_ISA=avx2: 14x14 1.21-1.48x, 64->128 16x16 2.1x).
        const bool split_rows = fwd && R <= kRowsSplitReduction && P / want < kSplitPositions &&
                                ceil_div(outc, rows_tile) >= want;
        if (threads > 1 && g.n * blocks < 4 * threads && !split_rows)
            for (int64_t b = blocks; b <= 2 * blocks && P / b >= 96; ++b)
                if ((g.n * blocks_of(b)) % threads == 0) {
                    blocks = b;
                    break;
                }
        // The panels dealt out over the blocks, as many each or one more
        // (run: block_columns): 784 positions (17 panels) in 4 blocks as 4 +
        // 4 + 4 + 5, not 5 + 5 + 5 + 2, which left one of 2 threads 10 panels
        // to the other's 7; 196 (4 and a tail) at 2 threads as 2 + 2 and the
        // tail, not 3 + 1 and the tail. 2 threads, Zen 4, ratios to oneDNN
        // (4 alternated runs): 256->512 14x14 forward 0.66 -> 0.86, 256->256
        // 28x28 0.80 -> 0.94 (backward-data 0.84 -> 0.92), 128->256 28x28
        // 0.73 -> 0.88, 128->128 56x56 backward-data 0.76 -> 0.88, 64->128
        // 56x56 forward 0.81 -> 0.91; 1 thread even.
        p.col_blocks = blocks_of(blocks);
        p.cols = ceil_div(p.panels, p.col_blocks) * panel;  // the widest block, but for the tail
        p.last_cols = tail;
        // Backward-data as the forward is done, with W^T (C x K) in W's
        // place, in strips of 16 rows (strip_w): a row tile's broadcasts
        // are then one stream (read as W stands, C floats apart, every
        // broadcast of a row tile fell into the same few L1 sets). The
        // strips are made once per call (or prepared once per plan).
        // AVX2, 1x1 layers: strips of 6, a row tile's. (AVX2 takes this pass
        // only on planes of kFarRows+ positions, pw_avx512_covers: W's copy
        // per call is a small share there.) Against W read as it stands,
        // ratios to oneDNN in alternated runs (Zen 3): 56x56 1.07-1.09x
        // (MobileNet's 64->128 and 128->128, ResNet-50's 64->256 and
        // 256->64; batch 8 1.05-1.11x, 2 threads with the split below
        // 1.04-1.09x), 64->64 56x56 and 32->64 112x112 even: read as W
        // stands, a tile's six broadcasts took one line of W per step, 4-16
        // lines apart in a few L1 sets that the dy panel shared.
        p.w_transposed = !fwd && (cpu_isa() == Isa::avx512 || (cpu_isa() == Isa::avx2 && g.is_pointwise()));
        if (p.w_transposed)  // whole lines: the slots after it hold aligned panels
            p.shared_bytes = (size_t)round_up(
                checked_mul(checked_mul(round_up(g.c, strip_height()), R, "workspace"), 4, "workspace"), 64);
        int64_t parts = g.n * p.col_blocks >= threads ? 1 : ceil_div(threads, g.n * p.col_blocks);
        // W's strips with several threads: at least three items a thread, or one
        // whose worker joined late took a second item's time again (2
        // threads, 512->256 28x28 0.83 -> 0.68 ms, 1024->512 14x14 1.10 ->
        // 0.87).
        if (p.w_transposed && threads > 1 && g.n * p.col_blocks < 3 * threads)
            parts = std::max<int64_t>(1, std::min(ceil_div(3 * threads, g.n * p.col_blocks), outc / 64));
        p.rows = round_up(ceil_div(outc, parts), rows_tile);
        p.row_blocks = ceil_div(outc, p.rows);
        p.items = g.n * p.col_blocks * p.row_blocks;
        // Each thread makes the strips of its items' rows into a copy of its
        // own (the items row block by row block, so a thread's share is a
        // range of rows): all threads making all strips together, each item
        // read strips the other core had written (~30 ns a line on Zen 4).
        // One thread so too, as its strips are then made under its first
        // item's tiles (run_block_avx512).
        p.strips_per_thread = p.w_transposed && cpu_isa() == Isa::avx512 &&
                              ((threads == 1 && p.row_blocks <= ThreadCopies::kMaxPieces) ||
                               ThreadCopies::apply(threads, p.row_blocks));
        if (p.strips_per_thread) p.shared_bytes = checked_mul(p.shared_bytes, (size_t)threads, "workspace");
        // (At several threads only where the last panel is no dot-product
        // tail, last_cols, which in place would run as a tile and sum in
        // another order: the forward's bits stay those of one thread.)
        p.b_in_place = cpu_isa() == Isa::avx512 && g.is_pointwise() &&
                       ((R <= kInPlaceReduction && outc <= kInPlaceOutputs) || P >= kInPlacePlane ||
                        (threads > 1 && P >= kInPlacePlaneThreads && p.last_cols == 0));
        if (!p.b_in_place)
            p.slot_bytes = (size_t)checked_mul(R, round_up(p.cols + p.last_cols, panel) * 4, "workspace");
        return p;
    }
    if (!g.is_pointwise()) {
        // Channels-last 1-D: per image, rows are positions, columns
        // channels, the reduction (tap, channel) pairs; B (from W) packed
        // once. An item is a block of an image's rows.
        p.last_taps = true;
        p.rows = std::max<int64_t>(rows_tile, kRowBlockBytes / (4 * R) / rows_tile * rows_tile);
        p.row_blocks = ceil_div(P, p.rows);
        if (g.n * p.row_blocks < 4 * threads) {  // an even share per thread
            p.rows = std::max<int64_t>(rows_tile, round_up(ceil_div(P, ceil_div(4 * threads, g.n)), rows_tile));
            p.row_blocks = ceil_div(P, p.rows);
        }
        p.cols = outc, p.col_blocks = 1;
        p.items = g.n * p.row_blocks;
        p.shared_bytes = (size_t)checked_mul(R, round_up(outc, panel) * 4, "workspace");
        return p;
    }
    const int64_t M = checked_mul(g.n, P, "positions");
    if (!fwd && last_w_blocks(g)) {
        // Channels-last backward-data on few positions: W read in place a
        // block at a time as the transposed one (run_w_blocks); an item:
        // a thread's share of dx's channels, all positions.
        const int64_t panels = ceil_div(outc, panel);
        p.w_blocks = true;
        p.cols = ceil_div(panels, std::min<int64_t>(panels, threads)) * panel;
        p.col_blocks = ceil_div(outc, p.cols);
        p.rows = M, p.row_blocks = 1;
        p.items = p.col_blocks;
        p.slot_bytes = w_blocks_slot_bytes(M);
        return p;
    }
    if (last_panel_by_panel(g, op)) {
        p.panel_by_panel = true;
        const int64_t panels = ceil_div(outc, panel);
        p.rows = M, p.row_blocks = 1;
        p.cols = ceil_div(panels, std::min<int64_t>(panels, threads)) * panel;
        p.col_blocks = ceil_div(outc, p.cols);
        p.items = p.col_blocks;
        p.slot_bytes = (size_t)checked_mul(R, panel * 4, "workspace");
        return p;
    }
    // Channels-last: rows are the positions of all images, columns channels,
    // B (from W) packed once. An item is a block of rows, whose A stays in
    // L2 while its panels pass; with few rows, one block of rows and the
    // columns split, so each thread reads only its share of W.
    p.rows = std::max<int64_t>(rows_tile, kRowBlockBytes / (4 * R) / rows_tile * rows_tile);
    int64_t col_parts = 1;
    if (M <= p.rows * threads) {
        p.rows = round_up(M, rows_tile);
        col_parts = std::min(ceil_div(outc, panel), (int64_t)threads);
    }
    p.row_blocks = ceil_div(M, p.rows);
    if (col_parts == 1 && p.row_blocks < 4 * threads) {  // an even share per thread
        p.rows = round_up(ceil_div(M, round_up(p.row_blocks, threads)), rows_tile);
        p.row_blocks = ceil_div(M, p.rows);
    }
    p.cols = round_up(ceil_div(outc, col_parts), panel);
    p.col_blocks = ceil_div(outc, p.cols);
    p.items = p.row_blocks * p.col_blocks;
    p.shared_bytes = (size_t)checked_mul(R, round_up(outc, panel) * 4, "workspace");
    return p;
}

// Channels-first per image: the columns [j0, j1) of column block cb of a
// row of N, its share of the panels (and the last one the rest of the row).
std::pair<int64_t, int64_t> block_columns(const Plan &p, int64_t cb, int64_t N) {
    const int64_t panel = panel_width();
    const int64_t j0 = cb * p.panels / p.col_blocks * panel;
    return {j0, cb == p.col_blocks - 1 ? N : (cb + 1) * p.panels / p.col_blocks * panel};
}

#if CONV_HAVE_AVX512_KERNELS

// A last panel of at most kDotColumns columns, where A's rows are
// contiguous along the reduction, is computed as dot products (dot_tile):
// as a panel each of its steps took a panel load and a broadcast per row for
// one to four useful lanes (a 7x7 plane's 49th position: a quarter of
// 512->2048's forward on AVX-512, 15% on AVX2). Its columns are then packed
// whole, one after the other, instead of as panel steps.
// With A in strips (a_strip) the same columns are strip_tail_tile's
// (AVX-512; AVX2 keeps them in a panel).
bool dot_tail(const Gemm &m, int64_t width) {
    return width <= kDotColumns && m.dots && (m.a_red == 1 || (m.a_strip && cpu_isa() == Isa::avx512)) && !m.a_seg;
}

// B's columns [q0, q0 + width) as dot_tile's: column jj at dst + jj * R.
void pack_dot_columns(const Gemm &m, int64_t q0, int64_t width, float *dst) {
    for (int64_t jj = 0; jj < width; ++jj)
        for (int64_t r = 0; r < m.R; ++r) dst[jj * m.R + r] = b_value(m, r, q0 + jj);
}

// One panel of a 1-D convolution's unfolded source (Gemm::taps): columns
// [q0, q0 + width), row (c, t) from source row c at q0 + t * tap_step +
// shift, lanes in the padding or past `width` zero. The rows a few channels
// on are asked for as in pack_panels_avx512 (rows b_red apart).
CONV_TARGET_AVX512 void pack_tap_panel_avx512(const Gemm &m, int64_t q0, int64_t width, float *panel) {
    const int64_t channels = m.R / m.taps, ahead = ceil_div(kAhead, m.taps);
    for (int64_t c = 0; c < channels; ++c) {
        const float *row = m.b + c * m.b_red;
        for (int64_t t = 0; t < m.taps; ++t) {
            const int64_t at = q0 + t * m.tap_step + m.shift;  // the source column of the panel's first
            if (c + ahead < channels) {
                const float *next = row + ahead * m.b_red + at;
                for (int64_t b = 0; b < width; b += 16) _mm_prefetch((const char *)(next + b), _MM_HINT_T0);
                _mm_prefetch((const char *)(next + width - 1), _MM_HINT_T0);
            }
            float *dst = panel + (c * m.taps + t) * kPanel;
            const int64_t lo = m.lo - at, hi = std::min(width, m.hi - at);
            for (int v = 0; v < kVecs; ++v)
                _mm512_store_ps(dst + 16 * v,
                                _mm512_maskz_loadu_ps(lane_range(lo - 16 * v, hi - 16 * v), row + at + 16 * v));
        }
    }
}

// One panel of backward-filter's unfolded columns (Gemm::Unfold::cols):
// column j, (channel, tap), is the channel's source row from r + tap *
// tap_step + shift, zero in the padding; 16 columns x 16 steps loaded and
// transposed as pack_panels_avx512 does.
CONV_TARGET_AVX512 void pack_tap_columns_avx512(const Gemm &m, int64_t q0, int64_t width, float *panel) {
    for (int64_t jj0 = 0; jj0 < kPanel; jj0 += 16) {
        const int64_t cols = std::clamp<int64_t>(width - jj0, 0, 16);
        const float *col[16];
        int64_t off[16];
        for (int64_t t = 0; t < cols; ++t) {
            const int64_t j = q0 + jj0 + t;
            off[t] = j % m.taps * m.tap_step + m.shift;
            col[t] = m.b + j / m.taps * m.b_col + off[t];
        }
        for (int64_t r0 = 0; r0 < m.R; r0 += 16) {
            const __mmask16 steps = first_lanes(m.R - r0);
            __m512 v[16];
#pragma GCC unroll 16
            for (int t = 0; t < 16; ++t)
                v[t] = t < cols ? _mm512_maskz_loadu_ps(steps & lane_range(m.lo - off[t] - r0, m.hi - off[t] - r0), col[t] + r0)
                                : _mm512_setzero_ps();
            transpose16(v);
            const int64_t n = std::min<int64_t>(16, m.R - r0);
            for (int64_t u = 0; u < n; ++u) _mm512_store_ps(panel + (r0 + u) * kPanel + jj0, v[u]);
        }
    }
}

// Packs columns [j0, j1) of B into panels of kPanel columns at dst
// (panel q, reduction step r, column jj at dst[(q * R + r) * kPanel + jj]),
// the columns past j1 zero.
CONV_TARGET_AVX512 void pack_panels_avx512(const Gemm &m, int64_t j0, int64_t j1, float *dst) {
    for (int64_t q0 = j0; q0 < j1; q0 += kPanel) {
        const int64_t width = std::min(kPanel, j1 - q0);
        float *panel = dst + (q0 - j0) * m.R;
        if (dot_tail(m, width)) {
            pack_dot_columns(m, q0, width, panel);
            continue;
        }
        if (m.unfold != Gemm::Unfold::none) {
            (m.unfold == Gemm::Unfold::rows ? pack_tap_panel_avx512 : pack_tap_columns_avx512)(m, q0, width, panel);
            continue;
        }
        if (m.b_col == 1) {
            // Rows b_red apart (2 KiB at 512 channels) and a panel's width of
            // each: too far apart for the hardware prefetcher, which left
            // this copy waiting on memory (half of 512->2048 7x7's
            // backward-data), so the row kAhead on is asked for here.
            for (int64_t r = 0; r < m.R; ++r) {
                const float *src = m.b + r * m.b_red + q0;
                if (r + kAhead < m.R) {
                    const float *next = src + kAhead * m.b_red;
                    for (int64_t b = 0; b < width; b += 16)
                        _mm_prefetch((const char *)(next + b), _MM_HINT_T0);
                    _mm_prefetch((const char *)(next + width - 1), _MM_HINT_T0);
                }
                for (int v = 0; v < kVecs; ++v)
                    _mm512_store_ps(panel + r * kPanel + 16 * v,
                                    _mm512_maskz_loadu_ps(first_lanes(width - 16 * v), src + 16 * v));
            }
            continue;
        }
        // A transposed source (b_red == 1: W of channels-last forward, x of
        // channels-first backward-filter): each column is a contiguous row
        // of it. 16 columns x 16 steps are loaded as rows and transposed.
        for (int64_t jj0 = 0; jj0 < kPanel; jj0 += 16) {
            const int64_t cols = std::clamp<int64_t>(width - jj0, 0, 16);
            for (int64_t r0 = 0; r0 < m.R; r0 += 16) {
                const __mmask16 steps = first_lanes(m.R - r0);
                __m512 v[16];
#pragma GCC unroll 16
                for (int t = 0; t < 16; ++t)
                    v[t] = t < cols ? _mm512_maskz_loadu_ps(steps, m.b + (q0 + jj0 + t) * m.b_col + r0)
                                    : _mm512_setzero_ps();
                transpose16(v);
                const int64_t n = std::min<int64_t>(16, m.R - r0);
                for (int64_t u = 0; u < n; ++u) _mm512_store_ps(panel + (r0 + u) * kPanel + jj0, v[u]);
            }
        }
    }
}

// Rows [k0, k1) of W (K x C) into strips of kStrip of its columns,
// [C / kStrip][K][kStrip] (a last strip's columns past C zero): A of
// backward-data's dx = W^T dy, each row tile then reading one stream of
// 8-float steps. A copy of whole lines, W read in order: W^T itself, by 16
// x 16 transposes in registers, took 1.4-1.9x as long from L3 (512 x 512:
// 143 vs 77 us), ~15% of a 14x14 pass. A 1-D convolution's W (K x C x
// taps) makes [C / kStrip][K * taps][kStrip], a row per (filter, tap), each
// 16 of a filter's channels a tap gathered taps floats apart.
// Strips [q0, q1) only, where given.
CONV_TARGET_AVX512 void strip_rows_avx512(const float *w, int64_t K, int64_t C, int64_t taps, int64_t k0,
                                          int64_t k1, float *ws, int64_t q0 = 0, int64_t q1 = -1) {
    const int64_t strips = ceil_div(C, kStrip), rows = K * taps;
    if (q1 < 0) q1 = strips;
    const __m512i apart = lanes_apart(taps);
    for (int64_t k = k0; k < k1; ++k)
        for (int64_t q = q0; q < q1; ++q) {
            const __mmask16 lanes = first_lanes(C - q * kStrip);
            const float *from = w + (k * C + q * kStrip) * taps;
            for (int64_t t = 0; t < taps; ++t)
                _mm512_storeu_ps(ws + (q * rows + k * taps + t) * kStrip,
                                 taps == 1 ? _mm512_maskz_loadu_ps(lanes, from)
                                           : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes, apart, from + t, 4));
        }
}

// AVX2, 1x1 layers: rows [k0, k1) of W into strips of kRowsAvx2 of its
// columns, [C / 6][K][6] (a last strip's columns past C zero). Row by row,
// each strip's 6 floats a vector load and store whose two extra lanes the
// next row's store overwrites (the block's last row stores its 6 alone). A
// copy of 6 floats per row and strip (std::copy: a memmove call each) took
// 0.66 ms on a 512 x 512 W, this 0.23 ms, strip by strip (each store
// right after the last) 0.33 ms.
CONV_TARGET_AVX2 void strip_rows_avx2(const float *w, int64_t K, int64_t C, int64_t k0, int64_t k1, float *ws) {
    constexpr int64_t h = kRowsAvx2;
    const int64_t strips = ceil_div(C, h);
    for (int64_t k = k0; k < k1; ++k) {
        const float *row = w + k * C;
        const bool last = k + 1 == k1;
        for (int64_t q = 0; q < strips; ++q) {
            const int64_t have = C - q * h;  // W's columns from the strip's first
            const __m256 v = have >= 8 ? _mm256_loadu_ps(row + q * h) : load_first_avx2(row + q * h, std::min(have, h));
            float *to = ws + (q * K + k) * h;
            if (last)
                store_first_avx2(to, v, h);
            else
                _mm256_storeu_ps(to, v);
        }
    }
}

// W's strips (strip_rows_avx512, AVX2: strip_rows_avx2), a share of W's
// rows a thread.
void strip_w(const ConvGeometry &g, const float *w, float *ws, ThreadPool &pool, int threads) {
    const int64_t blocks = std::min<int64_t>(threads, g.k);
    const bool avx2 = cpu_isa() == Isa::avx2;
    pool.parallel_for(
        blocks,
        [&](int64_t b, int) {
            const int64_t k0 = g.k * b / blocks, k1 = g.k * (b + 1) / blocks;
            if (avx2)
                strip_rows_avx2(w, g.k, g.c, k0, k1, ws);
            else
                strip_rows_avx512(w, g.k, g.c, g.kernel[2], k0, k1, ws);
        },
        threads);
}

// A block of rows of B (b_red apart, b_col == 1) copied into a panel's
// steps a row at a time between tile steps (packing_tile, panel_copy): its
// loads' waits on L3 hidden behind the FMAs instead of ahead of them.
struct CoPack {
    const float *b;        // B's first row to copy, at the panel's first column
    int64_t b_red;         // B's row stride
    float *dst;            // the next row's place (kPanel floats a row)
    int64_t left;          // rows still to copy
    int64_t ahead;         // rows of B from the next one on that may be prefetched
    __mmask16 lanes[kVecs];  // the panel's columns
    int64_t step = kPanel;   // floats from one row's place to the next's
    int vecs = kVecs;        // vectors a row: kVecs, or 1 (a strip of W)
    // Nonzero: past its last rows the copy asks for the next panel's first,
    // `next` floats on from where its own would lie (so that the next copy
    // does not start on rows from memory).
    int64_t next = 0;
    // A 1-D convolution's unfolded rows (Gemm::Unfold::rows): row (c, t)
    // is source row c (b, then b_red on per channel) from t * tap_step on,
    // its lanes those of columns [lo - t * tap_step, hi - t * tap_step)
    // below `width` (the padding zero); `tap` the next row's. Inside: no
    // tap reads padding, every row's lanes are `lanes`.
    bool unfolded = false, inside = false;
    int64_t taps = 1, tap = 0, tap_step = 0, lo = 0, hi = 0, width = 0;
};

// Rows the copy prefetches ahead of itself (they lie b_red apart: too far
// for the hardware prefetcher).
constexpr int64_t kCopyAhead = 8;

// One unfolded row (c.unfolded): its lanes worked out per tap; the
// channel `ahead` rows on asked for at each channel's first tap.
template <int64_t Ahead>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void copy_tap_row(CoPack &c) {
    const int64_t s = c.tap * c.tap_step;
    if (c.tap == 0 && c.ahead > Ahead) {
        const float *next = c.b + ceil_div(Ahead, c.taps) * c.b_red;
        for (int v = 0; v < kVecs; ++v) _mm_prefetch((const char *)(next + 16 * v), _MM_HINT_T0);
        _mm_prefetch((const char *)(next + (c.taps - 1) * c.tap_step + c.width - 1), _MM_HINT_T0);
    }
    if (c.inside) {
        for (int v = 0; v < kVecs; ++v) _mm512_store_ps(c.dst + 16 * v, _mm512_maskz_loadu_ps(c.lanes[v], c.b + s + 16 * v));
    } else {
        const int64_t lo = c.lo - s, hi = std::min(c.width, c.hi - s);
        for (int v = 0; v < kVecs; ++v)
            _mm512_store_ps(c.dst + 16 * v, _mm512_maskz_loadu_ps(lane_range(lo - 16 * v, hi - 16 * v), c.b + s + 16 * v));
    }
    c.dst += c.step, --c.left, --c.ahead;
    if (++c.tap == c.taps) c.tap = 0, c.b += c.b_red;
}

// Vecs: c.vecs, known when compiled.
template <int64_t Ahead = kCopyAhead, int Vecs = kVecs>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void copy_row(CoPack &c) {
    if (Vecs == kVecs && c.unfolded) return copy_tap_row<Ahead>(c);
    if (c.ahead > Ahead) {
        for (int v = 0; v < Vecs; ++v)
            if (c.lanes[v]) _mm_prefetch((const char *)(c.b + Ahead * c.b_red + 16 * v), _MM_HINT_T0);
    } else if (c.next) {
        for (int v = 0; v < Vecs; ++v) _mm_prefetch((const char *)(c.b + Ahead * c.b_red + c.next + 16 * v), _MM_HINT_T0);
    }
    for (int v = 0; v < Vecs; ++v) _mm512_store_ps(c.dst + 16 * v, _mm512_maskz_loadu_ps(c.lanes[v], c.b + 16 * v));
    c.b += c.b_red, c.dst += c.step, --c.left, --c.ahead;
}

CONV_TARGET_AVX512 void finish_copy(CoPack &c) {
    while (c.left > 0) c.vecs == 1 ? copy_row<kCopyAhead, 1>(c) : copy_row(c);
}

// A tile's sums set to zero (unrolled: the array stays in registers).
template <int MR, int NV>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void zero_sums(__m512 (&acc)[MR][NV]) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
}

// One reduction step of a tile: a panel row times MR broadcasts of A.
// In place: `panel` is B itself, a step b_step floats on, its last vector
// under `tail` (no load past B's end).
template <int MR, int NV, bool InPlace = false>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void tile_step(__m512 (&acc)[MR][NV], const float *&a,
                                                                        int64_t a_row, int64_t a_red,
                                                                        const float *&panel, int64_t b_step = kPanel,
                                                                        __mmask16 tail = 0xFFFF) {
    __m512 b[NV];
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v)
        b[v] = InPlace ? _mm512_maskz_loadu_ps(v == NV - 1 ? tail : (__mmask16)0xFFFF, panel + 16 * v)
                       : _mm512_load_ps(panel + 16 * v);
    if constexpr (InPlace)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) _mm_prefetch((const char *)(panel + kInPlaceAhead * kPanel + 16 * v), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
        const __m512 ai = _mm512_set1_ps(a[i * a_row]);
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, b[v], acc[i][v]);
    }
    a += a_red, panel += InPlace ? b_step : kPanel;
}

// A tile's sums, rows [i0, i0 + MR) x columns [j0, j0 + 16 * NV) (the
// last vector's lanes limited by `tail`), written to the output with the
// Gemm's bias, ReLU, accumulation and layout (out_cols).
template <int MR, int NV>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void put_tile(const Gemm &m, int64_t i0, int64_t j0,
                                                                       __m512 (&acc)[MR][NV], __mmask16 tail) {
    // The epilogue reads the Gemm once: stores to out may alias it, so read
    // per sum its fields were loaded again after every store.
    float *const base = m.out;
    const float *const bias = m.bias;
    const int64_t ldo = m.ldo;
    const bool bias_rows = m.bias_rows, relu = m.relu, out_cols = m.out_cols, accumulate = m.accumulate;
    if (!bias && !relu && !out_cols && tail == (__mmask16)0xFFFF) {  // the common tile: whole vectors
        float *out = base + i0 * ldo + j0;
        if (m.stream && !accumulate && (reinterpret_cast<uintptr_t>(out) | (uintptr_t)ldo * 4) % 64 == 0) {
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
                for (int v = 0; v < NV; ++v) _mm512_stream_ps(out + i * ldo + 16 * v, acc[i][v]);
            return;
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
            for (int v = 0; v < NV; ++v) {
                float *o = out + i * ldo + 16 * v;
                _mm512_storeu_ps(o, accumulate ? _mm512_add_ps(acc[i][v], _mm512_loadu_ps(o)) : acc[i][v]);
            }
        return;
    }
    float *out = out_cols ? nullptr : base + i0 * ldo + j0;
    const bool streams = m.stream && !accumulate && !out_cols &&
                         (reinterpret_cast<uintptr_t>(out) | (uintptr_t)ldo * 4) % 64 == 0;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) {
            const __mmask16 lanes = v == NV - 1 ? tail : (__mmask16)0xFFFF;
            __m512 s = acc[i][v];
            if (bias)
                s = _mm512_add_ps(s, bias_rows ? _mm512_set1_ps(bias[i0 + i])
                                               : _mm512_maskz_loadu_ps(lanes, bias + j0 + 16 * v));
            // max(0, s) returns s when s is NaN: ReLU passes NaN on, as the reference does.
            if (relu) s = _mm512_max_ps(_mm512_setzero_ps(), s);
            if (out_cols) {  // no bias, no accumulation (backward-data)
                const __m512i at = _mm512_mullo_epi32(_mm512_set1_epi32((int)ldo),
                                                      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                                        10, 11, 12, 13, 14, 15));
                _mm512_mask_i32scatter_ps(base + (j0 + 16 * v) * ldo + i0 + i, lanes, at, s, 4);
                continue;
            }
            float *o = out + i * ldo + 16 * v;
            if (streams && lanes == (__mmask16)0xFFFF) {
                _mm512_stream_ps(o, s);
                continue;
            }
            if (accumulate) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(lanes, o));
            _mm512_mask_storeu_ps(o, lanes, s);
        }
}

// A tile asks for its output's lines (PREFETCHW) this many reduction steps
// before its end, so its stores find them in L1, owned: each tile's stores
// to 8 rows of a plane the cache no longer held had waited on the reads for
// ownership and brought them through L2 past the panels and W. Not on a
// reduction of 32 steps or fewer: there the ask came with the tile's first
// loads and only delayed them (1 thread, batch 1, 5 alternations: 32->64
// 112x112 forward 1.035x, 32->32 56x56 forward and backward-data 1.05x,
// 16->64 32x32 forward 1.06-1.09x; 2 threads 1.04-1.08x; batch 8 even).
constexpr int64_t kOutputAhead = 32;

// Those lines of rows [i0, i0 + MR) x columns [j0, j0 + 16 * NV) (rows
// need not start a line: the last float's too). Not for outputs written
// across (out_cols) or streamed past the caches.
template <int MR, int NV>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW inline __attribute__((always_inline)) void ask_for_output(const Gemm &m,
                                                                                                int64_t i0,
                                                                                                int64_t j0) {
    if (m.out_cols || m.stream) return;
    const float *out = m.out + i0 * m.ldo + j0;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) __builtin_prefetch(out + i * m.ldo + 16 * v, 1, 3);
        __builtin_prefetch(out + i * m.ldo + 16 * NV - 1, 1, 3);
    }
}

// Rows [i0, i0 + MR) x columns [j0, j0 + 16 * NV) of the output from one
// panel, the last vector's lanes limited by `tail`. InPlace: `panel` points
// into B (m.b at column j0), not at a packed panel.
template <int MR, int NV, bool InPlace = false>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW inline __attribute__((always_inline)) void tile_at(const Gemm &m, int64_t i0,
                                                                                       int64_t j0, const float *panel,
                                                                                       __mmask16 tail) {
    __m512 acc[MR][NV];
    zero_sums(acc);
    const float *a = a_rows(m, i0);
    const int64_t a_row = m.a_row, a_red = m.a_red;
    int64_t r = 0;
    const int64_t b_step = m.b_red;
    if (m.a_seg)  // segments (a_seg, a_jump)
        for (int64_t s0 = 0; s0 < m.R; s0 += m.a_seg, a += m.a_jump)
#pragma GCC unroll 4
            for (const int64_t end = std::min(m.R, s0 + m.a_seg); r < end; ++r)
                tile_step<MR, NV, InPlace>(acc, a, a_row, a_red, panel, b_step, tail);
    if (m.ahead_lines) {
        const char *next = m.ahead;
#pragma GCC unroll 4
        for (; r < m.ahead_lines; ++r, next += m.ahead_stride) {
            tile_step<MR, NV, InPlace>(acc, a, a_row, a_red, panel, b_step, tail);
            _mm_prefetch(next, _MM_HINT_T1);
        }
    }
    if (m.R > kOutputAhead) {  // else the ask only delays the tile's first loads
#pragma GCC unroll 4
        for (const int64_t ask = std::max(r, m.R - kOutputAhead); r < ask; ++r)
            tile_step<MR, NV, InPlace>(acc, a, a_row, a_red, panel, b_step, tail);
        ask_for_output<MR, NV>(m, i0, j0);
    }
#pragma GCC unroll 4
    for (; r < m.R; ++r) tile_step<MR, NV, InPlace>(acc, a, a_row, a_red, panel, b_step, tail);
    put_tile<MR, NV>(m, i0, j0, acc, tail);
}

template <int MR, int NV, bool InPlace = false>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW void tile(const Gemm &m, int64_t i0, int64_t j0, const float *panel,
                                                __mmask16 tail) {
    tile_at<MR, NV, InPlace>(m, i0, j0, panel, tail);
}

// `count` tiles of MR rows down from row i0, on one panel read in place.
template <int MR, int NV>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW void tiles_down(const Gemm &m, int64_t i0, int64_t count, int64_t j0,
                                                      const float *panel, __mmask16 tail) {
    for (int64_t t = 0; t < count; ++t) tile_at<MR, NV, true>(m, i0 + t * MR, j0, panel, tail);
}

using TileFn = void (*)(const Gemm &, int64_t, int64_t, const float *, __mmask16);
using TilesDownFn = void (*)(const Gemm &, int64_t, int64_t, int64_t, const float *, __mmask16);
template <int... Rows>
constexpr std::array<std::array<TilesDownFn, kVecs>, kRows> tiles_down_table(std::integer_sequence<int, Rows...>) {
    return {{{tiles_down<Rows + 1, 1>, tiles_down<Rows + 1, 2>, tiles_down<Rows + 1, 3>}...}};
}
constexpr auto kTilesDown = tiles_down_table(std::make_integer_sequence<int, kRows>{});

template <bool InPlace, int... Rows>
constexpr std::array<std::array<TileFn, kVecs>, kRows> tile_table(std::integer_sequence<int, Rows...>) {
    return {{{tile<Rows + 1, 1, InPlace>, tile<Rows + 1, 2, InPlace>, tile<Rows + 1, 3, InPlace>}...}};
}
constexpr auto kTiles = tile_table<false>(std::make_integer_sequence<int, kRows>{});
constexpr auto kInPlaceTiles = tile_table<true>(std::make_integer_sequence<int, kRows>{});

// A tile that also copies, a row of each every reduction step, under its
// FMAs, the next panel from B and a strip of W (CoPacks, either empty;
// run_block_avx512's `make` and `strips`): the copies' loads wait on L2 or
// L3 while the FMAs run, where copies ahead of the tiles waited alone (7%
// of 64->64 56x56's forward, 5% of 512->512 14x14's backward-data). Rows
// are asked for kAhead on, as pack_panels_avx512 does. Not for Gemm::a_seg
// or ahead_lines. It asks for its output on short reductions too: skipped
// there as tile() does, 32->128 28x28's backward-data ran 0.98x (only the
// code's layout changed: no such tile runs 32 steps or fewer there).
template <int MR, int NV>
CONV_TARGET_AVX512 CONV_TARGET_PRFCHW void packing_tile(const Gemm &m, int64_t i0, int64_t j0, const float *panel,
                                                        __mmask16 tail, CoPack &cp, CoPack &strip) {
    __m512 acc[MR][NV];
    zero_sums(acc);
    const float *a = a_rows(m, i0);
    const int64_t a_row = m.a_row, a_red = m.a_red;
    int64_t r = 0;
    if (strip.left == 0)  // the common case: a panel alone, one test a step
        for (; r < m.R && cp.left > 0; ++r) {
            tile_step<MR, NV>(acc, a, a_row, a_red, panel);
            copy_row<kAhead>(cp);
        }
    for (; r < m.R && (cp.left > 0 || strip.left > 0); ++r) {
        tile_step<MR, NV>(acc, a, a_row, a_red, panel);
        if (cp.left > 0) copy_row<kAhead>(cp);
        if (strip.left > 0) copy_row<kAhead, 1>(strip);
    }
#pragma GCC unroll 4
    for (const int64_t ask = std::max(r, m.R - kOutputAhead); r < ask; ++r)
        tile_step<MR, NV>(acc, a, a_row, a_red, panel);
    ask_for_output<MR, NV>(m, i0, j0);
#pragma GCC unroll 4
    for (; r < m.R; ++r) tile_step<MR, NV>(acc, a, a_row, a_red, panel);
    put_tile<MR, NV>(m, i0, j0, acc, tail);
}

using PackingTileFn = void (*)(const Gemm &, int64_t, int64_t, const float *, __mmask16, CoPack &, CoPack &);
template <int... Rows>
constexpr std::array<std::array<PackingTileFn, kVecs>, kRows> packing_tile_table(std::integer_sequence<int, Rows...>) {
    return {{{packing_tile<Rows + 1, 1>, packing_tile<Rows + 1, 2>, packing_tile<Rows + 1, 3>}...}};
}
constexpr auto kPackingTiles = packing_tile_table(std::make_integer_sequence<int, kRows>{});

// The sums of one dot-product tile's output (row, col) written with its
// bias, ReLU and accumulation.
inline void put_dot(const Gemm &m, int64_t row, int64_t col, float sum) {
    if (m.bias) sum += m.bias_rows ? m.bias[row] : m.bias[col];
    if (m.relu) sum = sum < 0.f ? 0.f : sum;  // NaN stays NaN
    float &o = m.out_cols ? m.out[col * m.ldo + row] : m.out[row * m.ldo + col];
    o = m.accumulate ? o + sum : sum;
}

// Rows [i0, i0 + MR) x columns [j0, j0 + T) of the output as dot products
// of A's rows with the T columns at `cols` (R floats each): 16 steps of the
// reduction a vector (the last under a mask), MR * T sums, added across
// their lanes at the end.
template <int MR, int T>
CONV_TARGET_AVX512 void dot_tile_avx512(const Gemm &m, int64_t i0, int64_t j0, const float *cols) {
    __m512 acc[MR * T];
#pragma GCC unroll 24
    for (int a = 0; a < MR * T; ++a) acc[a] = _mm512_setzero_ps();
    const float *a = m.a + i0 * m.a_row;
    const int64_t a_row = m.a_row, R = m.R;
    for (int64_t r = 0; r < R; r += 16) {
        const __mmask16 lanes = first_lanes(R - r);
        __m512 b[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) b[t] = _mm512_maskz_loadu_ps(lanes, cols + t * R + r);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            const __m512 ai = _mm512_maskz_loadu_ps(lanes, a + i * a_row + r);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[i * T + t] = _mm512_fmadd_ps(ai, b[t], acc[i * T + t]);
        }
    }
    // The lanes added 16 sums at a time (lane_sums_of), not each alone.
    alignas(64) float sums[32];
    lane_sums_of<MR * T>(acc, sums);
    for (int i = 0; i < MR; ++i)
        for (int t = 0; t < T; ++t) put_dot(m, i0 + i, j0 + t, sums[i * T + t]);
}

using DotTileFn = void (*)(const Gemm &, int64_t, int64_t, const float *);
template <int T, int... Rows>
constexpr std::array<DotTileFn, kRows> dot_row_avx512(std::integer_sequence<int, Rows...>) {
    return {{dot_tile_avx512<Rows + 1, T>...}};
}
// kDotTilesAvx512[T - 1][MR - 1]: up to 8 rows (MR * T <= 24 sums: 6 rows
// for 4 columns, the entries past that unused).
const std::array<DotTileFn, kRows> kDotTilesAvx512[kDotColumns] = {
    dot_row_avx512<1>(std::make_integer_sequence<int, kRows>{}),
    dot_row_avx512<2>(std::make_integer_sequence<int, kRows>{}),
    dot_row_avx512<3>(std::make_integer_sequence<int, kRows>{}),
    dot_row_avx512<4>(std::make_integer_sequence<int, 6>{})};

// Rows [lo, hi) x columns [j0, j0 + T) of the output where A lies in
// strips (strip_w) and the columns are dot_tile's (T of them, R floats
// each): a strip's 16 rows are one vector of A a step, so the sums run down
// the rows, S strips x T columns of them, every lane used (a panel of a 196-
// position plane's last 4 columns as a 48-column tile used a quarter of its
// lanes: 8% of 512->512 14x14's backward-data for 2% of its products).
// Rows from the strip holding lo; those outside [lo, hi) are not written.
template <int S, int T>
CONV_TARGET_AVX512 void strip_tail_tile(const Gemm &m, int64_t lo, int64_t hi, int64_t j0, const float *cols) {
    __m512 acc[S][T];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[s][t] = _mm512_setzero_ps();
    const int64_t first = lo / kStrip * kStrip, R = m.R, a_strip = m.a_strip, a_red = m.a_red;
    const float *a = m.a + first / kStrip * a_strip;
    for (int64_t r = 0; r < R; ++r, a += a_red) {
        __m512 b[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) b[t] = _mm512_set1_ps(cols[t * R + r]);
#pragma GCC unroll 4
        for (int s = 0; s < S; ++s) {
            const __m512 as = _mm512_loadu_ps(a + s * a_strip);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[s][t] = _mm512_fmadd_ps(as, b[t], acc[s][t]);
        }
    }
    alignas(64) float sums[kStrip];
    for (int s = 0; s < S; ++s)
        for (int t = 0; t < T; ++t) {
            _mm512_store_ps(sums, acc[s][t]);
            const int64_t row0 = first + s * kStrip;
            for (int64_t l = std::max<int64_t>(0, lo - row0); l < kStrip && row0 + l < hi; ++l)
                put_dot(m, row0 + l, j0 + t, sums[l]);
        }
}

using StripTailFn = void (*)(const Gemm &, int64_t, int64_t, int64_t, const float *);
constexpr int kTailStrips = 4;  // strips a strip_tail_tile at most
template <int T, int... S>
constexpr std::array<StripTailFn, kTailStrips> strip_tail_row(std::integer_sequence<int, S...>) {
    return {{strip_tail_tile<S + 1, T>...}};
}
// kStripTails[T - 1][S - 1].
const std::array<StripTailFn, kTailStrips> kStripTails[kDotColumns] = {
    strip_tail_row<1>(std::make_integer_sequence<int, kTailStrips>{}),
    strip_tail_row<2>(std::make_integer_sequence<int, kTailStrips>{}),
    strip_tail_row<3>(std::make_integer_sequence<int, kTailStrips>{}),
    strip_tail_row<4>(std::make_integer_sequence<int, kTailStrips>{})};

// Rows [i0, i1) x the `cols` columns from j0 (packed as dot_tile's), A in
// strips: kTailStrips strips at a time.
void run_strip_tail(const Gemm &m, int64_t i0, int64_t i1, int64_t j0, int64_t cols, const float *packed) {
    for (int64_t lo = i0; lo < i1;) {
        const int64_t first = lo / kStrip * kStrip;
        const int64_t strips = std::min<int64_t>(kTailStrips, ceil_div(i1 - first, kStrip));
        const int64_t hi = std::min(i1, first + strips * kStrip);
        kStripTails[cols - 1][strips - 1](m, lo, hi, j0, packed);
        lo = hi;
    }
}

// The dot-product tiles for rows [i, i + rows) x columns [q0, q0 + cols)
// at `panel`, in as many tiles as their registers allow.
// most[T - 1]: the rows of a tile of T columns.
template <class Tiles>
void run_dot_tail(const Gemm &m, int64_t i, int64_t rows, int64_t q0, int64_t cols, const float *panel,
                  const Tiles &tiles, const int64_t (&most_rows)[kDotColumns]) {
    const int64_t most = most_rows[cols - 1];
    for (int64_t at = i; at < i + rows; at += most) tiles[cols - 1][std::min(most, i + rows - at) - 1](m, at, q0, panel);
}

// Output rows [i0, i1) x columns [j0, j1) from their packed panels, in
// tiles of at most `tile_rows` rows and one `panel`-column panel each:
// tile(i, q0, rows, cols). With rows_inner the panel stays while the tiles
// walk down the rows (A in L2 is the stream); otherwise a row tile stays
// while the panels pass. Row tiles as even as they come, heights one apart
// at most: 49 rows as 7 x 7 in 8-row tiles and as 4 x 6 + 5 x 5 in 6-row
// ones, not 8 x 6 and a 1-row tile that loads a panel for a sixteenth of
// the FMAs. `aligned` (A in strips, i0 a multiple of tile_rows): whole
// tiles from i0 and a last shorter one, so that none crosses a strip.
template <class Tile>
void walk_block(int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool rows_inner, int64_t tile_rows,
                int64_t panel, Tile &&tile, bool aligned = false) {
    if (i1 <= i0) return;
    const EvenPieces even(i1 - i0, tile_rows);
    const int64_t count = even.count;
    auto one = [&](int64_t t, int64_t q0) {
        const int64_t at = i0 + (aligned ? t * tile_rows : even.start(t));
        tile(at, q0, aligned ? std::min(tile_rows, i1 - at) : even.size(t), std::min(panel, j1 - q0));
    };
    if (rows_inner) {
        for (int64_t q0 = j0; q0 < j1; q0 += panel)
            for (int64_t t = 0; t < count; ++t) one(t, q0);
    } else {
        for (int64_t t = 0; t < count; ++t)
            for (int64_t q0 = j0; q0 < j1; q0 += panel) one(t, q0);
    }
}

// The source of the next panel (last_panel_by_panel), asked into L2 a
// share of its lines per tile, a line per reduction step of the tile
// (Gemm::ahead), in sweeps of lines `stride` bytes apart: forward, one
// sweep over 48 of W's rows, one run of memory; backward-data, a panel's
// width of each of W's rows, a sweep for each 64 bytes of it.
struct PanelAhead {
    const char *at = nullptr;
    int64_t stride = 64, sweep = 0, sweeps = 0;  // lines a sweep; sweeps left after this one
    int64_t done = 0;                           // lines of this sweep asked for
    int64_t share = 0;
    void give(Gemm &m) {
        if (done == sweep && sweeps > 0) at += 64, done = 0, --sweeps;
        const int64_t n = std::min({share, sweep - done, m.R});
        m.ahead = at + done * stride, m.ahead_lines = n, m.ahead_stride = stride;
        done += n;
    }
};

PanelAhead panel_source(const Gemm &m, int64_t q0, int64_t q1, int64_t tiles) {
    PanelAhead a;
    if (q0 >= q1) return a;
    a.at = (const char *)(m.b + q0 * m.b_col);
    if (m.b_red == 1 && m.b_col == m.R) {
        a.sweep = ceil_div((q1 - q0) * m.R * 4, 64) + 1;  // + 1: the rows need not start a line
    } else {
        a.stride = m.b_red * 4, a.sweep = m.R;
        a.sweeps = ceil_div((q1 - q0) * 4, 64);  // one more than whole lines, as above
    }
    a.share = ceil_div(a.sweep * (a.sweeps + 1), std::max<int64_t>(tiles, 1));
    return a;
}

// Rows [k0, k0 + steps) of W's columns [q0, q0 + width) (b: W, b_red apart)
// as one panel's steps at dst, a CoPack to run under tiles.
CoPack block_copy(const Gemm &w, int64_t k0, int64_t steps, int64_t q0, int64_t width, float *dst) {
    CoPack c{w.b + k0 * w.b_red + q0, w.b_red, dst, steps, w.R - k0, {}};
    for (int v = 0; v < kVecs; ++v) c.lanes[v] = first_lanes(std::clamp<int64_t>(width - 16 * v, 0, 16));
    return c;
}

// Whether run_block_avx512 can make this GEMM's panels under its tiles
// (`make`): B's rows read as they lie (b_col == 1), whole panels of them,
// or a 1-D convolution's rows unfolded from them.
bool packs_under_tiles(const Gemm &m) {
    return m.b_col == 1 && m.unfold != Gemm::Unfold::cols && !m.a_seg && !m.ahead_lines && !m.panel_rows;
}

// The copy of B's columns [q0, q0 + width) into a panel at dst, a row at
// a time under tiles (unfolded where the Gemm unfolds its rows).
CoPack panel_copy(const Gemm &m, int64_t q0, int64_t width, float *dst) {
    if (m.unfold != Gemm::Unfold::rows) return block_copy(m, 0, m.R, q0, width, dst);
    const int64_t first = q0 + m.shift;  // tap 0's source column of the panel's first
    CoPack c{m.b + first, m.b_red, dst, m.R, m.R, {}};
    c.unfolded = true, c.taps = m.taps, c.tap_step = m.tap_step, c.lo = m.lo - first, c.hi = m.hi - first;
    c.width = width;
    // The taps' shifts span [0, (taps - 1) * tap_step], which backward-data
    // (taps reversed) runs down from 0.
    const int64_t span = (c.taps - 1) * c.tap_step;
    c.inside = c.lo - std::min<int64_t>(0, span) <= 0 && c.hi - std::max<int64_t>(0, span) >= width;
    for (int v = 0; v < kVecs; ++v) c.lanes[v] = first_lanes(width - 16 * v);
    return c;
}

// The strips of a pointwise W (K x C) that run_block_avx512 makes under its
// tiles (backward-data's A, strip_rows_avx512's layout in `own`): strips
// [next, end), in order, each while the row tile before its first runs on
// the item's first panel.
struct StripWork {
    const float *w;
    int64_t K, C;
    float *own;
    int64_t next, end;
    CoPack copy_of_next() {
        CoPack c{w + next * kStrip, C, own + next * K * kStrip, K, K, {}};
        c.lanes[0] = first_lanes(std::min<int64_t>(kStrip, C - next * kStrip));
        c.step = kStrip, c.vecs = 1;
        ++next;
        return c;
    }
    // The strips before `until` not made yet, made now (no tiles to run under).
    void make_before(int64_t until) {
        while (next < until) {
            CoPack c = copy_of_next();
            finish_copy(c);
        }
    }
};

// panels null: B read in place (b_col == 1), a last panel of few columns
// too (no dot products: its columns are not contiguous). ahead: lines to
// ask for, a share before each tile. make (= panels, rows outermost): the
// panels are made here, a dot-product tail and the first panel first, each
// further one (packs_under_tiles) by the first row tile as it runs on the
// panel before it (packing_tile). strips (with make; A in strips, the
// one holding row i0 made): the others made here likewise.
CONV_TARGET_AVX512 void run_block_avx512(const Gemm &m, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                         const float *panels, bool rows_inner, PanelAhead *ahead = nullptr,
                                         float *make = nullptr, StripWork *strips = nullptr) {
    const auto &tiles = !panels ? kInPlaceTiles : kTiles;
    const int64_t panel_rows = m.panel_rows ? m.panel_rows : m.R;
    const int64_t rest = (j1 - j0) % kPanel;
    const int64_t whole = rest && panels && dot_tail(m, rest) ? j1 - rest : j1;  // before a dot-product tail
    if (make) {
        if (whole < j1) pack_panels_avx512(m, whole, j1, make + (whole - j0) * panel_rows);
        if (j0 < whole) pack_panels_avx512(m, j0, std::min(whole, j0 + kPanel), make);
    }
    // A in strips: a last few columns down the rows (strip_tail_tile), after
    // the tiles where they make the strips.
    const bool strip_tail = panels && m.a_strip && whole < j1;
    if (strip_tail && !strips) run_strip_tail(m, i0, i1, whole, rest, panels + (whole - j0) * panel_rows);
    const int64_t walk_end = strip_tail ? whole : j1;
    // B in place, rows innermost, nothing made or asked for under the tiles:
    // each panel's row tiles in a call or two (tiles_down, one per height),
    // not a call a tile with the Gemm read again for each. 1 thread, 5
    // alternated rounds: pw1's 32->64 112x112 forward 1.017x, ResNet-50's
    // 64->64 and 64->256 56x56 1.007-1.009x (2 threads 1.009-1.013x, batch 8
    // 1.006x); backward-data (W in strips) keeps the walk.
    if (!panels && rows_inner && !ahead && !make && !strips && !m.a_strip && i0 < i1) {
        const EvenPieces even(i1 - i0, kRows);
        for (int64_t q0 = j0; q0 < walk_end; q0 += kPanel) {
            const int64_t cols = std::min(kPanel, walk_end - q0), vecs = ceil_div(cols, 16);
            const __mmask16 tail = first_lanes(cols - 16 * (vecs - 1));
            if (even.high) kTilesDown[even.low][vecs - 1](m, i0, even.high, q0, m.b + q0, tail);
            if (even.count > even.high)
                kTilesDown[even.low - 1][vecs - 1](m, i0 + even.high * (even.low + 1), even.count - even.high, q0,
                                                   m.b + q0, tail);
        }
        return;
    }
    walk_block(i0, i1, j0, walk_end, rows_inner, kRows, kPanel, [&](int64_t i, int64_t q0, int64_t rows, int64_t cols) {
        const float *panel = panels ? panels + (q0 - j0) * panel_rows : m.b + q0;
        if (panels && dot_tail(m, cols)) return run_dot_tail(m, i, rows, q0, cols, panel, kDotTilesAvx512, {8, 8, 8, 6});
        const int64_t vecs = ceil_div(cols, 16);
        const bool copies_panel = make && i == i0 && q0 + kPanel < whole;
        // The next row tile's strip, if it starts one not yet made.
        const bool makes_strip = strips && q0 == j0 && i + rows < i1 && (i + rows) / kStrip == strips->next &&
                                 strips->next < strips->end;
        if (copies_panel || makes_strip) {
            CoPack copy{}, strip{};
            if (copies_panel) {
                const int64_t next = q0 + kPanel;
                copy = panel_copy(m, next, std::min(kPanel, whole - next), make + (next - j0) * panel_rows);
                // The panel after it, if any, asked for from the copy's last rows on.
                if (!copy.unfolded && next + kPanel < whole) copy.next = kPanel - m.R * m.b_red;
            }
            if (makes_strip) strip = strips->copy_of_next();
            kPackingTiles[rows - 1][vecs - 1](m, i, q0, panel, first_lanes(cols - 16 * (vecs - 1)), copy, strip);
            finish_copy(copy);
            return finish_copy(strip);
        }
        const TileFn tile = tiles[rows - 1][vecs - 1];
        const __mmask16 tail = first_lanes(cols - 16 * (vecs - 1));
        if (!ahead) return tile(m, i, q0, panel, tail);
        Gemm asking = m;  // with the tile's share of lines to ask for
        ahead->give(asking);
        tile(asking, i, q0, panel, tail);
    }, m.a_strip != 0);
    if (!strips) return;
    strips->make_before(strips->end);  // none left but where no whole panel ran
    if (strip_tail) run_strip_tail(m, i0, i1, whole, rest, panels + (whole - j0) * panel_rows);
}

// The transposed backward-data on few images (Plan::w_blocks): W is not
// copied into panels (its whole copy, written out and read back from L2 by
// each row tile, was a third of 1024->1024 7x7's pass); a panel's columns
// of W are read where they lie, kBlockSteps rows at a time, by every row
// tile of every image, and the tiles' sums wait in `sums` (the panel's
// positions x 48) for the next block. Each block was copied into an L1
// buffer first (under the previous block's tiles) until read in place
// measured faster (kBlockSteps). The in-place steps' prefetch of the same
// rows two panels on stays: without it 0.99-1.006x (2048->512 7x7 0.987x),
// asking for the rows 8 ahead instead 0.91-1.0x.
template <int MR, int NV>
CONV_TARGET_AVX512 void block_tile(const Gemm &m, int64_t i0, int64_t j0, int64_t k0, int64_t steps,
                                   const float *w, int64_t w_row, float *sums, bool first, bool last,
                                   __mmask16 tail) {
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v)
            acc[i][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(sums + (i0 + i) * kPanel + 16 * v);
    const float *a = m.a + i0 * m.a_row + k0 * m.a_red, *panel = w;
    const int64_t a_row = m.a_row, a_red = m.a_red;
#pragma GCC unroll 4
    for (int64_t r = 0; r < steps; ++r) tile_step<MR, NV, true>(acc, a, a_row, a_red, panel, w_row, tail);
    if (last) return put_tile<MR, NV>(m, i0, j0, acc, tail);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) _mm512_store_ps(sums + (i0 + i) * kPanel + 16 * v, acc[i][v]);
}

using BlockTileFn = void (*)(const Gemm &, int64_t, int64_t, int64_t, int64_t, const float *, int64_t, float *, bool,
                             bool, __mmask16);
template <int... Rows>
constexpr std::array<std::array<BlockTileFn, kVecs>, kRows> block_tile_table(std::integer_sequence<int, Rows...>) {
    return {{{block_tile<Rows + 1, 1>, block_tile<Rows + 1, 2>, block_tile<Rows + 1, 3>}...}};
}
constexpr auto kBlockTiles = block_tile_table(std::make_integer_sequence<int, kRows>{});

// ---- AVX2: the same passes in 6 x 16 tiles over 16-column panels. Partial
// vectors load and store through buffers (avx2.h), never past a tensor.

constexpr int64_t kRowsAhead = 2;  // rows ahead that pack_rows_dealt_avx2 prefetches

// Columns [j0, j1) of B's rows, B(r, j) = b[r * b_red + j], into whole
// 16-column panels: each row read once, in order, and dealt out to the
// panels. Panel by panel, the walk down rows pages apart re-started the
// prefetcher at every row and waited on L3.
CONV_TARGET_AVX2 void pack_rows_dealt_avx2(const Gemm &m, int64_t j0, int64_t j1, float *dst) {
    for (int64_t r = 0; r < m.R; ++r) {
        const float *row = m.b + r * m.b_red;
        const bool ahead = r + kRowsAhead < m.R;
        for (int64_t q0 = j0; q0 < j1; q0 += kPanelAvx2) {
            if (ahead) _mm_prefetch((const char *)(row + kRowsAhead * m.b_red + q0), _MM_HINT_T0);
            copy_panel_step_avx2(dst + (q0 - j0) * m.R + r * kPanelAvx2, row + q0, j1 - q0);
        }
    }
}

// pack_panels_avx512 at 16 columns a panel.
CONV_TARGET_AVX2 void pack_panels_avx2(const Gemm &m, int64_t j0, int64_t j1, float *dst) {
    if (m.b_col == 1 && m.b_red >= kFarRows) {
        // All but a last panel packed as dot_tile's columns.
        const int64_t rest = (j1 - j0) % kPanelAvx2;
        const int64_t whole = rest && dot_tail(m, rest) ? j1 - rest : j1;
        pack_rows_dealt_avx2(m, j0, whole, dst);
        dst += (whole - j0) * m.R;
        j0 = whole;
    }
    for (int64_t q0 = j0; q0 < j1; q0 += kPanelAvx2) {
        const int64_t width = std::min(kPanelAvx2, j1 - q0);
        float *panel = dst + (q0 - j0) * m.R;
        if (dot_tail(m, width)) {
            pack_dot_columns(m, q0, width, panel);
            continue;
        }
        if (m.b_col == 1) {
            for (int64_t r = 0; r < m.R; ++r) {
                const float *src = m.b + r * m.b_red + q0;
                if (r + kAhead < m.R) {
                    const float *next = src + kAhead * m.b_red;
                    _mm_prefetch((const char *)next, _MM_HINT_T0);
                    _mm_prefetch((const char *)(next + width - 1), _MM_HINT_T0);
                }
                copy_panel_step_avx2(panel + r * kPanelAvx2, src, width);
            }
            continue;
        }
        // A transposed source (b_red == 1): 8 columns x 8 steps transposed.
        for (int64_t jj0 = 0; jj0 < kPanelAvx2; jj0 += 8) {
            const int64_t cols = std::clamp<int64_t>(width - jj0, 0, 8);
            for (int64_t r0 = 0; r0 < m.R; r0 += 8) {
                const int64_t n = std::min<int64_t>(8, m.R - r0);
                __m256 v[8];
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t)
                    v[t] = t < cols ? load_first_avx2(m.b + (q0 + jj0 + t) * m.b_col + r0, n)
                                    : _mm256_setzero_ps();
                transpose8(v);
                for (int64_t u = 0; u < n; ++u) _mm256_store_ps(panel + (r0 + u) * kPanelAvx2 + jj0, v[u]);
            }
        }
    }
}

// Rows [i0, i0 + MR) x columns [j0, j0 + 8 * NV) of the output from one
// panel, the last vector's first `tail` lanes real.
template <int MR, int NV>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void tile_body(const Gemm &m, int64_t i0, int64_t j0, const float *panel, int tail) {
    __m256 acc[MR * NV];  // flat, every loop unrolled: kept in registers
#pragma GCC unroll 12
    for (int a = 0; a < MR * NV; ++a) acc[a] = _mm256_setzero_ps();
    const float *a = a_rows<kRowsAvx2>(m, i0);
    const int64_t a_row = m.a_row, a_red = m.a_red, R = m.R;
    // Four steps an iteration: one at a time, the loop's own three
    // instructions a step held 64-step tiles (WaveNet's 64->256) to 0.72-0.78
    // of oneDNN, 0.80-0.87 unrolled.
#pragma GCC unroll 4
    for (int64_t r = 0; r < R; ++r, a += a_red, panel += kPanelAvx2) {
        __m256 b[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) b[v] = _mm256_load_ps(panel + 8 * v);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i * a_row);
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) acc[i * NV + v] = _mm256_fmadd_ps(ai, b[v], acc[i * NV + v]);
        }
    }
    // The epilogue reads the Gemm once: its stores to out may alias it, so
    // read per sum the fields cost 15% of a 64-step tile (64->256 56x56).
    float *const out = m.out;
    const float *const bias = m.bias;
    const int64_t ldo = m.ldo;
    const bool bias_rows = m.bias_rows, relu = m.relu, out_cols = m.out_cols, accumulate = m.accumulate;
    if (!bias && !relu && !out_cols && tail == 8) {  // the common tile: whole vectors, no epilogue
        if (accumulate) {
#pragma GCC unroll 6
            for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
                for (int v = 0; v < NV; ++v) {
                    float *o = out + (i0 + i) * ldo + j0 + 8 * v;
                    _mm256_storeu_ps(o, _mm256_add_ps(acc[i * NV + v], _mm256_loadu_ps(o)));
                }
            return;
        }
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) _mm256_storeu_ps(out + (i0 + i) * ldo + j0 + 8 * v, acc[i * NV + v]);
        return;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
            const int lanes = v == NV - 1 ? tail : 8;
            __m256 s = acc[i * NV + v];
            if (bias)
                s = _mm256_add_ps(s, bias_rows ? _mm256_broadcast_ss(bias + i0 + i)
                                               : load_first_avx2(bias + j0 + 8 * v, lanes));
            if (relu) s = _mm256_max_ps(_mm256_setzero_ps(), s);  // NaN stays NaN
            if (out_cols) {  // stored below, column by column
                acc[i * NV + v] = s;
                continue;
            }
            float *o = out + (i0 + i) * ldo + j0 + 8 * v;
            if (accumulate) s = _mm256_add_ps(s, load_first_avx2(o, lanes));
            store_first_avx2(o, s, lanes);
        }
    if (!out_cols) return;
    // No accumulation: column j of the tile is out's row j, its MR values
    // consecutive. Transposed 8 x 8 in registers, a row written per column
    // (one lane per store cost 0.57x on 256->1024 14x14 channels-last).
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
        __m256 t[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) t[i] = i < MR ? acc[i * NV + v] : _mm256_setzero_ps();
        transpose8(t);
        const int lanes = v == NV - 1 ? tail : 8;
        for (int l = 0; l < lanes; ++l) store_first_avx2(out + (j0 + 8 * v + l) * ldo + i0, t[l], MR);
    }
}

template <int MR, int NV>
CONV_TARGET_AVX2 void tile_avx2(const Gemm &m, int64_t i0, int64_t j0, const float *panel, int tail) {
    tile_body<MR, NV>(m, i0, j0, panel, tail);
}
// Rows [i0, i0 + MR) x `count` whole panels from column j0 in one call, a
// row of tiles: on 32- and 64-step tiles (MobileNet's 32->64 112x112,
// 64->128 56x56 forward) a call per tile cost 5-7%.
template <int MR>
CONV_TARGET_AVX2 void tile_row_avx2(const Gemm &m, int64_t i0, int64_t j0, const float *panel, int64_t count) {
    const Gemm g = m;  // a copy the stores to out cannot alias
    for (int64_t t = 0; t < count; ++t) tile_body<MR, 2>(g, i0, j0 + t * kPanelAvx2, panel + t * kPanelAvx2 * g.R, 8);
}

using TileRowAvx2Fn = void (*)(const Gemm &, int64_t, int64_t, const float *, int64_t);
template <int... Rows>
constexpr std::array<TileRowAvx2Fn, kRowsAvx2> tile_row_table_avx2(std::integer_sequence<int, Rows...>) {
    return {{tile_row_avx2<Rows + 1>...}};
}
constexpr auto kTileRowsAvx2 = tile_row_table_avx2(std::make_integer_sequence<int, kRowsAvx2>{});

using TileAvx2Fn = void (*)(const Gemm &, int64_t, int64_t, const float *, int);

template <int... Rows>
constexpr std::array<std::array<TileAvx2Fn, kVecsAvx2>, kRowsAvx2> tile_table_avx2(
    std::integer_sequence<int, Rows...>) {
    return {{{tile_avx2<Rows + 1, 1>, tile_avx2<Rows + 1, 2>}...}};
}
constexpr auto kTilesAvx2 = tile_table_avx2(std::make_integer_sequence<int, kRowsAvx2>{});

// One vector of reduction steps [r, r + lanes) into dot_tile's sums.
template <int MR, int T, bool Whole>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void dot_step(const float *a, int64_t a_row, const float *cols,
                                                                     int64_t R, int64_t r, int64_t lanes, __m256 *acc) {
    __m256 b[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) b[t] = Whole ? _mm256_loadu_ps(cols + t * R + r) : load_first_avx2(cols + t * R + r, lanes);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        const __m256 ai = Whole ? _mm256_loadu_ps(a + i * a_row + r) : load_first_avx2(a + i * a_row + r, lanes);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[i * T + t] = _mm256_fmadd_ps(ai, b[t], acc[i * T + t]);
    }
}

// Rows [i0, i0 + MR) x columns [j0, j0 + T) of the output as dot products
// of A's rows with the T columns at `cols` (R floats each): 8 steps of the
// reduction a vector, MR * T sums, added across their lanes at the end.
template <int MR, int T>
CONV_TARGET_AVX2 void dot_tile(const Gemm &m, int64_t i0, int64_t j0, const float *cols) {
    __m256 acc[MR * T];
#pragma GCC unroll 12
    for (int a = 0; a < MR * T; ++a) acc[a] = _mm256_setzero_ps();
    const float *a = m.a + i0 * m.a_row;
    const int64_t a_row = m.a_row, R = m.R;
    int64_t r = 0;
    for (; r + 8 <= R; r += 8) dot_step<MR, T, true>(a, a_row, cols, R, r, 8, acc);
    if (r < R) dot_step<MR, T, false>(a, a_row, cols, R, r, R - r, acc);  // no load past A's or the columns' end
    for (int i = 0; i < MR; ++i)
        for (int t = 0; t < T; ++t) {
            __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[i * T + t]), _mm256_extractf128_ps(acc[i * T + t], 1));
            h = _mm_add_ps(h, _mm_movehl_ps(h, h));
            put_dot(m, i0 + i, j0 + t, _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h))));
        }
}

template <int T, int... Rows>
constexpr std::array<DotTileFn, sizeof...(Rows)> dot_row(std::integer_sequence<int, Rows...>) {
    return {{dot_tile<Rows + 1, T>...}};
}
// kDotTiles[T - 1][MR - 1], MR * T <= 12: up to 6 rows for 1-2 columns, 3 for 3-4.
const std::array<DotTileFn, 6> kDotTiles[kDotColumns] = {
    dot_row<1>(std::make_integer_sequence<int, 6>{}), dot_row<2>(std::make_integer_sequence<int, 6>{}),
    {dot_tile<1, 3>, dot_tile<2, 3>, dot_tile<3, 3>}, {dot_tile<1, 4>, dot_tile<2, 4>, dot_tile<3, 4>}};

// run_block_avx512 with the AVX2 tiles.
void run_block_avx2(const Gemm &m, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const float *panels,
                    bool rows_inner) {
    if (!rows_inner && !m.out_cols && j1 - j0 >= 2 * kPanelAvx2) {
        // Each row of tiles in one call over the whole panels, then the rest.
        const int64_t whole = (j1 - j0) / kPanelAvx2;
        walk_block(i0, i1, j0, j0 + kPanelAvx2, false, kRowsAvx2, kPanelAvx2, [&](int64_t i, int64_t, int64_t rows, int64_t) {
            kTileRowsAvx2[rows - 1](m, i, j0, panels, whole);
        }, m.a_strip != 0);
        j0 += whole * kPanelAvx2, panels += whole * kPanelAvx2 * m.R;
        if (j0 == j1) return;
    }
    walk_block(i0, i1, j0, j1, rows_inner, kRowsAvx2, kPanelAvx2, [&](int64_t i, int64_t q0, int64_t rows, int64_t cols) {
        const float *panel = panels + (q0 - j0) * m.R;
        if (dot_tail(m, cols)) return run_dot_tail(m, i, rows, q0, cols, panel, kDotTiles, {6, 6, 3, 3});
        const int64_t vecs = ceil_div(cols, 8);
        kTilesAvx2[rows - 1][vecs - 1](m, i, q0, panel, (int)(cols - 8 * (vecs - 1)));
    }, m.a_strip != 0);
}

void pack_panels(const Gemm &m, int64_t j0, int64_t j1, float *dst) {
    if (cpu_isa() == Isa::avx2) return pack_panels_avx2(m, j0, j1, dst);
    pack_panels_avx512(m, j0, j1, dst);
}

void run_block(const Gemm &m, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const float *panels,
               bool rows_inner) {
    if (cpu_isa() == Isa::avx2) return run_block_avx2(m, i0, i1, j0, j1, panels, rows_inner);
    run_block_avx512(m, i0, i1, j0, j1, panels, rows_inner);
}

// The GEMM of image n (channels-first, or channels-last forward per image;
// plan.transposed: dx^T = dy^T W; plan.w_transposed: dx = wt dy, wt = W^T in strips)
// or of all images (plan.last).
Gemm pass_gemm(const ConvArgs &args, int64_t n, const Plan &plan, const float *wt = nullptr) {
    const ConvGeometry &g = *args.g;
    const int64_t C = g.c, K = g.k, P = g.out_size();
    float *x = static_cast<float *>(args.x), *w = static_cast<float *>(args.w);
    float *y = static_cast<float *>(args.y);
    const bool fwd = args.op == CONV_OP_FORWARD, relu = fwd && g.activation == CONV_ACTIVATION_RELU;
    const float *bias = fwd ? static_cast<const float *>(args.bias) : nullptr;
    if (!g.is_pointwise()) {
        // A 1-D convolution: forward y = W (K x C*T) B(x), backward-data
        // dx = W^T (C x K*T, in strips) B(dy), B's rows (channel, tap).
        const int64_t T = g.kernel[2], X = g.in_size(), d = g.dilation[2], pad = g.pad_begin[2];
        Gemm m = fwd ? Gemm{w, C * T, 1, x + n * C * X, X, 1, y + n * K * P, P, false, K, P, C * T, bias, true, relu, false}
                     : Gemm{wt, 1, kStrip, y + n * K * P, P, 1, x + n * C * X, X, false, C, X, K * T, nullptr, false, false,
                            false, K * T * kStrip};
        m.unfold = Gemm::Unfold::rows, m.taps = T, m.tap_step = fwd ? d : -d, m.shift = fwd ? -pad : pad;
        m.hi = fwd ? X : P;
        return m;
    }
    if (plan.last_by_image)  // forward: y^T (K x P) = W (K x C) x^T (C x P), image n
        return {w, C, 1, x + n * P * C, 1, C, y + n * P * K, K, true, K, P, C, bias, true, relu, false};
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST) {
        if (fwd)
            return {w, C, 1, x + n * C * P, P, 1, y + n * K * P, P, false, K, P, C, bias, true, relu, false};
        if (plan.transposed)
            return {y + n * K * P, 1, P, w, C, 1, x + n * C * P, P, true, P, C, K, nullptr, false, false, false};
        if (plan.w_transposed) {  // A: W's strips
            const int64_t h = strip_height();
            return {wt, 1, h, y + n * K * P, P, 1, x + n * C * P, P, false, C, P, K, nullptr, false, false, false, K * h};
        }
        return {w, 1, C, y + n * K * P, P, 1, x + n * C * P, P, false, C, P, K, nullptr, false, false, false};
    }
    const int64_t M = g.n * P;
    if (fwd) return {x, C, 1, w, 1, C, y, K, false, M, K, C, bias, false, relu, false};
    return {y, K, 1, w, C, 1, x, C, false, M, C, K, nullptr, false, false, false};
}

// Columns [j0, j1) of dx (W's columns) for every image, W a block of steps
// at a time. work: the tiles' sums (images x positions x kPanel), 64-byte
// aligned.
CONV_TARGET_AVX512 void run_w_blocks(const ConvArgs &args, const Plan &p, int64_t j0, int64_t j1, float *sums) {
    const ConvGeometry &g = *args.g;
    // Channels-last: one GEMM over all images' positions.
    const int64_t K = g.k, images = p.last ? 1 : g.n, P = p.last ? g.n * g.out_size() : g.out_size();
    const Gemm w = pass_gemm(args, 0, p);
    for (int64_t q0 = j0; q0 < j1; q0 += kPanel)
        for (int64_t k0 = 0; k0 < K; k0 += kBlockSteps) {
            const int64_t steps = std::min(kBlockSteps, K - k0), width = std::min(kPanel, j1 - q0);
            const int64_t vecs = ceil_div(width, 16);
            const __mmask16 tail = first_lanes(width - 16 * (vecs - 1));
            const float *block = w.b + k0 * w.b_red + q0;
            for (int64_t n = 0; n < images; ++n) {
                const Gemm m = pass_gemm(args, n, p);
                float *image_sums = sums + n * P * kPanel;
                walk_block(0, P, q0, q0 + width, true, kRows, kPanel,
                           [&](int64_t i, int64_t, int64_t rows, int64_t) {
                               kBlockTiles[rows - 1][vecs - 1](m, i, q0, k0, steps, block, w.b_red, image_sums,
                                                               k0 == 0, k0 + steps == K, tail);
                           });
            }
        }
}

// Columns [j0, j1) of a channels-last forward or backward-data over all
// rows (last_panel_by_panel), a panel at a time: made into `slot` (unless
// prepared), its tiles run while the next panel's source comes into L2.
CONV_TARGET_AVX512 void run_panel_by_panel(const Gemm &m, int64_t j0, int64_t j1, const float *prepared, float *slot) {
    const int64_t tiles = ceil_div(m.M, kRows);
    for (int64_t q0 = j0; q0 < j1; q0 += kPanel) {
        const int64_t q1 = std::min(j1, q0 + kPanel);
        if (prepared) {
            run_block_avx512(m, 0, m.M, q0, q1, prepared + q0 * m.R, true);
            continue;
        }
        pack_panels(m, q0, q1, slot);
        PanelAhead ahead = panel_source(m, q1, std::min(j1, q1 + kPanel), tiles);
        run_block_avx512(m, 0, m.M, q0, q1, slot, true, q1 < j1 ? &ahead : nullptr);
    }
}

// Backward-filter's GEMM over positions [q0, q0 + len) of image n
// (channels-first) or of all images (channels-last, q0 counts across them):
// dW (K x C) += dy (K x len) * x^T (len x C).
Gemm filter_gemm(const ConvArgs &args, int64_t n, int64_t q0, int64_t len, bool accumulate) {
    const ConvGeometry &g = *args.g;
    const int64_t C = g.c, K = g.k, P = g.out_size();
    const float *x = static_cast<const float *>(args.x), *dy = static_cast<const float *>(args.y);
    float *dw = static_cast<float *>(args.w);
    if (!g.is_pointwise()) {
        // A 1-D convolution: dW (K x C*T) += dy (K x len) * B, B's column
        // (c, t) x's row c from q0 + t * d - pad.
        const int64_t T = g.kernel[2], X = g.in_size();
        Gemm m{dy + n * K * P + q0, P, 1, x + n * C * X + q0, 1, X, dw, C * T, false, K, C * T, len,
               nullptr, false, false, accumulate};
        m.unfold = Gemm::Unfold::cols, m.taps = T, m.tap_step = g.dilation[2], m.shift = -g.pad_begin[2];
        m.lo = -q0, m.hi = X - q0;
        m.dots = false;  // column blocks of 16 (filter_plan)
        return m;
    }
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST) {
        Gemm m{dy + n * K * P + q0, P, 1, x + n * C * P + q0, 1, P, dw, C, false, K, C, len,
               nullptr, false, false, accumulate};
        m.dots = false;  // column blocks of 16 (filter_plan)
        return m;
    }
    return {dy + q0 * K, 1, K, x + q0 * C, C, 1, dw, C, false, K, C, len, nullptr, false, false,
            accumulate};
}

// Channels-last backward-filter's item as dW^T (C*T x K) = x^T dy: rows
// [i0, i1) of (tap, channel) pairs, columns [j0, j1) of filters, summed
// into `sums` (the item's block of dW^T, rows x cols, zeroed first) image
// by image over chunks of positions, then written into dW (K x T x C)
// transposed. Per chunk dy's rows are packed once (or, Plan::b_in_place,
// read as they lie); each tap's rows read x
// from their shift on, over the positions whose source lies inside x (a
// pointwise layer: one tap, all of them).
CONV_TARGET_AVX512 void swapped_filter(const ConvArgs &args, const Plan &p, int64_t item, float *panels, float *sums) {
    const ConvGeometry &g = *args.g;
    const int64_t C = g.c, K = g.k, T = g.kernel[2], CT = C * T, X = g.in_size(), P = g.out_size();
    const int64_t d = g.dilation[2], pad = g.pad_begin[2];
    // A pointwise layer's images are one run of positions (the chunks as
    // filter_plan counted them); a 1-D layer's, image by image.
    const bool pointwise = g.is_pointwise();
    const int64_t images = pointwise ? 1 : g.n, run = pointwise ? g.n * P : P, source = pointwise ? g.n * X : X;
    const int64_t i0 = item % p.row_blocks * p.rows, i1 = std::min(CT, i0 + p.rows);
    const int64_t j0 = item / p.row_blocks * p.cols, j1 = std::min(K, j0 + p.cols);
    const int64_t rows = i1 - i0, cols = j1 - j0;
    const float *x = static_cast<const float *>(args.x), *dy = static_cast<const float *>(args.y);
    std::fill(sums, sums + rows * cols, 0.0f);
    for (int64_t n = 0; n < images; ++n)
        for (int64_t q0 = 0; q0 < run; q0 += p.chunk) {
            const int64_t len = std::min(p.chunk, run - q0);
            const float *dy_rows = dy + (n * run + q0) * K + j0;
            if (p.b_in_place) {  // pointwise: x's rows and dy's rows of the chunk as they lie
                Gemm m{x + q0 * C + i0, 1, C, dy_rows, K, 1, sums, cols, false, rows, cols, len, nullptr, false, false, true};
                run_block_avx512(m, 0, rows, 0, cols, nullptr, false);
                continue;
            }
            pack_panels_avx512(Gemm{nullptr, 0, 0, dy_rows, K, 1, nullptr, 0, false, 0, cols, len, nullptr, false, false, false},
                               0, cols, panels);
            for (int64_t t = i0 / C; t * C < i1; ++t) {
                const int64_t c0 = std::max(i0, t * C) - t * C, c1 = std::min(i1, (t + 1) * C) - t * C;
                // Positions l whose source l + t * d - pad lies in x.
                const int64_t shift = t * d - pad;
                const int64_t lo = std::max(q0, -shift), hi = std::min(q0 + len, source - shift);
                if (hi <= lo) continue;
                Gemm m{x + (n * source + lo + shift) * C + c0, 1, C, nullptr, 0, 0, sums + (t * C + c0 - i0) * cols, cols,
                       false, c1 - c0, cols, hi - lo, nullptr, false, false, true};
                m.panel_rows = len;
                run_block_avx512(m, 0, c1 - c0, 0, cols, panels + (lo - q0) * kPanel, false);
            }
        }
    float *dw = static_cast<float *>(args.w);
    for (int64_t k = 0; k < cols; ++k)
        for (int64_t r = 0; r < rows; ++r) dw[(j0 + k) * CT + i0 + r] = sums[r * cols + k];
}

// W's panels for a channels-last 1-D pass (Plan::last_taps), W in the
// channels-last filter layout K x T x C: reduction row r = (t, c') of the
// pass's source channels c', column j of the channels it writes; forward
// B(r, j) = W[j][t][c'] (16 columns a gather), backward-data B(r, j) =
// W[c'][t][j] (a row of W). Panels [q0, q1).
CONV_TARGET_AVX512 void pack_taps_w_avx512(const ConvGeometry &g, bool fwd, const float *w, int64_t q0, int64_t q1,
                                           float *dst) {
    const int64_t T = g.kernel[2], C = g.c, K = g.k, src = fwd ? C : K, N = fwd ? K : C, R = src * T;
    const __m512i filters = lanes_apart(T * C);
    for (int64_t q = q0; q < q1; ++q)
        for (int64_t r = 0; r < R; ++r) {
            const int64_t t = r / src, c = r % src;
            for (int v = 0; v < kVecs; ++v) {
                const int64_t j0 = q * kPanel + 16 * v;
                const __mmask16 valid = first_lanes(N - j0);
                __m512 column = _mm512_setzero_ps();
                if (valid && fwd)
                    column = _mm512_mask_i32gather_ps(column, valid, filters, w + (j0 * T + t) * C + c, 4);
                else if (valid)
                    column = _mm512_maskz_loadu_ps(valid, w + (c * T + t) * C + j0);
                _mm512_store_ps(dst + (q * R + r) * kPanel + 16 * v, column);
            }
        }
}

// A channels-last 1-D forward or backward-data pass (Plan::last_taps):
// per image y (P x K) = A B, A's row i the source rows i + t * step +
// shift, tap by tap (segments of the source's channels, Gemm::a_seg), B
// W's panels. A row whose taps reach before or past the source reads only
// the taps that land in it: rows are run in ranges of equal valid taps,
// each range reading those taps' rows of the panels.
CONV_TARGET_AVX512 void run_last_taps(const ConvArgs &args, const Plan &p, float *panels, ThreadPool &pool,
                                      int threads) {
    const ConvGeometry &g = *args.g;
    const bool fwd = args.op == CONV_OP_FORWARD;
    const int64_t T = g.kernel[2], d = g.dilation[2], pad = g.pad_begin[2];
    const int64_t X = g.in_size(), P = g.out_size();
    const int64_t src_c = fwd ? g.c : g.k, N = fwd ? g.k : g.c, R = src_c * T;
    const int64_t rows = fwd ? P : X, src_len = fwd ? X : P;  // positions written; the source's
    const int64_t step = fwd ? d : -d, shift = fwd ? -pad : pad;
    const float *w = static_cast<const float *>(args.w);
    const int64_t panel_count = ceil_div(N, kPanel);
    const int64_t parts = std::min<int64_t>(threads, panel_count);
    pool.parallel_for(
        parts,
        [&](int64_t b, int) { pack_taps_w_avx512(g, fwd, w, panel_count * b / parts, panel_count * (b + 1) / parts, panels); },
        threads);
    const float *src = static_cast<const float *>(fwd ? args.x : args.y);
    float *out = static_cast<float *>(fwd ? args.y : args.x);
    const float *bias = fwd ? static_cast<const float *>(args.bias) : nullptr;
    const bool relu = fwd && g.activation == CONV_ACTIVATION_RELU;
    // The taps [ta, tb) whose source row lands in [0, src_len) from row i.
    auto valid_taps = [&](int64_t i) {
        int64_t ta = T, tb = 0;
        for (int64_t t = 0; t < T; ++t) {
            const int64_t at = i + t * step + shift;
            if (at >= 0 && at < src_len) ta = std::min(ta, t), tb = t + 1;
        }
        return ta < tb ? std::pair<int64_t, int64_t>{ta, tb} : std::pair<int64_t, int64_t>{0, 0};
    };
    pool.parallel_for(
        p.items,
        [&](int64_t item, int) {
            const int64_t n = item / p.row_blocks, i0 = item % p.row_blocks * p.rows, i1 = std::min(rows, i0 + p.rows);
            const float *image = src + n * src_len * src_c;
            for (int64_t a = i0; a < i1;) {
                const auto taps = valid_taps(a);
                int64_t b = a + 1;
                while (b < i1 && valid_taps(b) == taps) ++b;
                // Row i's first tap reads source row i + ta * step + shift.
                Gemm m{image + (taps.first * step + shift) * src_c, src_c, 1, nullptr, 0, 0,
                       out + n * rows * N, N, false, rows, N, (taps.second - taps.first) * src_c,
                       bias, false, relu, false};
                m.a_seg = src_c, m.a_jump = (step - 1) * src_c, m.panel_rows = R;
                run_block_avx512(m, a, b, 0, N, panels + taps.first * src_c * kPanel, true);
                a = b;
            }
        },
        threads);
}

#endif

}  // namespace

bool pw_avx512_covers(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || (cpu_isa() != Isa::avx512 && cpu_isa() != Isa::avx2)) return false;
    if (!g.is_pointwise() || g.groups != 1) return false;
    // Empty tensors (no images, channels or positions) take the OpenBLAS
    // path, which writes what they still define: y = act(bias) with no
    // input channels, dx = 0 with no filters, db from dy with no channels.
    if (g.n <= 0 || g.c <= 0 || g.k <= 0 || g.out_size() <= 0) return false;
    // With AVX2 (6 x 16 tiles), against gemm_1x1's OpenBLAS path (its Zen
    // kernels), AMD EPYC (Zen 3), batch 1, 1 thread, 5 interleaved rounds,
    // ms: backward-filter 64->64 56x56 0.42 vs 0.47, 64->256 56x56 1.59 vs
    // 1.88, 32->64 112x112 0.89 vs 1.15, 512->2048 7x7 2.01 vs 2.50,
    // 2048->512 7x7 1.90 vs 2.15, 256->512 s2 3.79 vs 4.04, 1024->1024 7x7
    // even; but 256->128 28x28 0.87 vs 0.80, 1024->256 14x14 1.78 vs 1.62.
    // Forward on 7x7 planes (512->2048 2.10 vs 2.30, 1024->1024 1.90 vs
    // 2.08) and from at most 128 channels, whose tiles are short enough that
    // their epilogue counts: once it stopped re-reading the Gemm per sum,
    // 64->256 56x56 1.08-1.17x, 64->128 1.40x, 128->128 1.26x, 128->512
    // 28x28 1.10-1.25x, 32->64 112x112 1.26-1.56x (5 alternated runs); from
    // 256 channels even (0.90-1.14x, 14x14 0.96-1.00x), and in passes of 128
    // channels with the sums carried through y it lost (0.86-0.99x).
    // Backward-data not (0.90-1.06x at 64-128 channels, 0.66-1.03x before:
    // its transposed and strided reads of W cost more at 16 columns a panel
    // than at AVX-512's 48), but see below for large planes.
    // Against libconv's own AVX2 SGEMM (sgemm_avx2.h; in one process, 21
    // alternated calls), once the tiles' reduction was unrolled: forward
    // these tiles on every plane, 1.02-1.11x (14x14 1.09-1.11x, 28x28
    // 1.02-1.07x, batch 8 1.06x; 256->64 56x56, whose GEMM is OpenBLAS's,
    // even); before the unrolling the SGEMM won from 128 channels.
    if (cpu_isa() == Isa::avx2) {
        if (op == CONV_OP_BACKWARD_FILTER) return g.c <= 64 || g.out_size() <= 49 || g.k >= 512;
        // Channels-last forward and backward-data against libconv's SGEMM
        // (OpenBLAS under 97 rows), 1 thread, 4 alternated runs, ratio to
        // oneDNN: from 28x28 up 1.09-1.56x (MobileNet's 32->64 112x112
        // 0.61 -> 0.90 forward, 0.61 -> 0.95 backward-data; ResNet-50's
        // 64->64 56x56 1.25x, 256->64 1.39x, 512->128 28x28 1.19x), two of
        // 17 at 0.96-0.98x; on 14x14 even (0.91-1.05x); on 7x7 backward-data
        // 0.59x (the rows read across K, for one image's 49 positions).
        // Forward on fewer positions: per image, transposed (make_plan).
        if (g.layout == CONV_LAYOUT_CHANNELS_LAST)
            return op == CONV_OP_FORWARD || (op == CONV_OP_BACKWARD_DATA && g.n * g.out_size() >= kInPlaceRows);
        // Channels-first backward-data on planes whose rows of dy are
        // packed row by row (kFarRows), with W an L2 share or less; with W
        // read transposed in place, against the SGEMM (OpenBLAS under 97 rows),
        // 1 thread, one process, 30 alternated calls: 16->16 112x112 1.49x,
        // 32->64 1.34x, 64->64 32x32 1.28x (batch 8 1.36x), 64->128 56x56
        // 1.07x, 64->256 1.09x, 128->128 1.03-1.05x, 256->256 1.02x; on 28x28
        // and smaller 0.93-0.96x, and with W past L2 (512->512 28x28) 0.77x.
        // (W^T in strips since: 56x56 1.07-1.09x more, make_plan.)
        if (op == CONV_OP_BACKWARD_DATA)
            return g.out_size() >= kFarRows && g.c * g.k * (int64_t)sizeof(float) <= kBlockBytes;
        return op == CONV_OP_FORWARD;
    }
    // Channels-last backward-filter onto 512+ filters from 256 channels or
    // fewer on planes of 14x14 and less: libconv's SGEMM. Elsewhere these
    // tiles, since dy's rows are copied only from 512 filters and the
    // filters split between threads (filter_plan); against the SGEMM (AMX
    // Xeon, 3 alternated rounds), 1 thread: 1024->1024 7x7 1.17-1.19x,
    // 512->2048 7x7 1.17-1.18x, 128->512 28x28 1.06-1.07x, 512->512 and
    // 1024->512 14x14 1.02-1.04x (batch 8 1.04-1.22x); 2 threads
    // 1.00-1.15x. 256->1024 14x14 0.94x (5 rounds), 256->512 0.99x.
    if (op == CONV_OP_BACKWARD_FILTER)
        return !(g.layout == CONV_LAYOUT_CHANNELS_LAST && g.k >= 512 && g.c <= 256 && g.out_size() <= 14 * 14);
    if (op != CONV_OP_FORWARD && op != CONV_OP_BACKWARD_DATA) return false;
    // Where the GEMM (libconv's AVX-512 SGEMM, blas.h) measured faster, 1
    // thread pinned, batch 1, A/B interleaved, GFLOP/s GEMM vs this kernel:
    // channels-last on a 7x7 image (49 rows): forward 111 vs 78,
    // backward-data 122 vs 98 -- except where W of 2 MiB+ is read a block
    // at a time (last_w_blocks) or the forward runs per image from
    // 1024+ channels (last_by_image_avx512) or panel by panel
    // (last_panel_by_panel, 1.34x the GEMM on 512->1024); from 14x14 up this kernel is
    // even or ahead. Forward channels-first and backward-filter: even or
    // this kernel ahead.
    if (g.layout == CONV_LAYOUT_CHANNELS_LAST)
        return g.n * g.out_size() >= 128 || (op == CONV_OP_BACKWARD_DATA && last_w_blocks(g)) ||
               (op == CONV_OP_FORWARD && (last_panel_by_panel(g, op) || last_by_image_avx512(g)));
    // Channels-first backward-data on W^T (make_plan), Intel Xeon with AMX,
    // 1 thread, 3 alternated runs, against the GEMM below 28x28 and this
    // kernel reading W as it stands from 28x28 up: 28x28 and larger
    // 1.05-1.25x (512->256 28x28 1.25x), 7x7 1.10-1.20x (batch 8 1.45x);
    // tiny GEMMs lost (16->64 16x16 0.66x, 64->256 8x8 0.84x). The
    // smallest planes onto 256+ channels run transposed. On 14x14, with W
    // in strips, from two images on: 1 thread, 3-5 alternated rounds over
    // six layers (512->512, 1024->256, 256->1024, 256->256, 512->256,
    // 512->128), batch 2 1.13x (1.08-1.17x), batch 8 1.15x (1.04-1.20x), at
    // 2 threads batch 8 1.08x and batch 2 even (0.99x). Batch 1 at 1 thread
    // too since the last few columns run down the strips (strip_tail_tile):
    // 1.02-1.09x over the same six layers and 128->512 (it was 0.91-1.08x).
    // At 2 threads the GEMM won (strips 0.94x: 256->256 0.84x) while the
    // threads made the strips together and each read the other's half;
    // with each thread's strips its own (strips_per_thread), 2 threads, 5
    // alternated runs, the strips 1.06-1.12x the GEMM (1024->512 1.12x,
    // 1024->256 and 256->1024 1.09x, 512->512 and 256->256 1.06x). Smaller
    // filters stay with the GEMM (batch 8 and 32: 64->64 14x14 0.87-0.90x,
    // 64->256 16x16 0.92x).
    if (op == CONV_OP_FORWARD || g.out_size() >= 784) return true;
    if (g.out_size() >= kTransposedBelow) return g.c * g.k >= 256 * 256;
    const double macs = (double)g.n * (double)g.c * (double)g.k * (double)g.out_size();
    return g.out_size() < kTransposedBelow && (g.c >= kTransposedChannels || macs >= double(1 << 21));
}

bool pw_avx512_covers_taps(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512) return false;
    if (g.is_pointwise() || !row_conv(g)) return false;
    // Channels-first, B (the unfolded source) is packed per call for each
    // panel of the GEMM's rows: onto fewer than 32 of them (the channels
    // the pass writes, dW's filters) im2col's unfolded tile and GEMM are
    // faster (batch 4, 1 thread, against im2col before: 3->32 on 1000
    // samples backward-data, 3 rows, 0.30x; 16->16 on 100 0.87-0.96x).
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST && (op == CONV_OP_BACKWARD_DATA ? g.c : g.k) < 32) return false;
    // Channels-last, W's panels are made per call (gathered across its
    // filters for the forward) and a row tile sums the whole reduction from
    // one panel. 1 thread, forced, against im2col before: over fewer than
    // 256 positions (all images') it lost (512->512 on 16 samples
    // 0.47-0.48x, 256->256 on 64 0.87-0.95x, 64->64 on 8 0.44-0.65x), from
    // 400 it won 1.3-2.9x (16->16 on 100 samples at batch 4, 64->64 on
    // 256, 3->32 on 1000); over a reduction of 1536 (512 channels x 3
    // taps, a 288 KiB panel) it lost 0.75x, at 640-768 1.0-1.26x.
    if (g.layout == CONV_LAYOUT_CHANNELS_LAST &&
        (g.n * (op == CONV_OP_BACKWARD_DATA ? g.in_size() : g.out_size()) < 256 ||
         (op == CONV_OP_BACKWARD_DATA ? g.k : g.c) * g.kernel[2] > 1024))
        return false;
    return g.n > 0 && g.c > 0 && g.k > 0 && g.in_size() > 0 && g.out_size() > 0;
}

// Against direct_avx512's generated tiles (which AUTO chose before), forced,
// 1 thread, strict, 3 alternated runs, forward / backward-data, 3 taps:
// 64->64 on 4096 samples 1.12x / 1.10x, on 16000 1.18x / 1.28x, 128->128 on
// 4096 1.18x / 1.27x, 256->256 on 1024 1.13x / 1.16x, 32->32 on 16000 1.16x
// / 1.16x; 64->128 5 taps on 4096 1.09x / 1.02x; 32 x 2048, 64 x 1024 and
// 128 x 512 (channels x samples) 1.00-1.10x. Not 32->32 on 1000 samples
// (0.82x / 0.95x) nor 16 channels (9 taps on 2000: 0.80x / 0.77x).
// Backward-filter (dW's columns unfolded), 3 alternated runs: 2 taps from
// 256K channels x samples, WaveNet's 64->128 on 4096 1.26-1.32x (now
// 1.04-1.51x oneDNN's), 128->128 1.11x, 256->512 on 1024 1.07x, 64->128
// on 16000 2.4x; on 64K 0.81-0.89x. 3 taps 0.85-1.00x (256->256 on 1024
// 0.92x, 64->64 on 1024 0.92x), except on 16000 samples (32->32: 1.14x).
bool pw_avx512_taps_win(const ConvGeometry &g, conv_op_t op) {
    if (!pw_avx512_covers_taps(g, op)) return false;
    const int64_t channels = std::min(g.c, g.k);
    const int64_t positions = op == CONV_OP_BACKWARD_DATA ? g.in_size() : g.out_size();
    // Channels-last (forced against AUTO's choice before, direct_avx512 for
    // 3+ taps, 1 thread, 3 alternated runs): forward and backward-data from
    // or onto 32+ channels, 32->32 on 1000 samples 1.26-1.30x, 80->80 on
    // 300 backward-data 1.20x, 128->128 1.10x, 16->64 on 8000 1.34x (its
    // forward even), 64->64 on 4096 1.16-1.19x; not 16->16 (9 taps on 2000:
    // 0.89-0.94x). Backward-filter (dW^T = x^T dy, tap by tap) up to 96
    // channels: 16->64 on 8000 1.84x, 64->64 on 4096 1.21x, on 1024 1.13x,
    // 32->32 5 taps on 2048 1.28x, 80->80 on 300 1.08x; 128->128 0.87-0.92x,
    // 16->16 0.92x. (Two taps went to im2col before: WaveNet's 64->128
    // 1.25-1.37x over it in every pass.)
    if (g.layout == CONV_LAYOUT_CHANNELS_LAST) {
        const int64_t widest = std::max(g.c, g.k);
        return widest >= 32 && (op != CONV_OP_BACKWARD_FILTER || widest <= 96);
    }
    if (op == CONV_OP_BACKWARD_FILTER)
        return channels >= 32 && (g.kernel[2] == 2 || positions >= 16000) && channels * positions >= 256 * 1024;
    return channels >= 32 && channels * positions >= 64 * 1024;
}

namespace {

// Whether the pass makes all of W over per call -- its panels (the
// transposed backward-data, channels-last forward and backward-data) or its
// strips (w_transposed) -- which a plan can prepare once. AVX-512 only (AVX2's
// panels are packed in other forms).
bool makes_whole_w(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512 || op == CONV_OP_BACKWARD_FILTER) return false;
    if (!pw_avx512_covers(g, op)) return false;
    const Plan p = make_plan(g, op, 1);
    return p.transposed || p.last || p.w_transposed;
}

// W's panels: the reduction (W's rows of the pass) times its columns.
size_t w_panel_bytes(const ConvGeometry &g, conv_op_t op) {
    const bool fwd = op == CONV_OP_FORWARD;
    const int64_t R = fwd ? g.c : g.k, outc = fwd ? g.k : g.c;
    return (size_t)checked_mul(R, round_up(outc, kPanel) * 4, "prepared weights");
}

}  // namespace

size_t pw_avx512_prepared_bytes(const ConvGeometry &g, conv_op_t op) {
    if (!makes_whole_w(g, op)) return 0;
    const Plan p = make_plan(g, op, 1);
    return p.w_transposed ? p.shared_bytes : w_panel_bytes(g, op);  // W's strips, or its panels
}

void pw_avx512_prepare_weights(const ConvGeometry &g, conv_op_t op, const float *w, float *out,
                               ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    if (!makes_whole_w(g, op)) return;
    ConvArgs args{};
    args.op = op, args.g = &g, args.dtype = CONV_DTYPE_FLOAT32;
    args.w = const_cast<float *>(w);
    const Plan p = make_plan(g, op, threads);
    if (p.w_transposed) return strip_w(g, w, out, pool, threads);
    const Gemm m = pass_gemm(args, 0, p);
    pool.parallel_for(
        ceil_div(m.N, kPanel),
        [&](int64_t q, int) { pack_panels(m, q * kPanel, std::min(m.N, (q + 1) * kPanel), out + q * kPanel * m.R); },
        threads);
#else
    (void)g, (void)op, (void)w, (void)out, (void)pool, (void)threads;
#endif
}

size_t pw_avx512_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    if (pw_dot_filter_covers(g, op)) return 0;
    const Plan p = make_plan(g, op, threads);
    size_t bytes = p.shared_bytes + p.slot_bytes * (size_t)std::max(threads, 1);
    return (bytes + 63) / 64 * 64;
}

void pw_avx512_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *args.g;
    if (pw_dot_filter_covers(g, args.op)) return pw_dot_filter_run(args, pool, threads);
    const Plan p = make_plan(g, args.op, threads);
    if (p.items == 0) return;  // an empty batch: nothing to write, no workspace
    float *scratch = static_cast<float *>(ws);
    if (args.op == CONV_OP_BACKWARD_FILTER) {
        const size_t slot_floats = p.slot_bytes / sizeof(float);
        const int64_t images = p.last ? 1 : g.n, total = p.last ? g.n * g.out_size() : g.out_size();
        pool.parallel_for(
            p.items,
            [&](int64_t item, int s) {
                float *panels = scratch + (size_t)s * slot_floats;
                // What lies past the item's panels: swapped, its block of dW^T; else dy's rows' copy.
                auto past_panels = [&] { return panels + p.chunk * round_up(p.cols, panel_width()); };
                if (p.swapped) return swapped_filter(args, p, item, panels, p.b_in_place ? panels : past_panels());
                const int64_t i0 = item % p.row_blocks * p.rows, i1 = std::min(g.k, i0 + p.rows);
                const int64_t j0 = item / p.row_blocks * p.cols, j1 = std::min(g.c * g.kernel[2], j0 + p.cols);
                // dW from a single chunk, past L2: each element written once,
                // so no line of it need be read for ownership first.
                const bool stream = images == 1 && total <= p.chunk &&
                                    (double)g.k * (double)g.c * (double)g.kernel[2] * 4 >= (double)kStreamBytes;
                if (p.chunk_images) {
                    // Whole planes of chunk_images images a chunk: A's steps run
                    // in segments of a plane (a_seg), B's rows packed image by
                    // image into each panel.
                    const int64_t P = total, K = g.k;
                    for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk_images) {
                        const int64_t count = std::min(p.chunk_images, g.n - n0);
                        Gemm m = filter_gemm(args, n0, 0, P, n0 > 0);
                        m.R = count * P;
                        if (count > 1) m.a_seg = P, m.a_jump = K * P - P;
                        for (int64_t q0 = j0; q0 < j1; q0 += kPanel)
                            for (int64_t i = 0; i < count; ++i) {
                                const Gemm one = filter_gemm(args, n0 + i, 0, P, false);
                                pack_panels(one, q0, std::min(j1, q0 + kPanel),
                                            panels + (q0 - j0) * m.R + i * P * kPanel);
                            }
                        run_block(m, i0, i1, j0, j1, panels, false);
                    }
                    return;
                }
                for (int64_t n = 0; n < images; ++n)
                    for (int64_t q0 = 0; q0 < total; q0 += p.chunk) {
                        const int64_t len = std::min(p.chunk, total - q0);
                        Gemm m = filter_gemm(args, n, q0, len, n > 0 || q0 > 0);
                        m.stream = stream;
                        if (p.b_in_place) {
                            run_block(m, i0, i1, j0, j1, nullptr, false);
                            continue;
                        }
                        pack_panels(m, j0, j1, panels);
                        if (!p.a_ld) {
                            run_block(m, i0, i1, j0, j1, panels, false);
                            continue;
                        }
                        // Rows [i0, i1) of dW from dy's copy, counted from i0.
                        float *dy_rows = past_panels();
                        for (int64_t r = 0; r < len; ++r)
                            std::copy(m.a + r * m.a_red + i0, m.a + r * m.a_red + i1, dy_rows + r * p.a_ld);
                        m.a = dy_rows, m.a_red = p.a_ld, m.out += i0 * m.ldo, m.M = i1 - i0;
                        run_block(m, 0, i1 - i0, j0, j1, panels, false);
                    }
                if (stream) _mm_sfence();  // the streamed stores before the item counts as done
            },
            threads);
        if (args.bias)
            channel_sums({g.layout, g.n, g.k, g.out_size()}, args.dtype, args.y, args.bias, pool,
                         threads);
        return;
    }
    // W's panels as a plan prepared them (pw_avx512_prepare_weights), if it did.
    const float *prepared = static_cast<const float *>(args.prepared);
    if (p.w_blocks && !prepared) {
        const size_t slot_floats = p.slot_bytes / sizeof(float);
        pool.parallel_for(
            p.items,
            [&](int64_t item, int s) {
                const int64_t j0 = item * p.cols, j1 = std::min(g.c, j0 + p.cols);
                run_w_blocks(args, p, j0, j1, scratch + (size_t)s * slot_floats);
            },
            threads);
        return;
    }
    if (p.transposed) {
        const size_t slot_floats = p.slot_bytes / sizeof(float);
        pool.parallel_for(
            p.items,
            [&](int64_t item, int s) {
                const int64_t j0 = item * p.cols, j1 = std::min(g.c, j0 + p.cols);
                float *slot = scratch + (size_t)s * slot_floats;
                if (!prepared) pack_panels(pass_gemm(args, 0, p), j0, j1, slot);
                const float *panels = prepared ? prepared + j0 * g.k : slot;
                for (int64_t n = 0; n < g.n; ++n)
                    run_block(pass_gemm(args, n, p), 0, g.out_size(), j0, j1, panels, true);
            },
            threads);
        return;
    }
    if (p.last_taps) return run_last_taps(args, p, scratch, pool, threads);
    if (p.panel_by_panel) {
        const Gemm m = pass_gemm(args, 0, p);
        const size_t slot_floats = p.slot_bytes / sizeof(float);
        pool.parallel_for(
            p.items,
            [&](int64_t item, int s) {
                const int64_t j0 = item * p.cols;
                run_panel_by_panel(m, j0, std::min(m.N, j0 + p.cols), prepared, scratch + (size_t)s * slot_floats);
            },
            threads);
        return;
    }
    if (p.last) {
        const Gemm m = pass_gemm(args, 0, p);
        const int64_t panels = ceil_div(m.N, panel_width());
        if (!prepared)
            pool.parallel_for(
                panels,
                [&](int64_t q, int) {
                    int64_t j0 = q * panel_width();
                    pack_panels(m, j0, std::min(m.N, j0 + panel_width()), scratch + j0 * m.R);
                },
                threads);
        const float *all = prepared ? prepared : scratch;
        // Each panel down the item's rows, or (AVX-512, W's panels within
        // kRowsOuterBytes) each row tile across all panels.
        const bool rows_inner = cpu_isa() == Isa::avx2 || m.R * round_up(m.N, kPanel) * 4 > kRowsOuterBytes;
        pool.parallel_for(
            p.items,
            [&](int64_t item, int) {
                int64_t i0 = item / p.col_blocks * p.rows, j0 = item % p.col_blocks * p.cols;
                run_block(m, i0, std::min(m.M, i0 + p.rows), j0, std::min(m.N, j0 + p.cols),
                          all + j0 * m.R, rows_inner);
            },
            threads);
        return;
    }
    const size_t slot_floats = p.slot_bytes / sizeof(float);
    const float *wt = prepared;  // W's strips for p.w_transposed
    const bool own_strips = p.strips_per_thread && !prepared;
    if (p.w_transposed && !prepared && !own_strips) {
        strip_w(g, static_cast<const float *>(args.w), scratch, pool, threads);
        wt = scratch;
    }
    float *slots = scratch + p.shared_bytes / sizeof(float);
    const size_t strips_floats = p.shared_bytes / (size_t)threads / sizeof(float);  // a thread's (own_strips)
    ThreadCopies made;  // own_strips; pieces: the row blocks
    const bool fwd = args.op == CONV_OP_FORWARD;
    const bool stream = (double)g.n * (double)(fwd ? g.k : g.c) * (double)(fwd ? g.out_size() : g.in_size()) * 4 >=
                        kPastCacheBytes;
    struct Where {
        int64_t rb, cb, n;  // row block, column block, image
    };
    auto where = [&](int64_t item) {
        // Own strips: row blocks outermost, so a thread's share is a range of rows.
        if (own_strips) return Where{item / (g.n * p.col_blocks), item % p.col_blocks, item / p.col_blocks % g.n};
        return Where{item % p.row_blocks, item / p.row_blocks % p.col_blocks, item / p.row_blocks / p.col_blocks};
    };
    // A dot-product tail (last_cols) where an image's column blocks go to
    // different threads: each block takes a share of its rows, not the last
    // block all of them (batch 1, 2 threads, 14x14 as 96 + 96 + 4 columns,
    // 5-7 alternated rounds: 512->512 forward 1.03x, 1024->256 1.01-1.014x;
    // the same sums, each a dot product of its own). With an image or more
    // a thread the blocks balance already (1 thread, batch 2: 0.99-1.00x).
    const bool shares_tail = p.last_cols > 0 && p.col_blocks > 1 && g.n < threads && !p.b_in_place &&
                             cpu_isa() == Isa::avx512;
    // Block cb's share of rows [i0, i1) of the tail's columns [tail0, N).
    auto tail_share = [&](const Gemm &m, int64_t i0, int64_t i1, int64_t cb, int64_t tail0, float *panels) {
        const int64_t r0 = i0 + (i1 - i0) * cb / p.col_blocks, r1 = i0 + (i1 - i0) * (cb + 1) / p.col_blocks;
        if (tail0 < m.N && r0 < r1) run_block_avx512(m, r0, r1, tail0, m.N, panels, false, nullptr, panels);
    };
    auto run_item = [&](int64_t item, int s) {
        const auto [rb, cb, n] = where(item);
        float *own = own_strips ? scratch + (size_t)s * strips_floats : nullptr;
        Gemm m = pass_gemm(args, n, p, own_strips ? own : wt);
        m.stream = stream;
        const auto [j0, j1] = block_columns(p, cb, m.N);
        const int64_t i0 = rb * p.rows, i1 = std::min(m.M, i0 + p.rows);
        const int64_t tail0 = shares_tail && !m.a_strip ? m.N - p.last_cols : m.N;  // the tail, shared
        const bool under_tiles = !p.b_in_place && cpu_isa() == Isa::avx512 && packs_under_tiles(m);
        // The thread's strips of the row block: made by its first item
        // there, under its tiles where they make panels (a 1-D
        // convolution's, gathered, ahead of them).
        StripWork work{static_cast<const float *>(args.w), g.k, g.c, own, i0 / kStrip, ceil_div(i1, kStrip)};
        const bool making = own_strips && made.first_use(s, rb);
        const bool strips_under = making && under_tiles && g.kernel[2] == 1;
        if (strips_under)
            work.make_before(work.next + 1);  // the first row tile's
        else if (making)
            strip_rows_avx512(work.w, g.k, g.c, g.kernel[2], 0, g.k, own, work.next, work.end);
        if (p.b_in_place) return run_block_avx512(m, i0, i1, j0, j1, nullptr, true);
        float *panels = slots + (size_t)s * slot_floats;
        if (under_tiles) {
            // The next item's source columns, where it is the same thread's
            // (unless another steals it), asked into L2 a share of lines a tile:
            // read from memory or L3 only as each panel's first row tile
            // packed them, they had kept those tiles waiting (128->128 56x56
            // at batch 8: its first row tiles, a sixteenth of the products,
            // took 15% of the time). 1 thread, batch 8: 56x56 and 28x28 layers
            // 1.02-1.14x, 14x14 1.01-1.02x; 2 threads 1.00-1.04x; batch 1
            // even. Asked for across a share's end (the other thread's next
            // item), they cost 2 threads 3-12% at batch 1.
            PanelAhead next;
            if (item + 1 < p.items && pool.same_share(p.items, threads, item, item + 1)) {
                const Where w = where(item + 1);
                if (w.n != n || w.cb != cb) {
                    const Gemm m2 = pass_gemm(args, w.n, p, own_strips ? own : wt);
                    const auto [q0, q1] = block_columns(p, w.cb, m2.N);
                    next = panel_source(m2, q0, q1, ceil_div(i1 - i0, kRows) * ceil_div(j1 - j0, kPanel));
                }
            }
            run_block_avx512(m, i0, i1, j0, std::min(j1, tail0), panels, false, next.at ? &next : nullptr, panels,
                             strips_under ? &work : nullptr);
            return tail_share(m, i0, i1, cb, tail0, panels);
        }
        pack_panels(m, j0, std::min(j1, tail0), panels);
        run_block(m, i0, i1, j0, std::min(j1, tail0), panels, false);
        tail_share(m, i0, i1, cb, tail0, panels);
    };
    pool.parallel_for(
        p.items,
        [&](int64_t item, int s) {
            run_item(item, s);
            if (stream) _mm_sfence();  // the streamed stores before the item counts as done
        },
        threads);
#else
    (void)args, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
