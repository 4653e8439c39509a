// CONV_ALGO_DEPTHWISE_DIRECT: depthwise convolutions (groups == C, one input
// channel per group, K = C * multiplier) computed directly. Lowered to GEMM,
// a depthwise layer is a GEMM with M = 1 per channel: all overhead, no reuse.
// Here each output element is a short sum of kernel taps, vectorised along
// the contiguous axis: output columns (channels-first) or channels
// (channels-last), accumulated in registers and stored once.
//
// This file is the portable path (fp64, fp32 without AVX-512, any window,
// stride, dilation, rank); fp32 3x3 layers on AVX-512 go to the kernels of
// depthwise_avx512_nchw.cpp / depthwise_avx512_nhwc.cpp, channels-first ones
// on AVX2 to depthwise_avx2.cpp.
#include <algorithm>
#include <cstring>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/algorithm.h"
#include "cpu/depthwise_avx2.h"
#include "cpu/depthwise_avx512.h"
#include "cpu/direct_avx512.h"
#include "cpu/epilogue.h"
#include "cpu/isa.h"

namespace conv::cpu {
namespace {

constexpr int64_t kChunk = 64;  // accumulators per inner block (a few vector registers)

// Valid output columns [lo, hi) of a row for a tap whose input column is
// ow * s + off: those with 0 <= ow * s + off < in.
inline void tap_range(int64_t off, int64_t s, int64_t in, int64_t outw, int64_t *lo, int64_t *hi) {
    int64_t a = off >= 0 ? 0 : ceil_div(-off, s);
    int64_t b = off >= in ? 0 : floor_div(in - 1 - off, s) + 1;
    *lo = std::min(a, outw);
    *hi = std::max(*lo, std::min(b, outw));
}

template <class T>
struct Depthwise {
    const ConvGeometry &g;
    int64_t N = g.n, C = g.c, K = g.k, M = g.k / g.c;  // M: channel multiplier
    int64_t I = g.in_size(), P = g.out_size(), KK = g.kernel_size();
    int64_t O1 = g.out[1], O2 = g.out[2], I1 = g.in[1], I2 = g.in[2];
    bool relu = g.activation == CONV_ACTIVATION_RELU;

    // Valid output columns of each kernel column, computed once per call:
    // two divisions per tap and row would cost more than the FMAs of a 7x7
    // plane. Kernels wider than kMaxKw compute them as they go.
    static constexpr int64_t kMaxKw = 32;
    int64_t lo_[kMaxKw], hi_[kMaxKw];

    explicit Depthwise(const ConvGeometry &geometry) : g(geometry) {
        for (int64_t kw = 0; kw < std::min(g.kernel[2], kMaxKw); ++kw)
            tap_range(col_offset(kw), g.stride[2], I2, O2, &lo_[kw], &hi_[kw]);
    }
    void columns(int64_t kw, int64_t *lo, int64_t *hi) const {
        if (kw < kMaxKw) {
            *lo = lo_[kw];
            *hi = hi_[kw];
        } else {
            tap_range(col_offset(kw), g.stride[2], I2, O2, lo, hi);
        }
    }

    // Input row (id, ih) for output row (od, oh) and taps (kd, kh), or -1.
    int64_t in_row(int64_t od, int64_t oh, int64_t kd, int64_t kh) const {
        int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
        int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= I1) return -1;
        return id * I1 + ih;
    }
    int64_t col_offset(int64_t kw) const { return kw * g.dilation[2] - g.pad_begin[2]; }
    int64_t tap(int64_t kd, int64_t kh, int64_t kw) const {
        return (kd * g.kernel[1] + kh) * g.kernel[2] + kw;
    }

