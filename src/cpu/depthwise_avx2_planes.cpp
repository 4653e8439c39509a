// Channels-first (NCHW) depthwise 3x3, multiplier 1, fp32, on CPUs with
// AVX2 and FMA but no AVX-512: forward, backward-data at stride 1 and
// backward-filter, on the planes where it measured ahead
// (dw_planes_covers). A plane at a time, 8 output columns of a row per
// ymm, x, y and dy read and written where they lie.
//
// depthwise_avx2.cpp's 8-channel blocks transpose every 8 x 8 positions of
// a plane into a padded tile and the results back; on 7x7 and 14x14 planes
// and at stride 2 those transposes, the tiles' zeroing and their loop steps
// were most of the time (0.27-0.59 of oneDNN on MobileNet's layers, Zen 3),
// while oneDNN runs on its own blocked layout and transposes nothing. Here
// a plane is swept one column vector at a time, top to bottom, so that an
// input row's taps are loaded once and feed every output row whose window
// covers it; the sums of those rows stay in registers as they roll down.
//
// - Forward, stride 1: input row i's three taps (three unaligned loads) go
//   into the sums of output rows i + pt, i + pt - 1 and i + pt - 2: 9 FMAs
//   for 3 loads. Each window row's three products are summed apart and
//   added to the row's sum, so the sum carried from step to step takes one
//   add (12 cycles a step as three dependent FMAs). Planes wider than one
//   vector go two column vectors at a time, the rows that need no bound
//   or mask in a loop of their own.
// - Forward, stride 2: the 16 columns one on from a tap's start are loaded
//   and split by in-lane shuffles into the even and odd columns (the taps
//   kw = 1 and 2); kw = 0 is the previous output column's kw = 2 (a
//   permute, the first column broadcast). The output lanes come out in the order
//   0 1 4 5 2 3 6 7 and one permute puts them back before the store. Input
//   row 2r - pt + 2 feeds output rows r (tap row 2) and r + 1 (tap row 0).
// - Backward-data at stride 1: the forward pass of dy with the window
//   rotated (padding 2 - pad).
// - Backward-filter: dw(tap) = sum of dy(p) * x(sp + tap), in 9 vectors
//   over a channel's whole batch (one work item a channel, so the order of
//   the sums does not depend on the thread count), reduced across lanes
//   once. Stride 1: input row i's three taps meet dy's rows i + pt - kh.
//   Stride 2: dy is permuted into the split lanes' order; with leading
//   padding kw = 0's products are kw = 2's taps times dy one column on
//   (filter_column_s2), so dy is read one float further.
//
// Column vectors at a row's ends clear, with an AND (an infinity in the row
// beyond becomes 0, not NaN), the lanes whose tap is padding; stride-1
// backward-filter also clears the lanes past the row, in x and in dy, and
// stride-2 backward-filter instead sums an edge vector's lanes unmasked and
// clears those that are no (output, tap) pair once, at the end. A forward
// vector's lanes past the row are stored into the next row's first
// columns, which are written after them (a row's vectors go last to first,
// a column's rows top to bottom); a plane's last row stores only its own
// (and on planes under 8 wide the rows before it what the plane holds).
// Loads reach up to 2 floats before a plane's rows and 17 past: planes near
// a tensor's ends are first copied, with zeros around, into the thread's
// scratch. Every output is a plain sum of products (a dot product's bound).
#include "cpu/depthwise_avx2_planes.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/epilogue.h"
#include "cpu/plane_bounce.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;  // window size
constexpr int kTaps = kK * kK;
constexpr int kVec = 8;        // floats per ymm
constexpr int kMaxEdges = 4;   // column vectors of a row that need masks
constexpr int kMaxPad = 2;     // leading padding the loads' reach allows
// Stride 2: register lane L holds its vector's output column kSplitOrder[L]
// (what vshufps leaves; _MM_SHUFFLE(3, 1, 2, 0) on 64-bit pairs undoes it).
constexpr int kSplitOrder[kVec] = {0, 1, 4, 5, 2, 3, 6, 7};

// A column vector's lane masks (PlanePlan::mask).
using Masks = const int32_t (*)[kVec];

// How a pass sweeps its planes: input plane ih x iw (x; dy for backward-
// data), output plane oh x ow, the window's leading padding; which column
// vectors of an output row are interior (no mask) and the masks of the
// others.
struct PlanePlan {
    int64_t ih, iw, oh, ow, pt, pl;
    int s;
    bool filter;     // backward-filter (stride 2): lanes past the row cleared too
    // Backward-filter at stride 2 with leading padding: tap kw = 0 of output
    // column c is taken as kw = 2 of column c - 1 against dy one column on
    // (filter_column_s2), so its lanes are those of column c + 1.
    bool shifted;
    // Forward at stride 2: column vector 0 is an edge only through its
    // first lane's tap kw = 0 (leading padding 1), which then is set to 0
    // instead of masking every tap (row_taps' ZeroFirst).
    bool zero_first;
    int64_t vecs;    // column vectors per output row
    bool ahead;      // ask for the next plane while sweeping this one (kFromCache)
    int64_t ib, ie;  // interior vectors: [ib, ie)
    // Floats the loads read before a plane's first row and past its last
    // one; at backward-filter, past dy's plane.
    int64_t before, after, dy_after;
    // Per edge vector: the lanes each tap column keeps, then the lanes that
    // are outputs (all bits set or clear, for vandps).
    alignas(32) int32_t mask[kMaxEdges][kK + 1][kVec];
    alignas(32) int32_t all[kK + 1][kVec];  // an interior vector's, for a pair with an edge one

