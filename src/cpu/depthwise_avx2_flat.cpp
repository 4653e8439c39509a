// Channels-first (NCHW) depthwise 3x3 backward-filter at stride 1 with
// padding 1 all round, multiplier 1, fp32, on CPUs with AVX2 and FMA but no
// AVX-512, on small planes: each plane swept as one flat run of positions,
// 8 a vector, read in place.
//
// dw(kh, kw) = sum over positions p of dy(p) * x(p + (kh - 1) W + kw - 1),
// the terms whose x position lies in the plane. With q = p + (kh - 1) W
// that is dy(q - (kh - 1) W) * x(q + kw - 1) over x positions q: so a
// vector of 8 consecutive positions q (across rows) takes three loads of x
// (q - 1, q, q + 1) and three of dy (q + W, q, q - W) for all nine taps'
// FMAs. A lane whose tap column leaves the row (kw = 0 at a row's first
// column, kw = 2 at its last) reads the neighbouring row's x, cleared by a
// mask that depends only on q's column (a table of lcm(W, 8) / 8 vectors);
// the vectors near the plane's ends also clear, tap row by tap row, the
// lanes whose dy position is outside dy, in both factors.
//
// Why: swept a column vector at a time (depthwise_avx2_planes.cpp) a 7- or
// 14-wide row is one or two vectors that both need masks on every load,
// and the 8-channel blocks (depthwise_avx2.cpp) spend more on transposes
// than on FMAs; flat, a 14x14 plane is 25 vectors of 9 FMAs with two ANDs.
// Loads reach a float before a plane's x and W before its dy, and past their
// ends: the tensors' first and last planes are first copied, with zeros
// around, into the thread's scratch. The 9 sums of a channel stay in
// registers over the batch (one work item a channel, so the sums' order
// does not depend on the thread count) and are reduced across lanes once.
// The AND leaves an infinity in x past the row out (0, not NaN); an
// infinity in dy meets the zero of a cleared x lane as NaN, as it meets
// zero padding in an im2col.
#include "cpu/depthwise_avx2_flat.h"

#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/epilogue.h"
#include "cpu/plane_bounce.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;
constexpr int kTaps = kK * kK;
constexpr int kVec = 8;
constexpr int64_t kMaxWidth = 32;  // the column masks' table: lcm(W, 8) / 8 <= W vectors
// Vectors near a plane's ends: up to ceil(W / 8) at its start, and up to
// ceil(W / 8) + 2 from the last whole vector clear of the end.
constexpr int64_t kMaxEnds = 2 * (kMaxWidth / 8) + 2;

struct FlatPlan {
    int64_t w, size;    // a plane's width and positions (x and dy alike)
    int64_t vecs;       // vectors a plane
    int64_t period;     // vectors after which the column masks repeat
    int64_t head, tail; // vectors [head, tail) need no check of the plane's ends
    int64_t x_after, dy_after;  // floats the loads read past a plane (x: 1 before it, dy: w)
    int64_t head_k, tail_k;     // vectors head and tail's places in the masks' period
    // Per vector of a period: the lanes kw = 0 keeps (column > 0), then
    // those kw = 2 keeps (column < W - 1).
    alignas(32) int32_t mask[2][kMaxWidth][kVec];
    // Per vector outside [head, tail) (those before head, then those from
    // tail): per tap row kh, the lanes whose dy position exists.
    alignas(32) int32_t ends[kMaxEnds][kK][kVec];
    int64_t end_index(int64_t v) const { return v < head ? v : head + v - tail; }
};

FlatPlan make_plan(const ConvGeometry &g) {
    FlatPlan p{};
    p.w = g.in[2], p.size = g.in[1] * g.in[2];
    p.vecs = ceil_div(p.size, (int64_t)kVec);
    p.period = 1;
    while (p.period * kVec % p.w) ++p.period;
    // Vector v is clear of the ends when q - W >= 0 for its first lane and
    // q + W < size for its last.
    p.head = std::min(p.vecs, ceil_div(p.w, (int64_t)kVec));
    p.tail = std::max(p.head, (p.size - p.w) / kVec);
    p.x_after = p.vecs * kVec - p.size + 1;
    p.dy_after = p.vecs * kVec - p.size + p.w;
    p.head_k = p.head % p.period, p.tail_k = p.tail % p.period;
    for (int64_t v = 0; v < p.vecs; ++v) {
        if (v == p.head) v = p.tail;
        if (v == p.vecs) break;
        for (int kh = 0; kh < kK; ++kh)
            for (int lane = 0; lane < kVec; ++lane) {
                const int64_t q = v * kVec + lane, d = q - (kh - 1) * p.w;  // x's position, dy's
                p.ends[p.end_index(v)][kh][lane] = q < p.size && d >= 0 && d < p.size ? -1 : 0;
            }
    }
    for (int64_t v = 0; v < p.period; ++v)
        for (int lane = 0; lane < kVec; ++lane) {
            const int64_t col = (v * kVec + lane) % p.w;
            p.mask[0][v][lane] = col > 0 ? -1 : 0;
            p.mask[1][v][lane] = col < p.w - 1 ? -1 : 0;
        }
    return p;
}

int64_t x_slot(const FlatPlan &p) { return bounce_floats(1, p.size, p.x_after); }
int64_t slot_floats(const FlatPlan &p) { return x_slot(p) + bounce_floats(p.w, p.size, p.dy_after); }

#if CONV_HAVE_AVX512_KERNELS

