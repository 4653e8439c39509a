// Winograd F(4x4, 3x3) for fp32 with AVX-512. The same arithmetic as the
// portable path (winograd.cpp), laid out for 16-lane vectors: every
// transform works on one zmm = 16 channels of one pixel, and the 36 GEMMs
// run on a register-blocked micro-kernel that reads the transformed data in
// place (no packing).
//
// Data flow of one call, all scratch in the workspace:
//   1. filters -> U[g][xi][i][o]    (in panels of 32 o, padded to 16 with zeros)
//      src     -> P[n][g][row][col][c]: channels-last, zero-padded to whole
//                 6x6 tiles and to 16 channels, so the input transform needs
//                 no bounds checks or masks (one parallel region for both)
//   2. per block of tiles (a range of the tile index over all images):
//      P -> V[xi][t][i], M[xi][t][o] = V[xi][t][:] U[xi][:][o],
//      M -> dst with bias and ReLU, cropped at the image edge.
// When there are fewer (group, block) items than threads (small planes at
// batch 1), the input transforms run first and the GEMMs and output
// transforms are shared out by output channels instead.
// Backward-filter (its own section below) pads dy the same way, transforms
// both per block of tiles and accumulates the 36 products over the blocks.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/isa.h"
#include "cpu/winograd.h"

namespace conv::cpu::winograd {

#if CONV_HAVE_AVX512_KERNELS
namespace {

constexpr int64_t kLanes = 16;
constexpr int kRows = 14;  // tiles per micro-kernel call: 14 x 32 accumulators
// V and M of one block should stay in the core's L2 (1 MiB on Zen 5)
// between the transforms and the GEMMs.
constexpr int64_t kBlockBudgetBytes = 640 << 10;
// Transformed filters larger than this go to memory by non-temporal stores
// (smaller ones may stay in L3 for the GEMMs: 128 x 128 channels, 2.4 MB,
// measured 0.95x streamed).
constexpr int64_t kStreamBytes = 4 << 20;

// Sizes and workspace offsets (in floats) of one call.
struct Plan {
    int64_t cip, cop;       // channels per group rounded up to 16
    int64_t hp, wp;         // rows and columns of a padded image in P
    int64_t tiles;          // tiles per group: n * tiles_h * tiles_w
    int64_t tb, blocks;     // tiles per block, blocks per group
    bool split;             // share blocks out by output channels
    int64_t o_part;         // output channels per item in split mode
    int64_t xs;             // floats from one of U's 36 matrices to the next
    int64_t u, pimg, slots; // offsets of U, P, and the per-thread slots
    int64_t v, slot;        // V's size; slot size (V then M)
    int64_t total;
};

int64_t align16(int64_t floats) { return round_up(floats, kLanes); }  // 64 bytes

Plan make_plan(const Problem &p, int threads) {
    Plan l;
    threads = std::max(threads, 1);
    l.cip = round_up(p.cig, kLanes);
    l.cop = round_up(p.cog, kLanes);
    l.hp = p.tiles_h * kTile + 2;
    l.wp = p.tiles_w * kTile + 2;
    l.tiles = checked_mul(p.n, p.tiles(), "workspace");
    // Blocks as large as the cache budget allows, in a number that shares
    // evenly between the threads.
    // At least kRows tiles even when that overflows L2 (wide layers): U is
    // read once per block, and more tiles per block did not measure faster.
    int64_t per_tile = kXi * (l.cip + l.cop) * (int64_t)sizeof(float);
    int64_t tb_max = std::clamp<int64_t>(kBlockBudgetBytes / per_tile, kRows, 8 * kRows);
    int64_t work = checked_mul(p.groups, l.tiles, "workspace");
    int64_t rounds = ceil_div(work, threads * tb_max);
    int64_t blocks = std::max<int64_t>(ceil_div(rounds * threads, p.groups), 1);
    l.tb = std::max<int64_t>(ceil_div(l.tiles, blocks), 1);
    l.blocks = ceil_div(l.tiles, l.tb);
    l.split = p.groups * l.blocks < threads;
    int64_t want_parts = ceil_div(2 * threads, std::max<int64_t>(p.groups * l.blocks, 1));
    l.o_part = std::min(l.cop, round_up(ceil_div(l.cop, want_parts), 2 * kLanes));

    // An odd number of cache lines between U's matrices: the filter
    // transform stores to all 36 at once, and a power-of-two distance (256 x
    // 256 channels: 256 KiB) put those 36 lines in one L1 and one L2 set.
    l.xs = checked_mul(p.cig, l.cop, "workspace");
    if (l.xs / kLanes % 2 == 0) l.xs += kLanes;
    l.u = 0;
    int64_t u_size = checked_mul(p.groups * kXi, l.xs, "workspace");
    l.pimg = align16(u_size);
    int64_t p_size = checked_mul(checked_mul(p.n * p.groups, l.hp * l.wp, "workspace"), l.cip,
                                 "workspace");
    l.slots = checked_add(l.pimg, align16(p_size), "workspace");
    l.v = align16(checked_mul(kXi * l.tb, l.cip, "workspace"));
    l.slot = checked_add(l.v, align16(checked_mul(kXi * l.tb, l.cop, "workspace")), "workspace");
    l.total = checked_add(l.slots, checked_mul(l.slot, threads, "workspace"), "workspace");
    return l;
}

// ---- 16x16 transposes

// out[j] lane o = base[o * stride + j] for o < rows, j in `cols`; zero elsewhere.
CONV_TARGET_AVX512 void load_transposed(const float *base, int64_t stride, int64_t rows,
                                        __mmask16 cols, __m512 out[16]) {
    __m512 r[16], t[16];
    for (int o = 0; o < 16; ++o)
        r[o] = o < rows ? _mm512_maskz_loadu_ps(cols, base + o * stride) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; ++i) {
            t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; ++i) {
        out[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        out[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

// ---- the 1-D transforms on 16-lane vectors

// u (6) = G g (3)
CONV_TARGET_AVX512 inline void filter_1d(__m512 g0, __m512 g1, __m512 g2, __m512 *u, int us) {
    const __m512 q = _mm512_set1_ps(1.f / 4), s = _mm512_set1_ps(1.f / 6),
                 t = _mm512_set1_ps(1.f / 12), v = _mm512_set1_ps(1.f / 24);
    __m512 g02 = _mm512_add_ps(g0, g2);
    u[0] = _mm512_mul_ps(q, g0);
    u[us] = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), s), _mm512_add_ps(g02, g1));
    u[2 * us] = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), s), _mm512_sub_ps(g02, g1));
    __m512 even = _mm512_fmadd_ps(v, g0, _mm512_mul_ps(s, g2)), odd = _mm512_mul_ps(t, g1);
    u[3 * us] = _mm512_add_ps(even, odd);
    u[4 * us] = _mm512_sub_ps(even, odd);
    u[5 * us] = g2;
}

