#include "cpu/unfold.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/checked.h"
#include "cpu/avx2.h"
#include "cpu/isa.h"

namespace conv::cpu {
namespace {

// One run of output positions sharing (od, oh): tile columns [off, off+count),
// whose input row starts at `in_row` (-1 when (id, ih) is in the padding);
// element j reads input column iw0 + j*stride_w, which is inside the image
// for j in [lo, hi).
struct Run {
    int64_t off, count, in_row, iw0, lo, hi;
};

// Output position p0 as (od, oh, ow): worked out once per tile, not per tap.
struct Start {
    int64_t p0, od, oh, ow;
    Start(const ConvGeometry &g, int64_t p)
        : p0(p), od(p / (g.out[1] * g.out[2])), oh(p / g.out[2] % g.out[1]), ow(p % g.out[2]) {}
};

// Calls fn(Run) for the positions [start.p0, p1) and kernel offset (kd, kh,
// kw). The positions are walked row by row without dividing (small planes
// have many short runs, where four divisions a run cost more than the copy).
template <class F>
void for_each_run(const ConvGeometry &g, int64_t kd, int64_t kh, int64_t kw, const Start &start,
                  int64_t p1, F &&fn) {
    const int64_t O1 = g.out[1], O2 = g.out[2];
    const int64_t I0 = g.in[0], I1 = g.in[1], I2 = g.in[2];
    const int64_t s2 = g.stride[2];
    const int64_t d_off = kd * g.dilation[0] - g.pad_begin[0];
    const int64_t h_off = kh * g.dilation[1] - g.pad_begin[1];
    const int64_t w_off = kw * g.dilation[2] - g.pad_begin[2];
    const int64_t p0 = start.p0;
    int64_t od = start.od, oh = start.oh, ow = start.ow;
    for (int64_t p = p0; p < p1; ow = 0) {
        Run r;
        r.off = p - p0;
        r.count = std::min(O2 - ow, p1 - p);
        const int64_t id = od * g.stride[0] + d_off, ih = oh * g.stride[1] + h_off;
        r.iw0 = ow * s2 + w_off;
        r.lo = r.hi = 0;
        r.in_row = -1;
        if (id >= 0 && id < I0 && ih >= 0 && ih < I1) {
            r.in_row = (id * I1 + ih) * I2;
            int64_t lo, hi;
            if (s2 == 1) {
                lo = r.iw0 >= 0 ? 0 : -r.iw0;
                hi = I2 - r.iw0;
            } else {
                lo = r.iw0 >= 0 ? 0 : ceil_div(-r.iw0, s2);
                hi = r.iw0 >= I2 ? 0 : floor_div(I2 - 1 - r.iw0, s2) + 1;
            }
            r.lo = std::clamp<int64_t>(lo, 0, r.count);
            r.hi = std::clamp<int64_t>(hi, r.lo, r.count);
        }
        fn(r);
        p += r.count;
        if (++oh == O1) { oh = 0; ++od; }
    }
}

// Walks output positions [p0, p1) in order with their (od, oh, ow).
template <class F>
void for_each_position(const ConvGeometry &g, int64_t p0, int64_t p1, F &&fn) {
    const int64_t O1 = g.out[1], O2 = g.out[2];
    const Start start(g, p0);
    int64_t od = start.od, oh = start.oh, ow = start.ow;
    for (int64_t p = p0; p < p1; ++p) {
        fn(p - p0, od, oh, ow);
        if (++ow == O2) {
            ow = 0;
            if (++oh == O1) { oh = 0; ++od; }
        }
    }
}

#if CONV_HAVE_AVX512_KERNELS
// dst[j * stride] += src[j] for j < n, stride 1 or 2, with `room` elements
// readable and writable from dst: 8 sums a step where 16 (stride 2) or 8
// elements lie inside `room`, one by one after. At stride 2 the elements
// between the sums are loaded and stored back unchanged (a blend keeps
// them, so a -0 stays -0).
CONV_TARGET_AVX2 void add_strided_avx2(float *dst, const float *src, int64_t n, int64_t stride,
                                       int64_t room) {
    int64_t j = 0;
    if (stride == 1) {
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_add_ps(_mm256_loadu_ps(dst + j), _mm256_loadu_ps(src + j)));
    } else {
        const __m256 zero = _mm256_setzero_ps();
        for (; j + 8 <= n && 2 * j + 16 <= room; j += 8) {
            const __m256 v = _mm256_loadu_ps(src + j);
            const __m256 lo = _mm256_unpacklo_ps(v, zero), hi = _mm256_unpackhi_ps(v, zero);
            float *d = dst + 2 * j;
            const __m256 d0 = _mm256_loadu_ps(d), d1 = _mm256_loadu_ps(d + 8);
            const __m256 s0 = _mm256_add_ps(d0, _mm256_permute2f128_ps(lo, hi, 0x20));
            const __m256 s1 = _mm256_add_ps(d1, _mm256_permute2f128_ps(lo, hi, 0x31));
            _mm256_storeu_ps(d, _mm256_blend_ps(d0, s0, 0x55));
            _mm256_storeu_ps(d + 8, _mm256_blend_ps(d1, s1, 0x55));
        }
    }
    for (; j < n; ++j) dst[j * stride] += src[j];
}
#endif


}  // namespace

