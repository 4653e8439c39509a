// Channels-first (NCHW) depthwise 3x3 kernels, fp32, AVX-512.
//
// A channel is a plane of its own, so every pass is a loop of independent
// 2-D plane convolutions, vectorised along the output width: 16 outputs per
// zmm. A plane is swept one vector column at a time down bands of rows,
// each input row vector loaded once for every output row whose window
// covers it, the window's other rows kept rolling in registers (stride 1:
// 3 loads feed 9 FMAs). From memory, where such sweeps measured slower, a
// block of R output rows is computed together instead ((R + 2) * 3 loads
// feed R * 9 FMAs). Padding is handled by masked loads (masked-off lanes
// read as 0 and never fault), the ragged right end by masked stores.
//
// Stride 2 loads 32 input columns and splits them into even and odd ones
// with vpermt2ps: a stride-2 window over a row is a stride-1 window over
// its halves. Narrow planes (stride 1 up to 16x16: 14x14, 7x7; stride 2
// with output rows up to 8 wide) run whole in registers (NarrowPlan), two
// planes per vector where they fit; other small "same" planes are computed flat
// (FlatPlan). A channel multiplier of 4 or more at stride 1 computes up to
// 16 output channels of an input plane together, over its output plane
// flat where the plane is flat or its input's three column-shifted copies
// fit L1 (multi_flat), else 4 at a time in row blocks (multi_plane). Backward-filter
// on planes up to 14x14 goes to depthwise_avx512_blocked.cpp.
//
// Backward-data at stride 1 is the forward plane convolution of dy with the
// flipped kernel (padding K - 1 - pad); at stride 2 it splits dx columns by
// parity and interleaves them on the store. Backward-filter accumulates the
// nine taps' products in nine vectors (a sweep keeping the dy rows an input
// row meets) and reduces them once per channel.
// None of them needs a workspace.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/epilogue.h"
#include "cpu/past_cache.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;        // window size the kernels are built for
constexpr int kVec = 16;     // floats per zmm
// Output rows per block. One zmm FMA issues per cycle and has a latency of
// 4, so R rows (R chains of 9 FMAs) keep the unit busy for R >= 4; more rows
// share more input loads. 9 weights + R sums + the inputs must stay in the
// 32 registers: GCC spills beyond about 24.
constexpr int kRowsS1 = 8;      // forward, stride 1
// Stride 2 keeps a second sum a row for tap column 0 (forward_vector_s2_pad1),
// with which 6 rows spilled; 4 rows measured 0.88-0.91x of 5.
constexpr int kRowsS2 = 5;      // forward, stride 2
// Backward-filter at stride 2: its 9 sums take the weights' place; 6 rows
// were slower than 4 on 28x28 at batch 8 (0.39 -> 0.43 ms). Stride 1 rolls
// its dy rows instead (filter_plane_s1).
constexpr int kFilterRowsS2 = 4;
constexpr int kMaxRows = 8;
constexpr int kNarrowRows = 16;    // narrow planes: output rows kept in registers
constexpr int kNarrowRowsS2 = 14;  // at stride 2 (4 more registers for the split)
constexpr int kMaxInRows = (kMaxRows - 1) * 2 + kK;  // input rows one block reads

// fn(std::integral_constant<int, R>()) for R = rows, 1 <= rows <= Max: a
// block kernel's row count made a compile-time constant, only the counts a
// caller can ask for instantiated. The lambdas handed in must carry
// CONV_TARGET_AVX512 too (GCC does not pass a function's target on to its
// lambdas): without it the blocks could not be inlined, and out of line
// filter_block kept its 9 sums on the stack -- filter_plane ran 2x slower.
template <int Max, int R = 1, class F>
CONV_TARGET_AVX512 inline void with_rows(int rows, F &&fn) {
    if constexpr (R == Max)
        fn(std::integral_constant<int, R>());
    else if (rows == R)
        fn(std::integral_constant<int, R>());
    else
        with_rows<Max, R + 1>(rows, std::forward<F>(fn));
}

// A 2-D plane convolution out[oh][ow] = init + sum over kh, kw of
// w[kh][kw] * in[oh * s - pt + kh][ow * s - pl + kw] (zero outside `in`).
struct PlaneShape {
    int64_t ih, iw, oh, ow;  // input and output plane sizes
    int64_t pt, pl;          // padding before (top, left); may be negative
    int s;                   // stride of both axes, 1 or 2
};

// What one plane call reads and writes.
struct PlaneJob {
    const float *in;
    float *out;
    const float *w;   // kK x kK taps, row-major
    float init;       // bias, or ignored when accumulating
    bool accumulate;  // out += the convolution (else out = init + it)
    bool relu;
    bool stream = false;  // whole 64-byte-aligned vectors stored non-temporally (not with accumulate)
    bool from_memory = false;  // the pass's x and y exceed kCachedPassBytes
    bool whole = false;  // its rows may be read as whole vectors (whole_rows_inside)
};

// Whether a plane's rows may be read as whole vectors (PlaneJob::whole,
// s2_split's Whole): the 32 floats past it lie in x too (x ends at `end`).
inline bool whole_rows_inside(const float *plane, int64_t floats, const float *end) {
    return end - plane >= floats + 2 * kVec;
}

// A pass whose x and y together exceed this is read from memory call after
// call (L3 is 32 MiB here); some sweeps measured well only below it.
constexpr int64_t kCachedPassBytes = int64_t(16) << 20;

// Where a block's taps read: row t of the block's input rows at base[t]
// (null: outside the image, contributes nothing), tap column kw at
// base[t] + ow + off[kw] for output column ow, valid (else read as 0) for
// lo[kw] <= ow < hi[kw].
struct BlockSource {
    const float *base[kMaxInRows];
    int64_t off[kK], lo[kK], hi[kK];
};

// Small planes whose output is as large as the input (stride 1, "same"
// padding, e.g. 14x14 and 7x7) are computed flat: output element q reads
// input element q + off[tap], so the plane is a few vectors regardless of
// its rows (a 7x7 plane is 4 vectors, not 7 one-row vectors half empty).
// The lanes whose tap falls into the padding (another row, or outside the
// plane) depend only on the geometry: one mask per vector and tap, built
// once per call.
struct FlatPlan {
    static constexpr int kMaxVectors = 16;  // planes up to 256 elements
    int vectors = 0;                        // 0: the plane is not flat-able
    int64_t off[kK * kK];
    uint16_t load[kMaxVectors][kK * kK], store[kMaxVectors];
};

#if CONV_HAVE_AVX512_KERNELS

// An output vector's lanes under `lanes`: a whole line streamed past the
// caches where the job asks (its rows then are whole lines, see
// dw_nchw_run).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_vector(const PlaneJob &job, float *o, __m512 a,
                                                                            __mmask16 lanes = 0xFFFF) {
    if (job.stream && lanes == (__mmask16)0xFFFF)
        _mm512_stream_ps(o, a);
    else
        _mm512_mask_storeu_ps(o, lanes, a);
}

// An output vector through the ReLU where the job asks (max(0, v) passes a
// NaN on), then stored as store_vector does.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_output(const PlaneJob &job, float *o, __m512 a,
                                                                            __mmask16 lanes = 0xFFFF) {
    store_vector(job, o, job.relu ? _mm512_max_ps(_mm512_setzero_ps(), a) : a, lanes);
}

// The R x V sums of a block into R output rows from column ow0, through the
// ReLU when asked, masked at the row ends.
template <int R, int V, bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_rows(
    const PlaneShape &p, const PlaneJob &job, const __m512 (&acc)[R][V],
    const __mmask16 (&store)[V], float *out, int64_t ow0) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int u = 0; u < V; ++u)
            store_output(job, out + r * p.ow + ow0 + u * kVec, acc[r][u], Masked ? store[u] : (__mmask16)0xFFFF);
}

// V * 16 output columns from ow0 of R rows from oh0 (V * R independent
// sums; V = 1 with R = 8 measured best: two vectors side by side ran out of
// registers). Masked: a window overhangs the row edge or the output row
// ends inside the vectors.
template <int S, int R, int V, bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void forward_vectors(
    const PlaneShape &p, const PlaneJob &job, const BlockSource &src, float *out, int64_t ow0) {
    constexpr int kInRows = (R - 1) * S + kK;
    // Broadcast here, not once per block: GCC keeps a local array in
    // registers but spills one passed in by pointer.
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) w[i] = _mm512_set1_ps(job.w[i]);
    __mmask16 m[V][kK], store[V];
    for (int u = 0; u < V; ++u) {
        const int64_t o = ow0 + u * kVec;
        for (int kw = 0; kw < kK; ++kw)
            m[u][kw] = Masked ? lane_range(src.lo[kw] - o, src.hi[kw] - o) : 0xffff;
        store[u] = Masked ? lane_range(0, p.ow - o) : 0xffff;
    }
    __m512 acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int u = 0; u < V; ++u) {
            float *o = out + r * p.ow + ow0 + u * kVec;
            if (job.accumulate)
                acc[r][u] = Masked ? _mm512_maskz_loadu_ps(store[u], o) : _mm512_loadu_ps(o);
            else
                acc[r][u] = _mm512_set1_ps(job.init);
        }
#pragma GCC unroll 16
    for (int t = 0; t < kInRows; ++t) {
        if (!src.base[t]) continue;
        const float *row = src.base[t] + ow0;
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) {
            const float *at = row + u * kVec;
            __m512 v0 = Masked ? _mm512_maskz_loadu_ps(m[u][0], at + src.off[0])
                               : _mm512_loadu_ps(at + src.off[0]);
            __m512 v1 = Masked ? _mm512_maskz_loadu_ps(m[u][1], at + src.off[1])
                               : _mm512_loadu_ps(at + src.off[1]);
            __m512 v2 = Masked ? _mm512_maskz_loadu_ps(m[u][2], at + src.off[2])
                               : _mm512_loadu_ps(at + src.off[2]);
            // Load once into registers: folded into each of its (up to 3)
            // FMAs, a load crossing a cache line would be paid 3 times.
            __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2));
            const __m512 v[kK] = {v0, v1, v2};
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int kh = t - S * r;
                if (kh < 0 || kh >= kK) continue;
                for (int kw = 0; kw < kK; ++kw)
                    acc[r][u] = _mm512_fmadd_ps(w[kh * kK + kw], v[kw], acc[r][u]);
            }
        }
    }
    store_rows<R, V, Masked>(p, job, acc, store, out, ow0);
}

// Output columns [a, b) whose windows read no padding, a rounded up to a
// whole vector: the vectors from a that end by b need no mask.
struct Columns {
    int64_t a, b;
};
inline Columns unmasked_columns(const PlaneShape &p, const BlockSource &src) {
    int64_t a = 0, b = p.ow;
    for (int kw = 0; kw < kK; ++kw) {
        a = std::max(a, src.lo[kw]);
        b = std::min(b, src.hi[kw]);
    }
    return {std::min(ceil_div(std::max<int64_t>(a, 0), kVec) * kVec, p.ow), b};
}

// R output rows from oh0 of one plane: unmasked vectors where the windows
// lie inside the row, masked ones at the edges.
template <int S, int R>
CONV_TARGET_AVX512 void forward_block(const PlaneShape &p, const PlaneJob &job,
                                      const BlockSource &src, int64_t oh0) {
    float *out = job.out + oh0 * p.ow;
    const auto [a, b] = unmasked_columns(p, src);
    int64_t ow0 = 0;
    for (; ow0 < a; ow0 += kVec) forward_vectors<S, R, 1, true>(p, job, src, out, ow0);
    for (; ow0 + kVec <= b; ow0 += kVec) forward_vectors<S, R, 1, false>(p, job, src, out, ow0);
    for (; ow0 < p.ow; ow0 += kVec) forward_vectors<S, R, 1, true>(p, job, src, out, ow0);
}

// Stride 2 forward straight from the input rows: for V * 16 outputs from
// ow0, two loads from column b = 2 * ow0 - pl split by vpermt2ps into the
// even columns (tap 0) and odd ones (tap 1), two more from b + 2 give tap 2.
template <int R, int V, bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void forward_vectors_s2(
    const PlaneShape &p, const PlaneJob &job, const BlockSource &src, float *out, int64_t ow0) {
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) w[i] = _mm512_set1_ps(job.w[i]);
    constexpr int kInRows = (R - 1) * 2 + kK, kLoads = 4;
    static const int kLoadAt[kLoads] = {0, kVec, 2, kVec + 2};
    const __m512i even = even_lanes();
    const __m512i odd = odd_lanes();
    const int64_t b0 = 2 * ow0 - p.pl;
    __mmask16 m[V][kLoads], store[V];
    for (int u = 0; u < V; ++u) {
        for (int i = 0; i < kLoads; ++i) {
            const int64_t c = b0 + 2 * kVec * u + kLoadAt[i];
            m[u][i] = Masked ? lane_range(-c, p.iw - c) : 0xffff;
        }
        store[u] = Masked ? lane_range(0, p.ow - ow0 - u * kVec) : 0xffff;
    }
    __m512 acc[R][V];
    for (int r = 0; r < R; ++r)
        for (int u = 0; u < V; ++u) acc[r][u] = _mm512_set1_ps(job.init);