    int64_t lane_col(int64_t v, int lane) const { return v * kVec + (s == 2 ? kSplitOrder[lane] : lane); }
    // The first float a column vector's loads read, relative to its row,
    // and one past the last.
    int64_t first_read(int64_t v) const { return v * kVec * s - pl; }
    int64_t end_read(int64_t v) const { return first_read(v) + (s == 2 ? 2 * kVec + 1 : kVec + kK - 1); }
    bool interior(int64_t v) const { return v >= ib && v < ie; }
    Masks masks(int64_t v) const { return mask[v < ib ? v : ib + (v - ie)]; }
    Masks masks_or_all(int64_t v) const { return interior(v) ? all : masks(v); }
    int64_t edges() const { return ib + (vecs - ie); }
    // Floats from column vector v of output row r to the plane's end: a
    // store of 8 overflows the plane from where this is under 8 (the last
    // vector's last row, or rows from the end on planes under 8 wide).
    int64_t room(int64_t r, int64_t v) const { return (oh - r) * ow - v * kVec; }
    // Rows [0, full(v)) of column vector v have room for 8 (all of them but
    // the last vector's last, or last few).
    int64_t full_last;
    int64_t full(int64_t v) const { return v == vecs - 1 ? full_last : oh; }
};

// Lane `lane` of vector v: whether tap column kw keeps it (kw < kK), or
// whether it is an output (kw == kK). Shifted, kw = 0's lane holds the
// products of the output column one on.
bool keeps(const PlanePlan &p, int64_t v, int lane, int kw) {
    const int64_t col = p.lane_col(v, lane) + (p.shifted && kw == 0 ? 1 : 0);
    const bool out = col < p.ow;
    if (kw == kK) return !p.filter || out;
    const int64_t in = col * p.s + kw - p.pl;
    if (!out) return !p.filter;  // forward: never masked (the next row's store overwrites it)
    return in >= 0 && in < p.iw;
}

bool whole(const PlanePlan &p, int64_t v) {
    for (int kw = 0; kw <= kK; ++kw)
        for (int lane = 0; lane < kVec; ++lane)
            if (!keeps(p, v, lane, kw)) return false;
    return true;
}

PlanePlan plan_shape(int64_t ih, int64_t iw, int64_t oh, int64_t ow, int64_t pt, int64_t pl, int s,
                     bool filter) {
    PlanePlan p{};
    p.ih = ih, p.iw = iw, p.oh = oh, p.ow = ow, p.pt = pt, p.pl = pl, p.s = s, p.filter = filter;
    p.shifted = filter && s == 2 && pl >= 1;
    p.vecs = ceil_div(ow, (int64_t)kVec);
    p.ib = 0;
    while (p.ib < p.vecs && !whole(p, p.ib)) ++p.ib;
    p.ie = p.vecs;
    while (p.ie > p.ib && !whole(p, p.ie - 1)) --p.ie;
    const int64_t last_room = p.room(0, p.vecs - 1);
    p.full_last = last_room >= kVec ? (last_room - kVec) / ow + 1 : 0;
    p.before = std::max<int64_t>(0, -p.first_read(0));
    p.after = std::max<int64_t>(0, p.end_read(p.vecs - 1) - iw);
    p.dy_after = filter ? p.vecs * kVec - ow + (p.shifted ? 1 : 0) : 0;
    if (p.edges() > kMaxEdges) return p;  // not covered (dw_planes_covers)
    std::fill(&p.all[0][0], &p.all[0][0] + (kK + 1) * kVec, -1);
    for (int64_t v = 0; v < p.vecs; ++v) {
        if (p.interior(v)) continue;
        int32_t(*m)[kVec] = p.mask[v < p.ib ? v : p.ib + (v - p.ie)];
        for (int kw = 0; kw <= kK; ++kw)
            for (int lane = 0; lane < kVec; ++lane) m[kw][lane] = keeps(p, v, lane, kw) ? -1 : 0;
    }
    p.zero_first = s == 2 && !filter && !p.interior(0);
    for (int kw = 0; kw <= kK && p.zero_first; ++kw)
        for (int lane = 0; lane < kVec; ++lane)
            if (keeps(p, 0, lane, kw) != (kw != 0 || lane != 0)) p.zero_first = false;
    return p;
}

// Backward-data at stride 1 reads dy as the forward pass reads x.
bool rotated(const ConvGeometry &g, conv_op_t op) { return op == CONV_OP_BACKWARD_DATA; }

PlanePlan make_plan(const ConvGeometry &g, conv_op_t op) {
    const int s = (int)g.stride[1];
    if (rotated(g, op))
        return plan_shape(g.out[1], g.out[2], g.in[1], g.in[2], kK - 1 - g.pad_begin[1], kK - 1 - g.pad_begin[2], 1,
                          false);
    return plan_shape(g.in[1], g.in[2], g.out[1], g.out[2], g.pad_begin[1], g.pad_begin[2], s,
                      op == CONV_OP_BACKWARD_FILTER);
}

// A thread's scratch: room for a copy of an input plane and, at
// backward-filter, of dy's, for the planes whose reads could leave their
// tensor.
int64_t slot_floats(const PlanePlan &p) {
    return bounce_floats(p.before, p.ih * p.iw, p.after) + (p.filter ? bounce_floats(0, p.oh * p.ow, p.dy_after) : 0);
}

#if CONV_HAVE_AVX512_KERNELS

// Stride 2's lane order to and from column order (its own inverse).
CONV_TARGET_AVX2 inline __m256 split_order(__m256 v) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

