// Channels-first (NCHW) depthwise 3x3 backward-data at stride 2, multiplier
// 1, fp32, on CPUs with AVX2 and FMA but no AVX-512: dy spread into dx a
// plane at a time, both read and written in place.
//
// dx(i, j) = sum of w(kh, kw) * dy((i + pt - kh) / 2, (j + pl - kw) / 2)
// over the taps where both halves are whole and inside dy. A dx row takes
// the window rows kh of i + pt's parity: one dy row or two. Along the row,
// 16 dx columns from an even j0 come from 8 dy columns: the even columns'
// taps are the kw of pl's parity, the odd columns' the others, and tap kw of
// lane m reads dy column j0 / 2 + m + shift, shift = (odd + pl - kw) / 2 in
// {-1, 0, 1}. So a dy row gives two vectors (shifts 0 and +-1), the even and
// odd columns' sums come out of 3 FMAs a dy row, and two unpacks and two
// permutes interleave them into dx's order.
//
// depthwise_avx2.cpp's 8-channel blocks, which took this pass before,
// transpose dy into a tile, scatter into a zeroed padded tile four times
// dy's size and transpose that back: on 112x112 and 56x56 planes that is
// three passes over data past L2 where this is one.
//
// The dy vectors at a row's ends clear, with an AND (an infinity beyond the
// row becomes 0, not NaN), the lanes outside the row; their loads reach a
// float before a row and up to 9 past it, so a tensor's first and last
// planes are first copied, with zeros around, into the thread's scratch.
// A row's last 16 columns are stored in part where the row ends. Every
// output is a plain sum of products (a dot product's bound).
#include "cpu/depthwise_avx2_spread.h"

#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/plane_bounce.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;
constexpr int kVec = 8;          // dy columns a step
constexpr int kStep = 2 * kVec;  // dx columns a step

// Tap kw's dy column, relative to j0 / 2 + m, for a lane of parity `odd`,
// when the tap reaches that parity ((odd + pl - kw) even).
constexpr bool reaches(int pl, int odd, int kw) { return (odd + pl - kw) % 2 == 0; }
constexpr int shift(int pl, int odd, int kw) { return (odd + pl - kw) / 2; }
// The two shifts a padding needs: 0 and lo (pl 0: -1), or 0 and hi (+1).
constexpr int other_shift(int pl) { return pl == 0 ? -1 : 1; }

struct SpreadPlan {
    int64_t ih, iw, oh, ow, pt, pl;
    int64_t steps;           // 16-column steps a dx row
    int64_t ib, ie;          // steps [ib, ie) need no mask and store whole
    int64_t before, after;   // floats a dy plane's loads reach before it and past it
};

SpreadPlan make_plan(const ConvGeometry &g) {
    SpreadPlan p{};
    p.ih = g.in[1], p.iw = g.in[2], p.oh = g.out[1], p.ow = g.out[2];
    p.pt = g.pad_begin[1], p.pl = g.pad_begin[2];
    p.steps = ceil_div(p.iw, (int64_t)kStep);
    const int64_t lo = std::min(0, other_shift((int)p.pl)), hi = std::max(0, other_shift((int)p.pl));
    auto whole = [&](int64_t s) {
        const int64_t c0 = s * kVec;
        return c0 + lo >= 0 && c0 + hi + kVec <= p.ow && (s + 1) * kStep <= p.iw;
    };
    p.ib = 0;
    while (p.ib < p.steps && !whole(p.ib)) ++p.ib;
    p.ie = p.steps;
    while (p.ie > p.ib && !whole(p.ie - 1)) --p.ie;
    p.before = -lo;
    p.after = std::max<int64_t>(0, (p.steps - 1) * kVec + hi + kVec - p.ow);
    return p;
}

// A thread's scratch: a copy of a dy plane with the loads' reach around it.
int64_t slot_floats(const SpreadPlan &p) { return bounce_floats(p.before, p.oh * p.ow, p.after); }

#if CONV_HAVE_AVX512_KERNELS

// All bits of lane m set where first + m lies in [0, ow).
CONV_TARGET_AVX2 inline __m256 inside(int64_t first, int64_t ow) {
    const __m256i col = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)first));
    const __m256i ge0 = _mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1));
    const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)ow), col);
    return _mm256_castsi256_ps(_mm256_and_si256(ge0, lt));
}

// The dy vectors of one row at column c (shift 0) and c + other_shift(PL);
// with Mask, lanes outside [0, ow) cleared.
template <int PL, bool Mask>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void load_pair(const float *row, int64_t c, int64_t ow,
                                                                        __m256 &d0, __m256 &d1) {
    constexpr int o = other_shift(PL);
    d0 = _mm256_loadu_ps(row + c);
    d1 = _mm256_loadu_ps(row + c + o);
    if constexpr (Mask) {
        d0 = _mm256_and_ps(d0, inside(c, ow));
        d1 = _mm256_and_ps(d1, inside(c + o, ow));
    }
}