#pragma GCC unroll 16
    for (int t = 0; t < kInRows; ++t) {
        if (!src.base[t]) continue;
        const float *row = src.base[t] + b0;
#pragma GCC unroll 2
        for (int u = 0; u < V; ++u) {
            __m512 x[kLoads];
            for (int i = 0; i < kLoads; ++i) {
                const float *at = row + 2 * kVec * u + kLoadAt[i];
                x[i] = Masked ? _mm512_maskz_loadu_ps(m[u][i], at) : _mm512_loadu_ps(at);
            }
            const __m512 v[kK] = {_mm512_permutex2var_ps(x[0], even, x[1]),
                                  _mm512_permutex2var_ps(x[0], odd, x[1]),
                                  _mm512_permutex2var_ps(x[2], even, x[3])};
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int kh = t - 2 * r;
                if (kh < 0 || kh >= kK) continue;
                for (int kw = 0; kw < kK; ++kw)
                    acc[r][u] = _mm512_fmadd_ps(w[kh * kK + kw], v[kw], acc[r][u]);
            }
        }
    }
    store_rows<R, V, Masked>(p, job, acc, store, out, ow0);
}

// Stride 2, padding 1 on the left: window row kh's products for one output
// row of a vector column (even columns e: tap column 1, odd o: tap 2, and
// tap 0 the odd ones a lane up, summed unshifted in `left`).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_taps(const __m512 (&w)[kK * kK], int kh,
                                                                     __m512 e, __m512 o, __m512 &acc,
                                                                     __m512 &left) {
    left = _mm512_fmadd_ps(w[kh * kK], o, left);
    acc = _mm512_fmadd_ps(w[kh * kK + 1], e, acc);
    acc = _mm512_fmadd_ps(w[kh * kK + 2], o, acc);
}

// An output row's sums stored: `left` moved up a lane, lane 15 of the row's
// previous vector (`carry`, kept per row between the column's sweeps)
// entering lane 0.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_store_row(const PlaneJob &job, __m512 acc,
                                                                          __m512 left, __m512 &carry,
                                                                          __mmask16 store, float *out) {
    const __m512 shifted = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(left), _mm512_castps_si512(carry), 15));
    carry = left;
    store_output(job, out, _mm512_add_ps(acc, shifted), store);
}

// The same for padding 1 (MobileNet's): from column b = 2 * ow0, the even
// columns are tap 1 and the odd ones tap 2. Tap 0 reads the odd columns
// one lane further on (column b - 1 entering lane 0): rather than shift
// every input row, its products are summed unshifted in `left` and the
// sums shifted once a row at the end, lane 15 of the vector before
// entering lane 0 (`carry`, this row's left sums of the previous vector;
// zero for the first). Two loads and two vpermt2ps a row, both loads
// 64-byte aligned when the row is. On Zen 4 a zmm shuffle takes an FMA's
// issue slot, and shifting every input row (a valignd and a broadcast of
// column b - 1) held the block to ~40 GFLOP/s: summed apart, 64 x 112x112
// -> 56x56 runs 1.04-1.10x faster (1 thread, batch 1 and 8).
template <int R, bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void forward_vector_s2_pad1(
    const PlaneShape &p, const PlaneJob &job, const BlockSource &src, float *out, int64_t ow0,
    __m512 (&carry)[R]) {
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) w[i] = _mm512_set1_ps(job.w[i]);
    constexpr int kInRows = (R - 1) * 2 + kK;
    const __m512i even = even_lanes();
    const __m512i odd = odd_lanes();
    const int64_t b = 2 * ow0;
    const __mmask16 m0 = Masked ? lane_range(-b, p.iw - b) : 0xffff;
    const __mmask16 m1 = Masked ? lane_range(-b - kVec, p.iw - b - kVec) : 0xffff;
    const __mmask16 store = Masked ? lane_range(0, p.ow - ow0) : 0xffff;
    __m512 acc[R], left[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(job.init), left[r] = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int t = 0; t < kInRows; ++t) {
        if (!src.base[t]) continue;
        const float *row = src.base[t] + b;
        const __m512 x0 = Masked ? _mm512_maskz_loadu_ps(m0, row) : _mm512_loadu_ps(row);
        const __m512 x1 =
            Masked ? _mm512_maskz_loadu_ps(m1, row + kVec) : _mm512_loadu_ps(row + kVec);
        const __m512 e = _mm512_permutex2var_ps(x0, even, x1);
        const __m512 o = _mm512_permutex2var_ps(x0, odd, x1);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int kh = t - 2 * r;
            if (kh < 0 || kh >= kK) continue;
            s2_taps(w, kh, e, o, acc[r], left[r]);
        }
    }
    for (int r = 0; r < R; ++r)
        s2_store_row(job, acc[r], left[r], carry[r], Masked ? store : (__mmask16)0xFFFF, out + r * p.ow + ow0);
}

template <int R>
CONV_TARGET_AVX512 void forward_block_s2(const PlaneShape &p, const PlaneJob &job,
                                         const BlockSource &src, int64_t oh0) {
    float *out = job.out + oh0 * p.ow;
    if (p.pl == 1) {
        // Unmasked from the second vector while its 32 columns are inside.
        int64_t ow0 = 0;
        __m512 carry[R];  // column -1: padding
        for (auto &c : carry) c = _mm512_setzero_ps();
        for (; ow0 < std::min<int64_t>(kVec, p.ow); ow0 += kVec)
            forward_vector_s2_pad1<R, true>(p, job, src, out, ow0, carry);
        for (; ow0 + kVec <= p.ow && 2 * ow0 + 2 * kVec <= p.iw; ow0 += kVec)
            forward_vector_s2_pad1<R, false>(p, job, src, out, ow0, carry);
        for (; ow0 < p.ow; ow0 += kVec) forward_vector_s2_pad1<R, true>(p, job, src, out, ow0, carry);
        return;
    }
    // Unmasked from the first vector whose columns start inside the row
    // while the last column read (2 * ow0 - pl + 33) is inside too.
    const int64_t a = std::min(ceil_div(ceil_div(std::max<int64_t>(p.pl, 0), 2), kVec) * kVec, p.ow);
    int64_t ow0 = 0;
    for (; ow0 < a; ow0 += kVec) forward_vectors_s2<R, 1, true>(p, job, src, out, ow0);
    for (; ow0 + kVec <= p.ow && 2 * ow0 - p.pl + 2 * kVec + 1 < p.iw; ow0 += kVec)
        forward_vectors_s2<R, 1, false>(p, job, src, out, ow0);
    for (; ow0 < p.ow; ow0 += kVec) forward_vectors_s2<R, 1, true>(p, job, src, out, ow0);
}

// ---- Narrow planes: stride 1, output at most 16 x 16 (MobileNet's 14x14
// and 7x7). One call computes a whole plane with every output row's sum in
// a register (16 rows + 9 weights + 3 inputs fit the 32), its row loop
// unrolled for the plane's height; the masks and offsets are the same for
// every plane and computed once per pass (NarrowPlan). Per-plane set-up
// (row pointers, block splits, mask building) cost the row-block kernels
// more than the FMAs on these planes.
struct NarrowPlan {
    bool ok = false;
    bool flip = false;  // the window rotated (backward-data): tap i reads w[8 - i]
    __mmask16 store;    // the output row's lanes
    // Stride 1: tap kw reads input column off[kw] + j for output column j,
    // inside the row on lanes load[kw].
    __mmask16 load[kK];
    int64_t off[kK];
    // Stride 2: from input column col[0] (taps 0 and 1: even and odd
    // columns) and col[1] (tap 2: even), 32 columns in two loads: lanes
    // inside the row la[i] for the first 16, lb[i] for the next.
    __mmask16 la[2], lb[2];
    int64_t col[2];
};

NarrowPlan narrow_plan(const PlaneShape &p) {
    NarrowPlan n;
    // Stride 2 only two planes at a time (rows at most 8 wide). Measured
    // (1 thread, interleaved, against forward_block_s2): 14x14 -> 7x7
    // 0.030 -> 0.023 ms at batch 1, 0.24 -> 0.19 at batch 8; but one
    // plane of 28x28 -> 14x14 0.030 -> 0.042 (its pad-1 kernel reads
    // half the columns per output row).
    const int rows = p.s == 1 ? kNarrowRows : kNarrowRowsS2;
    const int64_t width = p.s == 1 ? kVec : kVec / 2;
    if (p.oh > rows || p.ow > width || p.oh < 1) return n;
    n.ok = true;
    n.store = first_lanes(p.ow);
    for (int kw = 0; kw < kK; ++kw) {
        n.off[kw] = kw - p.pl;
        n.load[kw] = lane_range(-n.off[kw], p.iw - n.off[kw]) & n.store;
    }
    for (int i = 0; i < 2; ++i) {
        n.col[i] = 2 * i - p.pl;
        n.la[i] = lane_range(-n.col[i], p.iw - n.col[i]);
        n.lb[i] = lane_range(-n.col[i] - kVec, p.iw - n.col[i] - kVec);
    }
    return n;
}

// a in lanes 0-7 and b in lanes 8-15 (Two), else a in all.
template <bool Two>
CONV_TARGET_AVX512 inline __m512 halves(float a, float b) {
    return Two ? _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(a), _mm512_set1_ps(b))
               : _mm512_set1_ps(a);
}

// One plane, or two (Two) side by side in the vectors' halves when rows
// are at most 8 wide: lanes 8-15 hold the second plane, loaded from 8
// floats before its row under the mask shifted up 8 lanes.
//
// Stride 2 splits 32 input columns into even and odd ones (vpermt2ps); with
// two planes, 16 columns of each: lanes 0-7 the first plane's even (odd)
// columns, lanes 8-15 the second's.
template <int R, bool Two, int S>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void narrow_planes(
    const PlaneShape &p, const NarrowPlan &n,
                                      const PlaneJob *job) {
    constexpr int kHalf = kVec / 2;
    const __mmask16 store2 = (__mmask16)(n.store << kHalf);
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) {
        const int j = n.flip ? kK * kK - 1 - i : i;
        w[i] = halves<Two>(job[0].w[j], job[Two].w[j]);
    }
    __m512 acc[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        if (!job[0].accumulate) {
            acc[r] = halves<Two>(job[0].init, job[Two].init);
            continue;
        }
        acc[r] = _mm512_maskz_loadu_ps(n.store, job[0].out + r * p.ow);
        if (Two) acc[r] = _mm512_mask_loadu_ps(acc[r], store2, job[1].out + r * p.ow - kHalf);
    }
