// CONV_ALGO_GEMM_1X1: pointwise convolutions (1x1 kernel, no padding) need
// no unfolding: at stride 1 the input is the GEMM operand as it lies, in
// both layouts. With AVX-512, fp32 passes of ungrouped layers run this
// library's register-tile GEMM (pointwise_avx512.cpp, which packs one
// operand); everything else is OpenBLAS with no scratch memory.
//
// A strided 1x1 layer (ResNet's projection shortcuts) reads, or in
// backward-data writes, only every stride-th input position: those are
// copied into a compact tensor at the start of the workspace (forward and
// backward-filter), or computed there and spread out with zeros between
// them (backward-data), and the pass runs on it as a stride-1 one.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/checked.h"
#include "core/dtype.h"
#include "cpu/avx2.h"
#include "cpu/avx512.h"
#include "cpu/gemm_conv.h"
#include "cpu/isa.h"
#include "cpu/pointwise_avx512.h"

namespace conv::cpu {
namespace {

bool own_kernel(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) {
    return dtype == CONV_DTYPE_FLOAT32 && pw_avx512_covers(g, op);
}

bool unpadded_1x1(const ConvGeometry &g) {
    for (int i = 0; i < 3; ++i)
        if (g.kernel[i] != 1 || g.pad_begin[i] != 0 || g.pad_end[i] != 0) return false;
    return true;
}

// The stride-1 problem on the positions a strided 1x1 layer reads.
ConvGeometry compact_geometry(const ConvGeometry &g) {
    ConvGeometry c = g;
    for (int i = 0; i < 3; ++i) c.in[i] = g.out[i], c.stride[i] = 1, c.dilation[i] = 1;
    return c;
}

size_t compact_bytes(const ConvGeometry &g, conv_dtype_t dtype) {
    const int64_t elems = checked_mul(checked_mul(g.n, g.c, "workspace"), g.out_size(), "workspace");
    return (size_t)round_up(checked_mul(elems, (int64_t)dtype_size(dtype), "workspace"), 64);
}

// Stride 2's gather of a row (1.05-1.09x on ResNet-50's 256->512 56x56
// projection, forward and backward-filter, with the prefetch below): by
// vectors where the CPU has AVX2.
bool has_copy_even() { return CONV_HAVE_AVX512_KERNELS && (cpu_isa() == Isa::avx2 || cpu_isa() == Isa::avx512); }

// A channels-first gather asks for the rows it copies kRowsAhead rows
// before it gets to them, into L2 (prefetcht1): rows of a strided layer's
// input are skipped (every other one, every other plane in 3-D), which
// the hardware prefetchers do not follow from memory. ResNet3D's 64->128
// 16x56x56 s2 shortcut, 1 thread, 9 alternated rounds, against 4 rows
// ahead into L1: forward 1.18x, backward-filter 1.13x (ResNet-50's
// shortcuts, whose input stays in L3, even).
constexpr int64_t kRowsAhead = 16;

// Where output row (od, oh) of plane q reads x (`plane` and `row`
// elements a plane and an input row).
template <typename T>
T *read_row(const ConvGeometry &g, T *x, int64_t plane, int64_t row, int64_t q, int64_t od, int64_t oh) {
    return x + q * plane + (od * g.stride[0] * g.in[1] + oh * g.stride[1]) * row;
}

// Where a channels-first gather of planes [q, end) is kRowsAhead rows on:
// step() asks for that row and moves to the next.
template <typename T>
class RowsAhead {
public:
    RowsAhead(const ConvGeometry &g, const T *x, int64_t plane, int64_t q, int64_t end)
        : g_(g), x_(x), plane_(plane), q_(q), end_(end),
          bytes_(((g.out[2] - 1) * g.stride[2] + 1) * (int64_t)sizeof(T)) {
        for (int64_t k = 0; k < kRowsAhead; ++k) step();  // the first rows
    }
    void step() {
        if (q_ >= end_) return;
        const char *row = reinterpret_cast<const char *>(read_row(g_, x_, plane_, g_.in[2], q_, d_, h_));
        for (int64_t b = 0; b < bytes_ + 63; b += 64) __builtin_prefetch(row + b, 0, 2);
        if (++h_ < g_.out[1]) return;
        h_ = 0;
        if (++d_ < g_.out[0]) return;
        d_ = 0, ++q_;
    }

private:
    const ConvGeometry &g_;
    const T *x_;
    int64_t plane_, q_, end_, bytes_, d_ = 0, h_ = 0;
};

// `wide`: by AVX-512 (one permute and masked ends a row of up to 16
// outputs, where AVX2's steps of 8 left ResNet-50's 14- and 7-output rows
// mostly to scalar copies).
template <typename T>
void copy_even(T *dst, const T *src, int64_t n, bool wide) {
#if CONV_HAVE_AVX512_KERNELS
    if constexpr (std::is_same_v<T, float>) return wide ? copy_even_avx512(dst, src, n) : copy_even_avx2(dst, src, n);
#endif
    (void)wide;
    for (int64_t j = 0; j < n; ++j) dst[j] = src[2 * j];
}

// Between x and its compact copy xc, a plane (one channel's, channels-first;
// all channels' pixels, channels-last) at a time: `gather` copies the
// positions the layer reads into xc; otherwise the plane is zeroed and xc's
// values are put back at their positions.
template <typename T>
void copy_planes(const ConvGeometry &g, T *x, T *xc, bool gather, ThreadPool &pool, int threads) {
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    const int64_t unit = last ? g.c : 1;  // elements per position
    const int64_t planes = last ? g.n : g.n * g.c;
    const int64_t row = g.in[2] * unit, plane = g.in[0] * g.in[1] * row;
    const int64_t out_row = g.out[2] * unit, out_plane = g.out[0] * g.out[1] * out_row;
    const int64_t step = g.stride[2] * unit;
    const int64_t items = std::min<int64_t>(planes, 8 * (int64_t)std::max(threads, 1));
    const bool even = step == 2 && has_copy_even(), wide = cpu_isa() == Isa::avx512;
    pool.parallel_for(
        items,
        [&](int64_t item, int) {
            const int64_t first = planes * item / items, end = planes * (item + 1) / items;
            RowsAhead<T> ahead(g, x, plane, first, unit == 1 && gather ? end : first);
            for (int64_t q = first; q < end; ++q) {
                T *in = x + q * plane, *out = xc + q * out_plane;
                if (!gather) std::fill(in, in + plane, T(0));
                for (int64_t od = 0; od < g.out[0]; ++od)
                    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                        T *i = read_row(g, x, plane, row, q, od, oh);
                        T *o = out + (od * g.out[1] + oh) * out_row;
                        if (unit == 1 && gather) {
                            ahead.step();
                            if (even)
                                copy_even(o, i, g.out[2], wide);
                            else
                                for (int64_t w = 0; w < g.out[2]; ++w) o[w] = i[w * step];
                        } else if (unit == 1)
                            for (int64_t w = 0; w < g.out[2]; ++w) i[w * step] = o[w];
                        else
                            for (int64_t w = 0; w < g.out[2]; ++w) {
                                if (gather)
                                    std::copy(i + w * step, i + w * step + unit, o + w * unit);
                                else
                                    std::copy(o + w * unit, o + (w + 1) * unit, i + w * step);
                            }
                    }
            }
        },
        threads);
}

void copy_compact(const ConvArgs &args, void *xc, bool gather, ThreadPool &pool, int threads) {
    if (args.dtype == CONV_DTYPE_FLOAT64)
        copy_planes(*args.g, static_cast<double *>(args.x), static_cast<double *>(xc), gather,
                    pool, threads);
    else
        copy_planes(*args.g, static_cast<float *>(args.x), static_cast<float *>(xc), gather,
                    pool, threads);
}

class Gemm1x1 final : public Algorithm {
public:
    const char *name() const override { return "gemm_1x1"; }
    conv_algo_t public_id() const override { return CONV_ALGO_GEMM_1X1; }
    const char *why_not(const ConvGeometry &g, conv_op_t) const override {
        return unpadded_1x1(g) ? nullptr : "it needs a 1x1 kernel and no padding";
    }
    // Strided, against im2col (which unfolds the same positions), forced, 1
    // thread, interleaved: channels-first ResNet-50 shortcuts (256->512,
    // 512->1024, 1024->2048 at stride 2) 1.0-1.43x at batch 1 and 1.3-1.8x
    // at batch 8; channels-last even at batch 1 (0.93-1.03x) but 512->1024
    // backward-filter 0.68x, so those stay with im2col.
    // With AVX2 (AMD EPYC Zen 3), channels-last, batch 1, 1 thread, 3
    // alternated runs, ms against im2col: 256->512 s2 onto 28x28 3.2 / 3.5 /
    // 3.5 vs 4.5 / 5.1 / 4.6 (forward / backward-data / backward-filter);
    // onto 14x14 and 7x7 even (0.99-1.09x) but 512->1024 backward-filter
    // 0.85x: from 28x28 output planes. Forward onto 7x7, once channels-last
    // forward on few positions ran per image (pointwise_avx512.cpp), 1.45x
    // (1024->2048 s2, 4 rounds), onto 14x14 0.97x: forward on every plane.
    // The same on AVX-512 (Intel Xeon with AMX, 1 thread, 3 alternated
    // rounds, channels-last forward, forced against AUTO's im2col) since its
    // forward from 1024+ channels onto 7x7 runs per image as well: 1024->2048
    // s2 1.18x (batch 8 1.28x), 512->1024 s2 1.03x (1.20x), 256->512 s2
    // 1.05x (1.14x).
    bool competitive(const ConvGeometry &g, conv_op_t op, conv_dtype_t) const override {
        if (g.is_pointwise() || g.layout == CONV_LAYOUT_CHANNELS_FIRST) return true;
        if (op == CONV_OP_FORWARD) return cpu_isa() == Isa::avx2 || cpu_isa() == Isa::avx512;
        return cpu_isa() == Isa::avx2 && g.out_size() >= 28 * 28;
    }
    size_t workspace_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                           int threads) const override {
        if (g.is_pointwise()) return pointwise_bytes(g, op, dtype, threads);
        const ConvGeometry c = compact_geometry(g);
        return (size_t)checked_add((int64_t)compact_bytes(g, dtype),
                                   (int64_t)pointwise_bytes(c, op, dtype, threads), "workspace");
    }
    void run(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) const override {
        if (args.g->is_pointwise()) return run_pointwise(args, ws, pool, threads);
        const ConvGeometry c = compact_geometry(*args.g);
        char *xc = static_cast<char *>(ws);
        ConvArgs inner = args;
        inner.g = &c;
        inner.x = xc;
        const bool data = args.op == CONV_OP_BACKWARD_DATA;
        if (!data) copy_compact(args, xc, true, pool, threads);
        run_pointwise(inner, xc + compact_bytes(*args.g, args.dtype), pool, threads);
        if (data) copy_compact(args, xc, false, pool, threads);
    }

