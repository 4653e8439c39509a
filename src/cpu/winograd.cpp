// CONV_ALGO_WINOGRAD_4X4_3X3: Winograd's minimal filtering F(4x4, 3x3)
// (Lavin & Gray 2015) for 3x3, stride-1, undilated 2-D convolutions. Each
// 4x4 output tile costs 36 multiplications per (input, output) channel pair
// instead of 144: the input tile d (6x6) and the filter g (3x3) are
// transformed, multiplied elementwise -- 36 GEMMs over channels, batched over
// a block of tiles -- and transformed back:
//     Y = A^T [ (G g G^T) . (B^T d B) ] A.
// Backward-data is the same computation on dy with each filter rotated by
// 180 degrees and its input and output channels exchanged (padding 2 - p).
// Backward-filter is the gradient of the same bilinear form: with e the 4x4
// dy tile, dW = G^T [ sum over tiles of (B^T d B) . (A e A^T) ] G -- 36
// GEMMs that reduce over the tiles instead of the channels.
//
// Accuracy: the transforms' constants (up to 5 in B, 1/24 in G, 8 in A)
// amplify rounding; the measured error against a float64 reference is about
// 10x that of direct summation (see docs/algorithms.md), which is why a
// context with CONV_MATH_STRICT never chooses it.
//
// This file is the portable path (fp64, and fp32 without AVX-512); fp32 with
// AVX-512 runs winograd_avx512.cpp, the same arithmetic vectorised over
// channels. Both share Problem (winograd.h).
#include <algorithm>
#include <cstring>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/algorithm.h"
#include "cpu/blas.h"
#include "cpu/epilogue.h"
#include "cpu/winograd.h"