#pragma GCC unroll 32
    for (int t = 0; t < (R - 1) * S + kK; ++t) {
        const int64_t ih = t - p.pt;
        if (ih < 0 || ih >= p.ih) continue;
        const float *row = job[0].in + ih * p.iw;
        __m512 v[kK];
        if (S == 1) {
            for (int kw = 0; kw < kK; ++kw) {
                v[kw] = _mm512_maskz_loadu_ps(n.load[kw], row + n.off[kw]);
                if (Two)
                    v[kw] = _mm512_mask_loadu_ps(v[kw], (__mmask16)(n.load[kw] << kHalf),
                                                 job[1].in + ih * p.iw + n.off[kw] - kHalf);
            }
        } else {
            // The second 16 columns: the next ones of this row, or the
            // other plane's first 16.
            const float *next = Two ? job[1].in + ih * p.iw : row + kVec;
            __m512 x[4];
            for (int i = 0; i < 2; ++i) {
                x[2 * i] = _mm512_maskz_loadu_ps(n.la[i], row + n.col[i]);
                x[2 * i + 1] = _mm512_maskz_loadu_ps(Two ? n.la[i] : n.lb[i], next + n.col[i]);
            }
            v[0] = _mm512_permutex2var_ps(x[0], even_lanes(), x[1]);
            v[1] = _mm512_permutex2var_ps(x[0], odd_lanes(), x[1]);
            v[2] = _mm512_permutex2var_ps(x[2], even_lanes(), x[3]);
        }
        __asm__("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]));  // loaded once, see forward_vectors
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const int kh = t - S * r;
            if (kh < 0 || kh >= kK) continue;
            for (int kw = 0; kw < kK; ++kw)
                acc[r] = _mm512_fmadd_ps(w[kh * kK + kw], v[kw], acc[r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        const __m512 a = job[0].relu ? _mm512_max_ps(_mm512_setzero_ps(), acc[r]) : acc[r];
        _mm512_mask_storeu_ps(job[0].out + r * p.ow, n.store, a);
        if (Two) _mm512_mask_storeu_ps(job[1].out + r * p.ow - kHalf, store2, a);
    }
}

// Planes [b, e) of a pass, job(i) describing plane i: two at a time where
// they fit one vector. The loop is inside the kernel's instantiation (one
// dispatch per range): on 7x7 planes a call per plane cost 10%.
template <int R, int S, class Job>
CONV_TARGET_AVX512 void narrow_run(const PlaneShape &p, const NarrowPlan &n, int64_t b, int64_t e,
                                   Job &job) {
    int64_t i = b;
    if (p.ow <= kVec / 2)
        for (; i + 2 <= e; i += 2) {
            const PlaneJob two[2] = {job(i), job(i + 1)};
            narrow_planes<R, true, S>(p, n, two);
        }
    for (; i < e; ++i) {
        const PlaneJob one = job(i);
        narrow_planes<R, false, S>(p, n, &one);
    }
}

template <int S, class Job>
CONV_TARGET_AVX512 void narrow_rows(const PlaneShape &p, const NarrowPlan &n, int64_t b, int64_t e,
                                    Job &job) {
    // narrow_plan keeps p.oh within the rows.
    with_rows<S == 1 ? kNarrowRows : kNarrowRowsS2>(
        (int)p.oh, [&](auto r) CONV_TARGET_AVX512 { narrow_run<decltype(r)::value, S>(p, n, b, e, job); });
}

template <class Job>
CONV_TARGET_AVX512 void narrow_range(const PlaneShape &p, const NarrowPlan &n, int64_t b,
                                     int64_t e, Job &&job) {
    if (p.s == 1)
        narrow_rows<1>(p, n, b, e, job);
    else
        narrow_rows<2>(p, n, b, e, job);
}

// The input rows of the block of output rows from oh0 (rows of them).
CONV_TARGET_AVX512 void block_source(const PlaneShape &p, const float *in, int64_t oh0, int rows,
                                     BlockSource *src) {
    const int in_rows = (rows - 1) * p.s + kK;
    for (int t = 0; t < in_rows; ++t) {
        const int64_t ih = oh0 * p.s - p.pt + t;
        src->base[t] = ih < 0 || ih >= p.ih ? nullptr : in + ih * p.iw;
    }
}

// Stride 1's column taps (stride 2 reads the rows itself).
CONV_TARGET_AVX512 void column_taps(const PlaneShape &p, BlockSource *src) {
    for (int kw = 0; kw < kK; ++kw) {
        const int64_t e = kw - p.pl;  // input column of output column 0
        src->off[kw] = e;
        src->lo[kw] = -e;
        src->hi[kw] = p.iw - e;
    }
}

// V vectors from vector v0 of P flat planes side by side: P * V
// independent sums hide the FMA latency, and each mask loaded serves P
// planes.
template <int P, int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void flat_vectors(
    const FlatPlan &f, const PlaneJob *job, int v0) {
    __m512 w[P][kK * kK], acc[P][V];
    for (int j = 0; j < P; ++j) {
        for (int i = 0; i < kK * kK; ++i) w[j][i] = _mm512_set1_ps(job[j].w[i]);
        for (int u = 0; u < V; ++u)
            acc[j][u] = job[j].accumulate
                            ? _mm512_maskz_loadu_ps(f.store[v0 + u], job[j].out + (v0 + u) * kVec)
                            : _mm512_set1_ps(job[j].init);
    }
#pragma GCC unroll 9
    for (int t = 0; t < kK * kK; ++t)
#pragma GCC unroll 4
        for (int u = 0; u < V; ++u) {
            const __mmask16 m = f.load[v0 + u][t];
            for (int j = 0; j < P; ++j) {
                const float *at = job[j].in + (v0 + u) * kVec + f.off[t];  // may lie outside: masked
                acc[j][u] = _mm512_fmadd_ps(w[j][t], _mm512_maskz_loadu_ps(m, at), acc[j][u]);
            }
        }
    for (int j = 0; j < P; ++j)
        for (int u = 0; u < V; ++u) {
            const __m512 a = job[j].relu ? _mm512_max_ps(_mm512_setzero_ps(), acc[j][u]) : acc[j][u];
            _mm512_mask_storeu_ps(job[j].out + (v0 + u) * kVec, f.store[v0 + u], a);
        }
}

// P whole flat planes.
template <int P>
CONV_TARGET_AVX512 void flat_planes(const FlatPlan &f, const PlaneJob *job) {
    int v = 0;
    for (; v + 4 <= f.vectors; v += 4) flat_vectors<P, 4>(f, job, v);
    for (; v < f.vectors; ++v) flat_vectors<P, 1>(f, job, v);
}

// Input rows [first, first + count) of a plane into the cache, while the
// block before them computes: rows of a few hundred bytes are too short
// for the hardware prefetchers to pick up as streams in time.
CONV_TARGET_AVX512 inline void prefetch_rows(const PlaneShape &p, const float *in, int64_t first,
                                             int64_t count) {
    const int64_t begin = std::max<int64_t>(first, 0), end = std::min(first + count, p.ih);
    if (begin >= end) return;
    const char *from = reinterpret_cast<const char *>(in + begin * p.iw);
    const char *to = reinterpret_cast<const char *>(in + end * p.iw);
    for (const char *at = from; at < to; at += 64) _mm_prefetch(at, _MM_HINT_T0);
}

// Rows [lo, hi) of a sweep that need no bounds checks.
struct InnerRows {
    int64_t lo, hi;
};

// Output (dy) rows whose three window rows lie inside the input plane:
// s r - pt >= 0 and s r - pt + 2 < ih.
inline InnerRows inner_output_rows(const PlaneShape &p) {
    const int64_t lo = std::min(ceil_div(std::max<int64_t>(p.pt, 0), p.s), p.oh);
    return {lo, std::clamp(floor_div(p.ih - kK + p.pt, p.s) + 1, lo, p.oh)};
}

// A sweep's band of rows [b0, end) of [0, rows), and its share [lo, hi) of
// the unchecked rows. (A helper taking the sweep as a lambda cost the
// forward sweep 1.8x: its weights captured by reference were not kept in
// registers.)
struct Band {
    int64_t end, lo, hi;
};
inline Band band_at(int64_t b0, int64_t band, int64_t rows, InnerRows inner) {
    const int64_t end = std::min(rows, b0 + band), lo = std::clamp(inner.lo, b0, end);
    return {end, lo, std::clamp(inner.hi, lo, end)};
}

// Stride 1: output rows [lo, hi) of the vector column from ow0, whose
// three input rows lie inside the plane. An output row's window rows are
// the last one's lower two and one more: each input row's three tap
// columns are loaded once for the three output rows that read them, the
// two kept rolling in registers. Masked: some tap or store lane is.
template <bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void forward_rows_rolling(
    const PlaneShape &p, const PlaneJob &job, const BlockSource &src, const __m512 (&w)[kK * kK],
    const __mmask16 (&m)[kK], __mmask16 store, int64_t ow0, int64_t lo, int64_t hi, int64_t ahead) {
    auto load3 = [&](const float *row, __m512 (&v)[kK]) CONV_TARGET_AVX512 {
        for (int kw = 0; kw < kK; ++kw)
            v[kw] = Masked ? _mm512_maskz_loadu_ps(m[kw], row + src.off[kw]) : _mm512_loadu_ps(row + src.off[kw]);
        __asm__("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]));  // loaded once, see forward_vectors
    };
    const float *xr = job.in + (lo - p.pt) * p.iw + ow0;
    float *o = job.out + lo * p.ow + ow0;
    __m512 a[kK], b[kK];
    load3(xr, a);
    load3(xr + p.iw, b);
    for (int64_t oh = lo; oh < hi; ++oh, xr += p.iw, o += p.ow) {
        __m512 c[kK];
        load3(xr + 2 * p.iw, c);
        _mm_prefetch(reinterpret_cast<const char *>(xr + ahead * p.iw + kVec), _MM_HINT_T0);
        __m512 acc = job.accumulate ? _mm512_maskz_loadu_ps(store, o) : _mm512_set1_ps(job.init);
        for (int kw = 0; kw < kK; ++kw) acc = _mm512_fmadd_ps(w[kw], a[kw], acc);
        for (int kw = 0; kw < kK; ++kw) acc = _mm512_fmadd_ps(w[kK + kw], b[kw], acc);
        for (int kw = 0; kw < kK; ++kw) acc = _mm512_fmadd_ps(w[2 * kK + kw], c[kw], acc);
        store_output(job, o, acc, store);
        for (int kw = 0; kw < kK; ++kw) a[kw] = b[kw], b[kw] = c[kw];
    }
}

// Stride 1: output row oh of the vector column from ow0 where some of its
// window rows lie outside the plane (those add nothing).
CONV_TARGET_AVX512 inline void forward_edge_row(const PlaneShape &p, const PlaneJob &job, const BlockSource &src,
                                                const __m512 (&w)[kK * kK], const __mmask16 (&m)[kK],
                                                __mmask16 store, int64_t ow0, int64_t oh) {
    float *o = job.out + oh * p.ow + ow0;
    __m512 acc = job.accumulate ? _mm512_maskz_loadu_ps(store, o) : _mm512_set1_ps(job.init);
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t ih = oh - p.pt + kh;
        if (ih < 0 || ih >= p.ih) continue;
        const float *row = job.in + ih * p.iw + ow0;
        for (int kw = 0; kw < kK; ++kw)
            acc = _mm512_fmadd_ps(w[kh * kK + kw], _mm512_maskz_loadu_ps(m[kw], row + src.off[kw]), acc);
    }
    store_output(job, o, acc, store);
}

// Stride 1, one whole plane: each vector column swept down bands of output
// rows (forward_rows_rolling); the same products in the same order as the
// row blocks, so the same bits. Measured against the blocks (1 thread,
// forward): bands of 64 rows prefetched 64 ahead 1.18-1.30x on planes in
// cache (batch 1: 112x112, 56x56, 60x60, 40x40) and 1.20-1.28x from memory
// where rows are whole vectors (batch 8: 48 to 112 wide); from memory with
// ragged rows (56, 60 wide) bands of 16-64 rows ran 0.73-0.89x, 8 rows
// even: those stay with the blocks (why, not measured).
constexpr int64_t kForwardBandRows = 64, kForwardAheadRows = 64;
CONV_TARGET_AVX512 void forward_plane_s1(const PlaneShape &p, const PlaneJob &job) {
    BlockSource src;
    column_taps(p, &src);
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) w[i] = _mm512_set1_ps(job.w[i]);
    const InnerRows inner = inner_output_rows(p);
    for (int64_t b0 = 0; b0 < p.oh; b0 += kForwardBandRows) {
        const auto [b1, lo, hi] = band_at(b0, kForwardBandRows, p.oh, inner);
        for (int64_t ow0 = 0; ow0 < p.ow; ow0 += kVec) {
            __mmask16 m[kK];
            for (int kw = 0; kw < kK; ++kw) m[kw] = lane_range(src.lo[kw] - ow0, src.hi[kw] - ow0);
            const __mmask16 store = lane_range(0, p.ow - ow0);
            int64_t oh = b0;
            for (; oh < lo; ++oh) forward_edge_row(p, job, src, w, m, store, ow0, oh);
            if (lo < hi) {
                if ((m[0] & m[1] & m[2] & store) == (__mmask16)0xFFFF)
                    forward_rows_rolling<false>(p, job, src, w, m, store, ow0, lo, hi, kForwardAheadRows);
                else
                    forward_rows_rolling<true>(p, job, src, w, m, store, ow0, lo, hi, kForwardAheadRows);
            }
            for (oh = hi; oh < b1; ++oh) forward_edge_row(p, job, src, w, m, store, ow0, oh);
        }
    }
}

// Stride 2, padding 1 on the left (MobileNet's): a vector column's masks,
// for the forward and backward-filter sweeps. From column c = 2 * ow0 two
// loads split into the even columns (tap column 1 of the 16 outputs) and the
// odd ones (tap column 2). Tap column 0 of output ow0 + l + 1 is odd column
// l: the forward shifts its sums once a row (s2_store_row); the
// backward-filter, rather than shift the odd columns a lane up (a shuffle a
// row, in an FMA's issue slot on Zen 4), loads dy a column on, once a dy row
// for three input rows (`tap`: its FMAs' lanes).
struct S2Column {
    int64_t c;               // first input column loaded
    __mmask16 m0, m1;        // the two loads' lanes inside the row
    __mmask16 valid;         // dy lanes that are outputs
    __mmask16 tap[kK];       // per tap column, the lanes whose product counts
};

CONV_TARGET_AVX512 inline S2Column s2_column(const PlaneShape &p, int64_t ow0) {
    S2Column k;
    k.c = 2 * ow0;
    k.m0 = lane_range(-k.c, p.iw - k.c);
    k.m1 = lane_range(-k.c - kVec, p.iw - k.c - kVec);
    k.valid = lane_range(0, p.ow - ow0);
    const __mmask16 odd_inside = lane_range(0, (p.iw - k.c) / 2);  // column c + 2 l + 1 < iw
    k.tap[0] = lane_range(0, p.ow - ow0 - 1) & odd_inside;         // with dy column ow0 + l + 1
    k.tap[1] = k.valid & lane_range(0, (p.iw - k.c + 1) / 2);       // column c + 2 l < iw
    k.tap[2] = k.valid & odd_inside;
    return k;
}

// An input row from the column's first input column split into its even
// and odd columns. Whole: read as whole vectors, lanes past the row too
// (away from the tensor's end: backward-filter's FMAs are merge-masked, and
// the forward's lanes past the row reach no stored output where 2 ow <=
// iw), each held in a register (read plain, GCC folds it into both
// permutes).
template <bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_split(const S2Column &k, const float *row,
                                                                      __m512 &e, __m512 &o) {
    const __m512 x0 = Whole ? held(_mm512_loadu_ps(row + k.c)) : _mm512_maskz_loadu_ps(k.m0, row + k.c);
    const __m512 x1 =
        Whole ? held(_mm512_loadu_ps(row + k.c + kVec)) : _mm512_maskz_loadu_ps(k.m1, row + k.c + kVec);
    e = _mm512_permutex2var_ps(x0, even_lanes(), x1);
    o = _mm512_permutex2var_ps(x0, odd_lanes(), x1);
    __asm__("" : "+v"(e), "+v"(o));  // made once, see forward_vectors
}

// Stride 2, padding 1 on the left, one whole plane: each vector column
// swept down bands of output rows, an input row split once for both output
// rows that read it (the blocks of 5 rows split 11 for 5). Output rows
// whose window rows all lie inside run unchecked with the rows' splits in
// registers; the others check each window row. Measured against the blocks
// (1 thread): 1.11-1.17x in cache (batch 1, 112x112 to 80x80 planes); from
// memory (batch 8) 0.72-1.20x in a noisy hour, so passes past
// kCachedPassBytes stay with the blocks. Whole: the rows read as whole
// vectors (s2_split), where no output's taps reach past the row (2 ow <=
// iw: the lanes past it are then left out by the masked store) and the
// plane is not x's last (job.whole): 1 thread, batch 1, MobileNet's 64
// channels 112x112 1.04x.
constexpr int64_t kForwardBandRowsS2 = 32;
template <bool Whole>
CONV_TARGET_AVX512 void forward_plane_s2_pad1(const PlaneShape &p, const PlaneJob &job) {
    __m512 w[kK * kK];
    for (int i = 0; i < kK * kK; ++i) w[i] = _mm512_set1_ps(job.w[i]);
    const InnerRows inner = inner_output_rows(p);
    __m512 carry[kForwardBandRowsS2];
    for (int64_t b0 = 0; b0 < p.oh; b0 += kForwardBandRowsS2) {
        const auto [b1, lo, hi] = band_at(b0, kForwardBandRowsS2, p.oh, inner);
        for (auto &c : carry) c = _mm512_setzero_ps();  // column -1: padding
        for (int64_t ow0 = 0; ow0 < p.ow; ow0 += kVec) {
            const S2Column k = s2_column(p, ow0);
            auto checked_row = [&](int64_t oh) CONV_TARGET_AVX512 {
                __m512 acc = _mm512_set1_ps(job.init), left = _mm512_setzero_ps();
                for (int kh = 0; kh < kK; ++kh) {
                    const int64_t ih = 2 * oh - p.pt + kh;
                    if (ih < 0 || ih >= p.ih) continue;
                    __m512 e, o;
                    s2_split<Whole>(k, job.in + ih * p.iw, e, o);
                    s2_taps(w, kh, e, o, acc, left);
                }
                s2_store_row(job, acc, left, carry[oh - b0], k.valid, job.out + oh * p.ow + ow0);
            };
            for (int64_t oh = b0; oh < lo; ++oh) checked_row(oh);
            if (lo < hi) {
                const float *row = job.in + (2 * lo - p.pt) * p.iw;
                float *out = job.out + lo * p.ow + ow0;
                __m512 e0, o0;
                s2_split<Whole>(k, row, e0, o0);
                for (int64_t oh = lo; oh < hi; ++oh, row += 2 * p.iw, out += p.ow) {
                    __m512 e1, o1, e2, o2;
                    s2_split<Whole>(k, row + p.iw, e1, o1);
                    s2_split<Whole>(k, row + 2 * p.iw, e2, o2);
                    _mm_prefetch(reinterpret_cast<const char *>(row + kForwardAheadRows * p.iw + k.c + 2 * kVec),
                                 _MM_HINT_T0);
                    __m512 acc = _mm512_set1_ps(job.init), left = _mm512_setzero_ps();
                    s2_taps(w, 0, e0, o0, acc, left);
                    s2_taps(w, 1, e1, o1, acc, left);
                    s2_taps(w, 2, e2, o2, acc, left);
                    s2_store_row(job, acc, left, carry[oh - b0], k.valid, out);
                    e0 = e2, o0 = o2;
                }
            }
            for (int64_t oh = hi; oh < b1; ++oh) checked_row(oh);
        }
    }
}

// One whole plane.
CONV_TARGET_AVX512 void forward_plane(const PlaneShape &p, const PlaneJob &job) {
    if (p.s == 1 && (!job.from_memory || p.ow % kVec == 0)) return forward_plane_s1(p, job);
    if (p.s == 2 && p.pl == 1 && !job.accumulate && !job.from_memory)
        return job.whole && 2 * p.ow <= p.iw ? forward_plane_s2_pad1<true>(p, job)
                                             : forward_plane_s2_pad1<false>(p, job);
    BlockSource src;
    column_taps(p, &src);
    int block = p.s == 1 ? kRowsS1 : kRowsS2;
    // A plane one vector wide has few FMAs per block: make the blocks as
    // tall as the registers allow (evenly split) to spread their set-up.
    if (p.s == 1 && p.ow <= kVec) block = (int)ceil_div(p.oh, ceil_div(p.oh, kMaxRows));
    for (int64_t oh0 = 0; oh0 < p.oh; oh0 += block) {
        const int rows = (int)std::min<int64_t>(block, p.oh - oh0);
        block_source(p, job.in, oh0, rows, &src);
        prefetch_rows(p, job.in, (oh0 + rows) * p.s - p.pt + kK - p.s, rows * p.s);
        if (p.s == 1)
            with_rows<kMaxRows>(rows, [&](auto r) CONV_TARGET_AVX512 {
                forward_block<1, decltype(r)::value>(p, job, src, oh0);
            });
        else
            with_rows<kRowsS2>(rows, [&](auto r) CONV_TARGET_AVX512 {
                forward_block_s2<decltype(r)::value>(p, job, src, oh0);
            });
    }
}

// ---- A channel multiplier at stride 1: kMulti output channels of one
// input plane at a time (MNIST's 1->32 on 28x28, groups == C == 1), so that
// each input vector loaded feeds kMulti channels' FMAs. One plane at a time
// re-read the input per output channel and paid each plane's set-up over
// few FMAs: on 1->32 28x28 and 2->16 33x33 at batch 32, 1 thread, this
// kernel takes 0.54 and 0.48 ms against 0.83 and 0.76 (1.55x, 1.59x; 8
// interleaved rounds). 4 x 5 sums measured as fast as 4 x 6 and 8 x 3, and
// faster than 2 x 4 (weights kept in registers).

constexpr int kMulti = 4;       // output channels a block computes
constexpr int kMultiRows = 5;   // its output rows: 4 x 5 sums + 3 inputs in registers

// What a block of kMulti channels writes: each channel's plane, bias, and
// its 9 taps, broadcast from memory by the FMAs (4 x 9 vectors do not fit
// the registers beside the sums). From a float each ({1to16}), not from a
// vector broadcast once: 1.16-1.26x on MNIST's 1->32 28x28 (1 thread,
// alternated in one process; the same bits).
struct MultiJob {
    const float *in;
    float *out[kMulti];
    float init[kMulti];
    float w[kMulti][kK * kK];
    bool relu;
};

template <int R, bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void multi_vectors(
    const PlaneShape &p, const MultiJob &job, const BlockSource &src, int64_t oh0, int64_t ow0) {
    __mmask16 m[kK], store = 0xffff;
    for (int kw = 0; kw < kK; ++kw) m[kw] = Masked ? lane_range(src.lo[kw] - ow0, src.hi[kw] - ow0) : 0xffff;
    if (Masked) store = lane_range(0, p.ow - ow0);
    __m512 acc[kMulti][R];
    for (int c = 0; c < kMulti; ++c)
        for (int r = 0; r < R; ++r) acc[c][r] = _mm512_set1_ps(job.init[c]);
#pragma GCC unroll 8
    for (int t = 0; t < R + kK - 1; ++t) {
        if (!src.base[t]) continue;
        const float *at = src.base[t] + ow0;
        __m512 v0 = Masked ? _mm512_maskz_loadu_ps(m[0], at + src.off[0]) : _mm512_loadu_ps(at + src.off[0]);
        __m512 v1 = Masked ? _mm512_maskz_loadu_ps(m[1], at + src.off[1]) : _mm512_loadu_ps(at + src.off[1]);
        __m512 v2 = Masked ? _mm512_maskz_loadu_ps(m[2], at + src.off[2]) : _mm512_loadu_ps(at + src.off[2]);
        __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2));  // loaded once, see forward_vectors
        const __m512 v[kK] = {v0, v1, v2};
        // The taps' address hidden from GCC a row at a time: it otherwise
        // broadcasts all 36 taps once into vectors, which with the 20 sums
        // do not fit the registers, and the spilled sums and taps cost more
        // than the broadcasts ({1to16} in the FMA runs at the FMA rate).
        const float(*w)[kK * kK] = job.w;
        __asm__("" : "+r"(w));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int kh = t - r;
            if (kh < 0 || kh >= kK) continue;
            for (int c = 0; c < kMulti; ++c)
                for (int kw = 0; kw < kK; ++kw)
                    acc[c][r] = _mm512_fmadd_ps(_mm512_set1_ps(w[c][kh * kK + kw]), v[kw], acc[c][r]);
        }
    }
    // ReLU applied in a loop of its own: tested at each store, the flag
    // was reloaded from the stack after every store.
    if (job.relu)
        for (int c = 0; c < kMulti; ++c)
            for (int r = 0; r < R; ++r) acc[c][r] = _mm512_max_ps(_mm512_setzero_ps(), acc[c][r]);  // NaN stays NaN
    for (int c = 0; c < kMulti; ++c)
        for (int r = 0; r < R; ++r) {
            const __m512 a = acc[c][r];
            float *o = job.out[c] + (oh0 + r) * p.ow + ow0;
            if (Masked)
                _mm512_mask_storeu_ps(o, store, a);
            else
                _mm512_storeu_ps(o, a);
        }
}