// r (6) = B^T d (6)
CONV_TARGET_AVX512 inline void input_1d(const __m512 *d, __m512 *r) {
    const __m512 c2 = _mm512_set1_ps(2), c4 = _mm512_set1_ps(4), c5 = _mm512_set1_ps(5);
    r[0] = _mm512_fmadd_ps(c4, d[0], _mm512_fnmadd_ps(c5, d[2], d[4]));
    __m512 a = _mm512_fnmadd_ps(c4, d[2], d[4]), b = _mm512_fnmadd_ps(c4, d[1], d[3]);
    r[1] = _mm512_add_ps(a, b);
    r[2] = _mm512_sub_ps(a, b);
    __m512 e = _mm512_sub_ps(d[4], d[2]), f = _mm512_mul_ps(c2, _mm512_sub_ps(d[1], d[3]));
    r[3] = _mm512_sub_ps(e, f);
    r[4] = _mm512_add_ps(e, f);
    r[5] = _mm512_fmadd_ps(c4, d[1], _mm512_fnmadd_ps(c5, d[3], d[5]));
}

// o (4) = A^T m (6)
CONV_TARGET_AVX512 inline void output_1d(const __m512 *m, __m512 *o) {
    __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
    __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2), d34, d12);
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4), s34, s12);
    o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8), d34, d12), m[5]);
}

// ---- filters

// U[g][xi] is a cig x cop matrix stored as column panels of 32 output
// channels (the last one 16 when cop is not a multiple of 32), each panel
// row-major: the micro-kernel then reads its rows contiguously, and rows
// cop floats apart (1 KiB at 256 channels) do not collide in L1 sets.
int64_t panel_offset(const Problem &p, const Plan &l, int64_t o, int64_t i) {
    const int64_t o_panel = o / 32 * 32, width = std::min<int64_t>(32, l.cop - o_panel);
    return o_panel * p.cig + i * width + (o - o_panel);
}