namespace conv::cpu {
namespace winograd {

Problem make_problem(const ConvGeometry &g, conv_op_t op) {
    Problem p;
    p.last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    p.n = g.n;
    p.groups = g.groups;
    p.g = &g;
    p.rotate = op == CONV_OP_BACKWARD_DATA;
    if (!p.rotate) {
        p.ci = g.c, p.co = g.k, p.ih = g.in[1], p.iw = g.in[2], p.oh = g.out[1], p.ow = g.out[2];
        p.pad_top = g.pad_begin[1], p.pad_left = g.pad_begin[2];
    } else {
        p.ci = g.k, p.co = g.c, p.ih = g.out[1], p.iw = g.out[2], p.oh = g.in[1], p.ow = g.in[2];
        p.pad_top = 2 - g.pad_begin[1], p.pad_left = 2 - g.pad_begin[2];
    }
    p.cig = p.ci / p.groups;
    p.cog = p.co / p.groups;
    p.tiles_h = ceil_div(p.oh, kTile);
    p.tiles_w = ceil_div(p.ow, kTile);
    return p;
}

}  // namespace winograd

namespace {

using namespace winograd;

constexpr int64_t kBlockBudgetBytes = 3 << 20;  // per-thread V + M blocks

// Tiles per block so one thread's V and M blocks stay near its cache.
int64_t tile_block(const Problem &p, size_t es) {
    int64_t per_tile = kXi * (p.cig + p.cog) * (int64_t)es;
    int64_t tb = kBlockBudgetBytes / std::max<int64_t>(per_tile, 1);
    tb = std::clamp<int64_t>(tb / 8 * 8, 16, 256);
    return std::min(tb, std::max<int64_t>(p.tiles(), 1));
}

struct Layout {  // element offsets of one thread's scratch, and of the shared U
    int64_t tb, u, v, m, d, slot;
};

Layout scratch_layout(const Problem &p, size_t es) {
    auto align = [es](int64_t elems) { return (elems * (int64_t)es + 63) / 64 * 64 / (int64_t)es; };
    Layout l;
    l.tb = tile_block(p, es);
    l.u = align(checked_mul(checked_mul(kXi, p.groups, "workspace"), p.cog * p.cig, "workspace"));
    l.v = align(kXi * p.cig * l.tb);
    l.m = align(kXi * p.cog * l.tb);
    l.d = align(kXi * l.tb);
    l.slot = l.v + l.m + l.d;
    return l;
}

// ---- the three transforms, each over `tb` tiles at once (vectorisable).

// u (6) = G g (3), for one 3-vector. Multiplying by reciprocals rather than
// dividing: a layer's filters take ~30 of these each, and divisions made the
// filter transform dominate layers with many channels and few tiles.
template <class T>
inline void filter_1d(T g0, T g1, T g2, T *u) {
    const T q = T(1) / T(4), s = T(1) / T(6), t = T(1) / T(12), v = T(1) / T(24);
    u[0] = q * g0;
    u[1] = -s * (g0 + g1 + g2);
    u[2] = -s * (g0 - g1 + g2);
    u[3] = v * g0 + t * g1 + s * g2;
    u[4] = v * g0 - t * g1 + s * g2;
    u[5] = g2;
}

// U[group][xi][o][i] = (G w G^T)[xi] for every filter of every group.
template <class T>
void transform_filters(const Problem &p, const T *w, T *U, int64_t o) {
    const ConvGeometry &g = *p.g;
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    const int64_t gi = o / p.cog, og = o % p.cog;
    for (int64_t ig = 0; ig < p.cig; ++ig) {
        // The forward filter element (k, c, r, s): k over g.k, c over g.cg().
        int64_t k = p.rotate ? gi * p.cig + ig : o, c = p.rotate ? og : ig;
        const T *f = w + k * g.cg() * 9;
        auto at = [&](int64_t r, int64_t s) {
            if (p.rotate) r = 2 - r, s = 2 - s;
            return last ? f[(r * 3 + s) * g.cg() + c] : f[c * 9 + r * 3 + s];
        };
        T t[6][3], u[6][6];
        for (int s = 0; s < 3; ++s) {
            T col[6];
            filter_1d(at(0, s), at(1, s), at(2, s), col);
            for (int a = 0; a < 6; ++a) t[a][s] = col[a];
        }
        for (int a = 0; a < 6; ++a) filter_1d(t[a][0], t[a][1], t[a][2], u[a]);
        T *dst = U + gi * kXi * p.cog * p.cig + og * p.cig + ig;
        for (int xi = 0; xi < kXi; ++xi) dst[xi * p.cog * p.cig] = u[xi / 6][xi % 6];
    }
}

// r (6 rows of n) = B^T d (6 rows of n), rows `stride` apart.
template <class T>
inline void input_1d(const T *d, int64_t ds, T *r, int64_t rs, int64_t n) {
    for (int64_t t = 0; t < n; ++t) {
        T d0 = d[t], d1 = d[ds + t], d2 = d[2 * ds + t], d3 = d[3 * ds + t], d4 = d[4 * ds + t],
          d5 = d[5 * ds + t];
        r[t] = T(4) * d0 - T(5) * d2 + d4;
        r[rs + t] = -T(4) * d1 - T(4) * d2 + d3 + d4;
        r[2 * rs + t] = T(4) * d1 - T(4) * d2 - d3 + d4;
        r[3 * rs + t] = -T(2) * d1 - d2 + T(2) * d3 + d4;
        r[4 * rs + t] = T(2) * d1 - d2 - T(2) * d3 + d4;
        r[5 * rs + t] = T(4) * d1 - T(5) * d3 + d5;
    }
}

// V[xi][c][t] for the tiles [t0, t0 + nt) of image n, group gi.
template <class T>
void transform_inputs(const Problem &p, const T *src, int64_t n, int64_t gi, int64_t t0,
                      int64_t nt, const Layout &l, T *V, T *D) {
    const int64_t cs = p.src_cs(), hs = p.src_hs(), ws = p.src_ws(), tb = l.tb;
    const T *img = src + n * p.ci * p.ih * p.iw + gi * p.cig * cs;
    T tmp[kXi * 256];  // B^T d for up to 256 tiles (tb <= 256)
    for (int64_t c = 0; c < p.cig; ++c) {
        const T *plane = img + c * cs;
        // Gather the 6x6 patches, zero outside the image: D[xi][t].
        for (int64_t t = 0; t < nt; ++t) {
            int64_t th = (t0 + t) / p.tiles_w, tw = (t0 + t) % p.tiles_w;
            int64_t h0 = th * kTile - p.pad_top, w0 = tw * kTile - p.pad_left;
            for (int64_t a = 0; a < kAlpha; ++a) {
                int64_t h = h0 + a;
                bool row_in = h >= 0 && h < p.ih;
                for (int64_t b = 0; b < kAlpha; ++b) {
                    int64_t w = w0 + b;
                    D[(a * kAlpha + b) * tb + t] =
                        (row_in && w >= 0 && w < p.iw) ? plane[h * hs + w * ws] : T(0);
                }
            }
        }
        // Columns then rows: tmp[a][b'] = sum_b d[a][b] B[b][b'], then V = B^T tmp.
        for (int64_t a = 0; a < kAlpha; ++a)
            input_1d(D + a * kAlpha * tb, tb, tmp + a * kAlpha * tb, tb, nt);
        for (int64_t b = 0; b < kAlpha; ++b)
            input_1d(tmp + b * tb, kAlpha * tb, V + (b * p.cig + c) * tb, kAlpha * p.cig * tb, nt);
    }
}

// o (4 rows of n) = A^T m (6 rows of n).
template <class T>
inline void output_1d(const T *m, int64_t ms, T *o, int64_t os, int64_t n) {
    for (int64_t t = 0; t < n; ++t) {
        T m0 = m[t], m1 = m[ms + t], m2 = m[2 * ms + t], m3 = m[3 * ms + t], m4 = m[4 * ms + t],
          m5 = m[5 * ms + t];
        o[t] = m0 + m1 + m2 + m3 + m4;
        o[os + t] = m1 - m2 + T(2) * m3 - T(2) * m4;
        o[2 * os + t] = m1 + m2 + T(4) * m3 + T(4) * m4;
        o[3 * os + t] = m1 - m2 + T(8) * m3 - T(8) * m4 + m5;
    }
}

// Y tiles from M[xi][o][t], with bias and ReLU, cropped at the image edge.
template <class T>
void transform_outputs(const Problem &p, const T *M, int64_t n, int64_t gi, int64_t t0,
                       int64_t nt, const Layout &l, const T *bias, bool relu, T *dst, T *D) {
    const int64_t cs = p.dst_cs(), hs = p.dst_hs(), ws = p.dst_ws(), tb = l.tb;
    T *img = dst + n * p.co * p.oh * p.ow + gi * p.cog * cs;
    T tmp[kTile * kAlpha * 256];
    for (int64_t o = 0; o < p.cog; ++o) {
        // Rows: tmp[a'][b] = sum_a A[a][a'] m[a][b]; then columns into D[a'][b'].
        const T *mo = M + o * tb;  // M[xi][o][t] with xi stride cog*tb
        for (int64_t b = 0; b < kAlpha; ++b)
            output_1d(mo + b * p.cog * tb, kAlpha * p.cog * tb, tmp + b * tb, kAlpha * tb, nt);
        for (int64_t a = 0; a < kTile; ++a)
            output_1d(tmp + a * kAlpha * tb, tb, D + a * kTile * tb, tb, nt);
        const T b = bias ? bias[gi * p.cog + o] : T(0);
        T *plane = img + o * cs;
        for (int64_t t = 0; t < nt; ++t) {
            int64_t th = (t0 + t) / p.tiles_w, tw = (t0 + t) % p.tiles_w;
            int64_t h0 = th * kTile, w0 = tw * kTile;
            int64_t hn = std::min(kTile, p.oh - h0), wn = std::min(kTile, p.ow - w0);
            for (int64_t a = 0; a < hn; ++a)
                for (int64_t c = 0; c < wn; ++c) {
                    T v = D[(a * kTile + c) * tb + t] + b;
                    plane[(h0 + a) * hs + (w0 + c) * ws] = (relu && v < T(0)) ? T(0) : v;
                }
        }
    }
}

// ---- backward-filter: dW = G^T [ sum over tiles of (B^T d B) . (A e A^T) ] G
// (the gradient of the forward's bilinear form; e is the 4x4 dy tile).

// z (6 rows of n) = A e (4 rows of n): the transpose of output_1d.
template <class T>
inline void dy_1d(const T *e, int64_t es, T *z, int64_t zs, int64_t n) {
    for (int64_t t = 0; t < n; ++t) {
        T e0 = e[t], e1 = e[es + t], e2 = e[2 * es + t], e3 = e[3 * es + t];
        z[t] = e0;
        z[zs + t] = e0 + e1 + e2 + e3;
        z[2 * zs + t] = e0 - e1 + e2 - e3;
        z[3 * zs + t] = e0 + T(2) * e1 + T(4) * e2 + T(8) * e3;
        z[4 * zs + t] = e0 - T(2) * e1 + T(4) * e2 - T(8) * e3;
        z[5 * zs + t] = e3;
    }
}

// g (3) = G^T s (6), s `ss` apart: back from the points to the taps.
template <class T>
inline void taps_1d(const T *s, int64_t ss, T *g, int64_t gs) {
    const T q = T(1) / T(4), six = T(1) / T(6), tw = T(1) / T(12), tf = T(1) / T(24);
    T s0 = s[0], s1 = s[ss], s2 = s[2 * ss], s3 = s[3 * ss], s4 = s[4 * ss], s5 = s[5 * ss];
    g[0] = q * s0 - six * (s1 + s2) + tf * (s3 + s4);
    g[gs] = six * (s2 - s1) + tw * (s3 - s4);
    g[2 * gs] = six * (s3 + s4 - s1 - s2) + s5;
}

// Z[xi][k][t] for the tiles [t0, t0 + nt) of image n, group gi (dy is the
// problem's destination side: co channels of oh x ow).
template <class T>
void transform_dy(const Problem &p, const T *dy, int64_t n, int64_t gi, int64_t t0, int64_t nt,
                  const Layout &l, T *Z, T *D) {
    const int64_t cs = p.dst_cs(), hs = p.dst_hs(), ws = p.dst_ws(), tb = l.tb;
    const T *img = dy + n * p.co * p.oh * p.ow + gi * p.cog * cs;
    T tmp[kTile * kAlpha * 256];
    for (int64_t k = 0; k < p.cog; ++k) {
        const T *plane = img + k * cs;
        for (int64_t t = 0; t < nt; ++t) {  // D[i][j][t]: the 4x4 tile, zero past the plane
            int64_t h0 = (t0 + t) / p.tiles_w * kTile, w0 = (t0 + t) % p.tiles_w * kTile;
            for (int64_t i = 0; i < kTile; ++i)
                for (int64_t j = 0; j < kTile; ++j)
                    D[(i * kTile + j) * tb + t] = h0 + i < p.oh && w0 + j < p.ow
                                                      ? plane[(h0 + i) * hs + (w0 + j) * ws]
                                                      : T(0);
        }
        for (int64_t i = 0; i < kTile; ++i)  // tmp[i][b] = (e A^T)[i][b]
            dy_1d(D + i * kTile * tb, tb, tmp + i * kAlpha * tb, tb, nt);
        for (int64_t b = 0; b < kAlpha; ++b)
            dy_1d(tmp + b * tb, kAlpha * tb, Z + (b * p.cog + k) * tb, kAlpha * p.cog * tb, nt);
    }
}

template <class T>
void run_filter_typed(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    const Problem p = make_problem(g, CONV_OP_BACKWARD_FILTER);
    const Layout l = scratch_layout(p, sizeof(T));
    T *S = static_cast<T *>(ws), *V = S + l.u, *Z = V + l.v, *D = Z + l.m;
    const T *x = static_cast<const T *>(args.x), *dy = static_cast<const T *>(args.y);
    T *dw = static_cast<T *>(args.w);
    const int64_t blocks = ceil_div(p.tiles(), l.tb), plane = p.cog * p.cig;
    if (p.n == 0) std::fill(S, S + p.groups * kXi * plane, T(0));
    for (int64_t gi = 0; gi < p.groups; ++gi)
        for (int64_t n = 0; n < p.n; ++n)
            for (int64_t b = 0; b < blocks; ++b) {
                int64_t t0 = b * l.tb, nt = std::min(l.tb, p.tiles() - t0);
                transform_inputs(p, x, n, gi, t0, nt, l, V, D);
                transform_dy(p, dy, n, gi, t0, nt, l, Z, D);
                const T beta = n == 0 && b == 0 ? T(0) : T(1);
                pool.parallel_for(
                    kXi,
                    [&](int64_t xi, int) {
                        gemm(false, true, p.cog, p.cig, nt, T(1), Z + xi * p.cog * l.tb, l.tb,
                             V + xi * p.cig * l.tb, l.tb, beta, S + (gi * kXi + xi) * plane, p.cig);
                    },
                    threads);
            }
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    pool.parallel_for(
        p.groups * p.cog,
        [&](int64_t item, int) {
            const T *s = S + (item / p.cog * kXi * p.cog + item % p.cog) * p.cig;
            T *out = dw + item * p.cig * 9;
            for (int64_t c = 0; c < p.cig; ++c) {
                T cols[3][6], taps[3][3];
                for (int64_t b = 0; b < kAlpha; ++b) taps_1d(s + b * plane + c, 6 * plane, &cols[0][b], 6);
                for (int r = 0; r < 3; ++r) taps_1d(cols[r], 1, taps[r], 1);
                for (int r = 0; r < 3; ++r)
                    for (int q = 0; q < 3; ++q)
                        out[last ? (r * 3 + q) * p.cig + c : c * 9 + r * 3 + q] = taps[r][q];
            }
        },
        threads);
}

template <class T>
void run_typed(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    Problem p = make_problem(g, args.op);
    Layout l = scratch_layout(p, sizeof(T));
    T *U = static_cast<T *>(ws);
    const T *w = static_cast<const T *>(args.w);
    const T *src = static_cast<const T *>(p.rotate ? args.y : args.x);
    T *dst = static_cast<T *>(p.rotate ? args.x : args.y);
    const T *bias = p.rotate ? nullptr : static_cast<const T *>(args.bias);
    const bool relu = !p.rotate && g.activation == CONV_ACTIVATION_RELU;

    pool.parallel_for(p.co, [&](int64_t o, int) { transform_filters(p, w, U, o); }, threads);
    const int64_t blocks = ceil_div(p.tiles(), l.tb);
    pool.parallel_for(
        p.n * p.groups * blocks,
        [&](int64_t item, int s) {
            int64_t b = item % blocks, gi = item / blocks % p.groups, n = item / blocks / p.groups;
            int64_t t0 = b * l.tb, nt = std::min(l.tb, p.tiles() - t0);
            T *V = U + l.u + s * l.slot, *M = V + l.v, *D = M + l.m;
            transform_inputs(p, src, n, gi, t0, nt, l, V, D);
            const T *Ug = U + gi * kXi * p.cog * p.cig;
            for (int64_t xi = 0; xi < kXi; ++xi)
                gemm(false, false, p.cog, nt, p.cig, T(1), Ug + xi * p.cog * p.cig, p.cig,
                     V + xi * p.cig * l.tb, l.tb, T(0), M + xi * p.cog * l.tb, l.tb);
            transform_outputs(p, M, n, gi, t0, nt, l, bias, relu, dst, D);
        },
        threads);
}

void run_avx512(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *args.g;
    Problem p = make_problem(g, args.op);
    if (args.op == CONV_OP_BACKWARD_FILTER)
        return avx512_run_filter(p, static_cast<const float *>(args.x),
                                 static_cast<const float *>(args.y), static_cast<float *>(args.w),
                                 ws, pool, threads);
    const float *src = static_cast<const float *>(p.rotate ? args.y : args.x);
    float *dst = static_cast<float *>(p.rotate ? args.x : args.y);
    const float *bias = p.rotate ? nullptr : static_cast<const float *>(args.bias);
    const bool relu = !p.rotate && g.activation == CONV_ACTIVATION_RELU;
    avx512_run(p, static_cast<const float *>(args.w), src, bias, relu, dst, ws, pool, threads,
               static_cast<const float *>(args.prepared));
}

class Winograd4x4 final : public Algorithm {
public:
    const char *name() const override { return "winograd_4x4_3x3"; }
    conv_algo_t public_id() const override { return CONV_ALGO_WINOGRAD_4X4_3X3; }
    const char *why_not(const ConvGeometry &g, conv_op_t op) const override {
        bool shape = g.is_planar() && g.kernel[1] == 3 && g.kernel[2] == 3 &&
                     g.stride[1] == 1 && g.stride[2] == 1 && g.dilation[1] == 1 &&
                     g.dilation[2] == 1;
        if (!shape) return "it needs a 2-D 3x3 kernel with stride 1 and no dilation";
        // Backward-data pads by 2 - p: the forward padding must be 0..2.
        for (int a = 1; a < 3; ++a)
            if (g.pad_begin[a] > 2 || g.pad_end[a] > 2 || g.pad_end[a] < 0)
                return "it needs padding 0..2 on each side";
        return nullptr;
    }
    // Winograd transforms every filter on every call into a 36 x K x C array
    // (4x the weights) that the GEMMs then read once per block of tiles, so
    // it pays only where enough tiles share it and enough channels share the
    // transforms. With AVX-512 the alternative is direct_avx512; against it,
    // forced, 1 thread, interleaved rounds (docs/algorithms.md):
    // - 16->16 loses every pass (ResNet-20's 32x32 at batch 32: 1.31x /
    //   1.59x / 3.24x slower); from 16->32 forward and backward-data win or
    //   come out even (16->32 8x8, 32->32 16x16, 64->64 8x8 at batch 32:
    //   1.0-1.6x);
    // - U outgrows the caches from 256 x 256 channels and is read from
    //   memory at every block: 256->256 14x14 at batch 1 (16 tiles) loses
    //   1.4x and 512->512 7x7 at batch 8 (32 tiles) 1.3-1.6x, while 49
    //   tiles win (VGG-16's 256->512 and 512->512 28x28 at batch 1: 1.28x,
    //   1.36-1.47x), as do 128 (256->256 14x14 at batch 8: 1.2-1.3x);
    // - backward-filter sums 36 K x C products over the tiles and reads them
    //   back, while direct_avx512's filter gradient is fastest on long rows:
    //   winograd loses on planes from 16x16 below 128 x 128 channels (64->64
    //   56x56 1.7x at batch 1, 1.06x at batch 8; 32->32 16x16 and 32->64
    //   26x26 at batch 32 1.7x) and with few tiles (128->128 28x28 at batch
    //   1: 1.10x); it wins from 128 tiles at 128 x 128 and 256 x 256 (1.33x,
    //   1.1x at batch 8) and on 8x8 planes (64->64 at batch 32 1.0-1.35x).
    // The portable path (fp64, or no AVX-512) keeps tile blocks within one
    // image, so small planes also make its GEMMs narrow: 56x56 and 28x28
    // planes win once the batch brings >= 128 tiles; 14x14 loses even at
    // batch 8, 7x7 always.
    bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        int64_t per_image = ((g.out[1] + 3) / 4) * ((g.out[2] + 3) / 4), tiles = g.n * per_image;
        if (g.cg() < 16 || g.kg() < 16) return false;
        if (avx512_applies(dtype)) {
            const int64_t pairs = g.cg() * g.kg();
            const int64_t least = pairs >= 256 * 256 ? 48 : 16;
            if (g.layout == CONV_LAYOUT_CHANNELS_LAST)
                // direct_avx512 leaves channels-last backward-filter of more
                // than 28 channels to im2col, which loses 1.3-2.2x here
                // (64->64 56x56 and 128->128 28x28 at batch 1, 32->32
                // 16x16 at batch 32); 16->16 forward is even. 256->256
                // 14x14 at batch 1 goes to im2col (2.2-2.5x).
                return tiles >= least;
            if (op == CONV_OP_BACKWARD_FILTER)
                return (pairs >= 128 * 128 || per_image <= 4) &&
                       tiles >= std::max<int64_t>(128, pairs / 512);
            return pairs > 16 * 16 && tiles >= least;
        }
        // The portable path has no backward-filter tuned for speed.
        return op != CONV_OP_BACKWARD_FILTER && per_image >= 49 && tiles >= 128;
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        Problem p = make_problem(g, op);
        if (avx512_applies(dtype))
            return op == CONV_OP_BACKWARD_FILTER ? avx512_filter_workspace_bytes(p)
                                                 : avx512_workspace_bytes(p, threads);
        Layout l = scratch_layout(p, dtype_size(dtype));
        int64_t elems = checked_add(l.u, checked_mul(l.slot, threads, "workspace"), "workspace");
        return (size_t)checked_mul(elems, (int64_t)dtype_size(dtype), "workspace");
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        const bool filter = args.op == CONV_OP_BACKWARD_FILTER;
        if (avx512_applies(args.dtype))
            run_avx512(args, ws, pool, threads);
        else if (args.dtype == CONV_DTYPE_FLOAT32)
            filter ? run_filter_typed<float>(args, ws, pool, threads)
                   : run_typed<float>(args, ws, pool, threads);
        else
            filter ? run_filter_typed<double>(args, ws, pool, threads)
                   : run_typed<double>(args, ws, pool, threads);
        if (filter && args.bias)
            channel_sums({args.g->layout, args.g->n, args.g->k, args.g->out_size()}, args.dtype,
                         args.y, args.bias, pool, threads);
    }
    bool strict() const override { return false; }

    // The AVX-512 path's Winograd-domain filters (forward and backward-data)
    // can be made once instead of on every call: for a 256x256 layer they
    // are 36 x 256 x 256 floats (9.4 MB) read from the filters and written.
    size_t prepared_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        if (!avx512_applies(dtype) || op == CONV_OP_BACKWARD_FILTER) return 0;
        return avx512_prepared_bytes(make_problem(g, op));
    }
    void prepare_weights(const ConvGeometry &g, conv_op_t op, conv_dtype_t, const void *w,
                         void *out, ThreadPool &pool, int threads) const override {
        avx512_prepare_filters(make_problem(g, op), static_cast<const float *>(w),
                               static_cast<float *>(out), pool, threads);
    }
};

}  // namespace

const Algorithm &winograd_4x4_3x3_algorithm() {
    static const Winograd4x4 algo;
    return algo;
}

}  // namespace conv::cpu