// The three taps of a column vector in an input row, from `at` (the row
// plus first_read(v)): t[kw] lane L holds x(row, col(L) * S + kw - pl) for
// the lane's output column col(L); with Edge, 0 where the plan clears it.
// Stride 2 loads two vectors and broadcasts one column, and builds kw = 0
// in registers. Four vector loads instead (16 columns at `at` and 16 at `at
// + 1`) put one astride two cache lines on every row when rows are 32-byte
// aligned and pl = 1 (`at` then lies 4 bytes before a line; `convbench
// --peak` reads FMAs fed by such loads at half the rate of aligned ones on
// Zen 3): they measured 1.16-1.30x slower on MobileNet's 112x112 forward and
// backward-filter (1 thread, alternated runs against oneDNN), 0.98-1.10x
// on smaller planes. On pairs of masked column vectors the two-load form
// was 0.87-0.99x the four, so FourLoads keeps those.
// Stride 2's taps kw = 1 and 2 of a column vector from `at` (the row plus
// first_read(v)): the 16 columns one on, split by in-lane shuffles.
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void split_taps(const float *at, __m256 (&t)[kK]) {
    const __m256 q0 = _mm256_loadu_ps(at + 1), q1 = _mm256_loadu_ps(at + kVec + 1);
    t[1] = _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(2, 0, 2, 0));  // columns 1 3 9 11 | 5 7 13 15
    t[2] = _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1));  // one on
}

template <int S, bool Edge, bool FourLoads = false, bool ZeroFirst = false>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void row_taps(const float *at, Masks m, __m256 (&t)[kK]) {
    if constexpr (S == 1) {
#pragma GCC unroll 3
        for (int kw = 0; kw < kK; ++kw) t[kw] = _mm256_loadu_ps(at + kw);
    } else if constexpr (!FourLoads) {
        split_taps(at, t);
        // t[0] is t[2] of the output column before (its lane in
        // kSplitOrder moved over), column 0's from at[0].
        const __m256i before = _mm256_setr_epi32(0, 0, 5, 2, 1, 4, 3, 6);
        t[0] = _mm256_blend_ps(_mm256_permutevar8x32_ps(t[2], before),
                               ZeroFirst ? _mm256_setzero_ps() : _mm256_broadcast_ss(at), 1);
    } else {
        const __m256 p0 = _mm256_loadu_ps(at), p1 = _mm256_loadu_ps(at + kVec);
        const __m256 q0 = _mm256_loadu_ps(at + 1), q1 = _mm256_loadu_ps(at + kVec + 1);
        t[0] = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(2, 0, 2, 0));  // columns 0 2 8 10 | 4 6 12 14
        t[1] = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 1, 3, 1));  // one on
        t[2] = _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1));  // two on
    }
    if constexpr (Edge) {
#pragma GCC unroll 3
        for (int kw = 0; kw < kK; ++kw) t[kw] = _mm256_and_ps(t[kw], _mm256_load_ps(reinterpret_cast<const float *>(m[kw])));
    }
}

// The taps of one window row (w + 3 * kh) times t, summed: a chain of its
// own, so that an output's running sum takes one add per input row (FADD
// ports) and not three dependent FMAs (12 cycles a row on Zen 3).
CONV_TARGET_AVX2 inline __attribute__((always_inline)) __m256 window_row(const __m256 *w, const __m256 (&t)[kK]) {
    __m256 p = _mm256_mul_ps(w[0], t[0]);
    p = _mm256_fmadd_ps(w[1], t[1], p);
    return _mm256_fmadd_ps(w[2], t[2], p);
}

// An output vector into its row: n lanes, all 8 from n >= 8 (see
// PlanePlan::room), ReLU applied if asked (max(0, v): a NaN stays NaN, as
// epilogue.cpp).
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void put(float *at, __m256 v, bool relu, int64_t n) {
    if (relu) v = _mm256_max_ps(_mm256_setzero_ps(), v);
    if (n >= kVec) return _mm256_storeu_ps(at, v);
    store_first_avx2(at, v, n);
}

// A plane a thread takes next (or writes now), asked into L2 (a hint:
// never faults). The column sweeps read a plane's lines in an order the
// prefetchers do not follow: from memory (batch 8) that lost 0.5-0.9x to
// the 8-channel blocks on 56x56-112x112 planes.
CONV_TARGET_AVX2 inline void prefetch_plane(const float *plane, int64_t floats) {
    const char *at = reinterpret_cast<const char *>(plane), *end = reinterpret_cast<const char *>(plane + floats);
    for (; at < end; at += 64) _mm_prefetch(at, _MM_HINT_T1);
    _mm_prefetch(end - 1, _MM_HINT_T1);
}