// U[g][xi][i][o0, o0 + 16) for every i of group g (in panels, above).
CONV_TARGET_AVX512 void transform_filters(const Problem &p, const Plan &l, const float *w, int64_t g,
                                          int64_t o0, float *U) {
    const ConvGeometry &geo = *p.g;
    const bool klast = geo.layout == CONV_LAYOUT_CHANNELS_LAST;  // filters K R S C
    const int64_t cg = geo.cg(), no = std::min(kLanes, p.cog - o0);
    // Each store fills one cache line of U. Past kStreamBytes, storing
    // around the caches saves reading every line before writing it.
    const bool stream = l.xs * kXi * p.groups * (int64_t)sizeof(float) > kStreamBytes;
    alignas(64) float taps[16][9][16];  // [i][tap][o] of 16 input channels
    for (int64_t i0 = 0; i0 < p.cig; i0 += kLanes) {
        const int64_t ni = std::min(kLanes, p.cig - i0);
        __m512 col[16];
        if (!p.rotate && !klast) {  // w[k][c][tap]: rows o over the flat (i, tap)
            const float *base = w + ((g * p.cog + o0) * cg + i0) * 9;
            float *flat = &taps[0][0][0];
            for (int64_t j0 = 0; j0 < ni * 9; j0 += kLanes) {
                load_transposed(base + j0, cg * 9, no, first_lanes(ni * 9 - j0), col);
                for (int64_t j = 0; j < std::min(kLanes, ni * 9 - j0); ++j)
                    _mm512_store_ps(flat + (j0 + j) * kLanes, col[j]);
            }
        } else if (!p.rotate) {  // w[k][tap][c]: per tap, rows o over i
            for (int tap = 0; tap < 9; ++tap) {
                load_transposed(w + (g * p.cog + o0) * 9 * cg + tap * cg + i0, 9 * cg, no,
                                first_lanes(ni), col);
                for (int64_t i = 0; i < ni; ++i) _mm512_store_ps(taps[i][tap], col[i]);
            }
        } else if (!klast) {  // o is the forward c: w[k][o][8 - tap], rows o over taps
            for (int64_t i = 0; i < ni; ++i) {
                load_transposed(w + ((g * p.cig + i0 + i) * cg + o0) * 9, 9, no, first_lanes(9),
                                col);
                for (int tap = 0; tap < 9; ++tap) _mm512_store_ps(taps[i][8 - tap], col[tap]);
            }
        } else {  // w[k][8 - tap][o]: o already contiguous
            for (int64_t i = 0; i < ni; ++i)
                for (int tap = 0; tap < 9; ++tap)
                    _mm512_store_ps(taps[i][tap],
                                    _mm512_maskz_loadu_ps(first_lanes(no),
                                                          w + (g * p.cig + i0 + i) * 9 * cg +
                                                              (8 - tap) * cg + o0));
        }
        for (int64_t i = 0; i < ni; ++i) {
            __m512 t[6][3], u[6][6];
            for (int s = 0; s < 3; ++s)
                filter_1d(_mm512_load_ps(taps[i][s]), _mm512_load_ps(taps[i][3 + s]),
                          _mm512_load_ps(taps[i][6 + s]), &t[0][s], 3);
            for (int a = 0; a < 6; ++a) filter_1d(t[a][0], t[a][1], t[a][2], u[a], 1);
            float *dst = U + g * kXi * l.xs + panel_offset(p, l, o0, i0 + i);
            if (stream)
                for (int xi = 0; xi < kXi; ++xi) _mm512_stream_ps(dst + xi * l.xs, u[xi / 6][xi % 6]);
            else
                for (int xi = 0; xi < kXi; ++xi) _mm512_store_ps(dst + xi * l.xs, u[xi / 6][xi % 6]);
        }
    }
    if (stream) _mm_sfence();  // weakly ordered stores: done before the GEMMs read U
}

// ---- zero-padded channels-last copies (the input P; backward-filter's dy Q)

// One image plane set as the copies read it: `channels` of the tensor's
// `total` per pixel (group offset `c0`), h x w pixels of batch entry n.
struct Image {
    const float *data;
    bool last;
    int64_t total, c0, channels, h, w;
};

// Row `r` of a padded copy whose row 0 is source row -top, column 0 source
// column -left: wp pixels of cpad channels (zeros outside the source).
CONV_TARGET_AVX512 void pad_image_row(const Image &im, int64_t n, int64_t r, int64_t top,
                                      int64_t left, int64_t wp, int64_t cpad, float *row) {
    const int64_t h = r - top;
    if (h < 0 || h >= im.h) {
        std::memset(row, 0, sizeof(float) * wp * cpad);
        return;
    }
    const int64_t right = std::max<int64_t>(wp - left - im.w, 0);
    std::memset(row, 0, sizeof(float) * left * cpad);
    std::memset(row + (left + im.w) * cpad, 0, sizeof(float) * right * cpad);
    float *body = row + left * cpad;
    const int64_t iw = std::min(im.w, wp - left);
    if (im.last) {
        const float *s = im.data + ((n * im.h + h) * im.w) * im.total + im.c0;
        for (int64_t x = 0; x < iw; ++x)
            for (int64_t c = 0; c < cpad; c += kLanes)
                _mm512_store_ps(body + x * cpad + c,
                                _mm512_maskz_loadu_ps(first_lanes(im.channels - c), s + x * im.total + c));
    } else {
        const float *s = im.data + ((n * im.total + im.c0) * im.h + h) * im.w;
        __m512 px[16];
        for (int64_t c = 0; c < cpad; c += kLanes)
            for (int64_t x0 = 0; x0 < iw; x0 += kLanes) {
                const int64_t nx = std::min(kLanes, iw - x0);
                load_transposed(s + c * im.h * im.w + x0, im.h * im.w, im.channels - c,
                                first_lanes(nx), px);
                for (int64_t x = 0; x < nx; ++x) _mm512_store_ps(body + (x0 + x) * cpad + c, px[x]);
            }
    }
}

// Row `r` of the padded input image of (n, g) in P.
CONV_TARGET_AVX512 void pad_row(const Problem &p, const Plan &l, const float *src, int64_t n,
                                int64_t g, int64_t r, float *P) {
    const Image im{src, p.last, p.ci, g * p.cig, p.cig, p.ih, p.iw};
    pad_image_row(im, n, r, p.pad_top, p.pad_left, l.wp, l.cip,
                  P + (((n * p.groups + g) * l.hp + r) * l.wp) * l.cip);
}

// ---- per block of tiles

// Where tile `t` (index over n x tiles_h x tiles_w) lies.
struct TilePos {
    int64_t n, h0, w0;
};
TilePos tile_pos(const Problem &p, int64_t t) {
    int64_t tw = t % p.tiles_w, th = t / p.tiles_w % p.tiles_h, n = t / p.tiles();
    return {n, th * kTile, tw * kTile};
}