template <class T>
void im2col_tile(const ConvGeometry &g, const T *x, int64_t c0, int64_t c1, int64_t p0, int64_t p1,
                 T *col) {
    const int64_t ld = p1 - p0, in_size = g.in_size(), s2 = g.stride[2];
    const Start start(g, p0);
    T *row = col;
    for (int64_t c = c0; c < c1; ++c) {
        const T *xc = x + c * in_size;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                for (int64_t kw = 0; kw < g.kernel[2]; ++kw, row += ld)
                    for_each_run(g, kd, kh, kw, start, p1, [&](const Run &r) {
                        T *dst = row + r.off;
                        if (r.in_row < 0) {
                            std::fill(dst, dst + r.count, T(0));
                            return;
                        }
                        const T *src = xc + r.in_row + r.iw0;
                        for (int64_t j = 0; j < r.lo; ++j) dst[j] = T(0);
                        if (s2 == 1)
                            for (int64_t j = r.lo; j < r.hi; ++j) dst[j] = src[j];
                        else
                            for (int64_t j = r.lo; j < r.hi; ++j) dst[j] = src[j * s2];
                        for (int64_t j = r.hi; j < r.count; ++j) dst[j] = T(0);
                    });
    }
}

template <class T>
void col2im_tile_add(const ConvGeometry &g, const T *col, int64_t c0, int64_t c1, int64_t p0,
                     int64_t p1, T *dx) {
    const int64_t ld = p1 - p0, in_size = g.in_size(), s2 = g.stride[2];
    const Start start(g, p0);
    const T *row = col;
    // Runs of 8 and more at stride 1 or 2 add 8 sums a step: one element at
    // a time the scatter-add was 28% of 128->128 56x56 stride-2
    // backward-data (im2col).
    bool vector = false;
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) vector = cpu_isa() >= Isa::avx2 && s2 <= 2;
#endif
    for (int64_t c = c0; c < c1; ++c) {
        T *dxc = dx + c * in_size;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                for (int64_t kw = 0; kw < g.kernel[2]; ++kw, row += ld)
                    for_each_run(g, kd, kh, kw, start, p1, [&](const Run &r) {
                        if (r.in_row < 0) return;
                        T *dst = dxc + r.in_row + r.iw0 + r.lo * s2;
                        const T *src = row + r.off + r.lo;
                        const int64_t n = r.hi - r.lo;
#if CONV_HAVE_AVX512_KERNELS
                        if constexpr (std::is_same_v<T, float>)
                            if (vector && n >= 8) return add_strided_avx2(dst, src, n, s2, dxc + in_size - dst);
#endif
                        for (int64_t j = 0; j < n; ++j) dst[j * s2] += src[j];
                    });
    }
}

