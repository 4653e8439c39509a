// Which x86 vector instructions the CPU kernels may use. Decided once per
// process from what the CPU reports (cpuid), capped by the environment
// variable CONV_CPU_ISA=baseline|avx512 -- as oneDNN's ONEDNN_MAX_CPU_ISA --
// so the portable paths run and are tested on a machine that has AVX-512.
//
// Kernels for an ISA live in ordinary translation units, each function
// marked CONV_TARGET_AVX512 (GCC/Clang compile just that function for the
// ISA). No file is built with -mavx512f: an inline function or template
// instantiated in such a file could be merged by the linker with the
// baseline copy and run on a CPU without the instructions.
#pragma once

namespace conv::cpu {

enum class Isa { baseline, avx512 };

// The ISA the kernels use in this process (AVX-512: F, BW, DQ, VL).
Isa cpu_isa();
const char *isa_name(Isa isa);

}  // namespace conv::cpu

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CONV_HAVE_AVX512_KERNELS 1
#define CONV_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#else
#define CONV_HAVE_AVX512_KERNELS 0
#define CONV_TARGET_AVX512
#endif
