/* --peak: one thread's FMA peak, the bar the per-suite efficiency is read
 * against. The loop is the best any kernel can do on this core: 12
 * independent chains of 512-bit FMAs (256-bit on a CPU with AVX2 and no
 * AVX-512; enough for two FMA units of latency 4, and for one of latency 6),
 * no loads, written in assembly so no compiler spills an accumulator; and
 * the same chains fed by a vector load each (cb_fma_load_peak). The
 * accumulators start at zero (a register's leftover could be a denormal). */

#include "convbench.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CB_HAVE_FMA_LOOP 1
#endif

#ifdef CB_HAVE_FMA_LOOP
/* The 12 accumulators (registers 0-11) by the assembler's .irp: zeroed (a
 * VEX xor clears the whole register), or each given one FMA a step. */
#define CB_ACCUMULATORS ".irp i,0,1,2,3,4,5,6,7,8,9,10,11\n\t"
#define CB_ZERO_ACCUMULATORS CB_ACCUMULATORS "vxorps %%xmm\\i, %%xmm\\i, %%xmm\\i\n\t.endr\n\t"

/* 12 FMAs of 16 floats per iteration: 384 FLOP. */
__attribute__((target("avx512f"))) static void fma_loop(long iterations)
{
    __asm__ volatile(
        "vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
        "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"
        CB_ZERO_ACCUMULATORS
        "1:\n\t"
        CB_ACCUMULATORS
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm\\i\n\t"
        ".endr\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(iterations)
        :
        : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm30", "xmm31");
}

/* The same with 256-bit FMAs, for CPUs with AVX2 but no AVX-512 (only 16
 * registers): 12 FMAs of 8 floats per iteration, 192 FLOP. */
__attribute__((target("avx2,fma"))) static void fma_loop_avx2(long iterations)
{
    __asm__ volatile(
        "vxorps %%xmm14, %%xmm14, %%xmm14\n\t"
        "vxorps %%xmm15, %%xmm15, %%xmm15\n\t"
        CB_ZERO_ACCUMULATORS
        "1:\n\t"
        CB_ACCUMULATORS
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm\\i\n\t"
        ".endr\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(iterations)
        :
        : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm14", "xmm15");
}

/* The same 12 chains, each FMA's first operand a vector loaded from L1 (12
 * consecutive vectors at `from`): the rate a kernel that loads a vector per
 * FMA can reach. On an AMD EPYC (Zen 3, 88-94 GFLOP/s peak) it read 71-89
 * GFLOP/s with aligned loads and 43-48 with loads 4 bytes off (every other
 * 32-byte load then spans two cache lines; every 64-byte one): a depthwise
 * kernel whose taps are shifted loads meets that bound before the FMAs'. */
__attribute__((target("avx512f"))) static void fma_load_loop(long iterations, const float *from)
{
    __asm__ volatile(
        "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"
        CB_ZERO_ACCUMULATORS
        "1:\n\t"
        CB_ACCUMULATORS
        "vfmadd231ps \\i*64(%1), %%zmm31, %%zmm\\i\n\t"
        ".endr\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(iterations)
        : "r"(from)
        : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
          "xmm9", "xmm10", "xmm11", "xmm31");
}

__attribute__((target("avx2,fma"))) static void fma_load_loop_avx2(long iterations, const float *from)
{
    __asm__ volatile(
        "vxorps %%xmm15, %%xmm15, %%xmm15\n\t"
        CB_ZERO_ACCUMULATORS
        "1:\n\t"
        CB_ACCUMULATORS
        "vfmadd231ps \\i*32(%1), %%ymm15, %%ymm\\i\n\t"
        ".endr\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(iterations)
        : "r"(from)
        : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
          "xmm9", "xmm10", "xmm11", "xmm15");
}
#endif

int cb_fma_peak_bits(void)
{
#ifdef CB_HAVE_FMA_LOOP
    if (__builtin_cpu_supports("avx512f"))
        return 512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 256;
#endif
    return 0;
}

#ifdef CB_HAVE_FMA_LOOP
/* GFLOP/s of one of the loops, the median of 7 runs after one untimed (the
 * core's vector frequency settles). `from`: NULL for the register-only loop,
 * else the loaded vectors. */
static double median_rate(int bits, const float *from)
{
    enum { kRuns = 7 };
    const long iterations = 10000000; /* 3.84 GFLOP (1.92 at 256 bits): ~25-45 ms on one core */
    const double flop = bits == 512 ? 384 : 192;
    double runs[kRuns];
    for (int i = -1; i < kRuns; i++) {
        double t = cb_now_ns();
        if (bits == 512)
            from ? fma_load_loop(iterations, from) : fma_loop(iterations);
        else
            from ? fma_load_loop_avx2(iterations, from) : fma_loop_avx2(iterations);
        if (i >= 0)
            runs[i] = (double)iterations * flop / (cb_now_ns() - t);
    }
    return cb_median(runs, kRuns);
}
#endif

double cb_fma_peak(void)
{
#ifdef CB_HAVE_FMA_LOOP
    const int bits = cb_fma_peak_bits();
    return bits ? median_rate(bits, NULL) : 0;
#else
    return 0;
#endif
}

double cb_fma_load_peak(int offset_bytes)
{
#ifdef CB_HAVE_FMA_LOOP
    /* 12 vectors of 64 bytes, and room for the offset; zeros (no denormals). */
    static float from[12 * 16 + 16] __attribute__((aligned(64)));
    const int bits = cb_fma_peak_bits();
    if (!bits || offset_bytes < 0 || offset_bytes > 60 || offset_bytes % 4)
        return 0;
    return median_rate(bits, from + offset_bytes / 4);
#else
    (void)offset_bytes;
    return 0;
#endif
}