template <int R>
CONV_TARGET_AVX512 void multi_block(const PlaneShape &p, const MultiJob &job, const BlockSource &src,
                                    int64_t oh0) {
    const auto [a, b] = unmasked_columns(p, src);
    int64_t ow0 = 0;
    for (; ow0 < a; ow0 += kVec) multi_vectors<R, true>(p, job, src, oh0, ow0);
    for (; ow0 + kVec <= b; ow0 += kVec) multi_vectors<R, false>(p, job, src, oh0, ow0);
    for (; ow0 < p.ow; ow0 += kVec) multi_vectors<R, true>(p, job, src, oh0, ow0);
}

// kMulti whole output planes of one input plane (stride 1): output
// channels k0.. (their taps from w, bias from bias), planes out_plane apart
// from out.
CONV_TARGET_AVX512 void multi_plane(const PlaneShape &p, const float *in, const float *w,
                                    const float *bias, bool relu, float *out, int64_t out_plane) {
    MultiJob job;
    job.in = in;
    job.relu = relu;
    for (int c = 0; c < kMulti; ++c) {
        job.out[c] = out + c * out_plane;
        job.init[c] = bias ? bias[c] : 0.0f;
        for (int q = 0; q < kK * kK; ++q) job.w[c][q] = w[c * kK * kK + q];
    }
    BlockSource src;
    column_taps(p, &src);
    for (int64_t oh0 = 0; oh0 < p.oh; oh0 += kMultiRows) {
        const int rows = (int)std::min<int64_t>(kMultiRows, p.oh - oh0);
        block_source(p, job.in, oh0, rows, &src);
        with_rows<kMultiRows>(rows, [&](auto r) CONV_TARGET_AVX512 {
            multi_block<decltype(r)::value>(p, job, src, oh0);
        });
    }
}

// ---- A channel multiplier computed flat: G output channels of one input
// plane a vector of the output plane at a time, each of its 9 tap vectors
// loaded once and feeding G channels' FMAs.
//
// On flat planes (stride 1, "same", at most 256 elements: the digits
// example's 1->16 on 8x8) the tap vectors are the FlatPlan's masked loads
// from the input (FlatTaps). The narrow kernel took these planes two to a
// vector, per pair of planes 60 masked loads, 9 blends and 16 masked stores
// about 72 FMAs: 1->16 8x8 at batch 32 ran at 0.60 of oneDNN.
//
// Other stride-1 planes whose copies fit L1 (MNIST's 1->32 28x28 -> 26x26)
// read them from three copies of the input, one per tap column kw, with
// rows as long as the output's and the padding in them (RowCopies): output
// element q = (i, j) meets tap (kh, kw) at copy kw's element q + kh * ow,
// so the output plane is flat too. multi_plane's rows of 26 outputs filled
// 26 of 32 lanes, and half its stores were masked; flat, 676 outputs are 43
// vectors, the last one masked.
constexpr int kMultiFlat = 16;  // channels a call sums: 16 sums + 9 taps in registers