    // Every kernel tap of output row (od, oh) whose input row lies inside the
    // image: fn(input row offset, tap index, column offset, lo, hi), output
    // columns [lo, hi) reading input column j * stride + offset.
    template <class F>
    void for_each_tap(int64_t od, int64_t oh, F &&fn) const {
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                int64_t r = in_row(od, oh, kd, kh);
                if (r < 0) continue;
                for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    int64_t lo, hi;
                    columns(kw, &lo, &hi);
                    fn(r * I2, tap(kd, kh, kw), col_offset(kw), lo, hi);
                }
            }
    }

    // ---- channels-first: one (image, output channel) plane per work item.

    void forward_cf(int64_t item, const T *x, const T *w, const T *bias, T *y) const {
        int64_t n = item / K, k = item % K;
        const T *xc = x + (n * C + k / M) * I, *wk = w + k * KK;
        T *yk = y + (n * K + k) * P;
        const T b = bias ? bias[k] : T(0);
        const int64_t s = g.stride[2];
        T acc[kChunk];
        for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < O1; ++oh) {
                T *yrow = yk + (od * O1 + oh) * O2;
                for (int64_t j0 = 0; j0 < O2; j0 += kChunk) {
                    int64_t j1 = std::min(O2, j0 + kChunk);
                    std::fill(acc, acc + (j1 - j0), b);
                    T *a = acc - j0;
                    for_each_tap(od, oh, [&](int64_t row, int64_t t, int64_t off, int64_t lo,
                                             int64_t hi) {
                        const T *xrow = xc + row;
                        const T wv = wk[t];
                        lo = std::max(lo, j0);
                        hi = std::min(hi, j1);
                        if (s == 1)
                            for (int64_t j = lo; j < hi; ++j) a[j] += wv * xrow[j + off];
                        else
                            for (int64_t j = lo; j < hi; ++j) a[j] += wv * xrow[j * s + off];
                    });
                    for (int64_t j = j0; j < j1; ++j) {
                        T v = acc[j - j0];
                        yrow[j] = (relu && v < T(0)) ? T(0) : v;
                    }
                }
            }
    }

    // dx plane of input channel c: every tap of its M output channels scatters
    // back into it (no other item writes this plane).
    void backward_data_cf(int64_t item, T *dx, const T *w, const T *dy) const {
        int64_t n = item / C, c = item % C;
        T *dxc = dx + (n * C + c) * I;
        std::fill(dxc, dxc + I, T(0));
        const int64_t s = g.stride[2];
        for (int64_t k = c * M; k < (c + 1) * M; ++k) {
            const T *dyk = dy + (n * K + k) * P, *wk = w + k * KK;
            for (int64_t od = 0; od < g.out[0]; ++od)
                for (int64_t oh = 0; oh < O1; ++oh) {
                    const T *dyrow = dyk + (od * O1 + oh) * O2;
                    for_each_tap(od, oh, [&](int64_t row, int64_t t, int64_t off, int64_t lo,
                                             int64_t hi) {
                        T *dxrow = dxc + row;
                        const T wv = wk[t];
                        if (s == 1)
                            for (int64_t j = lo; j < hi; ++j) dxrow[j + off] += wv * dyrow[j];
                        else
                            for (int64_t j = lo; j < hi; ++j) dxrow[j * s + off] += wv * dyrow[j];
                    });
                }
        }
    }

    // dW row of output channel k: a dot product per tap over batch and space.
    void backward_filter_cf(int64_t k, const T *x, T *dw, const T *dy) const {
        T *dwk = dw + k * KK;
        std::fill(dwk, dwk + KK, T(0));
        const int64_t s = g.stride[2];
        for (int64_t n = 0; n < N; ++n) {
            const T *xc = x + (n * C + k / M) * I, *dyk = dy + (n * K + k) * P;
            for (int64_t od = 0; od < g.out[0]; ++od)
                for (int64_t oh = 0; oh < O1; ++oh) {
                    const T *dyrow = dyk + (od * O1 + oh) * O2;
                    for_each_tap(od, oh, [&](int64_t row, int64_t t, int64_t off, int64_t lo,
                                             int64_t hi) {
                        const T *xrow = xc + row;
                        T sum = 0;
                        for (int64_t j = lo; j < hi; ++j) sum += dyrow[j] * xrow[j * s + off];
                        dwk[t] += sum;
                    });
                }
        }
    }

    // ---- channels-last: vectorised along channels. Weights are repacked
    // tap-major (KK x K) so a tap's weights for a channel block are contiguous.

    void repack(const T *w, T *wt) const {
        for (int64_t k = 0; k < K; ++k)
            for (int64_t t = 0; t < KK; ++t) wt[t * K + k] = w[k * KK + t];
    }

    // Input position of output position (od, oh, ow) through tap (kd, kh, kw), or -1.
    int64_t in_pos(int64_t od, int64_t oh, int64_t ow, int64_t kd, int64_t kh, int64_t kw) const {
        int64_t r = in_row(od, oh, kd, kh);
        if (r < 0) return -1;
        int64_t iw = ow * g.stride[2] + col_offset(kw);
        return (iw < 0 || iw >= I2) ? -1 : r * I2 + iw;
    }

    // Output row (n, od, oh): every position, every channel.
    void forward_cl(int64_t item, const T *x, const T *wt, const T *bias, T *y) const {
        int64_t n = item / (g.out[0] * O1), row = item % (g.out[0] * O1);
        int64_t od = row / O1, oh = row % O1;
        const T *xn = x + n * I * C;
        T acc[kChunk];
        for (int64_t ow = 0; ow < O2; ++ow) {
            T *yp = y + ((n * g.out[0] + od) * O1 * O2 + oh * O2 + ow) * K;
            for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
                int64_t kb = std::min(kChunk, K - k0);
                for (int64_t j = 0; j < kb; ++j) acc[j] = bias ? bias[k0 + j] : T(0);
                for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                    for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                            int64_t ip = in_pos(od, oh, ow, kd, kh, kw);
                            if (ip < 0) continue;
                            const T *wv = wt + tap(kd, kh, kw) * K + k0, *xv = xn + ip * C;
                            if (M == 1)
                                for (int64_t j = 0; j < kb; ++j) acc[j] += wv[j] * xv[k0 + j];
                            else
                                for (int64_t j = 0; j < kb; ++j) acc[j] += wv[j] * xv[(k0 + j) / M];
                        }
                for (int64_t j = 0; j < kb; ++j)
                    yp[k0 + j] = (relu && acc[j] < T(0)) ? T(0) : acc[j];
            }
        }
    }

    // Input channels [c0, c0 + kChunk) of image n: scatter every output
    // position's taps back (only this item writes these channels).
    void backward_data_cl(int64_t item, T *dx, const T *wt, const T *dy) const {
        int64_t blocks = ceil_div(C, kChunk), n = item / blocks;
        int64_t c0 = item % blocks * kChunk, cb = std::min(kChunk, C - c0);
        T *dxn = dx + n * I * C;
        for (int64_t i = 0; i < I; ++i) std::fill(dxn + i * C + c0, dxn + i * C + c0 + cb, T(0));
        for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < O1; ++oh)
                for (int64_t ow = 0; ow < O2; ++ow) {
                    const T *dyp = dy + ((n * g.out[0] + od) * O1 * O2 + oh * O2 + ow) * K;
                    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                        for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                                int64_t ip = in_pos(od, oh, ow, kd, kh, kw);
                                if (ip < 0) continue;
                                const T *wv = wt + tap(kd, kh, kw) * K;
                                T *dxv = dxn + ip * C + c0;
                                for (int64_t j = 0; j < cb; ++j)
                                    for (int64_t m = 0; m < M; ++m) {
                                        int64_t k = (c0 + j) * M + m;
                                        dxv[j] += wv[k] * dyp[k];
                                    }
                            }
                }
    }

    // dW for output channels [k0, k0 + kChunk): per-tap accumulators in the
    // thread's slot (KK x kChunk), written back to the (K, KK) layout at the end.
    void backward_filter_cl(int64_t item, const T *x, T *dw, const T *dy, T *acc) const {
        int64_t k0 = item * kChunk, kb = std::min(kChunk, K - k0);
        std::fill(acc, acc + KK * kChunk, T(0));
        for (int64_t n = 0; n < N; ++n) {
            const T *xn = x + n * I * C;
            for (int64_t od = 0; od < g.out[0]; ++od)
                for (int64_t oh = 0; oh < O1; ++oh)
                    for (int64_t ow = 0; ow < O2; ++ow) {
                        const T *dyp = dy + ((n * g.out[0] + od) * O1 * O2 + oh * O2 + ow) * K + k0;
                        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                            for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                                for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                                    int64_t ip = in_pos(od, oh, ow, kd, kh, kw);
                                    if (ip < 0) continue;
                                    T *a = acc + tap(kd, kh, kw) * kChunk;
                                    const T *xv = xn + ip * C;
                                    if (M == 1)
                                        for (int64_t j = 0; j < kb; ++j) a[j] += dyp[j] * xv[k0 + j];
                                    else
                                        for (int64_t j = 0; j < kb; ++j) a[j] += dyp[j] * xv[(k0 + j) / M];
                                }
                    }
        }
        for (int64_t j = 0; j < kb; ++j)
            for (int64_t t = 0; t < KK; ++t) dw[(k0 + j) * KK + t] = acc[t * kChunk + j];
    }
};

