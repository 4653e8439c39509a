#include "comm/kernels.h"

#include <cstring>

#include "comm/half.h"

namespace conv::comm {
namespace {

constexpr int64_t kBlock = 1024;  // elements reduced at a time (8 KiB of double)

// Element access per dtype: Acc is the accumulation type.
struct F32 {
    using T = float;
    using Acc = float;
    static Acc load(const T *p, int64_t i) { return p[i]; }
    static void store(T *p, int64_t i, Acc v) { p[i] = v; }
};
struct F64 {
    using T = double;
    using Acc = double;
    static Acc load(const T *p, int64_t i) { return p[i]; }
    static void store(T *p, int64_t i, Acc v) { p[i] = v; }
};
struct F16 {
    using T = uint16_t;
    using Acc = float;
    static Acc load(const T *p, int64_t i) { return half_to_float(p[i]); }
    static void store(T *p, int64_t i, Acc v) { p[i] = float_to_half(v); }
};
struct BF16 {
    using T = uint16_t;
    using Acc = float;
    static Acc load(const T *p, int64_t i) { return bf16_to_float(p[i]); }
    static void store(T *p, int64_t i, Acc v) { p[i] = float_to_bf16(v); }
};

template <class D>
void reduce_typed(int n, const void *const *sends, void *const *recvs, int64_t begin,
                  int64_t end, bool average) {
    using T = typename D::T;
    using Acc = typename D::Acc;
    Acc acc[kBlock];
    const Acc divisor = (Acc)n;
    for (int64_t b = begin; b < end; b += kBlock) {
        const int64_t len = end - b < kBlock ? end - b : kBlock;
        const T *s0 = static_cast<const T *>(sends[0]) + b;
        for (int64_t i = 0; i < len; ++i) acc[i] = D::load(s0, i);
        for (int r = 1; r < n; ++r) {
            const T *s = static_cast<const T *>(sends[r]) + b;
            for (int64_t i = 0; i < len; ++i) acc[i] += D::load(s, i);
        }
        if (average && n > 1)
            for (int64_t i = 0; i < len; ++i) acc[i] /= divisor;
        T *first = static_cast<T *>(recvs[0]) + b;
        for (int64_t i = 0; i < len; ++i) D::store(first, i, acc[i]);
        for (int r = 1; r < n; ++r)
            std::memcpy(static_cast<T *>(recvs[r]) + b, first, (size_t)len * sizeof(T));
    }
}

template <class D>
void divide_typed(void *data, int64_t count, int divisor) {
    using T = typename D::T;
    using Acc = typename D::Acc;
    T *p = static_cast<T *>(data);
    const Acc d = (Acc)divisor;
    for (int64_t i = 0; i < count; ++i) D::store(p, i, D::load(p, i) / d);
}

template <class D>
void sgd_typed(void *wv, const void *gv, void *hv, int64_t n, double lr, double momentum,
               double decay) {
    using T = typename D::T;
    using Acc = typename D::Acc;
    T *w = static_cast<T *>(wv);
    const T *g = static_cast<const T *>(gv);
    T *h = static_cast<T *>(hv);
    const Acc a = (Acc)lr, m = (Acc)momentum, dcy = (Acc)decay;
    for (int64_t i = 0; i < n; ++i) {
        Acc wi = D::load(w, i);
        Acc hi = m * D::load(h, i) + a * (D::load(g, i) + dcy * wi);
        D::store(h, i, hi);
        D::store(w, i, wi - hi);
    }
}

template <template <class> class Op, class... A>
void by_dtype(conv_dtype_t dtype, A &&...args) {
    switch (dtype) {
    case CONV_DTYPE_FLOAT32: Op<F32>::run(args...); break;
    case CONV_DTYPE_FLOAT64: Op<F64>::run(args...); break;
    case CONV_DTYPE_FLOAT16: Op<F16>::run(args...); break;
    case CONV_DTYPE_BFLOAT16: Op<BF16>::run(args...); break;
    default: break;  // validated by the callers
    }
}

template <class D>
struct ReduceOp {
    template <class... A>
    static void run(A... a) { reduce_typed<D>(a...); }
};
template <class D>
struct DivideOp {
    template <class... A>
    static void run(A... a) { divide_typed<D>(a...); }
};
template <class D>
struct SgdOp {
    template <class... A>
    static void run(A... a) { sgd_typed<D>(a...); }
};

}  // namespace

void reduce_into(conv_dtype_t dtype, int n, const void *const *sends, void *const *recvs,
                 int64_t begin, int64_t end, bool average) {
    if (begin >= end) return;
    by_dtype<ReduceOp>(dtype, n, sends, recvs, begin, end, average);
}

void divide(conv_dtype_t dtype, void *data, int64_t count, int divisor) {
    if (count <= 0 || divisor == 1) return;
    by_dtype<DivideOp>(dtype, data, count, divisor);
}

void widen_to_float(conv_dtype_t dtype, const void *src, float *dst, int64_t count) {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    if (dtype == CONV_DTYPE_FLOAT16)
        for (int64_t i = 0; i < count; ++i) dst[i] = half_to_float(s[i]);
    else
        for (int64_t i = 0; i < count; ++i) dst[i] = bf16_to_float(s[i]);
}

void narrow_from_float(conv_dtype_t dtype, const float *src, void *dst, int64_t count) {
    uint16_t *d = static_cast<uint16_t *>(dst);
    if (dtype == CONV_DTYPE_FLOAT16)
        for (int64_t i = 0; i < count; ++i) d[i] = float_to_half(src[i]);
    else
        for (int64_t i = 0; i < count; ++i) d[i] = float_to_bf16(src[i]);
}

void sgd_update(conv_dtype_t dtype, void *w, const void *g, void *h, int64_t n, double lr,
                double momentum, double decay) {
    if (n <= 0) return;
    by_dtype<SgdOp>(dtype, w, g, h, n, lr, momentum, decay);
}

}  // namespace conv::comm