// One column vector of an output plane, all rows in one loop (planes of
// one vector, and two at stride 2). Stride 1: input row i feeds
// output rows i + pt (a0), i + pt - 1 (a1), i + pt - 2 (a2, then done).
// Stride 2: output row r reads input rows 2r - pt + kh; the last of them
// (kh = 2) is the next row's first (carry).
template <int S, bool Edge, bool ZeroFirst = false>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void forward_column(const PlanePlan &p, const float *x, float *y, int64_t v,
                                     const __m256 (&weights)[kTaps], __m256 bias, bool relu) {
    // Copies the stores into y cannot alias: they stay in registers.
    __m256 w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = weights[t];
    const int64_t ih = p.ih, iw = p.iw, oh = p.oh, ow = p.ow, pt = p.pt, end = p.room(0, v);
    const Masks m = Edge ? p.masks(v) : nullptr;
    const float *at = x + p.first_read(v);
    float *out = y + v * kVec;
    auto in_plane = [&](int64_t i) CONV_TARGET_AVX2 { return i >= 0 && i < ih; };
    __m256 t[kK];
    if constexpr (S == 1) {
        __m256 a1 = bias, a2 = bias;
        for (int64_t j = 0; j < oh + 2; ++j) {
            __m256 a0 = bias;
            if (in_plane(j - pt)) {
                row_taps<1, Edge>(at + (j - pt) * iw, m, t);
                a0 = _mm256_add_ps(a0, window_row(w, t));
                a1 = _mm256_add_ps(a1, window_row(w + kK, t));
                a2 = _mm256_add_ps(a2, window_row(w + 2 * kK, t));
            }
            if (j >= 2) put(out + (j - 2) * ow, a2, relu, end - (j - 2) * ow);
            a2 = a1, a1 = a0;
        }
    } else {
        __m256 carry = bias;
        if (in_plane(-pt)) {
            row_taps<2, Edge, false, ZeroFirst>(at - pt * iw, m, t);
            carry = _mm256_add_ps(carry, window_row(w, t));
        }
        for (int64_t r = 0; r < oh; ++r) {
            __m256 acc = carry;
            const int64_t i = 2 * r - pt + 1;
            if (in_plane(i)) {
                row_taps<2, Edge, false, ZeroFirst>(at + i * iw, m, t);
                acc = _mm256_add_ps(acc, window_row(w + kK, t));
            }
            carry = bias;
            if (in_plane(i + 1)) {
                row_taps<2, Edge, false, ZeroFirst>(at + (i + 1) * iw, m, t);
                acc = _mm256_add_ps(acc, window_row(w + 2 * kK, t));
                carry = _mm256_add_ps(carry, window_row(w, t));
            }
            put(out + r * ow, split_order(acc), relu, end - r * ow);
        }
    }
}

// The next item's input plane (if any) and this one's output (kept out of
// line: the hot loops inlined around the call kept fewer registers).
CONV_TARGET_AVX2 __attribute__((noinline)) void prefetch_planes(const float *next, int64_t next_floats,
                                                                const float *out, int64_t out_floats) {
    if (next) prefetch_plane(next, next_floats);
    prefetch_plane(out, out_floats);
}

// N column vectors of an output plane, v and the N - 1 before it (Edge:
// masked, all of them). Stride 1: input row i feeds output rows i + pt
// (a0), i + pt - 1 (a1), i + pt - 2 (a2, then done). Stride 2: output row
// r reads input rows 2r - pt + kh; the last of them (kh = 2) is the next
// row's first (carry). The rows whose loads, stores and bounds are all
// plain run in a loop of their own, without a branch.
template <int S, int N, bool Edge, bool ZeroFirst = false>
CONV_TARGET_AVX2 void forward_columns(const PlanePlan &p, const float *x, float *y, int64_t v,
                                      const __m256 (&weights)[kTaps], __m256 bias, bool relu) {
    // Copies the stores into y cannot alias: they stay in registers.
    __m256 w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = weights[t];
    const int64_t ih = p.ih, iw = p.iw, oh = p.oh, ow = p.ow, pt = p.pt;
    Masks m[N];
    const float *at[N];
    float *out[N];
    int64_t end[N];
    for (int c = 0; c < N; ++c) {
        m[c] = Edge ? p.masks_or_all(v - c) : nullptr;
        at[c] = x + p.first_read(v - c), out[c] = y + (v - c) * kVec, end[c] = p.room(0, v - c);
    }
    const int64_t full = p.full(v);
    __m256 t[kK];
    if constexpr (S == 1) {
        __m256 a1[N], a2[N];
        for (int c = 0; c < N; ++c) a1[c] = bias, a2[c] = bias;
        auto step = [&](int64_t j, auto plain) CONV_TARGET_AVX2 {
            const bool load = plain || (j - pt >= 0 && j - pt < ih);
#pragma GCC unroll 2
            for (int c = 0; c < N; ++c) {
                __m256 a0 = bias;
                if (load) {
                    row_taps<1, Edge>(at[c] + (j - pt) * iw, m[c], t);
                    a0 = _mm256_add_ps(a0, window_row(w, t));
                    a1[c] = _mm256_add_ps(a1[c], window_row(w + kK, t));
                    a2[c] = _mm256_add_ps(a2[c], window_row(w + 2 * kK, t));
                }
                if (plain)
                    put(out[c] + (j - 2) * ow, a2[c], relu, kVec);
                else if (j >= 2)
                    put(out[c] + (j - 2) * ow, a2[c], relu, end[c] - (j - 2) * ow);
                a2[c] = a1[c], a1[c] = a0;
            }
        };
        // Step j adds input row j - pt to output rows j, j - 1, j - 2 and
        // stores row j - 2. Plain: a row to store, input row j - pt in the
        // plane, output row j - 2 < full.
        const int64_t j0 = std::max<int64_t>(2, pt), j1 = std::max(j0, std::min({oh + 2, ih + pt, full + 2}));
        for (int64_t j = 0; j < j0; ++j) step(j, std::false_type{});
        for (int64_t j = j0; j < j1; ++j) step(j, std::true_type{});
        for (int64_t j = j1; j < oh + 2; ++j) step(j, std::false_type{});
    } else {
        auto in_plane = [&](int64_t i) CONV_TARGET_AVX2 { return i >= 0 && i < ih; };
        // ZeroFirst: the last of the N vectors is vector 0 (p.zero_first).
        auto taps = [&](const float *from, int c, __m256 (&tt)[kK]) CONV_TARGET_AVX2 {
            if (ZeroFirst && c == N - 1)
                row_taps<2, false, false, true>(from, nullptr, tt);
            else
                row_taps<2, Edge, Edge>(from, m[c], tt);
        };
        __m256 carry[N];
        for (int c = 0; c < N; ++c) {
            carry[c] = bias;
            if (in_plane(-pt)) {
                taps(at[c] - pt * iw, c, t);
                carry[c] = _mm256_add_ps(carry[c], window_row(w, t));
            }
        }
        auto step = [&](int64_t r, auto plain) CONV_TARGET_AVX2 {
            const int64_t i = 2 * r - pt + 1;
            const bool mid = plain || in_plane(i), low = plain || in_plane(i + 1);
#pragma GCC unroll 2
            for (int c = 0; c < N; ++c) {
                __m256 acc = carry[c];
                if (mid) {
                    taps(at[c] + i * iw, c, t);
                    acc = _mm256_add_ps(acc, window_row(w + kK, t));
                }
                carry[c] = bias;
                if (low) {
                    taps(at[c] + (i + 1) * iw, c, t);
                    acc = _mm256_add_ps(acc, window_row(w + 2 * kK, t));
                    carry[c] = _mm256_add_ps(carry[c], window_row(w, t));
                }
                put(out[c] + r * ow, split_order(acc), relu, plain ? kVec : end[c] - r * ow);
            }
        };
        // Plain: input rows 2r - pt + 1 and + 2 in the plane, r < full.
        const int64_t r0 = pt / 2;  // 2r - pt + 1 >= 0
        const int64_t below = ih + pt - 3 >= 0 ? (ih + pt - 3) / 2 + 1 : 0;  // 2r - pt + 2 < ih
        const int64_t lo = std::min(oh, r0), hi = std::max(lo, std::min({oh, below, full}));
        for (int64_t r = 0; r < lo; ++r) step(r, std::false_type{});
        for (int64_t r = lo; r < hi; ++r) step(r, std::true_type{});
        for (int64_t r = hi; r < oh; ++r) step(r, std::false_type{});
    }
}