// V[xi][t - t0][c0, c1) = B^T d B for the tiles [t0, t0 + nt).
CONV_TARGET_AVX512 void transform_inputs(const Problem &p, const Plan &l, const float *P,
                                         int64_t g, int64_t t0, int64_t nt, int64_t c0,
                                         int64_t c1, float *V) {
    const int64_t xs = l.tb * l.cip;  // V's xi stride
    for (int64_t t = 0; t < nt; ++t) {
        TilePos tp = tile_pos(p, t0 + t);
        const float *d = P + (((tp.n * p.groups + g) * l.hp + tp.h0) * l.wp + tp.w0) * l.cip;
        for (int64_t c = c0; c < c1; c += kLanes) {
            __m512 rows[6][6];  // rows[a][b'] = (d B)[a][b']
            for (int a = 0; a < 6; ++a) {
                __m512 x[6];
                for (int b = 0; b < 6; ++b) x[b] = _mm512_loadu_ps(d + (a * l.wp + b) * l.cip + c);
                input_1d(x, rows[a]);
            }
            float *v = V + t * l.cip + c;
            for (int b = 0; b < 6; ++b) {
                __m512 x[6], r[6];
                for (int a = 0; a < 6; ++a) x[a] = rows[a][b];
                input_1d(x, r);
                for (int a = 0; a < 6; ++a) _mm512_store_ps(v + (a * 6 + b) * xs, r[a]);
            }
        }
    }
}