template <class T>
void im2row_tile(const ConvGeometry &g, const T *x, int64_t c0, int64_t c1, int64_t p0,
                 int64_t p1, T *row) {
    const int64_t ct = c1 - c0, C = g.c;
    const int64_t I0 = g.in[0], I1 = g.in[1], I2 = g.in[2];
    T *dst = row;
    // Each (kd, kh) is checked once per position and each kw's column once:
    // with few channels (a one-channel input) a tap is a copy of a scalar or
    // two, and working its whole offset out per tap cost 10x the copy.
    // Loops, not memcpy, for the same reason.
    for_each_position(g, p0, p1, [&](int64_t, int64_t od, int64_t oh, int64_t ow) {
        const int64_t w0 = ow * g.stride[2] - g.pad_begin[2];
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                const bool inside = id >= 0 && id < I0 && ih >= 0 && ih < I1;
                const T *src_row = x + (id * I1 + ih) * I2 * C + c0;
                for (int64_t kw = 0; kw < g.kernel[2]; ++kw, dst += ct) {
                    const int64_t iw = w0 + kw * g.dilation[2];
                    if (inside && iw >= 0 && iw < I2) {
                        const T *src = src_row + iw * C;
                        for (int64_t c = 0; c < ct; ++c) dst[c] = src[c];
                    } else {
                        for (int64_t c = 0; c < ct; ++c) dst[c] = T(0);
                    }
                }
            }
        }
    });
}

// Per position, per kernel row inside the image, the taps whose columns are
// inside: a run of kw. Where the block is every channel and taps are a pixel
// apart, the run's channels are one contiguous span of dx and of the row
// (conv1's 3 channels x 7 taps: 21 floats), added in one loop; the walk tap
// by tap, three bound checks and 3 adds each, was half of conv1's
// channels-last backward-data.
template <class T>
void row2im_tile_add(const ConvGeometry &g, const T *row, int64_t c0, int64_t c1, int64_t p0,
                     int64_t p1, T *dx) {
    const int64_t ct = c1 - c0, C = g.c, kk_count = g.kernel_size();
    const int64_t KW = g.kernel[2], dw = g.dilation[2], I2 = g.in[2];
    const bool spans = ct == C && dw == 1;
    for_each_position(g, p0, p1, [&](int64_t r, int64_t od, int64_t oh, int64_t ow) {
        const T *src = row + r * kk_count * ct;
        const int64_t iw0 = ow * g.stride[2] - g.pad_begin[2];
        // Taps [lo, hi) of a kernel row land inside the row.
        const int64_t lo = iw0 >= 0 ? 0 : ceil_div(-iw0, dw);
        const int64_t hi = std::max(lo, std::min<int64_t>(KW, iw0 >= I2 ? 0 : floor_div(I2 - 1 - iw0, dw) + 1));
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh, src += KW * ct) {
                const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || lo >= hi) continue;
                T *dst = dx + ((id * g.in[1] + ih) * I2 + iw0 + lo * dw) * C + c0;
                const T *from = src + lo * ct;
                if (spans) {
                    const int64_t n = (hi - lo) * C;
                    for (int64_t e = 0; e < n; ++e) dst[e] += from[e];
                    continue;
                }
                for (int64_t kw = lo; kw < hi; ++kw, dst += dw * C, from += ct)
                    for (int64_t c = 0; c < ct; ++c) dst[c] += from[c];
            }
        }
    });
}

#define CONV_INSTANTIATE_UNFOLD(T)                                                              \
    template void im2col_tile<T>(const ConvGeometry &, const T *, int64_t, int64_t, int64_t,    \
                                 int64_t, T *);                                                 \
    template void col2im_tile_add<T>(const ConvGeometry &, const T *, int64_t, int64_t, int64_t, \
                                     int64_t, T *);                                             \
    template void im2row_tile<T>(const ConvGeometry &, const T *, int64_t, int64_t, int64_t,    \
                                 int64_t, T *);                                                 \
    template void row2im_tile_add<T>(const ConvGeometry &, const T *, int64_t, int64_t, int64_t, \
                                     int64_t, T *);
CONV_INSTANTIATE_UNFOLD(float)
CONV_INSTANTIATE_UNFOLD(double)
// bfloat16 bits (cpu/bf16_gemm.h): unfolding only copies, folding is done in float.
template void im2col_tile<uint16_t>(const ConvGeometry &, const uint16_t *, int64_t, int64_t,
                                    int64_t, int64_t, uint16_t *);
template void im2row_tile<uint16_t>(const ConvGeometry &, const uint16_t *, int64_t, int64_t,
                                    int64_t, int64_t, uint16_t *);

}  // namespace conv::cpu
