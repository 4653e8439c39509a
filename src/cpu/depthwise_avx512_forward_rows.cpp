// Channels-first (NCHW) depthwise 3x3 forward, and backward-data at stride
// 1 (the forward of dy with the flipped window), multiplier 1, padding 1
// before, on output rows of up to 31 columns; fp32, AVX-512, read in place
// row by row (depthwise_avx512_rows.h): an output row's vector is the sum
// of 9 merge-masked FMAs, the input rows' tap vectors each loaded and
// shifted once for the two or three output rows under them, the 9 weights
// broadcast once a channel (two channels a vector for rows of up to 7
// columns: 7x7, and 14x14 at stride 2).
//
// Against depthwise_avx512_nchw.cpp's plane kernels, which it takes over on
// these planes: those sweep blocks of rows with every tap a masked load
// (three loads a row and tap row where one load and two shifts do), and
// small planes flat or two a vector with per-vector masks. oneDNN runs these
// layers on its channel-blocked layout (nChw16c), which needs no masks.
//
// Each output is bias + its taps' products added in a fixed order (tap
// rows top to bottom, columns left to right), on any thread count.
#include <algorithm>
#include <cstdint>

#include "core/checked.h"
#include "cpu/avx512.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/depthwise_avx512_rows.h"

namespace conv::cpu {
namespace {

using namespace dw_rows;

// The pass as a forward convolution: `in` read in rows into `out`.
struct RowPass {
    const float *in, *w, *bias;
    float *out;
    int64_t n, c;            // images, channels
    int64_t in_plane, out_plane;
    bool flip;               // backward-data: the window flipped
    bool relu;
};

#if CONV_HAVE_AVX512_KERNELS

// A vector's channels' weights (tap t of the window, flipped or not) and
// bias: broadcast, or with two channels a vector, the first's in lanes 0-7
// and the second's in 8-15.
struct Weights {
    __m512 w[kTaps], bias;
};

template <int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) Weights channel_weights(
    const RowPass &pass, int64_t c, bool lone) {
    Weights k;
    const float *w0 = pass.w + c * kTaps, *w1 = G == 2 && !lone ? w0 + kTaps : w0;
    for (int t = 0; t < kTaps; ++t) {
        const int at = pass.flip ? kTaps - 1 - t : t;
        k.w[t] = G == 2 ? _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(w0[at]), _mm512_set1_ps(w1[at]))
                        : _mm512_set1_ps(w0[at]);
    }
    const float b0 = pass.bias ? pass.bias[c] : 0.0f;
    const float b1 = pass.bias && G == 2 && !lone ? pass.bias[c + 1] : b0;
    k.bias = G == 2 ? _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(b0), _mm512_set1_ps(b1))
                    : _mm512_set1_ps(b0);
    return k;
}

// One image's planes of a vector's channel(s): the input read in rows, the
// output (x1, y1: the second channel's, with two a vector).
struct Rows {
    const float *x, *x1;
    float *y, *y1;
};

// acc += the products of tap row kh (vectors v0 ...) in the lanes whose tap
// is inside the row.
template <int V>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void add_taps(
    const RowShape &p, const Weights &k, int kh, const RowSet<V> &s, __m512 (&acc)[V], int v0 = 0) {
    for (int v = 0; v < V; ++v)
        for (int kw = 0; kw < kK; ++kw)
            acc[v] = _mm512_mask3_fmadd_ps(s.v[kw][v], k.w[kh * kK + kw], acc[v], p.tap[v0 + v][kw]);
}

// Stores an output row's vectors v0 ... (through the ReLU when asked); with
// two channels a vector, lanes 8-15 into the second channel's row `other`.
template <int V, int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void store_row(
    const RowShape &p, bool relu, const __m512 (&acc)[V], float *row, float *other, int v0 = 0) {
    for (int v = 0; v < V; ++v) {
        const __m512 a = relu ? _mm512_max_ps(_mm512_setzero_ps(), acc[v]) : acc[v];
        _mm512_mask_storeu_ps(row + (v0 + v) * kVec, p.out[v0 + v][0], a);
        if (G == 2) _mm512_mask_storeu_ps(other - kVec / 2, p.out[0][1], a);
    }
}

// The output rows of one image's plane(s) (walk_rows_s1 / walk_rows_s2
// call them).
template <int V, int G, bool Whole>
struct OutRows {
    static constexpr bool kWhole = Whole;  // how the rows load (load_set_s1, load_set_s2)
    const RowShape &p;
    const Rows &q;
    const Weights &k;
    bool relu;

    // Stride 1: output row r's vector v.
    template <bool Checked>
    CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s1(int v, bool next, int64_t r,
                                                                     const RowSet<1> &above, const RowSet<1> &at,
                                                                     RowSet<1> &below) {
        const bool lower = !Checked || r + 1 < p.ih;
        if (lower) below = load_set_s1<G, Whole>(p, q.x + (r + 1) * p.iw, q.x1 + (r + 1) * p.iw, v, next);
        __m512 acc[1] = {k.bias};
        if (!Checked || (r > 0 && r <= p.ih)) add_taps<1>(p, k, 0, above, acc, v);
        if (!Checked || r < p.ih) add_taps<1>(p, k, 1, at, acc, v);
        if (lower) add_taps<1>(p, k, 2, below, acc, v);
        store_row<1, G>(p, relu, acc, q.y + r * p.ow, q.y1 + r * p.ow, v);
    }