// c[r][j, j + 16 NV) (+)= sum_i a[r * a_row + i * a_step] b[i * b_step + j, ...)
// for R rows: R broadcasts and NV loads per step. The forward GEMMs have
// tiles as rows (a = V, b = the filters' panel); backward-filter's have
// filters as rows, reading Z down its columns.
template <int R, int NV>
CONV_TARGET_AVX512 void micro_kernel(const float *a, int64_t a_row, int64_t a_step, const float *b,
                                     int64_t b_step, int64_t steps, float *c, int64_t c_row,
                                     bool accumulate) {
    __m512 acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NV; ++j)
            acc[r][j] = accumulate ? _mm512_load_ps(c + r * c_row + j * kLanes) : _mm512_setzero_ps();
    for (int64_t i = 0; i < steps; ++i) {
        __m512 w[NV];
        for (int j = 0; j < NV; ++j) w[j] = _mm512_load_ps(b + i * b_step + j * kLanes);
        for (int r = 0; r < R; ++r) {
            __m512 x = _mm512_set1_ps(a[r * a_row + i * a_step]);
            for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(x, w[j], acc[r][j]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NV; ++j) _mm512_store_ps(c + r * c_row + j * kLanes, acc[r][j]);
}

using MicroKernel = void (*)(const float *, int64_t, int64_t, const float *, int64_t, int64_t,
                             float *, int64_t, bool);

template <int NV, int... R>
constexpr auto kernel_row(std::integer_sequence<int, R...>) {
    return std::array<MicroKernel, sizeof...(R)>{&micro_kernel<R + 1, NV>...};
}
// kKernels[NV - 1][R - 1]
const std::array<MicroKernel, kRows> kKernels[2] = {
    kernel_row<1>(std::make_integer_sequence<int, kRows>{}),
    kernel_row<2>(std::make_integer_sequence<int, kRows>{}),
};

// M[xi][t][o0, o1) for the nt tiles of a block.
void multiply(const Problem &p, const Plan &l, const float *Ug, const float *V, int64_t nt,
              int64_t o0, int64_t o1, float *M) {
    for (int64_t xi = 0; xi < kXi; ++xi) {
        const float *u = Ug + xi * l.xs, *v = V + xi * l.tb * l.cip;
        float *m = M + xi * l.tb * l.cop;
        for (int64_t o = o0; o < o1; o += 2 * kLanes) {
            const int nv = o1 - o >= 2 * kLanes ? 2 : 1;
            const float *panel = u + o * p.cig;  // cig x (16 nv), rows contiguous
            for (int64_t t = 0; t < nt;) {
                // Equal chunks: 33 tiles as 11 + 11 + 11, not 14 + 14 + 5.
                const int rows = (int)ceil_div(nt - t, ceil_div(nt - t, kRows));
                kKernels[nv - 1][rows - 1](v + t * l.cip, l.cip, 1, panel, 16 * nv, p.cig,
                                           m + t * l.cop + o, l.cop, false);
                t += rows;
            }
        }
    }
}

// The hn x wn corner of a 4x4 tile (row-major in c) to rows `ow` apart.
// A full row is one 16-byte store; a partial one is a 512-bit masked store
// of the row moved to the low lanes. Never a masked 128-bit store of an
// extracted lane: GCC emits that as `vextractf32x4 ..., mem{k}`, which
// faults on its masked-off lanes past the end of a mapping on Cascade Lake
// and Sapphire Rapids (issue 28; tests/test_guard_pages.c, and
// tests/check_masked_stores.sh keeps the form out of the library).
CONV_TARGET_AVX512 void store_tile(float *out, int64_t ow, int64_t hn, int64_t wn, __m512 c) {
    const __m512 rows[4] = {c, _mm512_shuffle_f32x4(c, c, 0x55), _mm512_shuffle_f32x4(c, c, 0xaa),
                            _mm512_shuffle_f32x4(c, c, 0xff)};
    if (wn == 4) {
        for (int64_t a = 0; a < hn; ++a) _mm_storeu_ps(out + a * ow, _mm512_castps512_ps128(rows[a]));
        return;
    }
    const __mmask16 row = (__mmask16)((1u << wn) - 1);
    for (int64_t a = 0; a < hn; ++a) _mm512_mask_storeu_ps(out + a * ow, row, rows[a]);
}

// dst tiles [t0, t0 + nt), channels [o0, o1) of group g = A^T m A + bias, ReLU.
CONV_TARGET_AVX512 void transform_outputs(const Problem &p, const Plan &l, const float *M,
                                          int64_t g, int64_t t0, int64_t nt, int64_t o0,
                                          int64_t o1, const float *bias, bool relu, float *dst) {
    const int64_t xs = l.tb * l.cop;
    for (int64_t t = 0; t < nt; ++t) {
        const TilePos tp = tile_pos(p, t0 + t);
        const int64_t hn = std::min(kTile, p.oh - tp.h0), wn = std::min(kTile, p.ow - tp.w0);
        for (int64_t o = o0; o < o1; o += kLanes) {
            const int64_t no = std::min(kLanes, p.cog - o);
            const float *m = M + t * l.cop + o;
            __m512 cols[4][6];  // cols[a'][b] = (A^T m)[a'][b]
            for (int b = 0; b < 6; ++b) {
                __m512 x[6], r[4];
                for (int a = 0; a < 6; ++a) x[a] = _mm512_load_ps(m + (a * 6 + b) * xs);
                output_1d(x, r);
                for (int a = 0; a < 4; ++a) cols[a][b] = r[a];
            }
            const __m512 bv = bias ? _mm512_maskz_loadu_ps(first_lanes(no), bias + g * p.cog + o)
                                   : _mm512_setzero_ps();
            __m512 y[16];  // y[a * 4 + b] = output pixel (a, b), 16 channels
            for (int a = 0; a < 4; ++a) {
                output_1d(cols[a], &y[a * 4]);
                for (int b = 0; b < 4; ++b) {
                    __m512 z = _mm512_add_ps(y[a * 4 + b], bv);
                    y[a * 4 + b] = relu ? _mm512_max_ps(_mm512_setzero_ps(), z) : z;
                }
            }
            if (p.last) {
                float *out = dst + ((tp.n * p.oh + tp.h0) * p.ow + tp.w0) * p.co + g * p.cog + o;
                for (int64_t a = 0; a < hn; ++a)
                    for (int64_t b = 0; b < wn; ++b)
                        _mm512_mask_storeu_ps(out + (a * p.ow + b) * p.co, first_lanes(no),
                                              y[a * 4 + b]);
            } else {
                // Transposed: lane a * 4 + b of chan[j] is pixel (a, b) of channel o + j.
                __m512 chan[16];
                alignas(64) float pix[16][16];
                for (int j = 0; j < 16; ++j) _mm512_store_ps(pix[j], y[j]);
                load_transposed(&pix[0][0], 16, 16, 0xffff, chan);
                for (int64_t j = 0; j < no; ++j)
                    store_tile(dst + ((tp.n * p.co + g * p.cog + o + j) * p.oh + tp.h0) * p.ow + tp.w0,
                               p.ow, hn, wn, chan[j]);
            }
        }
    }
}

// ---- backward-filter: dW = G^T [ sum over tiles of (B^T d B) . (A e A^T) ] G
//
// With d the 6x6 input patch and e the 4x4 dy tile at the same place (the
// gradient of the forward's bilinear form): each of the 36 points is a GEMM
// reducing over tiles, S[xi][k][c] = sum_t Z[xi][t][k] V[xi][t][c], after
// which one small transform per (k, c) gives the 3x3 filter gradient.

// A sizes and workspace offsets (floats) of one backward-filter call. The
// block size does not depend on the thread count, and every S element is
// summed by one thread in tile order: results repeat bit for bit.
struct FilterPlan {
    Plan in;                // only P's geometry (cip, cop, hp, wp) and tb; the rest zero
    int64_t hq, wq;         // rows and columns of a padded dy image in Q
    int64_t tiles, tb, blocks;
    int64_t k_part;         // filters per GEMM item
    int64_t s, p, q, v, z;  // offsets: S[g][xi][k][cip], P, Q, V and Z blocks
    int64_t total;
};

// Transformed input and dy of one block, both for all 36 points: near L2
// on 64-channel layers, an eighth of L3 on 256-channel ones.
constexpr int64_t kFilterBlockBytes = 8 << 20;

FilterPlan make_filter_plan(const Problem &p) {
    FilterPlan f{};
    Plan &l = f.in;
    l.cip = round_up(p.cig, kLanes);
    l.cop = round_up(p.cog, kLanes);
    l.hp = p.tiles_h * kTile + 2;
    l.wp = p.tiles_w * kTile + 2;
    f.hq = p.tiles_h * kTile;
    f.wq = p.tiles_w * kTile;
    f.tiles = checked_mul(p.n, p.tiles(), "workspace");
    const int64_t per_tile = kXi * (l.cip + l.cop) * (int64_t)sizeof(float);
    const int64_t tb_max = std::clamp<int64_t>(kFilterBlockBytes / per_tile, kLanes, 2048);
    f.blocks = std::max<int64_t>(ceil_div(f.tiles, tb_max), 1);
    f.tb = std::max<int64_t>(ceil_div(f.tiles, f.blocks), 1);
    l.tb = f.tb;
    f.k_part = std::min<int64_t>(p.cog, 48);
    f.s = 0;
    f.p = align16(checked_mul(checked_mul(p.groups * kXi, p.cog, "workspace"), l.cip, "workspace"));
    const int64_t images = p.n * p.groups;
    f.q = checked_add(f.p, align16(checked_mul(checked_mul(images, l.hp * l.wp, "workspace"), l.cip,
                                               "workspace")), "workspace");
    f.v = checked_add(f.q, align16(checked_mul(checked_mul(images, f.hq * f.wq, "workspace"), l.cop,
                                               "workspace")), "workspace");
    f.z = checked_add(f.v, align16(checked_mul(kXi * f.tb, l.cip, "workspace")), "workspace");
    f.total = checked_add(f.z, align16(checked_mul(kXi * f.tb, l.cop, "workspace")), "workspace");
    return f;
}

// z (6) = A e (4): the dy tile's transform, the transpose of output_1d.
CONV_TARGET_AVX512 inline void dy_1d(const __m512 *e, __m512 *z) {
    const __m512 c2 = _mm512_set1_ps(2), c4 = _mm512_set1_ps(4), c8 = _mm512_set1_ps(8);
    __m512 s02 = _mm512_add_ps(e[0], e[2]), s13 = _mm512_add_ps(e[1], e[3]);
    __m512 a = _mm512_fmadd_ps(c4, e[2], e[0]), b = _mm512_fmadd_ps(c8, e[3], _mm512_mul_ps(c2, e[1]));
    z[0] = e[0];
    z[1] = _mm512_add_ps(s02, s13);
    z[2] = _mm512_sub_ps(s02, s13);
    z[3] = _mm512_add_ps(a, b);
    z[4] = _mm512_sub_ps(a, b);
    z[5] = e[3];
}

// g (3) = G^T s (6): back from the 36 points to the 3x3 taps.
CONV_TARGET_AVX512 inline void taps_1d(const __m512 *s, __m512 *g) {
    const __m512 q = _mm512_set1_ps(1.f / 4), six = _mm512_set1_ps(1.f / 6),
                 tw = _mm512_set1_ps(1.f / 12), tf = _mm512_set1_ps(1.f / 24);
    __m512 s12 = _mm512_add_ps(s[1], s[2]), s34 = _mm512_add_ps(s[3], s[4]);
    g[0] = _mm512_fmadd_ps(q, s[0], _mm512_fmsub_ps(tf, s34, _mm512_mul_ps(six, s12)));
    g[1] = _mm512_fmadd_ps(six, _mm512_sub_ps(s[2], s[1]), _mm512_mul_ps(tw, _mm512_sub_ps(s[3], s[4])));
    g[2] = _mm512_add_ps(_mm512_mul_ps(six, _mm512_sub_ps(s34, s12)), s[5]);
}

// Z[xi][t - t0][k0, k0 + 16) = A e A^T for the tiles [t0, t0 + nt).
CONV_TARGET_AVX512 void transform_dy(const Problem &p, const FilterPlan &f, const float *Q,
                                     int64_t g, int64_t t0, int64_t nt, int64_t k0, float *Z) {
    const int64_t cop = f.in.cop, xs = f.tb * cop;
    for (int64_t t = 0; t < nt; ++t) {
        TilePos tp = tile_pos(p, t0 + t);
        const float *e = Q + (((tp.n * p.groups + g) * f.hq + tp.h0) * f.wq + tp.w0) * cop + k0;
        __m512 rows[4][6];  // rows[i][b] = (e A^T)[i][b]
        for (int i = 0; i < 4; ++i) {
            __m512 x[4];
            for (int j = 0; j < 4; ++j) x[j] = _mm512_load_ps(e + (i * f.wq + j) * cop);
            dy_1d(x, rows[i]);
        }
        float *z = Z + t * cop + k0;
        for (int b = 0; b < 6; ++b) {
            __m512 x[4], r[6];
            for (int i = 0; i < 4; ++i) x[i] = rows[i][b];
            dy_1d(x, r);
            for (int a = 0; a < 6; ++a) _mm512_store_ps(z + (a * 6 + b) * xs, r[a]);
        }
    }
}

constexpr int kFilterRows = 12;  // filters per kernel call: 12 x 32 = 24 accumulators

// S[g][xi][k0, k1) += Z[xi][:][k0, k1)^T V[xi] over the block's nt tiles.
void accumulate_point(const Problem &p, const FilterPlan &f, const float *Z, const float *V,
                      int64_t nt, int64_t g, int64_t xi, int64_t k0, int64_t k1, bool accumulate,
                      float *S) {
    const int64_t cip = f.in.cip, cop = f.in.cop;
    const float *z = Z + xi * f.tb * cop, *v = V + xi * f.tb * cip;
    float *s = S + (g * kXi + xi) * p.cog * cip;
    for (int64_t c = 0; c < cip; c += 2 * kLanes) {
        const int nv = cip - c >= 2 * kLanes ? 2 : 1;
        for (int64_t k = k0; k < k1;) {
            const int rows = (int)ceil_div(k1 - k, ceil_div(k1 - k, kFilterRows));
            kKernels[nv - 1][rows - 1](z + k, 1, cop, v + c, cip, nt, s + k * cip + c, cip,
                                       accumulate);
            k += rows;
        }
    }
}

// dW[g, k][c][3x3] = G^T S[g][:][k][c] G for every input channel of group g.
CONV_TARGET_AVX512 void transform_gradient(const Problem &p, const FilterPlan &f, const float *S,
                                           int64_t g, int64_t k, float *dw) {
    const int64_t cip = f.in.cip, xs = p.cog * cip;
    const float *s = S + (g * kXi * p.cog + k) * cip;
    float *out = dw + (g * p.cog + k) * p.cig * 9;  // this filter's [c][3][3] or [3][3][c]
    for (int64_t c = 0; c < p.cig; c += kLanes) {
        const int64_t nc = std::min(kLanes, p.cig - c);
        __m512 cols[3][6];  // cols[r][b] = (G^T s)[r][b]
        for (int b = 0; b < 6; ++b) {
            __m512 x[6], r[3];
            for (int a = 0; a < 6; ++a) x[a] = _mm512_load_ps(s + (a * 6 + b) * xs + c);
            taps_1d(x, r);
            for (int a = 0; a < 3; ++a) cols[a][b] = r[a];
        }
        alignas(64) float taps[16][16];  // [tap][c]; rows 9..15 unused
        for (int r = 0; r < 3; ++r) {
            __m512 t[3];
            taps_1d(cols[r], t);
            for (int q = 0; q < 3; ++q) {
                if (p.last)
                    _mm512_mask_storeu_ps(out + (r * 3 + q) * p.cig + c, first_lanes(nc), t[q]);
                else
                    _mm512_store_ps(taps[r * 3 + q], t[q]);
            }
        }
        if (!p.last) {  // per channel its 9 taps, contiguous
            __m512 per_channel[16];
            load_transposed(&taps[0][0], 16, 9, 0xffff, per_channel);
            for (int64_t j = 0; j < nc; ++j)
                _mm512_mask_storeu_ps(out + (c + j) * 9, first_lanes(9), per_channel[j]);
        }
    }
}

}  // namespace