// Scratch: channels-last repacked weights (forward, backward-data) or the
// per-thread tap accumulators (backward-filter); none for channels-first.
size_t scratch_bytes(const ConvGeometry &g, conv_op_t op, size_t es, int threads) {
    if (g.layout != CONV_LAYOUT_CHANNELS_LAST) return 0;
    int64_t elems = op == CONV_OP_BACKWARD_FILTER
                        ? checked_mul(g.kernel_size() * kChunk, threads, "workspace")
                        : checked_mul(g.kernel_size(), g.k, "workspace");
    return (size_t)(checked_mul(elems, (int64_t)es, "workspace") + 63) / 64 * 64;
}

template <class T>
void run_typed(const ConvArgs &a, void *ws, ThreadPool &pool, int threads) {
    const ConvGeometry &g = *a.g;
    Depthwise<T> d(g);
    T *x = static_cast<T *>(a.x), *w = static_cast<T *>(a.w), *y = static_cast<T *>(a.y);
    T *bias = static_cast<T *>(a.bias), *scratch = static_cast<T *>(ws);
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    switch (a.op) {
    case CONV_OP_FORWARD:
        if (!last) {
            pool.parallel_for(d.N * d.K, [&](int64_t i, int) { d.forward_cf(i, x, w, bias, y); },
                              threads);
            return;
        }
        d.repack(w, scratch);
        pool.parallel_for(d.N * g.out[0] * d.O1,
                          [&](int64_t i, int) { d.forward_cl(i, x, scratch, bias, y); }, threads);
        return;
    case CONV_OP_BACKWARD_DATA:
        if (!last) {
            pool.parallel_for(d.N * d.C, [&](int64_t i, int) { d.backward_data_cf(i, x, w, y); },
                              threads);
            return;
        }
        d.repack(w, scratch);
        pool.parallel_for(d.N * ceil_div(d.C, kChunk),
                          [&](int64_t i, int) { d.backward_data_cl(i, x, scratch, y); }, threads);
        return;
    case CONV_OP_BACKWARD_FILTER:
        if (!last)
            pool.parallel_for(d.K, [&](int64_t k, int) { d.backward_filter_cf(k, x, w, y); },
                              threads);
        else
            pool.parallel_for(
                ceil_div(d.K, kChunk),
                [&](int64_t i, int s) {
                    d.backward_filter_cl(i, x, w, y, scratch + s * d.KK * kChunk);
                },
                threads);
        if (bias) channel_sums({g.layout, g.n, g.k, g.out_size()}, a.dtype, y, bias, pool, threads);
        return;
    default: break;  // unknown values
    }
}

