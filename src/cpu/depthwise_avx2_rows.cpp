// Channels-first (NCHW) depthwise 3x3 backward-filter at stride 1, padding
// 0-2, multiplier 1, fp32, on CPUs with AVX2 and FMA but no AVX-512:
// vectors along a plane's rows (8 dy positions of a row per ymm), the AVX2
// form of depthwise_avx512_nchw.cpp's backward-filter.
//
// dw(tap) = sum over the batch and positions of dy(p) * x(p + tap): the 9
// taps' sums stay in 9 vectors over blocks of 4 dy rows (each x vector
// loaded feeds every row of the block whose window covers it) and over the
// whole batch, one work item per channel, so the order of the sums does not
// depend on the thread count; they are reduced across lanes once. AVX2 has
// no load that leaves lanes past a tensor unread (vmaskmovps may fault on
// them), so x's rows are copied, a band at a time (an L1 share), into
// zero-padded rows.
//
// Why not depthwise_avx2.cpp's 8-channel blocks here: they transpose every
// 8 x 8 positions of x and dy (as many shuffles as FMAs) and hold a block's
// whole padded plane (416 KiB at 112x112, past Zen 3's L2). Its forward and
// backward-data stay there: the same row-vector form of them (padded bands,
// stride 2 split into even and odd columns, 8-row blocks, an input row's
// taps summed apart) measured 0.9-1.0x the blocks on 112x112 and 0.4-0.9x
// on smaller planes and at stride 2 (MobileNet-v1's layers, batch 1).
// Every output is a plain sum of products (a dot product's bound).
#include "cpu/depthwise_avx2_rows.h"

#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/epilogue.h"

namespace conv::cpu {
namespace {

constexpr int kK = 3;            // window size
constexpr int kVec = 8;          // floats per ymm
constexpr int kRows = 4;         // dy rows per block
constexpr int kAhead = 2 * kRows;  // dy rows ahead that are prefetched
constexpr int64_t kBandFloats = 4096;  // a band of padded rows: 16 KiB
// Planes at least this wide. 1 thread, 7-9 interleaved rounds on an AMD
// EPYC (Zen 3), against the 8-channel blocks, ms: batch 1 112x112 (32
// channels) 0.22-0.29 vs 0.34-0.36, 56x56 (128) 0.23-0.31 vs 0.34-0.35,
// 28x28 (256) 0.15-0.17 vs 0.18; batch 8 4.1 vs 4.3, 4.0 vs 4.3, 2.3 vs
// 2.6; but 14x14 (512) at batch 1 0.18 vs 0.11 (per-plane copies that the
// blocks share among 8 channels).
constexpr int64_t kMinWidth = 16;

// x's plane (ih x iw) zero-padded by `top` rows and `left` columns, read by
// the dy plane (oh x ow) at stride 1.
struct Plane {
    int64_t ih, iw, oh, ow, top, left;
    int64_t cols;   // dy columns the vectors cover: ow rounded up to 8
    int64_t pitch;  // floats between padded rows
    int64_t band;   // dy rows per band
    int64_t band_rows(int64_t rows) const { return rows - 1 + kK; }
    int64_t slot_floats() const { return round_up(band_rows(band) * pitch, 16); }
};

Plane make_plane(const ConvGeometry &g) {
    Plane p{g.in[1], g.in[2], g.out[1], g.out[2], g.pad_begin[1], g.pad_begin[2], 0, 0, 0};
    p.cols = round_up(p.ow, kVec);
    // The taps read up to cols + 2; a row's copy writes up to left + iw
    // rounded up to a vector.
    p.pitch = round_up(std::max(p.cols + 2, p.left + round_up(p.iw, kVec)), kVec);
    const int64_t fit = std::max<int64_t>(kRows, kBandFloats / p.pitch - (kK - 1));
    p.band = std::min(p.oh, fit / kRows * kRows);
    return p;
}

#if CONV_HAVE_AVX512_KERNELS

// Lanes below n kept, the rest zero.
CONV_TARGET_AVX2 inline __m256 first_lanes_avx2(__m256 v, int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane)));
}

// n (< 8) floats at `at` as a vector, zero above: one load when `readable`
// floats from `at` lie in the same plane (a row with rows after it), else
// through a buffer.
CONV_TARGET_AVX2 inline __m256 load_part(const float *at, int64_t n, int64_t readable) {
    return readable >= kVec ? first_lanes_avx2(_mm256_loadu_ps(at), n) : load_first_avx2(at, n);
}

// Padded row j (x's row j - top) into `dst`. A row of the plane writes only
// its copy's columns [left, left + iw rounded up to 8): the padding around
// them was zeroed once a call (dw_rows_run) and stays so.
CONV_TARGET_AVX2 void fill_row(const Plane &p, const float *x, int64_t j, float *dst) {
    const int64_t r = j - p.top, iw = p.iw;
    if (r < 0 || r >= p.ih) {
        for (int64_t z = 0; z < p.pitch; z += kVec) _mm256_storeu_ps(dst + z, _mm256_setzero_ps());
        return;
    }
    float *row = dst + p.left;
    const float *src = x + r * iw;
    int64_t w = 0;
    for (; w + kVec <= iw; w += kVec) _mm256_storeu_ps(row + w, _mm256_loadu_ps(src + w));
    if (w < iw) _mm256_storeu_ps(row + w, load_part(src + w, iw - w, (p.ih - r) * iw - w));
}