bool avx512_applies(conv_dtype_t dtype) {
    return dtype == CONV_DTYPE_FLOAT32 && cpu_isa() == Isa::avx512;
}

size_t avx512_workspace_bytes(const Problem &p, int threads) {
    return (size_t)checked_mul(make_plan(p, threads).total, (int64_t)sizeof(float), "workspace");
}

size_t avx512_prepared_bytes(const Problem &p) {
    return (size_t)checked_mul(make_plan(p, 1).pimg, (int64_t)sizeof(float), "prepared weights");
}

void avx512_prepare_filters(const Problem &p, const float *w, float *U, ThreadPool &pool,
                            int threads) {
    const Plan l = make_plan(p, 1);  // U's layout does not depend on the threads
    const int64_t o_blocks = ceil_div(p.cog, kLanes);
    pool.parallel_for(
        p.groups * o_blocks,
        [&](int64_t item, int) { transform_filters(p, l, w, item / o_blocks, item % o_blocks * kLanes, U); },
        threads);
}

void avx512_run(const Problem &p, const float *w, const float *src, const float *bias, bool relu,
                float *dst, void *ws, ThreadPool &pool, int threads, const float *prepared) {
    const Plan l = make_plan(p, threads);
    if (l.tiles == 0) return;  // batch 0
    float *base = static_cast<float *>(ws);
    const float *U = prepared ? prepared : base + l.u;
    float *P = base + l.pimg;
    auto slot_v = [&](int64_t s) { return base + l.slots + s * l.slot; };

    // 1. Filters (unless prepared) and the padded input, in one region.
    const int64_t o_blocks = ceil_div(p.cog, kLanes), filter_items = prepared ? 0 : p.groups * o_blocks;
    const int64_t rows = p.n * p.groups * l.hp;
    pool.parallel_for(
        filter_items + rows,
        [&](int64_t item, int) {
            if (item < filter_items)
                transform_filters(p, l, w, item / o_blocks, item % o_blocks * kLanes, base + l.u);
            else
                pad_row(p, l, src, (item - filter_items) / l.hp / p.groups,
                        (item - filter_items) / l.hp % p.groups, (item - filter_items) % l.hp, P);
        },
        threads);

    auto block_tiles = [&](int64_t b, int64_t &t0, int64_t &nt) {
        t0 = b * l.tb;
        nt = std::min(l.tb, l.tiles - t0);
    };
    if (!l.split) {
        // 2. Each (group, block) whole on one thread.
        pool.parallel_for(
            p.groups * l.blocks,
            [&](int64_t item, int s) {
                const int64_t g = item / l.blocks;
                int64_t t0, nt;
                block_tiles(item % l.blocks, t0, nt);
                float *V = slot_v(s), *M = V + l.v;
                transform_inputs(p, l, P, g, t0, nt, 0, l.cip, V);
                multiply(p, l, U + g * kXi * l.xs, V, nt, 0, l.cop, M);
                transform_outputs(p, l, M, g, t0, nt, 0, l.cop, bias, relu, dst);
            },
            threads);
        return;
    }
    // 2'. Input transforms of each (group, block) into slot g * blocks + b,
    // shared out by channels; then GEMMs and output transforms by output channels.
    const int64_t items = p.groups * l.blocks, c_chunks = l.cip / kLanes;
    pool.parallel_for(
        items * c_chunks,
        [&](int64_t item, int) {
            const int64_t gb = item / c_chunks, c = item % c_chunks * kLanes;
            int64_t t0, nt;
            block_tiles(gb % l.blocks, t0, nt);
            transform_inputs(p, l, P, gb / l.blocks, t0, nt, c, c + kLanes, slot_v(gb));
        },
        threads);
    const int64_t parts = ceil_div(l.cop, l.o_part);
    pool.parallel_for(
        items * parts,
        [&](int64_t item, int s) {
            const int64_t gb = item / parts, g = gb / l.blocks;
            const int64_t o0 = item % parts * l.o_part, o1 = std::min(l.cop, o0 + l.o_part);
            int64_t t0, nt;
            block_tiles(gb % l.blocks, t0, nt);
            float *M = slot_v(s) + l.v;
            multiply(p, l, U + g * kXi * l.xs, slot_v(gb), nt, o0, o1, M);
            transform_outputs(p, l, M, g, t0, nt, o0, o1, bias, relu, dst);
        },
        threads);
}

