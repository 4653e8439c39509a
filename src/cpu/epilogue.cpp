#include "cpu/epilogue.h"

#include <algorithm>
#include <cstdint>

#include "comm/half.h"

namespace conv::cpu {

// `v < 0 ? 0 : v` rather than max(): a NaN stays NaN, so an element a bug
// left unwritten is not silently turned into a plausible 0.
template <class T>
static inline T apply(T v, T b, bool relu) {
    v += b;
    return (relu && v < T(0)) ? T(0) : v;
}

template <class T>
void bias_act_rows(T *y, int64_t rows, int64_t cols, int64_t ld, const T *bias, bool relu) {
    if (!bias && !relu) return;
    for (int64_t r = 0; r < rows; ++r) {
        T b = bias ? bias[r] : T(0);
        T *row = y + r * ld;
        for (int64_t j = 0; j < cols; ++j) row[j] = apply(row[j], b, relu);
    }
}

template <class T>
void bias_act_cols(T *y, int64_t rows, int64_t k, const T *bias, bool relu) {
    if (!bias && !relu) return;
    for (int64_t r = 0; r < rows; ++r) {
        T *row = y + r * k;
        for (int64_t j = 0; j < k; ++j) row[j] = apply(row[j], bias ? bias[j] : T(0), relu);
    }
}

namespace {

// bfloat16 bits, for the whole-tensor epilogues: computed in float, rounded
// to nearest (ties to even) once.
struct Bf16 {
    uint16_t bits;
};
inline double widen(float v) { return v; }
inline double widen(double v) { return v; }
inline double widen(Bf16 v) { return comm::bf16_to_float(v.bits); }
template <class T>
inline T narrow(double v) {
    return static_cast<T>(v);
}
template <>
inline Bf16 narrow<Bf16>(double v) {
    return {comm::float_to_bf16((float)v)};
}

template <class T>
void channel_sums_typed(const ChannelShape &sh, const T *t, T *sums, ThreadPool &pool,
                        int threads) {
    constexpr int64_t kBlock = 64;  // channels per work item (fits the stack)
    const int64_t C = sh.channels, P = sh.positions;
    const bool last = sh.layout == CONV_LAYOUT_CHANNELS_LAST;
    pool.parallel_for(
        (C + kBlock - 1) / kBlock,
        [&](int64_t item, int) {
            int64_t c0 = item * kBlock, c1 = std::min(C, c0 + kBlock);
            double acc[kBlock] = {0};
            for (int64_t n = 0; n < sh.n; ++n) {
                if (last) {
                    for (int64_t p = 0; p < P; ++p) {
                        const T *row = t + (n * P + p) * C;
                        for (int64_t c = c0; c < c1; ++c) acc[c - c0] += widen(row[c]);
                    }
                } else {
                    for (int64_t c = c0; c < c1; ++c) {
                        const T *row = t + (n * C + c) * P;
                        double s = 0;
                        for (int64_t p = 0; p < P; ++p) s += widen(row[p]);
                        acc[c - c0] += s;
                    }
                }
            }
            for (int64_t c = c0; c < c1; ++c) sums[c] = narrow<T>(acc[c - c0]);
        },
        threads);
}

void bias_act_tensor_bf16(const ChannelShape &sh, Bf16 *t, const Bf16 *bias, bool relu,
                         ThreadPool &pool, int threads) {
    const int64_t C = sh.channels, P = sh.positions;
    const bool last = sh.layout == CONV_LAYOUT_CHANNELS_LAST;
    pool.parallel_for(
        sh.n,
        [&](int64_t n, int) {
            Bf16 *tn = t + n * P * C;
            for (int64_t i = 0; i < P * C; ++i) {
                int64_t c = last ? i % C : i / P;
                float v = (float)widen(tn[i]) + (bias ? (float)widen(bias[c]) : 0.f);
                tn[i] = narrow<Bf16>(apply(v, 0.f, relu));
            }
        },
        threads);
}

template <class T>
void bias_act_tensor_typed(const ChannelShape &sh, T *t, const T *bias, bool relu,
                           ThreadPool &pool, int threads) {
    const int64_t C = sh.channels, P = sh.positions;
    if (sh.layout == CONV_LAYOUT_CHANNELS_LAST)
        pool.parallel_for(
            sh.n, [&](int64_t n, int) { bias_act_cols(t + n * P * C, P, C, bias, relu); },
            threads);
    else
        pool.parallel_for(
            sh.n, [&](int64_t n, int) { bias_act_rows(t + n * C * P, C, P, P, bias, relu); },
            threads);
}

}  // namespace

void channel_sums(const ChannelShape &s, conv_dtype_t dtype, const void *t, void *sums,
                  ThreadPool &pool, int threads) {
    if (dtype == CONV_DTYPE_BFLOAT16)
        channel_sums_typed(s, static_cast<const Bf16 *>(t), static_cast<Bf16 *>(sums), pool,
                           threads);
    else if (dtype == CONV_DTYPE_FLOAT32)
        channel_sums_typed(s, static_cast<const float *>(t), static_cast<float *>(sums), pool,
                           threads);
    else
        channel_sums_typed(s, static_cast<const double *>(t), static_cast<double *>(sums), pool,
                           threads);
}

void bias_act_tensor(const ChannelShape &s, conv_dtype_t dtype, void *t, const void *bias,
                     bool relu, ThreadPool &pool, int threads) {
    if (!bias && !relu) return;
    if (dtype == CONV_DTYPE_BFLOAT16)
        bias_act_tensor_bf16(s, static_cast<Bf16 *>(t), static_cast<const Bf16 *>(bias), relu,
                             pool, threads);
    else if (dtype == CONV_DTYPE_FLOAT32)
        bias_act_tensor_typed(s, static_cast<float *>(t), static_cast<const float *>(bias), relu,
                              pool, threads);
    else
        bias_act_tensor_typed(s, static_cast<double *>(t), static_cast<const double *>(bias),
                              relu, pool, threads);
}

#define CONV_INSTANTIATE_EPILOGUE(T)                                                        \
    template void bias_act_rows<T>(T *, int64_t, int64_t, int64_t, const T *, bool);       \
    template void bias_act_cols<T>(T *, int64_t, int64_t, const T *, bool);
CONV_INSTANTIATE_EPILOGUE(float)
CONV_INSTANTIATE_EPILOGUE(double)

}  // namespace conv::cpu