// A forward plane, column vectors last to first. Wide planes two at a
// time, the plain rows in a loop of their own; planes of one vector (and
// two at stride 2) one at a time in one loop, where the pairs and the split
// loops measured 0.74-0.93x (7x7 and 14x14, 6 alternated rounds).
template <int S>
CONV_TARGET_AVX2 void forward_plane(const PlanePlan &p, const float *x, float *y, const __m256 (&w)[kTaps],
                                    __m256 bias, bool relu) {
    int64_t v = p.vecs - 1;
    if (p.vecs < (S == 1 ? 2 : 3)) {
        for (; v >= 0; --v) {
            if (p.interior(v))
                forward_column<S, false>(p, x, y, v, w, bias, relu);
            else if (S == 2 && v == 0 && p.zero_first)
                forward_column<S, false, S == 2>(p, x, y, v, w, bias, relu);
            else
                forward_column<S, true>(p, x, y, v, w, bias, relu);
        }
        return;
    }
    for (; v >= 1; v -= 2) {
        if (p.interior(v) && p.interior(v - 1))
            forward_columns<S, 2, false>(p, x, y, v, w, bias, relu);
        else if (S == 2 && v == 1 && p.interior(1) && p.zero_first)
            forward_columns<S, 2, false, S == 2>(p, x, y, v, w, bias, relu);
        else
            forward_columns<S, 2, true>(p, x, y, v, w, bias, relu);
    }
    if (v == 0) {
        if (p.interior(0))
            forward_column<S, false>(p, x, y, 0, w, bias, relu);
        else if (S == 2 && p.zero_first)
            forward_column<S, false, S == 2>(p, x, y, 0, w, bias, relu);
        else
            forward_column<S, true>(p, x, y, 0, w, bias, relu);
    }
}

// Forward or backward-data: plane q (of channel c) of the input side (x;
// dy) into plane q of the output side (y; dx).
CONV_TARGET_AVX2 void data_plane(const PlanePlan &p, const ConvArgs &a, int64_t q, int64_t c, float *scratch) {
    const ConvGeometry &g = *a.g;
    const bool forward = a.op == CONV_OP_FORWARD;
    const int64_t in_size = p.ih * p.iw, out_size = p.oh * p.ow;
    const float *in = static_cast<const float *>(forward ? a.x : a.y) + q * in_size;
    float *out = static_cast<float *>(forward ? a.y : a.x) + q * out_size;
    if (p.ahead) prefetch_planes(q + 1 < g.n * g.c ? in + in_size : nullptr, in_size, out, out_size);
    if (near_ends(q, g.n * g.c, in_size, p.before, p.after)) in = bounce(in, p.before, in_size, p.after, scratch);
    const float *wc = static_cast<const float *>(a.w) + c * kTaps;
    __m256 w[kTaps];
    for (int t = 0; t < kTaps; ++t) w[t] = _mm256_broadcast_ss(wc + (forward ? t : kTaps - 1 - t));
    const float *bias = static_cast<const float *>(a.bias);
    const __m256 b = forward && bias ? _mm256_broadcast_ss(bias + c) : _mm256_setzero_ps();
    const bool relu = forward && g.activation == CONV_ACTIVATION_RELU;
    if (p.s == 1)
        forward_plane<1>(p, in, out, w, b, relu);
    else
        forward_plane<2>(p, in, out, w, b, relu);
}