class DepthwiseDirect final : public Algorithm {
public:
    const char *name() const override { return "depthwise_direct"; }
    conv_algo_t public_id() const override { return CONV_ALGO_DEPTHWISE_DIRECT; }
    const char *why_not(const ConvGeometry &g, conv_op_t) const override {
        if (g.groups == g.c && g.c > 0) return nullptr;
        return "it needs groups == input channels (a depthwise convolution)";
    }
    // The portable loops below are made for one output channel per input
    // channel. With a channel multiplier that the AVX-512 kernels do not
    // cover they ran at 0.1-3 GFLOP/s, batch 32, 1 thread, against 5-25 for
    // the GEMM solvers (convbench --suite small). A one-channel input is
    // "depthwise" too (groups == C == 1: MNIST's 1->32, LeNet-5's 1->6 5x5,
    // the digits example's 1->16); there the AVX-512 kernels keep forward
    // and backward-data (1->16 on 8x8, batch 32, interleaved: 0.034-0.058 vs
    // direct_avx512's 0.067-0.075 ms and im2col's 0.094), but the direct
    // kernel's backward-filter wins (0.045 vs 0.055-0.109 ms; 1->32 on 28x28
    // 0.59 vs 0.91-0.98) -- measured on an earlier machine; on Zen 4 the
    // backward-filter splits by plane size (competitive() below).
    // With AVX2 the direct kernel takes a one-channel input's passes: its
    // tiles forward and backward-filter (MNIST's 1->32 on 28x28, batch 32,
    // Zen 3: 1.7 vs 4.3 ms and 0.41 vs 4.0; LeNet-5's 1->6 5x5 0.34 vs 1.04
    // and 0.65 vs 3.3), its positions-in-the-vector kernel backward-data
    // where it applies (1.25 vs 3.86, 0.48 vs 1.83).
    // Channels-last the same (x's layout is the same with one channel):
    // batch 32 / batch 1, Zen 3, 2 alternated rounds, ms, forward and
    // backward-filter the direct kernel's tiles (MNIST's 1->32 0.73 vs 15.9
    // and 0.59 vs 15.2; LeNet-5's 1->6 5x5 0.53 vs 10.6 and 0.46 vs 10.8),
    // backward-data im2col's GEMM (1.34 vs 6.8 and 2.5 vs 7.5; the direct
    // tiles 4.4 and 2.3).
    bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        if (dtype == CONV_DTYPE_FLOAT32 && cpu_isa() == Isa::avx2 && g.c == 1 && g.k > 1 && g.is_planar() &&
            (g.layout == CONV_LAYOUT_CHANNELS_LAST || op != CONV_OP_BACKWARD_DATA ||
             direct_narrow_applies(g, op, dtype)))
            return false;
        if (dtype != CONV_DTYPE_FLOAT32 || cpu_isa() != Isa::avx512) return true;
        // A one-channel input's backward-data too, measured since on an
        // Intel Xeon with AMX (batch 32, 1 thread, against im2col): MNIST's
        // 1->32 28x28 0.29 vs 0.21 ms; the digits' 1->16 8x8 even.
        // Its backward-filter summed flat where it can (multi_filter), but
        // at unit stride from 256 output positions: against direct_avx512's
        // dot products (direct_dot_filter.cpp), Zen 4, batch 32, 1 thread,
        // 5 alternations: the digits' 1->16 8x8 1.35x, 1->32 12x12 1.07x;
        // 1->32 16x16 0.84x, MNIST's 1->32 28x28 0.88x (0.95x at batch 1).
        // (Strided, not measured against each other.)
        if (g.c == 1 && g.k > 1 && op == CONV_OP_BACKWARD_DATA) return false;
        if (g.c == 1 && g.k > 1 && op == CONV_OP_BACKWARD_FILTER)
            return g.layout == CONV_LAYOUT_CHANNELS_FIRST && dw_nchw_multi_flat(g, op) &&
                   !(direct_dot_filter_applies(g, op, dtype) && g.out_size() >= 256 && g.stride[1] == 1 &&
                     g.stride[2] == 1);
        return g.k == g.c || dw_avx512_covers(g, op);
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        if (dtype == CONV_DTYPE_FLOAT32 && dw_avx512_covers(g, op))
            return dw_avx512_workspace_bytes(g, op, threads);
        if (dtype == CONV_DTYPE_FLOAT32 && dw_avx2_covers(g, op))
            return dw_avx2_workspace_bytes(g, op, threads);
        return scratch_bytes(g, op, dtype_size(dtype), threads);
    }
    std::shared_ptr<const RunPlan> plan_run(const Problem &p) const override {
        if (p.dtype == CONV_DTYPE_FLOAT32 && dw_avx512_covers(p.g, p.op)) return dw_avx512_plan(p.g, p.op);
        return nullptr;
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (args.dtype == CONV_DTYPE_FLOAT32 && dw_avx512_covers(*args.g, args.op))
            dw_avx512_run(args, ws, pool, threads);
        else if (args.dtype == CONV_DTYPE_FLOAT32 && dw_avx2_covers(*args.g, args.op))
            dw_avx2_run(args, ws, pool, threads);
        else if (args.dtype == CONV_DTYPE_FLOAT32)
            run_typed<float>(args, ws, pool, threads);
        else
            run_typed<double>(args, ws, pool, threads);
    }
};

}  // namespace