    // Stride 2: output row r.
    template <bool Checked>
    CONV_TARGET_AVX512 inline __attribute__((always_inline)) void s2(int64_t r, const RowSet<V> &top,
                                                                     RowSet<V> &bottom) {
        __m512 acc[V];
        for (auto &a : acc) a = k.bias;
        if (!Checked || (r > 0 && 2 * r - 1 < p.ih)) add_taps<V>(p, k, 0, top, acc);
        const int64_t mid = 2 * r * p.iw, low = mid + p.iw;
        if (!Checked || 2 * r < p.ih)
            add_taps<V>(p, k, 1, load_set_s2<V, G, true, Whole>(p, q.x + mid, q.x1 + mid), acc);
        if (!Checked || 2 * r + 1 < p.ih) {
            bottom = load_set_s2<V, G, true, Whole>(p, q.x + low, q.x1 + low);
            add_taps<V>(p, k, 2, bottom, acc);
        }
        store_row<V, G>(p, relu, acc, q.y + r * p.ow, q.y1 + r * p.ow);
    }
};

// The output rows of one image's plane(s).
template <int S, int V, int G, bool Whole>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void out_rows(const RowShape &p, const Rows &q,
                                                                       const Weights &k, bool relu) {
    OutRows<V, G, Whole> rows{p, q, k, relu};
    if (S == 1 && p.oh > p.ih)
        walk_rows_s1<V, G, true>(p, q.x, q.x1, rows);
    else if (S == 1)
        walk_rows_s1<V, G, false>(p, q.x, q.x1, rows);
    else
        walk_rows_s2<V>(p, rows);
}

// Image n's channels [c0, c0 + cb), G at a time.
template <int S, int V, int G>
CONV_TARGET_AVX512 inline __attribute__((always_inline)) void channel_block_on(
    RowShape p,  // a copy: its masks stay in registers
    const RowPass &pass, int64_t n, int64_t c0, int64_t cb) {
    const float *in_end = pass.in + pass.n * pass.c * pass.in_plane;
    for (int64_t ch = 0; ch < cb; ch += G) {
        const int64_t c = c0 + ch;
        const bool lone = G == 2 && ch + 1 == cb;
        if (lone) keep_first_channel(p);  // a channel without its pair
        const int64_t plane_at = n * pass.c + c;
        const float *in = pass.in + plane_at * pass.in_plane;
        float *out = pass.out + plane_at * pass.out_plane;
        const Weights k = channel_weights<G>(pass, c, lone);
        const Rows q{in, in + pass.in_plane, out, out + pass.out_plane};
        if (whole_reads_inside(in, pass.in_plane, G, pass.in, in_end))
            out_rows<S, V, G, true>(p, q, k, pass.relu);
        else
            out_rows<S, V, G, false>(p, q, k, pass.relu);
    }
}

// The block, with the plane's sizes as constants where the instantiation
// has them (fixed_plane).
template <int S, int V, int G>
CONV_TARGET_AVX512 void channel_block(const RowShape &p, const RowPass &pass, int64_t n, int64_t c0,
                                      int64_t cb) {
    if (has_fixed_plane<S, V, G>(p))
        channel_block_on<S, V, G>(fixed_plane<S, V, G>(p), pass, n, c0, cb);
    else
        channel_block_on<S, V, G>(p, pass, n, c0, cb);
}

#endif  // CONV_HAVE_AVX512_KERNELS

// Whether the rows kernels take the pass as a forward convolution of an
// ih x iw plane into oh x ow at stride s (padding 1 before).
bool rows_fit(int64_t iw, int64_t ow, int64_t s) { return row_span(iw, ow, s) <= kMaxSpan; }

}  // namespace

bool dw_forward_rows_covers(const ConvGeometry &g, conv_op_t op) {
    if (!dw_first_3x3(g)) return false;
    if (op == CONV_OP_FORWARD)
        return g.pad_begin[1] == 1 && g.pad_begin[2] == 1 && rows_fit(g.in[2], g.out[2], g.stride[2]);
    // Backward-data at stride 1: dy read in rows, padded by 2 - pad before.
    if (op == CONV_OP_BACKWARD_DATA)
        return g.stride[1] == 1 && g.pad_begin[1] == 1 && g.pad_begin[2] == 1 &&
               rows_fit(g.out[2], g.in[2], 1);
    return false;
}

size_t dw_forward_rows_workspace_bytes(const ConvGeometry &, conv_op_t, int) { return 0; }

void dw_forward_rows_run(const ConvArgs &a, void *, ThreadPool &pool, int threads) {
#if CONV_HAVE_AVX512_KERNELS
    const ConvGeometry &g = *a.g;
    const bool fwd = a.op == CONV_OP_FORWARD;
    RowPass pass{};
    pass.w = static_cast<const float *>(a.w);
    pass.n = g.n, pass.c = g.c;
    int64_t ih = g.in[1], iw = g.in[2], oh = g.out[1], ow = g.out[2], s = g.stride[2];
    if (fwd) {
        pass.in = static_cast<const float *>(a.x);
        pass.out = static_cast<float *>(a.y);
        pass.bias = static_cast<const float *>(a.bias);
        pass.relu = g.activation == CONV_ACTIVATION_RELU;
    } else {
        pass.in = static_cast<const float *>(a.y);
        pass.out = static_cast<float *>(a.x);
        pass.flip = true;
        std::swap(ih, oh), std::swap(iw, ow);
    }
    pass.in_plane = ih * iw, pass.out_plane = oh * ow;
    const int64_t span = row_span(iw, ow, s);
    const RowShape p = row_shape(ih, iw, oh, ow, s, span <= kPairSpan);
    with_row_kernel(span, s, [&](auto S, auto V, auto G) {
        for_image_blocks(g, pool, threads, [&](int64_t n, int64_t c0, int64_t cb) {
            channel_block<decltype(S)::value, decltype(V)::value, decltype(G)::value>(p, pass, n, c0, cb);
        });
    });
#else
    (void)a, (void)pool, (void)threads;
#endif
}

}  // namespace conv::cpu