struct FlatTaps {
    const FlatPlan &f;
    const float *in;
    int vectors() const { return f.vectors; }
    __mmask16 store(int v) const { return f.store[v]; }
    CONV_TARGET_AVX512 __m512 load(int v, int t) const {
        return _mm512_maskz_loadu_ps(f.load[v][t], in + v * kVec + f.off[t]);  // may lie outside: masked
    }
};

// The copies (from multi_copies) and the output plane's size.
struct RowCopies {
    static constexpr int64_t kMaxFloats = 4096;  // the three copies: 16 KiB
    const float *copy;
    int64_t ow, size, stride;  // output row and plane, floats a copy
    int vectors() const { return (int)ceil_div(size, (int64_t)kVec); }
    __mmask16 store(int v) const { return first_lanes(size - v * kVec); }
    CONV_TARGET_AVX512 __m512 load(int v, int t) const {
        return _mm512_loadu_ps(copy + t % kK * stride + t / kK * ow + v * kVec);
    }
};

// Floats a copy of RowCopies takes: oh + 2 rows of ow, and a vector more
// for the last output vector's lanes past the plane.
int64_t row_copy_floats(const PlaneShape &p) { return (p.oh + kK - 1) * p.ow + kVec; }

// Copy kw holds input (r - pt, j + kw - pl) at r * ow + j, zero outside.
CONV_TARGET_AVX512 void multi_copies(const PlaneShape &p, const float *in, float *copy) {
    const int64_t stride = row_copy_floats(p);
    for (int kw = 0; kw < kK; ++kw) {
        float *to = copy + kw * stride;
        const int64_t shift = kw - p.pl;  // input column of output column 0
        const int64_t lo = std::clamp<int64_t>(-shift, 0, p.ow), hi = std::clamp<int64_t>(p.iw - shift, lo, p.ow);
        for (int64_t r = 0; r < p.oh + kK - 1; ++r, to += p.ow) {
            const int64_t ih = r - p.pt;
            if (ih < 0 || ih >= p.ih) {
                std::fill(to, to + p.ow, 0.0f);
                continue;
            }
            std::fill(to, to + lo, 0.0f);
            std::copy(in + ih * p.iw + lo + shift, in + ih * p.iw + hi + shift, to + lo);
            std::fill(to + hi, to + p.ow, 0.0f);
        }
        std::fill(to, to + kVec, 0.0f);
    }
}

template <int G, class Taps>
CONV_TARGET_AVX512 void multi_flat(const Taps &taps, const float *w, const float *bias, bool relu, float *out,
                                   int64_t out_plane) {
    const int vectors = taps.vectors();
    for (int v = 0; v < vectors; ++v) {
        __m512 x[kK * kK];
        for (int t = 0; t < kK * kK; ++t) x[t] = taps.load(v, t);
        __m512 acc[G];
        for (int c = 0; c < G; ++c) acc[c] = bias ? _mm512_set1_ps(bias[c]) : _mm512_setzero_ps();
        // The taps broadcast by the FMAs, from memory ({1to16}); GCC would
        // otherwise hoist the G x 9 broadcasts out of the vector loop.
        const float *wp = w;
        __asm__("" : "+r"(wp));
#pragma GCC unroll 9
        for (int t = 0; t < kK * kK; ++t)
#pragma GCC unroll 16
            for (int c = 0; c < G; ++c) acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(wp[c * kK * kK + t]), x[t], acc[c]);
        if (relu)
            for (int c = 0; c < G; ++c) acc[c] = _mm512_max_ps(_mm512_setzero_ps(), acc[c]);  // NaN stays NaN
        float *o = out + v * kVec;
        const __mmask16 lanes = taps.store(v);
        if (lanes == 0xffff)
            for (int c = 0; c < G; ++c) _mm512_storeu_ps(o + c * out_plane, acc[c]);
        else
            for (int c = 0; c < G; ++c) _mm512_mask_storeu_ps(o + c * out_plane, lanes, acc[c]);
    }
}

// Backward-filter with a channel multiplier on the same planes: dw[k][t]
// = sum over images and output elements q of dy[k][q] * tap t's vector at
// q (the forward's tap vectors). G channels' 9 x G sums a vector each, in
// registers over `images` images (image i's taps taps_of(i), its dy planes
// dy_image apart), from zero where `fresh`, else from `sums`, and left in
// `sums`; per output vector G dy loads and 9 tap loads for 9 x G FMAs.
// MNIST's 1->32 28x28 at batch 32 went to direct_avx512's tiles (0.65 of
// oneDNN): 2 filter blocks of 16 over one source channel, its vectors 26 of
// 32 lanes full.
constexpr int kFilterMulti = 3;  // channels an item sums: 27 sums, 3 dy and a tap in registers

template <int G, class TapsOf>
CONV_TARGET_AVX512 void multi_filter(const TapsOf &taps_of, int64_t images, const float *dy, int64_t dy_image,
                                     int64_t out_plane, bool fresh, __m512 *sums) {
    __m512 acc[G][kK * kK];
    for (int c = 0; c < G; ++c)
        for (int t = 0; t < kK * kK; ++t) acc[c][t] = fresh ? _mm512_setzero_ps() : sums[c * kK * kK + t];
    for (int64_t i = 0; i < images; ++i) {
        const auto taps = taps_of(i);
        const float *d_i = dy + i * dy_image;
        const int vectors = taps.vectors();
        for (int v = 0; v < vectors; ++v) {
            const __mmask16 lanes = taps.store(v);  // the output's elements: dy's lanes
            __m512 d[G];
            for (int c = 0; c < G; ++c) d[c] = _mm512_maskz_loadu_ps(lanes, d_i + c * out_plane + v * kVec);
#pragma GCC unroll 9
            for (int t = 0; t < kK * kK; ++t) {
                __m512 x = taps.load(v, t);
                // Loaded once: GCC otherwise folds the load into each of the G
                // FMAs, G loads (mostly across two lines) where one does.
                __asm__("" : "+v"(x));
                for (int c = 0; c < G; ++c) acc[c][t] = _mm512_fmadd_ps(d[c], x, acc[c][t]);
            }
        }
    }
    for (int c = 0; c < G; ++c)
        for (int t = 0; t < kK * kK; ++t) sums[c * kK * kK + t] = acc[c][t];
}

// Backward-data at stride 2, one dx plane of input channel c (its M output
// channels' dy planes at dy, dy + out_plane, ...; their taps at w).
// dx[ih][iw] gathers dy[oh][ow] through tap (kh, kw) where
// ih = 2 oh - pt + kh and iw = 2 ow - pl + kw: by parity, dx column
// iw = 2 j - pl + r takes tap 1 of dy column j (r = 1), or taps 0 and 2 of
// dy columns j and j - 1 (r = 0). 16 values of j give the two halves of 32
// consecutive dx columns, interleaved by vpermt2ps and stored once. A
// strip: sixteen values of j from j0, down every dx row (its masks depend
// on j0 only).
struct S2Strip {
    __m512i lo_idx, hi_idx;  // the halves' interleave
    __mmask16 cur, prev;     // dy columns j, j - 1
    __mmask16 store_a, store_b;
    int64_t c0;              // dx column of lane 0 of the even half
};

CONV_TARGET_AVX512 inline __attribute__((always_inline)) S2Strip s2_strip(const PlaneShape &p, int64_t j0) {
    S2Strip k;
    k.lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    k.hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    k.cur = lane_range(-j0, p.ow - j0);
    k.prev = lane_range(1 - j0, p.ow + 1 - j0);  // its loads may start before the row: masked
    k.c0 = 2 * j0 - p.pl;
    k.store_a = lane_range(-k.c0, p.iw - k.c0);
    k.store_b = lane_range(-k.c0 - kVec, p.iw - k.c0 - kVec);
    return k;
}

// even holds dx columns 2 j - pl, odd 2 j - pl + 1: interleaved, 32
// consecutive columns of `row` from c0.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_store(const S2Strip &k, float *row, __m512 even,
                                                                      __m512 odd) {
    _mm512_mask_storeu_ps(row + k.c0, k.store_a, _mm512_permutex2var_ps(even, k.lo_idx, odd));
    _mm512_mask_storeu_ps(row + k.c0 + kVec, k.store_b, _mm512_permutex2var_ps(even, k.hi_idx, odd));
}

// A strip with several output channels a dx plane (m of them), every dx
// row testing which tap rows reach it.
CONV_TARGET_AVX512 void backward_data_s2_strip(const PlaneShape &p, int64_t m, const float *dy, int64_t out_plane,
                                               const float *w, float *dx, int64_t j0) {
    const S2Strip k = s2_strip(p, j0);
    for (int64_t ih = 0; ih < p.ih; ++ih) {
        __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
        for (int64_t mi = 0; mi < m; ++mi) {
            const float *wk = w + mi * kK * kK;
            for (int kh = 0; kh < kK; ++kh) {
                const int64_t twice = ih + p.pt - kh;  // 2 oh
                if (twice < 0 || twice % 2 != 0 || twice / 2 >= p.oh) continue;
                const float *g = dy + mi * out_plane + twice / 2 * p.ow + j0;
                const __m512 d = _mm512_maskz_loadu_ps(k.cur, g);
                const __m512 d1 = _mm512_maskz_loadu_ps(k.prev, g - 1);
                even = _mm512_fmadd_ps(_mm512_set1_ps(wk[kh * kK + 2]), d1,
                                       _mm512_fmadd_ps(_mm512_set1_ps(wk[kh * kK]), d, even));
                odd = _mm512_fmadd_ps(_mm512_set1_ps(wk[kh * kK + 1]), d, odd);
            }
        }
        s2_store(k, dx + ih * p.iw, even, odd);
    }
}

// The strip with one output channel a dx plane: dy row r reaches dx row
// 2 r - pt through tap row 0, 2 r - pt + 1 through tap row 1 and 2 r - pt + 2
// through tap row 2. Each dy row is loaded once for those three dx rows;
// where the strip above loaded it for each after testing which tap rows
// apply, those tests and loads were most of its instructions (1 thread,
// batch 1, 5 alternated rounds, MobileNet's 64 channels 112x112 and 128
// of 56x56 1.25-1.30x, 2 threads 1.27-1.36x, batch 8 1.07x; with padding
// 0 on top, TensorFlow's "same", 1.28-1.42x). The products are added in the
// same order (tap row 0 first), so the bits are the same.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void backward_data_s2_strip_one(
    const PlaneShape &p, const float *dy, const float *w, float *dx, int64_t j0) {
    const S2Strip k = s2_strip(p, j0);
    __m512 t[kK * kK];
    for (int i = 0; i < kK * kK; ++i) t[i] = _mm512_set1_ps(w[i]);
    const __m512 zero = _mm512_setzero_ps();
    const float *g = dy + j0;  // dy row r's columns j, advanced while r < oh
    __m512 d_last = zero, d1_last = zero;  // dy row r - 1 (columns j and j - 1)
    // Row 2 r - pt: tap row 0 of dy row r (`upper`), then tap row 2 of dy
    // row r - 1 (`lower`); row 2 r - pt + 1: tap row 1 of dy row r (`middle`).
    struct Sums {
        __m512 even, odd;
    };
    auto upper = [&](__m512 d, __m512 d1) CONV_TARGET_AVX512 {
        return Sums{_mm512_fmadd_ps(t[2], d1, _mm512_fmadd_ps(t[0], d, zero)), _mm512_fmadd_ps(t[1], d, zero)};
    };
    auto lower = [&](Sums s) CONV_TARGET_AVX512 {
        return Sums{_mm512_fmadd_ps(t[8], d1_last, _mm512_fmadd_ps(t[6], d_last, s.even)),
                    _mm512_fmadd_ps(t[7], d_last, s.odd)};
    };
    auto middle = [&](__m512 d, __m512 d1) CONV_TARGET_AVX512 {
        return Sums{_mm512_fmadd_ps(t[5], d1, _mm512_fmadd_ps(t[3], d, zero)), _mm512_fmadd_ps(t[4], d, zero)};
    };
    auto store = [&](int64_t ih, Sums s) CONV_TARGET_AVX512 { s2_store(k, dx + ih * p.iw, s.even, s.odd); };
    // Every row and dy row checked: rows above dx's top are skipped, dy
    // rows past dy's end are none (zeros, and no 0 * w: an infinite weight
    // would make NaN), as is dy row -1.
    auto checked = [&](int64_t r, int64_t ih) CONV_TARGET_AVX512 {
        const bool in = r < p.oh;
        const __m512 d = in ? _mm512_maskz_loadu_ps(k.cur, g) : zero;
        const __m512 d1 = in ? _mm512_maskz_loadu_ps(k.prev, g - 1) : zero;
        if (in) g += p.ow;
        if (ih >= 0) {
            const Sums s = in ? upper(d, d1) : Sums{zero, zero};
            store(ih, r > 0 ? lower(s) : s);
        }
        if (ih + 1 >= 0 && ih + 1 < p.ih) store(ih + 1, in ? middle(d, d1) : Sums{zero, zero});
        d_last = d, d1_last = d1;
    };
    int64_t r = 0, ih = -p.pt;
    for (; ih < p.ih && (r == 0 || ih < 0); ++r, ih += 2) checked(r, ih);
    for (; r < p.oh && ih + 1 < p.ih; ++r, ih += 2, g += p.ow) {
        const __m512 d = _mm512_maskz_loadu_ps(k.cur, g), d1 = _mm512_maskz_loadu_ps(k.prev, g - 1);
        store(ih, lower(upper(d, d1)));
        store(ih + 1, middle(d, d1));
        d_last = d, d1_last = d1;
    }
    for (; ih < p.ih; ++r, ih += 2) checked(r, ih);
}

