/* --peak: one thread's FMA peak, the bar the per-suite efficiency is read
 * against. The loop is the best any kernel can do on this core: 12
 * independent chains of 512-bit FMAs (256-bit on a CPU with AVX2 and no
 * AVX-512; enough for two FMA units of latency 4, and for one of latency 6),
 * no loads, written in assembly so no compiler spills an accumulator. */
#include <time.h>

#include "convbench.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CB_HAVE_FMA_LOOP 1
#endif

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#ifdef CB_HAVE_FMA_LOOP
/* 12 FMAs of 16 floats per iteration: 384 FLOP. */
__attribute__((target("avx512f"))) static void fma_loop(long iterations)
{
    __asm__ volatile(
        "vxorps %%xmm30, %%xmm30, %%xmm30\n\t"
        "vxorps %%xmm31, %%xmm31, %%xmm31\n\t"
        "1:\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm0\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm1\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm3\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm4\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm5\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm7\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm8\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm9\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm11\n\t"
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
        "1:\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(iterations)
        :
        : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm14", "xmm15");
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

double cb_fma_peak(void)
{
#ifdef CB_HAVE_FMA_LOOP
    const int bits = cb_fma_peak_bits();
    if (!bits)
        return 0;
    enum { kRuns = 7 };
    const long iterations = 10000000; /* 3.84 GFLOP (1.92 at 256 bits): ~25-45 ms on one core */
    const double flop = bits == 512 ? 384 : 192;
    double runs[kRuns];
    for (int i = -1; i < kRuns; i++) { /* a first run: the core's vector frequency settles */
        double t = seconds();
        if (bits == 512)
            fma_loop(iterations);
        else
            fma_loop_avx2(iterations);
        if (i >= 0)
            runs[i] = (double)iterations * flop / (seconds() - t) * 1e-9;
    }
    for (int i = 1; i < kRuns; i++) /* the median */
        for (int j = i; j > 0 && runs[j] < runs[j - 1]; j--) {
            double s = runs[j];
            runs[j] = runs[j - 1];
            runs[j - 1] = s;
        }
    return runs[kRuns / 2];
#else
    return 0;
#endif
}