    // W's panels (pointwise_avx512.cpp), where a pass packs all of W per call.
    size_t prepared_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype) const override {
        const ConvGeometry c = g.is_pointwise() ? g : compact_geometry(g);
        return own_kernel(c, op, dtype) ? pw_avx512_prepared_bytes(c, op) : 0;
    }
    void prepare_weights(const ConvGeometry &g, conv_op_t op, conv_dtype_t, const void *w, void *out,
                         ThreadPool &pool, int threads) const override {
        const ConvGeometry c = g.is_pointwise() ? g : compact_geometry(g);
        pw_avx512_prepare_weights(c, op, static_cast<const float *>(w), static_cast<float *>(out), pool, threads);
    }

private:
    static size_t pointwise_bytes(const ConvGeometry &g, conv_op_t op, conv_dtype_t dtype,
                                  int threads) {
        return own_kernel(g, op, dtype) ? pw_avx512_workspace_bytes(g, op, threads) : 0;
    }
    static void run_pointwise(const ConvArgs &args, void *ws, ThreadPool &pool, int threads) {
        if (own_kernel(*args.g, args.op, args.dtype))
            pw_avx512_run(args, ws, pool, threads);
        else
            run_gemm_conv(args, false, ws, pool, threads);
    }
};

}  // namespace

const Algorithm &gemm_1x1_algorithm() {
    static const Gemm1x1 algo;
    return algo;
}

}  // namespace conv::cpu
