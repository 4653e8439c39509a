#include "cpu/isa.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace conv::cpu {
namespace {

Isa detect() {
#if CONV_HAVE_AVX512_KERNELS
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("fma");
    Isa best = avx512 ? Isa::avx512 : Isa::baseline;
#else
    Isa best = Isa::baseline;
#endif
    // A cap only lowers what the CPU has; an unknown value is ignored.
    const char *cap = std::getenv("CONV_CPU_ISA");
    if (cap && std::strcmp(cap, "baseline") == 0) return Isa::baseline;
    return best;
}

// CPUID.(EAX=7, ECX=1):EAX bit 5. __builtin_cpu_supports("avx512bf16")
// exists only from GCC 13 on, so the bit is read directly; the OS's zmm
// state is part of what __builtin_cpu_supports("avx512f") checks (XGETBV).
bool detect_bf16() {
#if CONV_HAVE_AVX512_KERNELS
    if (detect() != Isa::avx512) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    if (!(a & (1u << 5))) return false;
    const char *cap = std::getenv("CONV_CPU_ISA");
    return !(cap && std::strcmp(cap, "avx512") == 0);
#else
    return false;
#endif
}

}  // namespace

Isa cpu_isa() {
    static const Isa isa = detect();
    return isa;
}

bool cpu_has_avx512_bf16() {
    static const bool has = detect_bf16();
    return has;
}

const char *isa_name(Isa isa) { return isa == Isa::avx512 ? "avx512" : "baseline"; }

}  // namespace conv::cpu