// dy's row r of column vector v (stride 1), the lanes past the row cleared.
template <bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) __m256 dy_row(const float *d, int64_t ow, Masks m,
                                                                       int64_t r) {
    __m256 g = _mm256_loadu_ps(d + r * ow);
    if constexpr (Edge) g = _mm256_and_ps(g, _mm256_load_ps(reinterpret_cast<const float *>(m[kK])));
    return g;
}

// sums[3 kh + kw] += d * t[kw].
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_row(__m256 *sums, __m256 d, const __m256 (&t)[kK]) {
#pragma GCC unroll 3
    for (int kw = 0; kw < kK; ++kw) sums[kw] = _mm256_fmadd_ps(d, t[kw], sums[kw]);
}

// sums[3 kh + kw] += products of x's taps t with dy's row g (Shifted: kw =
// 0 from t[2] and dy one column on, gs; see filter_column_s2). The window
// row a template argument, so that the sums stay in registers.
template <int Kh, bool Shifted>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_row_s2(__m256 (&sums)[kTaps], __m256 g, __m256 gs,
                                                                         const __m256 (&t)[kK]) {
    sums[Kh * kK] = _mm256_fmadd_ps(Shifted ? gs : g, Shifted ? t[2] : t[0], sums[Kh * kK]);
    sums[Kh * kK + 1] = _mm256_fmadd_ps(g, t[1], sums[Kh * kK + 1]);
    sums[Kh * kK + 2] = _mm256_fmadd_ps(g, t[2], sums[Kh * kK + 2]);
}

// Backward-filter, one column vector of a plane at stride 2: dy's row r
// meets x's rows 2r - pt + kh, and each x row's taps are made once: row 2r
// - pt + 2 (kh = 2 of r) is kh = 0 of r + 1.
// - Shifted (leading padding): tap kw = 0 of output column c reads x's
//   column 2c - pl, which is tap kw = 2 of column c - 1. So its products
//   are kw = 2's vector times dy loaded one column on (column c's dy in
//   column c - 1's lane), and a row's taps take two loads and two shuffles,
//   no permute, broadcast and blend. Column 0's kw = 0 reads padding; a
//   vector's last lane meets the next vector's first column.
// - Edge: the lanes are summed unmasked, from zero, and a lane that is no
//   (output, tap) pair of the plane is cleared once at the end (its sums
//   only ever held its own products, whatever the values outside the row
//   were): masking each row's taps and dy cost as much as the FMAs.
template <bool Edge, bool Shifted>
CONV_TARGET_AVX2 __attribute__((noinline)) void filter_column_s2(const PlanePlan &p, const float *x, const float *dy, int64_t v,
                                       __m256 (&total)[kTaps]) {
    const int64_t ih = p.ih, iw = p.iw, oh = p.oh, ow = p.ow, pt = p.pt;
    if (oh == 0) return;
    // Summed in a copy x's loads cannot alias, so it stays in registers.
    __m256 sums[kTaps];
#pragma GCC unroll 9
    for (int k = 0; k < kTaps; ++k) sums[k] = Edge ? _mm256_setzero_ps() : total[k];
    const float *at = x + p.first_read(v), *d = dy + v * kVec;
    auto in_plane = [&](int64_t i) CONV_TARGET_AVX2 { return i >= 0 && i < ih; };
    // dy's row r (g), and one column on (gs; Shifted only).
    auto dy_at = [&](int64_t r, __m256 &g, __m256 &gs) CONV_TARGET_AVX2 {
        g = split_order(_mm256_loadu_ps(d + r * ow));
        if constexpr (Shifted) gs = split_order(_mm256_loadu_ps(d + r * ow + 1));
    };
    // x's row i: its taps (Shifted: kw = 1 and 2 only).
    auto taps = [&](int64_t i, __m256 (&t)[kK]) CONV_TARGET_AVX2 {
        if constexpr (Shifted)
            split_taps(at + i * iw, t);
        else
            row_taps<2, false>(at + i * iw, nullptr, t);
    };
    __m256 g, gs = _mm256_setzero_ps(), t[kK];
    dy_at(0, g, gs);
    if (in_plane(-pt)) taps(-pt, t), filter_row_s2<0, Shifted>(sums, g, gs, t);
    for (int64_t r = 0; r < oh; ++r) {
        const int64_t i = 2 * r - pt + 1;
        const bool next = r + 1 < oh;
        if (in_plane(i)) taps(i, t), filter_row_s2<1, Shifted>(sums, g, gs, t);
        // Row i + 1 meets dy's row r, then r + 1 (loaded over r's: 13
        // registers live, none spilled).
        if (in_plane(i + 1)) {
            taps(i + 1, t), filter_row_s2<2, Shifted>(sums, g, gs, t);
            if (next) dy_at(r + 1, g, gs), filter_row_s2<0, Shifted>(sums, g, gs, t);
        } else if (next) {
            dy_at(r + 1, g, gs);
        }
    }
    if constexpr (Edge) {
        const Masks m = p.masks(v);
#pragma GCC unroll 9
        for (int k = 0; k < kTaps; ++k)
            total[k] = _mm256_add_ps(total[k], _mm256_and_ps(sums[k], _mm256_load_ps(reinterpret_cast<const float *>(m[k % kK]))));
    } else {
#pragma GCC unroll 9
        for (int k = 0; k < kTaps; ++k) total[k] = sums[k];
    }
}