// The nine taps' products of the 8 positions from q.
template <bool Ends>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void step(const FlatPlan &p, const float *x, const float *dy,
                                                                   int64_t q, const int32_t *m0, const int32_t *m2,
                                                                   const int32_t *ends, __m256 (&sums)[kTaps]) {
    const int64_t w = p.w;
    __m256 t[kK], d[kK];
    t[0] = _mm256_and_ps(_mm256_loadu_ps(x + q - 1), _mm256_load_ps(reinterpret_cast<const float *>(m0)));
    t[1] = _mm256_loadu_ps(x + q);
    t[2] = _mm256_and_ps(_mm256_loadu_ps(x + q + 1), _mm256_load_ps(reinterpret_cast<const float *>(m2)));
    d[0] = _mm256_loadu_ps(dy + q + w);  // kh = 0: dy one row down
    d[1] = _mm256_loadu_ps(dy + q);
    d[2] = _mm256_loadu_ps(dy + q - w);  // kh = 2: one row up
    if constexpr (Ends) {
        // Both factors cleared where dy(q - (kh - 1) W) is outside dy (or
        // q outside x): an infinity in x must not meet a zero standing for
        // a dy row that does not exist.
#pragma GCC unroll 3
        for (int kh = 0; kh < kK; ++kh) {
            const __m256 in = _mm256_load_ps(reinterpret_cast<const float *>(ends + kh * kVec));
            const __m256 g = _mm256_and_ps(d[kh], in);
#pragma GCC unroll 3
            for (int kw = 0; kw < kK; ++kw)
                sums[kh * kK + kw] = _mm256_fmadd_ps(g, _mm256_and_ps(t[kw], in), sums[kh * kK + kw]);
        }
        return;
    }
#pragma GCC unroll 3
    for (int kh = 0; kh < kK; ++kh)
#pragma GCC unroll 3
        for (int kw = 0; kw < kK; ++kw) sums[kh * kK + kw] = _mm256_fmadd_ps(d[kh], t[kw], sums[kh * kK + kw]);
}

// Vectors [v0, v1) of a plane; k: v0's place in the masks' period.
template <bool Ends>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void sweep(const FlatPlan &p, const float *x, const float *dy,
                                                                    int64_t v0, int64_t v1, int64_t k,
                                                                    __m256 (&sums)[kTaps]) {
    for (int64_t v = v0; v < v1; ++v) {
        step<Ends>(p, x, dy, v * kVec, p.mask[0][k], p.mask[1][k], Ends ? p.ends[p.end_index(v)][0] : nullptr, sums);
        if (++k == p.period) k = 0;
    }
}

// dw of channel c, summed over the batch.
CONV_TARGET_AVX2 void filter_channel(const FlatPlan &p, const ConvArgs &a, int64_t c, float *scratch) {
    const ConvGeometry &g = *a.g;
    const int64_t size = p.size, planes = g.n * g.c;
    __m256 sums[kTaps];
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) sums[t] = _mm256_setzero_ps();
    for (int64_t n = 0; n < g.n; ++n) {
        const int64_t q = n * g.c + c;
        const float *x = static_cast<const float *>(a.x) + q * size;
        const float *dy = static_cast<const float *>(a.y) + q * size;
        if (near_ends(q, planes, size, 1, p.x_after)) x = bounce(x, 1, size, p.x_after, scratch);
        if (near_ends(q, planes, size, p.w, p.dy_after))
            dy = bounce(dy, p.w, size, p.dy_after, scratch + x_slot(p));
        sweep<true>(p, x, dy, 0, p.head, 0, sums);
        sweep<false>(p, x, dy, p.head, p.tail, p.head_k, sums);
        sweep<true>(p, x, dy, p.tail, p.vecs, p.tail_k, sums);
    }
    float *dw = static_cast<float *>(a.w) + c * kTaps;
    store_lane_sums9(dw, sums);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// Planes from this wide, against the kernels that took them before (the
// 8-channel blocks up to 10 wide, the column sweeps above), ratios to
// oneDNN in alternated runs (AMD EPYC Zen 3, docs/performance.md): 1
// thread, batch 1, 12-32 wide 1.04-1.31x (14x14 1.13-1.31x); batch 8
// 1.20-1.47x; 2 threads 1.12-1.73x. On 7x7 and 8x8 (3 of 7 and 2 of 8
// vectors near the ends, a reduction per 49 or 64 positions) the blocks
// stay even or ahead (0.95-0.96x); 10x10 measured even (1.06x) and stays
// with them too.
constexpr int64_t kMinWidth = 11;

bool dw_flat_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || g.stride[1] != 1 || g.stride[2] != 1) return false;
    for (int i = 1; i < 3; ++i)
        if (g.pad_begin[i] != 1 || g.pad_end[i] != 1) return false;
    return g.in[2] >= kMinWidth && g.in[2] <= kMaxWidth && g.in[1] * g.in[2] < (int64_t(1) << 30);
}

size_t dw_flat_workspace_bytes(const ConvGeometry &g, int threads) {
    return (size_t)checked_mul(checked_mul(slot_floats(make_plan(g)), std::max(threads, 1), "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

// Channels a work item takes: as many as this many floats of x (one at
// least), since the pool hands out items one at a time.
constexpr int64_t kItemFloats = 2048;

void dw_flat_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const FlatPlan p = make_plan(g);
    const int64_t slot = slot_floats(p), per = std::max<int64_t>(1, kItemFloats / (g.n * p.size));
    pool.parallel_for(
        ceil_div(g.c, per),
        [&](int64_t item, int s) {
            for (int64_t c = item * per; c < std::min(g.c, (item + 1) * per); ++c)
                filter_channel(p, a, c, static_cast<float *>(ws) + s * slot);
        },
        threads);
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