CONV_TARGET_AVX512 void backward_data_s2_plane(const PlaneShape &p, int64_t m, const float *dy,
                                               int64_t out_plane, const float *w, float *dx) {
    // dx columns [0, iw) are iw = 2 j - pl + r for j in [jlo, jhi).
    const int64_t jlo = floor_div(p.pl, 2), jhi = floor_div(p.iw - 1 + p.pl, 2) + 1;
    for (int64_t j0 = jlo; j0 < jhi; j0 += kVec) {
        if (m == 1)
            backward_data_s2_strip_one(p, dy, w, dx, j0);
        else
            backward_data_s2_strip(p, m, dy, out_plane, w, dx, j0);
    }
}

// Backward-filter's products of input row t of a block: acc[kh][kw] +=
// dy row r * the row's tap column kw, for the block's dy rows r whose
// window row kh = t - S r it is.
template <int S, int R>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void add_row_products(
    int t, const __m512 (&g)[R], const __m512 (&v)[kK], __m512 (&acc)[kK * kK]) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const int kh = t - S * r;
        if (kh < 0 || kh >= kK) continue;
        for (int kw = 0; kw < kK; ++kw) acc[kh * kK + kw] = _mm512_fmadd_ps(g[r], v[kw], acc[kh * kK + kw]);
    }
}

// dw[kh][kw] of one (image, channel) pair at stride 2 added into sums[9
// vectors]: the products of dy (out-shaped, `dy`) with the input under each
// tap, the input rows' columns split in registers as the forward pass does.
template <int R>
CONV_TARGET_AVX512 void filter_block_s2(const PlaneShape &p, const float *dy, const BlockSource &src,
                                        int64_t oh0, __m512 *sums) {
    constexpr int kInRows = (R - 1) * 2 + kK;
    static const int kLoadAt[4] = {0, kVec, 2, kVec + 2};
    const __m512i even = even_lanes();
    const __m512i odd = odd_lanes();
    __m512 acc[kK * kK];
    for (int i = 0; i < kK * kK; ++i) acc[i] = sums[i];
    const float *d = dy + oh0 * p.ow;
    for (int64_t ow0 = 0; ow0 < p.ow; ow0 += kVec) {
        // Lanes past the row end are masked too: 0 * inf would be NaN.
        const __mmask16 valid = lane_range(0, p.ow - ow0);
        const int64_t b0 = 2 * ow0 - p.pl;  // first input column read
        __mmask16 m[4];
        for (int i = 0; i < 4; ++i) m[i] = lane_range(-b0 - kLoadAt[i], p.iw - b0 - kLoadAt[i]);
        __m512 g[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) g[r] = _mm512_maskz_loadu_ps(valid, d + r * p.ow + ow0);
#pragma GCC unroll 16
        for (int t = 0; t < kInRows; ++t) {
            if (!src.base[t]) continue;
            const float *row = src.base[t] + b0;  // may start before the row: masked
            const __m512 x0 = _mm512_maskz_loadu_ps(m[0], row + kLoadAt[0]);
            const __m512 x1 = _mm512_maskz_loadu_ps(m[1], row + kLoadAt[1]);
            const __m512 x2 = _mm512_maskz_loadu_ps(m[2], row + kLoadAt[2]);
            const __m512 x3 = _mm512_maskz_loadu_ps(m[3], row + kLoadAt[3]);
            __m512 v0 = _mm512_maskz_permutex2var_ps(valid, x0, even, x1);
            __m512 v1 = _mm512_maskz_permutex2var_ps(valid, x0, odd, x1);
            __m512 v2 = _mm512_maskz_permutex2var_ps(valid, x2, even, x3);
            __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2));  // made once, see forward_vectors
            const __m512 v[kK] = {v0, v1, v2};
            add_row_products<2, R>(t, g, v, acc);
        }
    }
    for (int i = 0; i < kK * kK; ++i) sums[i] = acc[i];
}

// An input row's three tap columns (masked by m) from `row`, the row at the
// vector's first column.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void tap_columns(
    const BlockSource &src, const __mmask16 (&m)[kK], const float *row, __m512 (&v)[kK]) {
    __m512 v0 = _mm512_maskz_loadu_ps(m[0], row + src.off[0]);
    __m512 v1 = _mm512_maskz_loadu_ps(m[1], row + src.off[1]);
    __m512 v2 = _mm512_maskz_loadu_ps(m[2], row + src.off[2]);
    __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2));  // loaded once, see forward_vectors
    v[0] = v0, v[1] = v1, v[2] = v2;
}

// filter_plane_s1's input row ih near dy's top or bottom: each window row
// checked.
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void filter_edge_row(
    const PlaneShape &p, const BlockSource &src, const __mmask16 (&m)[kK], __mmask16 valid,
    const float *xc, const float *dc, int64_t ih, __m512 (&acc)[kK * kK]) {
    __m512 v[kK];
    tap_columns(src, m, xc + ih * p.iw, v);
    for (int kh = 0; kh < kK; ++kh) {
        const int64_t oh = ih + p.pt - kh;
        if (oh < 0 || oh >= p.oh) continue;
        const __m512 g = _mm512_maskz_loadu_ps(valid, dc + oh * p.ow);
        for (int kw = 0; kw < kK; ++kw) acc[kh * kK + kw] = _mm512_fmadd_ps(g, v[kw], acc[kh * kK + kw]);
    }
}

// filter_plane_s1's input rows [lo, hi), which meet all three window rows,
// of one vector column; Masked: some lane of some tap is masked.
template <bool Masked>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void filter_rows_rolling(
    const PlaneShape &p, const BlockSource &src, const __mmask16 (&m)[kK], __mmask16 valid,
    const float *xc, const float *dc, int64_t lo, int64_t hi, int64_t ahead, __m512 (&acc)[kK * kK]) {
    auto load = [&](__mmask16 k, const float *at) CONV_TARGET_AVX512 {
        return Masked ? _mm512_maskz_loadu_ps(k, at) : _mm512_loadu_ps(at);
    };
    // g1, g2: dy rows ih + pt - 1 and ih + pt - 2.
    __m512 g1 = load(valid, dc + (lo + p.pt - 1) * p.ow);
    __m512 g2 = load(valid, dc + (lo + p.pt - 2) * p.ow);
    const float *xr = xc + lo * p.iw, *dr = dc + (lo + p.pt) * p.ow;
    for (int64_t ih = lo; ih < hi; ++ih, xr += p.iw, dr += p.ow) {
        __m512 g0 = load(valid, dr);
        _mm_prefetch(reinterpret_cast<const char *>(xr + ahead * p.iw + kVec), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char *>(dr + ahead * p.ow + kVec), _MM_HINT_T0);
        __m512 v0 = load(m[0], xr + src.off[0]);
        __m512 v1 = load(m[1], xr + src.off[1]);
        __m512 v2 = load(m[2], xr + src.off[2]);
        __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2), "+v"(g0));  // loaded once, see forward_vectors
        const __m512 v[kK] = {v0, v1, v2};
        const __m512 g[kK] = {g0, g1, g2};
        for (int kh = 0; kh < kK; ++kh)
            for (int kw = 0; kw < kK; ++kw)
                acc[kh * kK + kw] = _mm512_fmadd_ps(g[kh], v[kw], acc[kh * kK + kw]);
        g2 = g1, g1 = g0;
    }
}

// Input rows a band sweeps, and how far ahead of a row its prefetches reach.
// Measured 1 thread, batch 8 (x and dy from memory) against the row blocks:
// bands of 18 rows (4 KiB of 56-wide rows) ran 0.72-0.87x on 56x56, of 8
// rows with prefetches one band ahead 0.95x, four bands ahead 1.02-1.10x;
// at batch 1 bands of 8 rows cost nothing against 18 (1.27x either way).
constexpr int64_t kBandRows = 8, kAheadRows = 32;

// Stride 1: a plane's backward-filter one vector column at a time, swept
// down the input rows. Input row ih meets dy rows ih + pt - kh for the
// three window rows kh; those three dy vectors roll in registers, so each
// input row's three tap columns are loaded once and feed 9 FMAs, with one
// dy load: 4 loads for 9 FMAs, where blocks of R dy rows load R + 2 input
// rows for R (5 for 9 at R = 6). Rows whose window reaches past dy's top or
// bottom are done apart, their missing products left out (not multiplied
// by 0: 0 * inf would be NaN).
CONV_TARGET_AVX512 void filter_plane_s1(const PlaneShape &p, const float *x, const float *dy, __m512 *sums) {
    BlockSource src;
    column_taps(p, &src);
    // Input rows meeting all three window rows: ih + pt - 2 >= 0, ih + pt < oh.
    const int64_t in_lo = std::min(std::max<int64_t>(0, 2 - p.pt), p.ih);
    const InnerRows inner{in_lo, std::max(in_lo, std::min(p.ih, p.oh - p.pt))};
    // Bands of kBandRows input rows, every vector column of a band before
    // the next: swept over the whole plane column by column, the rows came
    // from memory at a stride and ran 0.7x at batch 8 (56x56).
    __m512 acc[kK * kK];
    for (int i = 0; i < kK * kK; ++i) acc[i] = sums[i];
    for (int64_t b0 = 0; b0 < p.ih; b0 += kBandRows) {
        const auto [b1, lo, hi] = band_at(b0, kBandRows, p.ih, inner);
        for (int64_t ow0 = 0; ow0 < p.ow; ow0 += kVec) {
            // Lanes past the row end are masked too: 0 * inf would be NaN.
            const __mmask16 valid = lane_range(0, p.ow - ow0);
            __mmask16 m[kK];
            for (int kw = 0; kw < kK; ++kw) m[kw] = valid & lane_range(src.lo[kw] - ow0, src.hi[kw] - ow0);
            const float *xc = x + ow0, *dc = dy + ow0;
            for (int64_t ih = b0; ih < lo; ++ih) filter_edge_row(p, src, m, valid, xc, dc, ih, acc);
            if (lo < hi) {
                if ((m[0] & m[1] & m[2]) == (__mmask16)0xFFFF)
                    filter_rows_rolling<false>(p, src, m, valid, xc, dc, lo, hi, kAheadRows, acc);
                else
                    filter_rows_rolling<true>(p, src, m, valid, xc, dc, lo, hi, kAheadRows, acc);
            }
            for (int64_t ih = hi; ih < b1; ++ih) filter_edge_row(p, src, m, valid, xc, dc, ih, acc);
        }
    }
    for (int i = 0; i < kK * kK; ++i) sums[i] = acc[i];
}

// Window row kh's three products of dy row (d0; d1 a column on) with an
// input row's even and odd columns, merge-masked to the lanes that count
// (a padded tap adds nothing, whatever the other operand holds).
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_products(
    const S2Column &k, int kh, __m512 d0, __m512 d1, __m512 e, __m512 o, __m512 (&acc)[kK * kK]) {
    __m512 *a = acc + kh * kK;
    a[0] = _mm512_mask3_fmadd_ps(o, d1, a[0], k.tap[0]);
    a[1] = _mm512_mask3_fmadd_ps(e, d0, a[1], k.tap[1]);
    a[2] = _mm512_mask3_fmadd_ps(o, d0, a[2], k.tap[2]);
}

// dy row r of a vector column: input rows 2 r - pt + kh. (pe, po) holds row
// 2 r - pt on entry (zero or stale where outside the plane) and row
// 2 r - pt + 2 on return, the next dy row's window row 0. Checked: rows
// outside the plane neither read nor used. Whole: as s2_split's.
template <bool Checked, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2_dy_row(
    const PlaneShape &p, const S2Column &k, const float *x, const float *dy, int64_t r, int64_t ahead,
    __m512 &pe, __m512 &po, __m512 (&acc)[kK * kK]) {
    const float *d = dy + r * p.ow + k.c / 2;
    __m512 d0 = _mm512_maskz_loadu_ps(k.valid, d), d1 = _mm512_maskz_loadu_ps(k.tap[0], d + 1);
    __asm__("" : "+v"(d0), "+v"(d1));  // loaded once for three rows
    const int64_t top = 2 * r - p.pt;
    const float *mid = x + (top + 1) * p.iw;
    _mm_prefetch(reinterpret_cast<const char *>(d + ahead * p.ow + kVec), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(mid + 2 * ahead * p.iw + k.c + 2 * kVec), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(mid + (2 * ahead + 1) * p.iw + k.c + 2 * kVec), _MM_HINT_T0);
    if (!Checked || (top >= 0 && top < p.ih)) s2_products(k, 0, d0, d1, pe, po, acc);
    if (!Checked || (top + 1 >= 0 && top + 1 < p.ih)) {
        __m512 e, o;
        s2_split<Whole>(k, mid, e, o);
        s2_products(k, 1, d0, d1, e, o, acc);
    }
    if (!Checked || (top + 2 >= 0 && top + 2 < p.ih)) {
        s2_split<Whole>(k, mid + p.iw, pe, po);
        s2_products(k, 2, d0, d1, pe, po, acc);
    }
}

