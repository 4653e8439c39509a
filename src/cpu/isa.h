// Which x86 vector instructions the CPU kernels may use. Decided once per
// process from what the CPU reports (cpuid), capped by the environment
// variable CONV_CPU_ISA=baseline|avx2|avx512 -- as oneDNN's ONEDNN_MAX_CPU_ISA
// -- so the portable and AVX2 paths run and are tested on a machine that has
// AVX-512.
//
// Kernels for an ISA live in ordinary translation units, each function
// marked CONV_TARGET_AVX512 or CONV_TARGET_AVX2 (GCC/Clang compile just that
// function for the ISA). No file is built with -mavx512f or -mavx2: an inline function or template
// instantiated in such a file could be merged by the linker with the
// baseline copy and run on a CPU without the instructions.
#pragma once

namespace conv::cpu {

// In order: each level has everything of the ones before it.
enum class Isa { baseline, avx2, avx512 };

// The ISA the kernels use in this process (AVX2: AVX2 and FMA, as on AMD
// Zen 1-3 and Intel's desktop cores; AVX-512: F, BW, DQ, VL, and AVX2+FMA).
Isa cpu_isa();
const char *isa_name(Isa isa);

}  // namespace conv::cpu

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CONV_HAVE_AVX512_KERNELS 1
#define CONV_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define CONV_TARGET_AVX2 __attribute__((target("avx2,fma")))
// PREFETCHW (__builtin_prefetch(p, 1, ...)): every x86-64 CPU with AVX2 has it.
#define CONV_TARGET_PRFCHW __attribute__((target("prfchw")))
#else
#define CONV_HAVE_AVX512_KERNELS 0
#define CONV_TARGET_AVX512
#define CONV_TARGET_AVX2
#define CONV_TARGET_PRFCHW
#endif
