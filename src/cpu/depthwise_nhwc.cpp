// The channels-last depthwise kernels' frame (cpu/depthwise_nhwc.h).
#include "cpu/depthwise_nhwc.h"

#include <algorithm>

#include "cpu/epilogue.h"

namespace conv::cpu::dw_nhwc {

ImageShape forward_shape(const ConvGeometry &g) {
    return {g.in[1], g.in[2], g.out[1], g.out[2], g.pad_begin[1], g.pad_begin[2], g.c, (int)g.stride[1]};
}

// dx[i][j] = sum w[kh][kw] dy[i + pt - kh][j + pl - kw]: flipped window.
ImageShape backward_data_shape(const ConvGeometry &g) {
    return {g.out[1], g.out[2], g.in[1], g.in[2], kK - 1 - g.pad_begin[1], kK - 1 - g.pad_begin[2], g.c, 1};
}

void repack(const float *w, int64_t c, bool flip, float *wt) {
    for (int64_t ch = 0; ch < c; ++ch)
        for (int t = 0; t < kTaps; ++t) wt[(flip ? kTaps - 1 - t : t) * c + ch] = w[ch * kTaps + t];
}

void repack_chunked(const float *w, int64_t c, bool flip, float *wt) {
    for (int64_t ch = 0; ch < c; ++ch)
        for (int t = 0; t < kTaps; ++t) wt[chunked_index(flip ? kTaps - 1 - t : t, ch, c)] = w[ch * kTaps + t];
}

bool covers(const ConvGeometry &g) {
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST || g.k != g.c) return false;
    if (!g.is_planar() || g.in_size() == 0) return false;
    if (g.kernel[1] != kK || g.kernel[2] != kK) return false;
    if (g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    return g.stride[1] == g.stride[2] && g.stride[1] >= 1 && g.stride[1] <= 2;
}

size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    int64_t floats = checked_mul(kTaps, g.c, "workspace");
    if (op == CONV_OP_BACKWARD_FILTER) floats = checked_mul(floats, threads, "workspace");
    return (size_t)checked_mul(floats, (int64_t)sizeof(float), "workspace");
}

void run(const ConvArgs &a, void *ws, ThreadPool &pool, int threads, const RowKernels &rows) {
    const ConvGeometry &g = *a.g;
    const int64_t N = g.n, C = g.c;
    float *x = static_cast<float *>(a.x), *w = static_cast<float *>(a.w);
    float *y = static_cast<float *>(a.y), *bias = static_cast<float *>(a.bias);
    float *scratch = static_cast<float *>(ws);
    const int64_t in_image = g.in_size() * C, out_image = g.out_size() * C;
    switch (a.op) {
    case CONV_OP_BACKWARD_DATA:
        if (g.stride[1] == 2) {
            const ImageShape p = forward_shape(g);
            (rows.repack ? rows.repack : repack)(w, C, false, scratch);
            pool.parallel_for(
                N * p.ih,
                [&](int64_t item, int) {
                    const int64_t n = item / p.ih;
                    rows.backward_data_s2_row(p, y + n * out_image, scratch, x + n * in_image, item % p.ih);
                },
                threads);
            return;
        }
        [[fallthrough]];
    case CONV_OP_FORWARD: {
        const bool fwd = a.op == CONV_OP_FORWARD;
        const ImageShape p = fwd ? forward_shape(g) : backward_data_shape(g);
        if (rows.chunked)
            repack_chunked(w, C, !fwd, scratch);
        else
            (rows.repack ? rows.repack : repack)(w, C, !fwd, scratch);
        const float *src = fwd ? x : y;
        float *dst = fwd ? y : x;
        const int64_t src_image = fwd ? in_image : out_image, dst_image = fwd ? out_image : in_image;
        const bool relu = fwd && g.activation == CONV_ACTIVATION_RELU;
        pool.parallel_for(
            N * p.oh,
            [&](int64_t item, int) {
                const int64_t n = item / p.oh;
                const ImageJob job{src + n * src_image, dst + n * dst_image, scratch, fwd ? bias : nullptr, relu};
                rows.forward_row(p, job, item % p.oh);
            },
            threads);
        return;
    }
    case CONV_OP_BACKWARD_FILTER: {
        const ImageShape p = forward_shape(g);
        const int64_t slot = kTaps * C, count = N * p.oh;
        const int parts = (int)std::min<int64_t>(threads, std::max<int64_t>(count, 1));
        std::fill(scratch, scratch + parts * slot, 0.0f);
        pool.parallel_for(
            parts,
            [&](int64_t part, int) {
                rows.filter_rows(p, x, y, count * part / parts, count * (part + 1) / parts, scratch + part * slot);
            },
            threads);
        for (int64_t ch = 0; ch < C; ++ch)
            for (int t = 0; t < kTaps; ++t) {
                float sum = 0;
                const int64_t at = rows.chunked ? chunked_index(t, ch, C) : t * C + ch;
                for (int s = 0; s < parts; ++s) sum += scratch[s * slot + at];
                w[ch * kTaps + t] = sum;
            }
        if (bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool, threads);
        return;
    }
    default: return;
    }
}

}  // namespace conv::cpu::dw_nhwc