// even += w(kh, kw) * dy for the taps of the even columns, odd likewise.
template <int PL>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void add_row(const __m256 *wk, __m256 d0, __m256 d1,
                                                                      __m256 &even, __m256 &odd) {
#pragma GCC unroll 3
    for (int kw = 0; kw < kK; ++kw) {
        for (int par = 0; par < 2; ++par) {
            if (!reaches(PL, par, kw)) continue;
            const __m256 d = shift(PL, par, kw) == 0 ? d0 : d1;
            __m256 &sum = par ? odd : even;
            sum = _mm256_fmadd_ps(wk[kw], d, sum);
        }
    }
}

// dx row i, steps [s0, s1): its dy rows are `rows` (count of them, with
// their window rows in `kh`).
template <int PL, bool Mask>
CONV_TARGET_AVX2 inline __attribute__((always_inline)) void row_steps(const SpreadPlan &p, const float *const *rows,
                                                                        const int *kh, int count, const __m256 *w,
                                                                        float *out, int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
        const int64_t c = s * kVec;
        __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
        for (int t = 0; t < count; ++t) {
            __m256 d0, d1;
            load_pair<PL, Mask>(rows[t], c, p.ow, d0, d1);
            add_row<PL>(w + kh[t] * kK, d0, d1, even, odd);
        }
        // even 0..7 and odd 0..7 into columns 2m, 2m + 1.
        const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
        const __m256 first = _mm256_permute2f128_ps(lo, hi, 0x20), second = _mm256_permute2f128_ps(lo, hi, 0x31);
        float *at = out + s * kStep;
        if (!Mask || (s + 1) * kStep <= p.iw) {
            _mm256_storeu_ps(at, first);
            _mm256_storeu_ps(at + kVec, second);
        } else {
            const int64_t n = p.iw - s * kStep;
            store_first_avx2(at, first, std::min<int64_t>(n, kVec));
            if (n > kVec) store_first_avx2(at + kVec, second, n - kVec);
        }
    }
}

template <int PL>
CONV_TARGET_AVX2 void spread_plane(const SpreadPlan &p, const float *dy, float *dx, const __m256 *w) {
    for (int64_t i = 0; i < p.ih; ++i) {
        const float *rows[2];
        int kh[2], count = 0;
        for (int k = (int)((i + p.pt) & 1); k < kK; k += 2) {
            const int64_t r = (i + p.pt - k) / 2;
            if (r >= 0 && r < p.oh) rows[count] = dy + r * p.ow, kh[count++] = k;
        }
        float *out = dx + i * p.iw;
        row_steps<PL, true>(p, rows, kh, count, w, out, 0, p.ib);
        row_steps<PL, false>(p, rows, kh, count, w, out, p.ib, p.ie);
        row_steps<PL, true>(p, rows, kh, count, w, out, p.ie, p.steps);
    }
}

// dx's plane q (of channel q % C) from dy's.
CONV_TARGET_AVX2 void spread(const SpreadPlan &p, const ConvArgs &a, int64_t q, float *scratch) {
    const ConvGeometry &g = *a.g;
    const int64_t in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    const float *dy = static_cast<const float *>(a.y) + q * out_plane;
    float *dx = static_cast<float *>(a.x) + q * in_plane;
    if (near_ends(q, g.n * g.c, out_plane, p.before, p.after)) dy = bounce(dy, p.before, out_plane, p.after, scratch);
    const float *wc = static_cast<const float *>(a.w) + q % g.c * kK * kK;
    __m256 w[kK * kK];
    for (int t = 0; t < kK * kK; ++t) w[t] = _mm256_broadcast_ss(wc + t);
    if (p.pl == 0)
        spread_plane<0>(p, dy, dx, w);
    else if (p.pl == 1)
        spread_plane<1>(p, dy, dx, w);
    else
        spread_plane<2>(p, dy, dx, w);
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// dx rows this wide or wider. Against the 8-channel blocks, ratios to
// oneDNN in alternated runs (AMD EPYC Zen 3, docs/performance.md): 1
// thread, batch 1, 64 112x112 1.54x, 128 56x56 1.05x, 32 150x150 1.45x;
// batch 8 1.15-1.29x; 2 threads 0.84-1.75x (even on 56x56 and 75x75).
// On 28x28 (a 16-column step and a masked one a row) the blocks stay
// ahead (0.73x).
constexpr int64_t kMinWidth = 56;

bool dw_spread_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_DATA || g.stride[1] != 2 || g.stride[2] != 2) return false;
    if (g.pad_begin[1] > 2 || g.pad_begin[2] > 2) return false;
    return g.in[2] >= kMinWidth;
}

size_t dw_spread_workspace_bytes(const ConvGeometry &g, int threads) {
    return (size_t)checked_mul(checked_mul(slot_floats(make_plan(g)), std::max(threads, 1), "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

void dw_spread_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const SpreadPlan p = make_plan(g);
    const int64_t planes = g.n * g.c, slot = slot_floats(p);
    const int64_t per = std::max<int64_t>(1, 2048 / (p.ih * p.iw));  // planes an item: ~8 KiB of dx
    pool.parallel_for(
        ceil_div(planes, per),
        [&](int64_t item, int thread) {
            for (int64_t q = item * per; q < std::min(planes, (item + 1) * per); ++q)
                spread(p, a, q, static_cast<float *>(ws) + thread * slot);
        },
        threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