// Stride 2 with padding 1 on the left: each vector column swept down bands
// of dy rows, an input row split once and used by both dy rows whose
// window covers it (the blocks of 4 dy rows split 9 input rows for 4).
// Whole: s2_split's (1 thread, batch 1, MobileNet's 64 channels 112x112
// 1.05x).
constexpr int64_t kBandRowsS2 = 8;
template <bool Whole>
CONV_TARGET_AVX512 void filter_plane_s2_pad1(const PlaneShape &p, const float *x, const float *dy,
                                             __m512 *sums) {
    const InnerRows inner = inner_output_rows(p);
    __m512 acc[kK * kK];
    for (int i = 0; i < kK * kK; ++i) acc[i] = sums[i];
    for (int64_t b0 = 0; b0 < p.oh; b0 += kBandRowsS2) {
        const auto [b1, lo, hi] = band_at(b0, kBandRowsS2, p.oh, inner);
        for (int64_t ow0 = 0; ow0 < p.ow; ow0 += kVec) {
            const S2Column k = s2_column(p, ow0);
            __m512 pe = _mm512_setzero_ps(), po = pe;
            const int64_t top = 2 * b0 - p.pt;
            if (top >= 0 && top < p.ih) s2_split<Whole>(k, x + top * p.iw, pe, po);
            int64_t r = b0;
            for (; r < lo; ++r) s2_dy_row<true, Whole>(p, k, x, dy, r, kAheadRows / 2, pe, po, acc);
            for (; r < hi; ++r) s2_dy_row<false, Whole>(p, k, x, dy, r, kAheadRows / 2, pe, po, acc);
            for (; r < b1; ++r) s2_dy_row<true, Whole>(p, k, x, dy, r, kAheadRows / 2, pe, po, acc);
        }
    }
    for (int i = 0; i < kK * kK; ++i) sums[i] = acc[i];
}

// One plane's products added into sums; pad1_split: stride 2's padding-1
// sweep (filter_plane_s2_pad1) where it applies; whole: its rows may be
// read as whole vectors (whole_rows_inside).
CONV_TARGET_AVX512 void filter_plane(const PlaneShape &p, bool pad1_split, const float *x,
                                     const float *dy, __m512 *sums, bool whole) {
    if (p.s == 1) return filter_plane_s1(p, x, dy, sums);
    if (pad1_split && p.pl == 1)
        return whole ? filter_plane_s2_pad1<true>(p, x, dy, sums) : filter_plane_s2_pad1<false>(p, x, dy, sums);
    BlockSource src;
    for (int64_t oh0 = 0; oh0 < p.oh; oh0 += kFilterRowsS2) {
        const int rows = (int)std::min<int64_t>(kFilterRowsS2, p.oh - oh0);
        block_source(p, x, oh0, rows, &src);
        with_rows<kFilterRowsS2>(rows, [&](auto r) CONV_TARGET_AVX512 {
            filter_block_s2<decltype(r)::value>(p, dy, src, oh0, sums);
        });
    }
}

// dw of output channels [k0, k1): over the batch, then reduced into
// dw[k * 9 ...]. Image by image through the channels, each channel's sums
// kept between its planes: a channel's planes of a batch lie C planes apart
// (3 MiB for 64 channels of 112x112), and read one channel at a time from
// memory they ran 1.2-1.5x slower than the same planes read in order
// (batch 8); each channel's planes are still added in image order, so the
// bits do not change.
constexpr int kFilterGroup = 16;  // channels an item sweeps together
CONV_TARGET_AVX512 void filter_channels(const PlaneShape &p, bool pad1_split, const ConvGeometry &g,
                                        int64_t k0, int64_t k1, const float *x, const float *dy,
                                        float *dw) {
    const int64_t m = g.k / g.c, in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    __m512 sums[kFilterGroup][kK * kK];
    for (int64_t k = k0; k < k1; ++k)
        for (auto &s : sums[k - k0]) s = _mm512_setzero_ps();
    const float *x_end = x + g.n * g.c * in_plane;
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t k = k0; k < k1; ++k) {
            const float *plane = x + (n * g.c + k / m) * in_plane;
            filter_plane(p, pad1_split, plane, dy + (n * g.k + k) * out_plane, sums[k - k0],
                         whole_rows_inside(plane, in_plane, x_end));
        }
    store_lane_sums(reinterpret_cast<const float *>(sums), (k1 - k0) * kK * kK, dw + k0 * kK * kK);
}

#endif  // CONV_HAVE_AVX512_KERNELS

// Planes per parallel item: small planes are grouped (~16K floats of
// traffic an item) so handing out items costs little, while leaving at
// least 4 items per thread to balance.
int64_t planes_per_item(int64_t planes, int64_t floats_per_plane, int threads) {
    int64_t by_size = ceil_div(16384, std::max<int64_t>(floats_per_plane, 1));
    return std::max<int64_t>(1, std::min(by_size, planes / (4 * (int64_t)threads)));
}

// Runs fn(begin, end) over planes [0, planes) in groups of planes_per_item.
template <class F>
void for_plane_ranges(ThreadPool &pool, int threads, int64_t planes, int64_t floats_per_plane,
                      F &&fn) {
    const int64_t per = planes_per_item(planes, floats_per_plane, threads);
    pool.parallel_for(
        ceil_div(planes, per),
        [&](int64_t item, int) { fn(item * per, std::min(planes, (item + 1) * per)); }, threads);
}

// Runs fn(plane) for planes [0, planes).
template <class F>
void for_planes(ThreadPool &pool, int threads, int64_t planes, int64_t floats_per_plane, F &&fn) {
    for_plane_ranges(pool, threads, planes, floats_per_plane, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) fn(i, 0);
    });
}

FlatPlan flat_plan(const PlaneShape &p) {
    FlatPlan f;
    const int64_t size = p.oh * p.ow;
    if (p.s != 1 || p.ih != p.oh || p.iw != p.ow || size > FlatPlan::kMaxVectors * kVec) return f;
    f.vectors = (int)ceil_div(size, kVec);
    // Per window column, the output columns whose tap lies in the input
    // row: a range of each output row's lanes (a position at a time this
    // was 12% of a 14x14 forward, and more of an 8x8 one). A tap's lanes are
    // its column's in the output rows whose tap row lies in the input: per
    // tap a range of rows (each tap's rows walked, planning took a sixth of
    // a 1->16 8x8 backward-filter at batch 1).
    uint16_t columns[kK][FlatPlan::kMaxVectors] = {};
    for (int kw = 0; kw < kK; ++kw) {
        const int64_t dw = kw - p.pl, lo = std::max<int64_t>(0, -dw), hi = std::min(p.ow, p.iw - dw);
        for (int64_t oh = 0; oh < p.oh; ++oh)
            for (int64_t q = oh * p.ow + lo, end = oh * p.ow + hi; q < end;) {
                const int64_t stop = std::min(end, (q / kVec + 1) * kVec);  // the range within q's vector
                columns[kw][q / kVec] |= (uint16_t)(first_lanes(stop - q) << (q % kVec));
                q = stop;
            }
    }
    for (int t = 0; t < kK * kK; ++t) {
        const int64_t dh = t / kK - p.pt, dw = t % kK - p.pl;
        f.off[t] = dh * p.iw + dw;
        const int64_t first = std::max<int64_t>(0, -dh) * p.ow, end = std::min(p.oh, p.ih - dh) * p.ow;
        for (int v = 0; v < f.vectors; ++v)
            f.load[v][t] = columns[t % kK][v] & lane_range(first - v * kVec, end - v * kVec);
    }
    for (int v = 0; v < f.vectors; ++v)
        f.store[v] = (uint16_t)(size - v * kVec >= kVec ? 0xffff : (1u << (size - v * kVec)) - 1);
    return f;
}

// The flat plan where the narrow kernels do not take the planes (building
// it walks every position for every tap: 12% of a 14x14 forward that then
// ran narrow).
FlatPlan flat_plan_unless(const NarrowPlan &narrow, const PlaneShape &p) {
    return narrow.ok ? FlatPlan{} : flat_plan(p);
}

#if CONV_HAVE_AVX512_KERNELS
// Where a channel multiplier's forward and backward-filter run flat
// (multi_flat, multi_filter): stride 1, a multiplier of kMulti or more,
// the tap vectors from the input (a flat plane) or from its copies (an
// input whose three copies fit RowCopies). Planes of 16-column rows stay
// with the narrow kernel, whose rows fill the vectors too (1->32 16x16 ran
// 0.95x flat).
struct MultiFlat {
    enum Taps { kNone, kFlat, kCopies } taps = kNone;
    FlatPlan flat;
};

MultiFlat multi_flat_plan(const PlaneShape &p, int64_t m) {
    MultiFlat f;
    if (m < kMulti || p.s != 1 || (narrow_plan(p).ok && p.ow == kVec)) return f;
    f.flat = flat_plan(p);
    if (f.flat.vectors)
        f.taps = MultiFlat::kFlat;
    else if (kK * row_copy_floats(p) <= RowCopies::kMaxFloats)
        f.taps = MultiFlat::kCopies;
    return f;
}

// dw of the (source channel, block of kFilterMulti channels) pairs [first,
// end), kChunkBlocks pairs at a time (their sums on the stack): on flat
// planes a pair at a time over the images in order, from copies image by
// image through the pairs, a plane's copies made once an image. Each dw element
// is the same sum in the same order whichever thread takes its pair, so
// threads split the pairs into ranges.
CONV_TARGET_AVX512 void multi_filter_pairs(const PlaneShape &p, const MultiFlat &multi, const ConvGeometry &g,
                                           int64_t first, int64_t end, const float *x, const float *dy, float *dw) {
    constexpr int64_t kChunkBlocks = 8;
    const int64_t C = g.c, K = g.k, M = g.k / g.c, blocks = ceil_div(M, (int64_t)kFilterMulti);
    const int64_t in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    alignas(64) float copy[RowCopies::kMaxFloats];
    const RowCopies rows{copy, p.ow, out_plane, row_copy_floats(p)};
    __m512 sums[kChunkBlocks][kFilterMulti * kK * kK];
    auto channels_of = [&](int64_t b) {  // the pair's first output channel and its count
        const int64_t c = b / blocks, k0 = c * M + b % blocks * kFilterMulti;
        return std::pair<int64_t, int>(k0, (int)std::min<int64_t>(kFilterMulti, (c + 1) * M - k0));
    };
    for (int64_t b0 = first; b0 < end; b0 += kChunkBlocks) {
        const int64_t b1 = std::min(end, b0 + kChunkBlocks);
        if (multi.taps == MultiFlat::kFlat) {
            // The pair's sums in registers over the whole batch: sums kept
            // in memory between images moved 54 vectors for every 108 FMAs
            // of an 8x8 plane (its 4 vectors).
            for (int64_t b = b0; b < b1; ++b) {
                const int64_t c = b / blocks;
                const auto [k0, count] = channels_of(b);
                const auto taps_of = [&](int64_t n) { return FlatTaps{multi.flat, x + (n * C + c) * in_plane}; };
                const float *d = dy + k0 * out_plane;
                with_rows<kFilterMulti>(count, [&](auto channels) CONV_TARGET_AVX512 {
                    multi_filter<decltype(channels)::value>(taps_of, g.n, d, K * out_plane, out_plane, true,
                                                            sums[b - b0]);
                });
            }
        } else {
            for (int64_t n = 0; n < g.n; ++n) {
                int64_t copied = -1;  // the source channel in `copy`
                for (int64_t b = b0; b < b1; ++b) {
                    const int64_t c = b / blocks;
                    const auto [k0, count] = channels_of(b);
                    if (copied != c) multi_copies(p, x + (n * C + c) * in_plane, copy);
                    copied = c;
                    const float *d = dy + (n * K + k0) * out_plane;
                    with_rows<kFilterMulti>(count, [&](auto channels) CONV_TARGET_AVX512 {
                        multi_filter<decltype(channels)::value>([&](int64_t) { return rows; }, 1, d, 0, out_plane,
                                                                n == 0, sums[b - b0]);
                    });
                }
            }
        }
        for (int64_t b = b0; b < b1; ++b) {
            const auto [k0, count] = channels_of(b);
            store_lane_sums(reinterpret_cast<const float *>(sums[b - b0]), count * kK * kK, dw + k0 * kK * kK);
        }
    }
}
#endif