// U dy rows from `dy` (the block's first row; `readable` floats from it in
// the plane) over the band at the block's first padded row: sums[t] +=
// dy(p) * x(p + t). In a ragged row's last vector the lanes past the row
// are zero in dy and in x (an x there may be an infinity no output reads).
template <int U>
CONV_TARGET_AVX2 void filter_rows(const Plane &p, const float *band, const float *dy, int64_t readable,
                                  __m256 (&sums)[kK * kK]) {
    for (int64_t w0 = 0; w0 < p.cols; w0 += kVec) {
        __m256 g[U];
        const int64_t n = std::min<int64_t>(kVec, p.ow - w0);
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
            const float *at = dy + u * p.ow + w0;
            g[u] = n == kVec ? _mm256_loadu_ps(at) : load_part(at, n, readable - u * p.ow - w0);
        }
#pragma GCC unroll 6
        for (int r = 0; r < U - 1 + kK; ++r) {
            __m256 x[kK];
#pragma GCC unroll 3
            for (int kw = 0; kw < kK; ++kw) {
                x[kw] = _mm256_loadu_ps(band + r * p.pitch + w0 + kw);
                if (n < kVec) x[kw] = first_lanes_avx2(x[kw], n);
            }
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                const int kh = r - u;
                if (kh < 0 || kh >= kK) continue;
#pragma GCC unroll 3
                for (int kw = 0; kw < kK; ++kw)
                    sums[kh * kK + kw] = _mm256_fmadd_ps(g[u], x[kw], sums[kh * kK + kw]);
            }
        }
    }
}

CONV_TARGET_AVX2 void filter_rows_n(const Plane &p, const float *band, const float *dy, int64_t n,
                                    int64_t readable, __m256 (&sums)[kK * kK]) {
    switch (n) {
        case 4: return filter_rows<4>(p, band, dy, readable, sums);
        case 3: return filter_rows<3>(p, band, dy, readable, sums);
        case 2: return filter_rows<2>(p, band, dy, readable, sums);
        default: return filter_rows<1>(p, band, dy, readable, sums);
    }
}

// dw of channel c: the sums over every image's plane, band by band.
CONV_TARGET_AVX2 void filter_channel(const Plane &p, const ConvArgs &a, int64_t c, float *band) {
    const ConvGeometry &g = *a.g;
    const int64_t in_plane = g.in_size(), out_plane = g.out_size();
    __m256 sums[kK * kK];
    for (auto &v : sums) v = _mm256_setzero_ps();
    for (int64_t n = 0; n < g.n; ++n) {
        const float *x = static_cast<const float *>(a.x) + (n * g.c + c) * in_plane;
        const float *dy = static_cast<const float *>(a.y) + (n * g.k + c) * out_plane;
        for (int64_t o0 = 0; o0 < p.oh; o0 += p.band) {
            const int64_t rows = std::min(p.band, p.oh - o0);
            for (int64_t j = 0; j < p.band_rows(rows); ++j) fill_row(p, x, o0 + j, band + j * p.pitch);
            for (int64_t o = 0; o < rows; o += kRows) {
                const int64_t first = (o0 + o) * p.ow;
                // dy is read once, 4 rows abreast, at batch 8 from memory:
                // the block two on is asked for now (a hint: never faults).
                const char *ahead = reinterpret_cast<const char *>(dy + first + kAhead * p.ow);
                for (int64_t b = 0; b < kRows * p.ow * 4; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
                filter_rows_n(p, band + o * p.pitch, dy + first, std::min<int64_t>(kRows, rows - o),
                              out_plane - first, sums);
            }
        }
    }
    float *dw = static_cast<float *>(a.w) + c * kK * kK;
    for (int t = 0; t < kK * kK; ++t) {
        alignas(32) float lanes[kVec];
        _mm256_store_ps(lanes, sums[t]);
        float s = 0;
        for (float l : lanes) s += l;
        dw[t] = s;
    }
}

#endif  // CONV_HAVE_AVX512_KERNELS

}  // namespace

// What it adds to dw_avx2_covers (the layout, window, multiplier and ISA),
// which its callers have checked.
bool dw_rows_covers(const ConvGeometry &g, conv_op_t op) {
    if (op != CONV_OP_BACKWARD_FILTER || g.stride[1] != 1 || g.out[2] < kMinWidth) return false;
    for (int i = 1; i < 3; ++i)
        if (g.pad_begin[i] > kK - 1 || g.pad_end[i] < 0 || g.pad_end[i] > kK - 1) return false;
    return true;
}

size_t dw_rows_workspace_bytes(const ConvGeometry &g, conv_op_t, int threads) {
    return (size_t)checked_mul(checked_mul(make_plane(g).slot_floats(), std::max(threads, 1), "workspace"),
                               (int64_t)sizeof(float), "workspace");
}

void dw_rows_run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const Plane p = make_plane(g);
    const int64_t slot = p.slot_floats();
    float *scratch = static_cast<float *>(ws);
    // Every slot's padding zero, once a call (fill_row keeps it so).
    std::fill(scratch, scratch + slot * std::max(threads, 1), 0.0f);
    pool.parallel_for(
        g.c, [&](int64_t c, int s) { filter_channel(p, a, c, scratch + s * slot); }, threads);
    if (a.bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, a.y, a.bias, pool, threads);
#else
    (void)a, (void)ws, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