bool dw_first_3x3(const ConvGeometry &g) {
    if (g.layout != CONV_LAYOUT_CHANNELS_FIRST || g.k != g.c) return false;
    if (!g.is_planar() || g.in_size() == 0) return false;
    if (g.kernel[1] != 3 || g.kernel[2] != 3 || g.dilation[1] != 1 || g.dilation[2] != 1) return false;
    return g.stride[1] == g.stride[2] && g.stride[1] >= 1 && g.stride[1] <= 2;
}

bool dw_avx512_covers(const ConvGeometry &g, conv_op_t op) {
    if (!CONV_HAVE_AVX512_KERNELS || cpu_isa() != Isa::avx512) return false;
    return g.layout == CONV_LAYOUT_CHANNELS_LAST ? dw_nhwc_covers(g, op) : dw_nchw_covers(g, op);
}

namespace {

// A channels-first kernel's three entry points.
struct FirstKernel {
    bool (*covers)(const ConvGeometry &, conv_op_t);
    size_t (*workspace_bytes)(const ConvGeometry &, conv_op_t, int);
    void (*run)(const ConvArgs &, void *, ThreadPool &, int);
};

// The one that computes a channels-first pass: the first of these that
// covers it, else the plane kernels (dw_nchw_*).
const FirstKernel &first_kernel(const ConvGeometry &g, conv_op_t op) {
    static const FirstKernel kPreferred[] = {
        {dw_filter_rows_covers, dw_filter_rows_workspace_bytes, dw_filter_rows_run},
        {dw_forward_rows_covers, dw_forward_rows_workspace_bytes, dw_forward_rows_run},
        {dw_backward_rows_covers, dw_backward_rows_workspace_bytes, dw_backward_rows_run},
        {dw_blocked_covers, dw_blocked_workspace_bytes, dw_blocked_run},
    };
    static const FirstKernel kPlanes{dw_nchw_covers, dw_nchw_workspace_bytes, dw_nchw_run};
    for (const FirstKernel &k : kPreferred)
        if (k.covers(g, op)) return k;
    return kPlanes;
}

}  // namespace

size_t dw_avx512_workspace_bytes(const ConvGeometry &g, conv_op_t op, int threads) {
    const size_t bytes = g.layout == CONV_LAYOUT_CHANNELS_LAST ? dw_nhwc_workspace_bytes(g, op, threads)
                                                               : first_kernel(g, op).workspace_bytes(g, op, threads);
    return (bytes + 63) / 64 * 64;
}

void dw_avx512_run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
    if (args.g->layout == CONV_LAYOUT_CHANNELS_LAST)
        dw_nhwc_run(args, ws, pool, threads);
    else
        first_kernel(*args.g, args.op).run(args, ws, pool, threads);
}

std::shared_ptr<const RunPlan> dw_avx512_plan(const ConvGeometry &g, conv_op_t op) {
    if (g.layout == CONV_LAYOUT_CHANNELS_FIRST && first_kernel(g, op).run == dw_nchw_run) return dw_nchw_plan(g, op);
    return nullptr;
}

const Algorithm &depthwise_direct_algorithm() {
    static const DepthwiseDirect algo;
    return algo;
}

}  // namespace conv::cpu