PlaneShape forward_shape(const ConvGeometry &g) {
    return {g.in[1], g.in[2], g.out[1], g.out[2], g.pad_begin[1], g.pad_begin[2],
            (int)g.stride[1]};
}

// Backward-data at stride 1 as a forward convolution of dy with the flipped
// window: dx[i][j] = sum w[kh][kw] dy[i + pt - kh][j + pl - kw].
PlaneShape backward_data_shape(const ConvGeometry &g) {
    return {g.out[1], g.out[2], g.in[1], g.in[2], kK - 1 - g.pad_begin[1],
            kK - 1 - g.pad_begin[2], 1};
}

}  // namespace

bool dw_nchw_covers(const ConvGeometry &g, conv_op_t op) {
    if (g.layout != CONV_LAYOUT_CHANNELS_FIRST) return false;
    if (!g.is_planar() || g.in_size() == 0) return false;
    if (g.kernel[1] != kK || g.kernel[2] != kK) return false;
    if (g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    if (g.stride[1] != g.stride[2] || g.stride[1] < 1 || g.stride[1] > 2) return false;
    return true;
}

size_t dw_nchw_workspace_bytes(const ConvGeometry &, conv_op_t, int) { return 0; }

namespace {
// Whether a pass writes its output (`floats` of it from `out`, rows of
// `row`) with non-temporal stores: streams_whole_lines (past_cache.h), as
// gemm_1x1's channels-first outputs. 1 thread, strict, MobileNet-v1 at
// batch 8 in the suite, 3 alternated runs: dw1 (32 channels of 112x112)
// forward 1.86-2.17x, backward-data 1.56-1.92x (0.64 -> 1.31 and 0.82 ->
// 1.43 of oneDNN). Those are repeated calls on the same tensors: the input
// then stays in L3 where the output no longer pushes it out; in a network
// the next layer reads the streamed output from memory.
bool streams_output(int64_t floats, const float *out, int64_t row) {
    return streams_whole_lines((double)floats, out, row);
}

#if CONV_HAVE_AVX512_KERNELS
// A pass's plane tables (its plane: forward_shape, or backward_data_shape at
// stride 1), made once per plan (dw_nchw_plan) or, without one, per call:
// they walk the plane's rows for each tap, 0.4 us of a 1->16 8x8 forward's
// 0.9 at batch 1 when made per call.
struct PlaneTables final : RunPlan {
    MultiFlat multi;    // forward and backward-filter with a channel multiplier
    NarrowPlan narrow;  // forward (unless multi) and stride-1 backward-data
    FlatPlan flat;      // the same (flat_plan_unless)
};

PlaneTables plane_tables(const ConvGeometry &g, conv_op_t op) {
    PlaneTables t;
    if (op == CONV_OP_BACKWARD_DATA && g.stride[1] == 2) return t;  // backward_data_s2_plane: none
    const PlaneShape p = op == CONV_OP_BACKWARD_DATA ? backward_data_shape(g) : forward_shape(g);
    if (op != CONV_OP_BACKWARD_DATA) t.multi = multi_flat_plan(p, g.k / g.c);
    if (op == CONV_OP_BACKWARD_FILTER || t.multi.taps != MultiFlat::kNone) return t;
    t.narrow = narrow_plan(p);
    t.flat = flat_plan_unless(t.narrow, p);
    return t;
}
#endif
}  // namespace

std::shared_ptr<const RunPlan> dw_nchw_plan(const ConvGeometry &g, conv_op_t op) {
#if CONV_HAVE_AVX512_KERNELS
    return std::make_shared<const PlaneTables>(plane_tables(g, op));
#else
    (void)g, (void)op;
    return nullptr;
#endif
}

void dw_nchw_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    PlaneTables own;  // without a plan's tables, this call's
    const PlaneTables *tables = dynamic_cast<const PlaneTables *>(a.planned);
    if (!tables) own = plane_tables(g, a.op), tables = &own;
    const int64_t N = g.n, C = g.c, K = g.k, M = g.k / g.c;
    float *x = static_cast<float *>(a.x), *w = static_cast<float *>(a.w);
    float *y = static_cast<float *>(a.y), *bias = static_cast<float *>(a.bias);
    const int64_t in_plane = g.in_size(), out_plane = g.out_size();
    switch (a.op) {
    case CONV_OP_FORWARD: {
        const PlaneShape p = forward_shape(g);
        const bool relu = g.activation == CONV_ACTIVATION_RELU;
        const bool stream = streams_output(N * K * out_plane, y, g.out[2]);
        const bool from_memory = (N * C * in_plane + N * K * out_plane) * 4 > kCachedPassBytes;
        const float *x_end = x + N * C * in_plane;
        auto job = [&](int64_t item) {
            const int64_t n = item / K, k = item % K;
            const float *in = x + (n * C + k / M) * in_plane;
            return PlaneJob{in,        y + item * out_plane, w + k * kK * kK, bias ? bias[k] : 0.0f, false, relu,
                            stream, from_memory, whole_rows_inside(in, in_plane, x_end)};
        };
        const MultiFlat &multi = tables->multi;
        if (multi.taps != MultiFlat::kNone) {
            const bool copies = multi.taps == MultiFlat::kCopies;
            const FlatPlan &flat = multi.flat;
            // Items of up to kMultiFlat output channels of one input
            // plane; a range's items of one plane share its copies.
            const int64_t blocks = ceil_div(M, (int64_t)kMultiFlat);
            for_plane_ranges(
                pool, threads, N * C * blocks, in_plane + kMultiFlat * out_plane, [&](int64_t b, int64_t e) {
                    alignas(64) float copy[RowCopies::kMaxFloats];
                    const RowCopies rows{copy, p.ow, p.oh * p.ow, row_copy_floats(p)};
                    for (int64_t i = b; i < e; ++i) {
                        const int64_t n = i / (C * blocks), c = i / blocks % C;
                        const float *in = x + (n * C + c) * in_plane;
                        if (copies && (i == b || i % blocks == 0)) multi_copies(p, in, copy);
                        const int64_t k0 = c * M + i % blocks * kMultiFlat;
                        const int count = (int)std::min<int64_t>(kMultiFlat, (c + 1) * M - k0);
                        float *out = y + (n * K + k0) * out_plane;
                        with_rows<kMultiFlat>(count, [&](auto channels) CONV_TARGET_AVX512 {
                            constexpr int G = decltype(channels)::value;
                            if (copies)
                                multi_flat<G>(rows, w + k0 * kK * kK, bias ? bias + k0 : nullptr, relu, out,
                                              out_plane);
                            else
                                multi_flat<G>(FlatTaps{flat, in}, w + k0 * kK * kK, bias ? bias + k0 : nullptr,
                                              relu, out, out_plane);
                        });
                    }
                });
            return;
        }
        const NarrowPlan &narrow = tables->narrow;
        const FlatPlan &flat = tables->flat;
        if (p.s == 1 && M >= kMulti && !narrow.ok && !flat.vectors) {
            // Items of kMulti output channels of one input plane; a
            // multiplier's last few channels one plane at a time.
            const int64_t blocks = ceil_div(M, kMulti);
            for_plane_ranges(pool, threads, N * C * blocks, in_plane + kMulti * out_plane,
                             [&](int64_t b, int64_t e) {
                                 for (int64_t i = b; i < e; ++i) {
                                     const int64_t n = i / (C * blocks), c = i / blocks % C;
                                     const int64_t k0 = c * M + i % blocks * kMulti;
                                     if (k0 + kMulti > (c + 1) * M) {
                                         for (int64_t k = k0; k < (c + 1) * M; ++k) forward_plane(p, job(n * K + k));
                                         continue;
                                     }
                                     multi_plane(p, x + (n * C + c) * in_plane, w + k0 * kK * kK,
                                                 bias ? bias + k0 : nullptr, relu, y + (n * K + k0) * out_plane,
                                                 out_plane);
                                 }
                             });
            return;
        }
        for_plane_ranges(pool, threads, N * K, in_plane + out_plane, [&](int64_t b, int64_t e) {
            if (narrow.ok) {
                narrow_range(p, narrow, b, e, job);
                return;
            }
            if (!flat.vectors) {
                for (int64_t i = b; i < e; ++i) forward_plane(p, job(i));
                if (stream) _mm_sfence();  // the streamed stores before the range counts as done
                return;
            }
            int64_t i = b;
            for (; i + 2 <= e; i += 2) {
                const PlaneJob two[2] = {job(i), job(i + 1)};
                flat_planes<2>(flat, two);
            }
            if (i < e) {
                const PlaneJob one = job(i);
                flat_planes<1>(flat, &one);
            }
        });
        return;
    }
    case CONV_OP_BACKWARD_DATA: {
        if (g.stride[1] == 2) {
            const PlaneShape p = forward_shape(g);
            for_planes(pool, threads, N * C, in_plane + M * out_plane, [&](int64_t item, int) {
                const int64_t n = item / C, c = item % C;
                backward_data_s2_plane(p, M, y + (n * K + c * M) * out_plane, out_plane,
                                       w + c * M * kK * kK, x + item * in_plane);
            });
            return;
        }
        const PlaneShape p = backward_data_shape(g);
        const NarrowPlan &narrow = tables->narrow;
        const FlatPlan &flat = tables->flat;
        if (narrow.ok && M == 1) {  // one dy plane per dx plane: narrow_range pairs them
            NarrowPlan flipped = narrow;
            flipped.flip = true;
            const auto job = [&](int64_t item) {
                return PlaneJob{y + item * out_plane, x + item * in_plane, w + item % C * kK * kK,
                                0.0f, false, false};
            };
            for_plane_ranges(pool, threads, N * C, in_plane + out_plane,
                             [&](int64_t b, int64_t e) { narrow_range(p, flipped, b, e, job); });
            return;
        }
        const bool stream = M == 1 && streams_output(N * C * in_plane, x, g.in[2]);
        const bool from_memory = (N * C * in_plane + N * K * out_plane) * 4 > kCachedPassBytes;
        for_planes(
            pool, threads, N * C, in_plane + M * out_plane, [&](int64_t item, int) {
                const int64_t n = item / C, c = item % C;
                for (int64_t m = 0; m < M; ++m) {
                    const int64_t k = c * M + m;
                    float flipped[kK * kK];
                    for (int i = 0; i < kK * kK; ++i) flipped[i] = w[k * kK * kK + kK * kK - 1 - i];
                    const PlaneJob job{y + (n * K + k) * out_plane, x + item * in_plane, flipped,
                                       0.0f, m > 0, false, stream, from_memory};
                    if (narrow.ok)
                        narrow_range(p, narrow, 0, 1, [&](int64_t) { return job; });
                    else if (flat.vectors)
                        flat_planes<1>(flat, &job);
                    else
                        forward_plane(p, job);
                }
                if (stream) _mm_sfence();
            });
        return;
    }
    case CONV_OP_BACKWARD_FILTER: {
        const PlaneShape p = forward_shape(g);
        const MultiFlat &multi = tables->multi;
        if (multi.taps != MultiFlat::kNone) {
            const int64_t pairs = C * ceil_div(M, (int64_t)kFilterMulti);
            const int64_t parts = std::min<int64_t>(threads, pairs);
            pool.parallel_for(
                parts,
                [&](int64_t part, int) {
                    multi_filter_pairs(p, multi, g, pairs * part / parts, pairs * (part + 1) / parts, x, y, w);
                },
                threads);
            if (bias) channel_sums({g.layout, g.n, g.k, out_plane}, a.dtype, y, bias, pool, threads);
            return;
        }
        // Stride 2's padding-1 sweep measured 1.15x (its block form before
        // it 1.30-1.35x) the general block on planes read from L3
        // (MobileNet's 64 channels of 112x112 at batch 1: 4 MiB of x and
        // dy), but 0.87x (0.69-0.80x) on planes read from memory (the same
        // at batch 8, 32 MiB), prefetching or not: left there to the
        // general block (why, not measured: its loads reach a line further
        // along each row).
        const bool pad1_split = (N * C * in_plane + N * K * out_plane) * 4 <= kCachedPassBytes;
        // Items of up to kFilterGroup channels, at least 4 a thread.
        const int64_t per = std::clamp<int64_t>(K / (4 * (int64_t)threads), 1, kFilterGroup);
        pool.parallel_for(
            ceil_div(K, per),
            [&](int64_t item, int) {
                filter_channels(p, pad1_split, g, item * per, std::min(K, (item + 1) * per), x, y, w);
            },
            threads);
        if (bias) channel_sums({g.layout, g.n, g.k, out_plane}, a.dtype, y, bias, pool, threads);
        return;
    }
    default: return;
    }
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

bool dw_nchw_multi_flat(const ConvGeometry &g, conv_op_t op) {
#if CONV_HAVE_AVX512_KERNELS
    if (op == CONV_OP_BACKWARD_DATA || !dw_nchw_covers(g, op) || g.c < 1 || g.k % g.c != 0) return false;
    return multi_flat_plan(forward_shape(g), g.k / g.c).taps != MultiFlat::kNone;
#else
    (void)g, (void)op;
    return false;
#endif
}

}  // namespace conv::cpu
