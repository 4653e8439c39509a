#include "cpu/epilogue.h"

#include <algorithm>

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

template <class T>
void bias_gradient(const ConvGeometry &g, const T *dy, T *db, ThreadPool &pool, int threads) {
    constexpr int64_t kBlock = 64;  // channels per work item (fits the stack)
    const int64_t K = g.k, P = g.out_size();
    const bool last = g.layout == CONV_LAYOUT_CHANNELS_LAST;
    pool.parallel_for(
        (K + kBlock - 1) / kBlock,
        [&](int64_t item, int) {
            int64_t k0 = item * kBlock, k1 = std::min(K, k0 + kBlock);
            double acc[kBlock] = {0};
            for (int64_t n = 0; n < g.n; ++n) {
                if (last) {
                    for (int64_t p = 0; p < P; ++p) {
                        const T *row = dy + (n * P + p) * K;
                        for (int64_t k = k0; k < k1; ++k) acc[k - k0] += row[k];
                    }
                } else {
                    for (int64_t k = k0; k < k1; ++k) {
                        const T *row = dy + (n * K + k) * P;
                        double s = 0;
                        for (int64_t p = 0; p < P; ++p) s += row[p];
                        acc[k - k0] += s;
                    }
                }
            }
            for (int64_t k = k0; k < k1; ++k) db[k] = static_cast<T>(acc[k - k0]);
        },
        threads);
}

#define CONV_INSTANTIATE_EPILOGUE(T)                                                        \
    template void bias_act_rows<T>(T *, int64_t, int64_t, int64_t, const T *, bool);       \
    template void bias_act_cols<T>(T *, int64_t, int64_t, const T *, bool);                 \
    template void bias_gradient<T>(const ConvGeometry &, const T *, T *, ThreadPool &, int);
CONV_INSTANTIATE_EPILOGUE(float)
CONV_INSTANTIATE_EPILOGUE(double)

}  // namespace conv::cpu