// Backward-filter at stride 1, column vector v of x's row i (`at`: the
// row plus first_read(v)) against dy's rows i + pt - kh: x's taps are
// loaded once for all three.
template <bool Edge>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_step_s1(const PlanePlan &p, const float *at,
                                                                           const float *d, int64_t i, Masks m,
                                                                           __m256 (&sums)[kTaps]) {
    __m256 t[kK];
    row_taps<1, Edge>(at, m, t);
    const int64_t r = i + p.pt, oh = p.oh, ow = p.ow;  // dy's row for kh = 0
    if (r - (kK - 1) >= 0 && r < oh) {
#pragma GCC unroll 3
        for (int kh = 0; kh < kK; ++kh) filter_row(sums + kh * kK, dy_row<Edge>(d, ow, m, r - kh), t);
        return;
    }
#pragma GCC unroll 3
    for (int kh = 0; kh < kK; ++kh)
        if (r - kh >= 0 && r - kh < oh) filter_row(sums + kh * kK, dy_row<Edge>(d, ow, m, r - kh), t);
}

// A plane at stride 1, a column vector at a time, top to bottom (row by
// row, its loops over a row's few vectors cost 1.8-2.5x on 7x7-28x28).
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void filter_plane_s1(const PlanePlan &p, const float *x,
                                                                            const float *dy, __m256 (&sums)[kTaps]) {
    for (int64_t v = 0; v < p.vecs; ++v) {
        const float *at = x + p.first_read(v), *d = dy + v * kVec;
        if (p.interior(v)) {
            for (int64_t i = 0; i < p.ih; ++i) filter_step_s1<false>(p, at + i * p.iw, d, i, nullptr, sums);
            continue;
        }
        Masks m = p.masks(v);
        for (int64_t i = 0; i < p.ih; ++i) {
            // The masks read from memory at each use: GCC kept the four in
            // registers, and the nine sums and three taps then spilled one
            // sum (its FMA waited on a store to the stack every row: 1.4x).
            asm("" : "+r"(m));
            filter_step_s1<true>(p, at + i * p.iw, d, i, m, sums);
        }
    }
}

CONV_TARGET_AVX2 void filter_plane_s2(const PlanePlan &p, const float *x, const float *dy, __m256 (&sums)[kTaps]) {
    for (int64_t v = 0; v < p.vecs; ++v) {
        const bool edge = !p.interior(v);
        if (p.shifted)
            edge ? filter_column_s2<true, true>(p, x, dy, v, sums) : filter_column_s2<false, true>(p, x, dy, v, sums);
        else
            edge ? filter_column_s2<true, false>(p, x, dy, v, sums) : filter_column_s2<false, false>(p, x, dy, v, sums);
    }
}

