// The few AMX tile operations the batch-reduce GEMM uses, in two
// implementations with one interface, so the kernel over them is written
// once (cpu/brgemm.cpp):
//   HwTiles   the CPU's tiles (inline assembly; tile numbers must be
//             literals, hence whole operations, not a tile parameter)
//   EmuTiles  a plain C++ model of the same instructions and configuration,
//             per thread, for CPUs without AMX (tests: CONV_CPU_AMX=emulate)
//
// One configuration for every kernel (palette 1): tmm0-3 the 2x2 fp32
// accumulators of a 32x32 block (16 rows x 16 floats each), tmm4-5 two A
// tiles (16 rows x 32 bf16), tmm6-7 two B tiles (16 pair-rows x 16 columns
// of bf16 pairs). Edges are computed in full and discarded (the callers
// keep the memory a full tile reads valid), so the configuration never
// changes: it lives in read-only storage (GCC 12 may drop the stores to a
// stack-local one before ldtilecfg) and a thread loads it once per parallel
// region (TileScope), releasing the tiles at the region's end.
//
// Numerics of tdpbf16ps, modelled by EmuTiles: products of bf16 pairs are
// exact in fp32 and added to the accumulator in fp32, round to nearest even;
// bf16 inputs that are subnormal count as zero and subnormal fp32 results
// are flushed to zero (Intel SDM, TDPBF16PS).
#pragma once

#include <cstdint>
#include <cstring>

namespace conv::cpu::tiles {

constexpr int kRows = 16;      // rows of every tile
constexpr int kRowBytes = 64;  // bytes of every tile row
constexpr int kBlock = 32;     // a block: 2 x 2 tiles of 16 x 16 floats
constexpr int kChunk = 32;     // bf16 elements of the reduction per A tile row

// ldtilecfg's 64 bytes, palette 1.
struct alignas(64) Config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

inline constexpr Config kConfig = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
    {16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0}};

// --------------------------------------------------------------- hardware

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
struct HwTiles {
    static void configure() { __asm__ volatile("ldtilecfg %0" ::"m"(kConfig) : "memory"); }
    static void release() { __asm__ volatile("tilerelease" ::: "memory"); }
    static void zero_c() {
        __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::
                             : "memory");
    }
    // C tiles from / to a 32 x 32 float block with rows `ld` bytes apart.
    static void load_c(const float *c, long ld) {
        const char *p = (const char *)c;
        __asm__ volatile(
            "tileloadd (%0,%1,1), %%tmm0\n\t"
            "tileloadd (%2,%1,1), %%tmm1\n\t"
            "tileloadd (%3,%1,1), %%tmm2\n\t"
            "tileloadd (%4,%1,1), %%tmm3" ::"r"(p),
            "r"(ld), "r"(p + 64), "r"(p + 16 * ld), "r"(p + 16 * ld + 64)
            : "memory");
    }
    static void store_c(float *c, long ld) {
        char *p = (char *)c;
        __asm__ volatile(
            "tilestored %%tmm0, (%0,%1,1)\n\t"
            "tilestored %%tmm1, (%2,%1,1)\n\t"
            "tilestored %%tmm2, (%3,%1,1)\n\t"
            "tilestored %%tmm3, (%4,%1,1)" ::"r"(p),
            "r"(ld), "r"(p + 64), "r"(p + 16 * ld), "r"(p + 16 * ld + 64)
            : "memory");
    }
    // A: rows 0-15 and 16-31 of the block, `stride` bytes apart; B: columns
    // 0-15 and 16-31, pair-rows `stride` bytes apart.
    static void load_a(const void *a0, const void *a1, long stride) {
        __asm__ volatile("tileloadd (%0,%2,1), %%tmm4\n\ttileloadd (%1,%2,1), %%tmm5" ::"r"(a0),
                         "r"(a1), "r"(stride)
                         : "memory");
    }
    static void load_b(const void *b0, const void *b1, long stride) {
        __asm__ volatile("tileloadd (%0,%2,1), %%tmm6\n\ttileloadd (%1,%2,1), %%tmm7" ::"r"(b0),
                         "r"(b1), "r"(stride)
                         : "memory");
    }
    // The four products of the 2 x 2 block: tmm(2i + j) += tmm(4 + i) . tmm(6 + j).
    static void dot4() {
        __asm__ volatile(
            "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
            "tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
            "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
            "tdpbf16ps %%tmm7, %%tmm5, %%tmm3" ::
                : "memory");
    }
};
#define CONV_HAVE_HW_TILES 1
#else
#define CONV_HAVE_HW_TILES 0
#endif

// --------------------------------------------------------------- emulated

struct EmuTiles {
    struct File {
        alignas(64) float c[4][kRows][16];    // tmm0-3
        alignas(64) uint16_t a[2][kRows][32];  // tmm4-5
        alignas(64) uint16_t b[2][kRows][32];  // tmm6-7: pair-row r, column n: [2n], [2n + 1]
        bool configured;
    };
    static File &file() {
        static thread_local File f;
        return f;
    }
    static void configure() { file().configured = true; }
    static void release() { file().configured = false; }
    static void zero_c() { std::memset(file().c, 0, sizeof file().c); }
    static void load_c(const float *c, long ld) {
        File &f = file();
        for (int t = 0; t < 4; ++t)
            for (int r = 0; r < kRows; ++r)
                std::memcpy(f.c[t][r], (const char *)c + (t / 2 * 16 + r) * ld + t % 2 * 64, 64);
    }
    static void store_c(float *c, long ld) {
        const File &f = file();
        for (int t = 0; t < 4; ++t)
            for (int r = 0; r < kRows; ++r)
                std::memcpy((char *)c + (t / 2 * 16 + r) * ld + t % 2 * 64, f.c[t][r], 64);
    }
    static void load_a(const void *a0, const void *a1, long stride) {
        File &f = file();
        for (int r = 0; r < kRows; ++r) {
            std::memcpy(f.a[0][r], (const char *)a0 + r * stride, 64);
            std::memcpy(f.a[1][r], (const char *)a1 + r * stride, 64);
        }
    }
    static void load_b(const void *b0, const void *b1, long stride) {
        File &f = file();
        for (int r = 0; r < kRows; ++r) {
            std::memcpy(f.b[0][r], (const char *)b0 + r * stride, 64);
            std::memcpy(f.b[1][r], (const char *)b1 + r * stride, 64);
        }
    }
    static void dot4() {
        File &f = file();
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) dot(f.c[2 * i + j], f.a[i], f.b[j]);
    }

private:
    // bf16 -> fp32, a subnormal input as zero (DAZ).
    static float widen(uint16_t h) {
        uint32_t bits = (uint32_t)h << 16;
        if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
        float v;
        std::memcpy(&v, &bits, 4);
        return v;
    }
    // A subnormal result flushed to zero (FTZ), sign kept.
    static float flush(float v) {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
        std::memcpy(&v, &bits, 4);
        return v;
    }
    static void dot(float (&c)[kRows][16], const uint16_t (&a)[kRows][32],
                    const uint16_t (&b)[kRows][32]) {
        for (int m = 0; m < kRows; ++m)
            for (int k = 0; k < kRows; ++k) {  // pair k of A's row, pair-row k of B
                const float a0 = widen(a[m][2 * k]), a1 = widen(a[m][2 * k + 1]);
                for (int n = 0; n < 16; ++n) {
                    float s = flush(c[m][n] + a0 * widen(b[k][2 * n]));
                    c[m][n] = flush(s + a1 * widen(b[k][2 * n + 1]));
                }
            }
    }
};

}  // namespace conv::cpu::tiles
