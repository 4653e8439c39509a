// IEEE binary16 and bfloat16 <-> float on the host, by bit manipulation
// (no F16C or AVX512-BF16 assumed). float -> 16 bits rounds to nearest, ties
// to even; NaN stays NaN (quiet), infinities and signed zeros are kept,
// values too large for binary16 become infinity, too small ones subnormal or
// zero.
#pragma once

#include <cstdint>
#include <cstring>

namespace conv::comm {

inline float bits_to_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
inline uint32_t float_to_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return bits_to_float(sign | 0x7f800000u | (man << 13));  // inf / NaN
    if (exp == 0) {
        // zero or subnormal: man * 2^-24, exact in float
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t float_to_half(float f) {
    uint32_t x = float_to_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or NaN
        return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
    if (abs >= 0x477ff000u)  // rounds to >= 65536: overflow to infinity
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
        // value = abs_float; half subnormal unit is 2^-24. Adding 0.5 (2^-1)
        // in float shifts the unit into the low mantissa bits with the FPU's
        // round-to-nearest-even doing the rounding.
        float v = bits_to_float(abs) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(float_to_bits(v) - 0x3f000000u));
    }
    // normal: rebias the exponent (127 -> 15) and round 13 dropped bits
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // -(112 << 23) + rounding bias 0xfff + odd
    return (uint16_t)(sign | (uint16_t)(abs >> 13));
}

inline float bf16_to_float(uint16_t h) { return bits_to_float((uint32_t)h << 16); }

inline uint16_t float_to_bf16(float f) {
    uint32_t x = float_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest, ties to even
    return (uint16_t)(x >> 16);
}

}  // namespace conv::comm