// dw of channel c: the sums over every image's plane.
CONV_TARGET_AVX2 void filter_channel(const PlanePlan &p, const ConvArgs &a, int64_t c, float *scratch) {
    const ConvGeometry &g = *a.g;
    const int64_t in_size = p.ih * p.iw, out_size = p.oh * p.ow, planes = g.n * g.c;
    float *x_copy = scratch, *dy_copy = scratch + bounce_floats(p.before, in_size, p.after);
    __m256 sums[kTaps];
    // Unrolled: as a loop GCC made it a memset (rep stos, a quarter of a
    // 7x7 channel's time).
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) sums[t] = _mm256_setzero_ps();
    for (int64_t n = 0; n < g.n; ++n) {
        const int64_t q = n * g.c + c;
        const float *x = static_cast<const float *>(a.x) + q * in_size;
        const float *dy = static_cast<const float *>(a.y) + q * out_size;
        // The next image's planes, or the next channel's first.
        const int64_t next = n + 1 < g.n ? q + g.c : c + 1;
        if (p.ahead && next < planes) {
            prefetch_plane(static_cast<const float *>(a.x) + next * in_size, in_size);
            prefetch_plane(static_cast<const float *>(a.y) + next * out_size, out_size);
        }
        if (near_ends(q, planes, in_size, p.before, p.after)) x = bounce(x, p.before, in_size, p.after, x_copy);
        if (near_ends(q, planes, out_size, 0, p.dy_after)) dy = bounce(dy, 0, out_size, p.dy_after, dy_copy);
        // Stride 1 inline: the sums then stay in registers across planes.
        if (p.s == 2)
            filter_plane_s2(p, x, dy, sums);
        else
            filter_plane_s1(p, x, dy, sums);
    }
    float *dw = static_cast<float *>(a.w) + c * kTaps;
    store_lane_sums9(dw, sums);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Where it measured ahead of the 8-channel blocks (and of
// depthwise_avx2_rows.cpp) on MobileNet-v1's layers, AMD EPYC (Zen 3), 1
// thread, against the session's first library in one convbench, 4
// alternated rounds (docs/performance.md). Planes up to 32 wide, batch 1
// and 8: forward and backward-data at stride 1 1.1-1.3x and 1.3-2.3x,
// forward at stride 2 1.5x and 1.7-1.9x, backward-filter at stride 2
// 1.0-1.1x and 1.3-1.4x. Wider planes while the input side stays in the
// caches call to call (kFromCache: MobileNet's 56x56 and 112x112 at batch
// 1-2): 1.2-1.6x. From memory (batch 8) the column sweeps lost there
// (stride 1 0.5-0.8x, backward-filter 0.6-0.7x: each sweep reads a line
// of the plane's rows, whose other lines later sweeps read again, an order
// the prefetchers do not follow; asking for the next plane ahead got some
// of it back, and runs only from memory: on small planes from the caches
// it cost), except forward at stride 2 on 56x56 (0.98-1.4x).
// Backward-filter at stride 1 on planes up to 32 wide, once its nine sums
// stayed in registers (no memset, no spill: filter_plane_s1), against the
// rows kernel (28x28, 32x32, 20x20) and the blocks (14x14, 7x7), 8
// alternated rounds: batch 1 1.16-1.47x, batch 8 0.99-1.75x, 2 threads
// 1.14-1.52x; wider planes stay with the rows kernel (56x56 and 112x112
// 0.74-0.96x: a column's sweep re-reads the rows' other lines from L2).
// Output planes this wide or less (at stride 1, every pass; at stride 2,
// backward-filter onto planes up to kBlockedFilterWidthS2) go to
// depthwise_avx2.cpp's 8-channel blocks, once their backward-filter kept its
// sums in registers, their forward read each input column once for a row's
// outputs, and their tiles' borders were zeroed once a call. Against this
// kernel, 1 thread, 6 alternated rounds (batch 8: 4): MobileNet-v1's 1024
// 7x7 backward-filter 1.55x (batch 8 1.21x, 2 threads 1.30x), forward and
// backward-data 1.39-1.49x (1.41-1.59x, 1.13-1.22x); 512 14x14 s2 onto 7x7
// backward-filter 1.30x (1.14x, 1.14x), 256 28x28 s2 onto 14x14 1.07x
// (1.08x, even); 8x8 and 10x10 planes 1.06-1.46x. On 14x14 at stride 1 it
// was mixed (backward-filter 1.15x at batch 1, 0.87x at batch 8; forward
// 0.93x, 0.74x at batch 8), on 16x16 0.86-0.91x; the forward at stride 2
// lost (0.74-0.82x: the input tile, four times the output's, is transposed
// in). Since the stride-2 backward-filter here makes each x row's taps
// once, without a permute, and keeps its sums in registers
// (filter_column_s2), it is the faster onto dy rows of 7 or more: against
// the blocks, 4 alternated rounds, 512 14x14 onto 7x7 1.13-1.27x (batch 8
// 1.39x), 128 16x16 onto 8x8 1.45x, 256 28x28 onto 14x14 1.31x (batch 8
// 1.82x, 2 threads 1.30x); onto 6 even (1.05x), 5 and 4 0.65-0.82x.
constexpr int64_t kBlockedWidth = 10;
constexpr int64_t kBlockedFilterWidthS2 = 6;
constexpr int64_t kFromCache = int64_t(4) << 20;  // bytes of the input side
constexpr int64_t kAnyDepthWidth = 32;            // input columns
constexpr int64_t kStride2ForwardWidth = 64;

// Bytes of the side a pass sweeps (x; dy for backward-data).
int64_t input_bytes(const ConvGeometry &g, conv_op_t op) {
    return g.n * g.c * (op == CONV_OP_BACKWARD_DATA ? g.out_size() : g.in_size()) * (int64_t)sizeof(float);
}

bool dw_planes_covers(const ConvGeometry &g, conv_op_t op) {
    if (g.pad_begin[1] > kMaxPad || g.pad_begin[2] > kMaxPad) return false;
    if (op == CONV_OP_BACKWARD_DATA && g.stride[1] != 1) return false;
    if (make_plan(g, op).edges() > kMaxEdges) return false;
    const int64_t width = op == CONV_OP_BACKWARD_DATA ? g.out[2] : g.in[2];
    if (g.stride[1] == 1 ? g.out[2] <= kBlockedWidth : op == CONV_OP_BACKWARD_FILTER && g.out[2] <= kBlockedFilterWidthS2)
        return false;
    if (op == CONV_OP_BACKWARD_FILTER && g.stride[1] == 1) return width <= kAnyDepthWidth;
    if (width <= kAnyDepthWidth || input_bytes(g, op) <= kFromCache) return true;
    return op == CONV_OP_FORWARD && g.stride[1] == 2 && width <= kStride2ForwardWidth;
}

size_t dw_planes_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    return (size_t)checked_mul(checked_mul(slot_floats(make_plan(g, op)), std::max(threads, 1), "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

// Planes (channels, at backward-filter) a work item takes: as many as fit
// in this many floats (one at least), since the pool hands out items one at a time and a
// 7x7 plane takes ~60 ns -- one item a plane ran 1024 of them at 2 threads
// at 0.66-0.73x the 8-channel blocks, which take 8 planes an item.
constexpr int64_t kItemFloats = 2048;

void dw_planes_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    PlanePlan p = make_plan(g, a.op);
    p.ahead = input_bytes(g, a.op) > kFromCache;
    float *scratch = static_cast<float *>(ws);
    const int64_t slot = slot_floats(p), plane = p.oh * p.ow;
    // Runs fn(first, end, scratch) on [0, count) in items of `per`.
    auto in_items = [&](int64_t count, int64_t per, auto fn) {
        pool.parallel_for(
            ceil_div(count, per),
            [&](int64_t item, int s) { fn(item * per, std::min(count, (item + 1) * per), scratch + s * slot); },
            threads);
    };
    if (a.op == CONV_OP_BACKWARD_FILTER) {
        in_items(g.c, std::max<int64_t>(1, kItemFloats / (g.n * plane)), [&](int64_t c0, int64_t c1, float *sc) {
            for (int64_t c = c0; c < c1; ++c) filter_channel(p, a, c, sc);
        });
        if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
        return;
    }
    in_items(g.n * g.c, std::max<int64_t>(1, kItemFloats / plane), [&](int64_t q0, int64_t q1, float *sc) {
        // The channel counted along, not q % C: a division a plane was a
        // fifth of a 7x7 plane's time.
        for (int64_t q = q0, c = q0 % g.c; q < q1; ++q, c = c + 1 == g.c ? 0 : c + 1) data_plane(p, a, q, c, sc);
    });
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
