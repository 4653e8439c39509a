// The numerical guard (conv_context_set_check_numerics): the first NaN or
// infinity of an output, found after a pass and reported with
// CONV_STATUS_NUMERICAL_ERROR naming the pass, the tensor and the index.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"

namespace conv {

// Index (in memory order) of the first non-finite element, or -1. A value
// is NaN or infinite when its exponent bits are all ones; blocks are screened
// with an integer OR of that test (which vectorises without -ffast-math) and
// only a block that fails is searched.
template <class T, class Bits, Bits kExponent>
int64_t first_non_finite_bits(const T *v, int64_t n) {
    static_assert(sizeof(T) == sizeof(Bits), "bit pattern size");
    constexpr int64_t kBlock = 1024;
    for (int64_t b = 0; b < n; b += kBlock) {
        int64_t e = b + kBlock < n ? b + kBlock : n;
        Bits bad = 0;
        for (int64_t i = b; i < e; ++i) {
            Bits bits;
            std::memcpy(&bits, v + i, sizeof bits);
            bad |= (Bits)((bits & kExponent) == kExponent);
        }
        if (!bad) continue;
        for (int64_t i = b; i < e; ++i)
            if (!std::isfinite(v[i])) return i;
    }
    return -1;
}

inline int64_t first_non_finite(const float *v, int64_t n) {
    return first_non_finite_bits<float, uint32_t, 0x7f800000u>(v, n);
}
inline int64_t first_non_finite(const double *v, int64_t n) {
    return first_non_finite_bits<double, uint64_t, 0x7ff0000000000000ull>(v, n);
}

// bfloat16 bits (computed on the CPU with AVX-512): the exponent alone says.
inline int64_t first_non_finite_bf16(const uint16_t *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if ((v[i] & 0x7f80u) == 0x7f80u) return i;
    return -1;
}

inline double bf16_value(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

inline int64_t first_non_finite(const Tensor &t) {
    switch (t.dtype()) {
    case CONV_DTYPE_FLOAT32: return first_non_finite(t.as<const float>(), t.elements());
    case CONV_DTYPE_FLOAT64: return first_non_finite(t.as<const double>(), t.elements());
    case CONV_DTYPE_BFLOAT16: return first_non_finite_bf16(t.as<const uint16_t>(), t.elements());
    default: return -1;  // float16 is never computed on the host
    }
}

// Throws NUMERICAL_ERROR when tensor `name`, an output of `pass`, holds a NaN
// or an infinity.
inline void check_finite(const Tensor &t, const char *pass, const char *name) {
    double v = 0;
    // A device tensor is scanned on its device (DeviceRuntime), all dtypes.
    int64_t i = t.runtime() ? t.runtime()->first_non_finite(t.data(), t.elements(), t.dtype(), &v)
                            : first_non_finite(t);
    if (i < 0) return;
    if (!t.runtime())
        v = t.dtype() == CONV_DTYPE_FLOAT32    ? (double)t.as<const float>()[i]
            : t.dtype() == CONV_DTYPE_BFLOAT16 ? bf16_value(t.as<const uint16_t>()[i])
                                               : t.as<const double>()[i];
    fail(CONV_STATUS_NUMERICAL_ERROR,
         "numerical guard: %s produced %s in %s (%s): first at element %lld in memory order; "
         "the outputs were written",
         pass, std::isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf"), name,
         dims_string(t.ndim(), t.dims()).c_str(), (long long)i);
}

}  // namespace conv