size_t avx512_filter_workspace_bytes(const Problem &p) {
    return (size_t)checked_mul(make_filter_plan(p).total, (int64_t)sizeof(float), "workspace");
}

void avx512_run_filter(const Problem &p, const float *x, const float *dy, float *dw, void *ws,
                       ThreadPool &pool, int threads) {
    const FilterPlan f = make_filter_plan(p);
    const Plan &l = f.in;
    float *base = static_cast<float *>(ws);
    float *S = base + f.s, *P = base + f.p, *Q = base + f.q, *V = base + f.v, *Z = base + f.z;
    if (f.tiles == 0) {  // batch 0: the gradient of an empty sum
        std::memset(dw, 0, sizeof(float) * p.co * p.cig * 9);
        return;
    }
    // 1. The padded channels-last input and dy, in one region.
    const int64_t in_rows = p.n * p.groups * l.hp, dy_rows = p.n * p.groups * f.hq;
    pool.parallel_for(
        in_rows + dy_rows,
        [&](int64_t item, int) {
            if (item < in_rows) {
                pad_row(p, l, x, item / l.hp / p.groups, item / l.hp % p.groups, item % l.hp, P);
                return;
            }
            item -= in_rows;
            const int64_t r = item % f.hq, ng = item / f.hq, n = ng / p.groups, g = ng % p.groups;
            const Image im{dy, p.last, p.co, g * p.cog, p.cog, p.oh, p.ow};
            pad_image_row(im, n, r, 0, 0, f.wq, l.cop, Q + ((ng * f.hq + r) * f.wq) * l.cop);
        },
        threads);
    // 2. Per group and block of tiles: both transforms, then the 36 GEMMs
    // (by point and filter range) accumulating into S.
    const int64_t c_chunks = l.cip / kLanes, k_chunks = l.cop / kLanes;
    const int64_t k_parts = ceil_div(p.cog, f.k_part);
    for (int64_t g = 0; g < p.groups; ++g)
        for (int64_t b = 0; b < f.blocks; ++b) {
            const int64_t t0 = b * f.tb, nt = std::min(f.tb, f.tiles - t0);
            pool.parallel_for(
                c_chunks + k_chunks,
                [&](int64_t item, int) {
                    if (item < c_chunks)
                        transform_inputs(p, l, P, g, t0, nt, item * kLanes, (item + 1) * kLanes, V);
                    else
                        transform_dy(p, f, Q, g, t0, nt, (item - c_chunks) * kLanes, Z);
                },
                threads);
            pool.parallel_for(
                kXi * k_parts,
                [&](int64_t item, int) {
                    const int64_t xi = item / k_parts, k0 = item % k_parts * f.k_part;
                    accumulate_point(p, f, Z, V, nt, g, xi, k0, std::min(p.cog, k0 + f.k_part),
                                     b > 0, S);
                },
                threads);
        }
    // 3. Back to 3x3 taps.
    pool.parallel_for(
        p.groups * p.cog,
        [&](int64_t item, int) { transform_gradient(p, f, S, item / p.cog, item % p.cog, dw); },
        threads);
}

#else  // no AVX-512 kernels in this build

bool avx512_applies(conv_dtype_t) { return false; }
size_t avx512_workspace_bytes(const Problem &, int) { return 0; }
void avx512_run(const Problem &, const float *, const float *, const float *, bool, float *,
                void *, ThreadPool &, int, const float *) {}
size_t avx512_prepared_bytes(const Problem &) { return 0; }
void avx512_prepare_filters(const Problem &, const float *, float *, ThreadPool &, int) {}
size_t avx512_filter_workspace_bytes(const Problem &) { return 0; }
void avx512_run_filter(const Problem &, const float *, const float *, float *, void *, ThreadPool &,
                       int) {}

#endif

}  // namespace conv::cpu::winograd
