#include "cpu/isa.h"

#include <cstdlib>
#include <cstring>

namespace conv::cpu {
namespace {

Isa detect() {
#if CONV_HAVE_AVX512_KERNELS
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
    Isa best = avx512 ? Isa::avx512 : avx2 ? Isa::avx2 : Isa::baseline;
#else
    Isa best = Isa::baseline;
#endif
    // A cap only lowers what the CPU has; an unknown value is ignored.
    const char *cap = std::getenv("CONV_CPU_ISA");
    if (cap && std::strcmp(cap, "baseline") == 0) return Isa::baseline;
    if (cap && std::strcmp(cap, "avx2") == 0 && best == Isa::avx512) return Isa::avx2;
    return best;
}

}  // namespace

Isa cpu_isa() {
    static const Isa isa = detect();
    return isa;
}

const char *isa_name(Isa isa) {
    return isa == Isa::avx512 ? "avx512" : isa == Isa::avx2 ? "avx2" : "baseline";
}

}  // namespace conv::cpu
