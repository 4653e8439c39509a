#include "cpu/amx.h"

#include <cstdlib>
#include <cstring>

#include "cpu/isa.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CONV_AMX_PROBE 1
#else
#define CONV_AMX_PROBE 0
#endif

namespace conv::cpu {
namespace {

#if CONV_AMX_PROBE
constexpr int kArchGetXcompPerm = 0x1022;  // arch_prctl codes (asm/prctl.h)
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

unsigned long long xgetbv0() {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

// The hardware's answer, before any cap.
const char *probe_hardware() {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return "the CPU reports no CPUID leaf 7";
    const bool tile = d & (1u << 24), bf16 = d & (1u << 22);
    if (!tile) return "the CPU has no AMX-TILE";
    if (!bf16) return "the CPU has no AMX-BF16";
    // OSXSAVE, then XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA).
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
        return "the OS does not enable XSAVE (no tile state)";
    const unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & (3ull << 17)) != (3ull << 17)) return "the OS does not enable the tile state (XCR0)";
    // Leaf 0x1D: the highest palette, then palette 1's geometry, which the
    // kernels' fixed configuration assumes (8 tiles of 16 rows x 64 bytes).
    if (__get_cpuid_max(0, nullptr) < 0x1D) return "the CPU reports no tile palette (CPUID 0x1D)";
    __cpuid_count(0x1D, 0, a, b, c, d);
    if (a < 1) return "the CPU reports tile palette 0 only (CPUID 0x1D)";
    __cpuid_count(0x1D, 1, a, b, c, d);
    const unsigned total = a & 0xffff, per_tile = a >> 16, per_row = b & 0xffff,
                   names = b >> 16, rows = c & 0xffff;
    if (total < 8192 || per_tile < 1024 || per_row < 64 || names < 8 || rows < 16)
        return "tile palette 1 is smaller than 8 tiles of 16 rows x 64 bytes (CPUID 0x1D)";
    // Permission: Linux 5.16+ grants the tile state to a process that asks.
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
        return "the kernel refused the tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
    unsigned long long granted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
        !(granted & (1ull << kXfeatureXtiledata)))
        return "the kernel did not grant the tile state (arch_prctl ARCH_GET_XCOMP_PERM)";
    return nullptr;
}
#endif

const char *probe() {
#if CONV_AMX_PROBE
    // The cap first: CONV_CPU_ISA=avx512 or baseline keeps even the
    // permission request from happening.
    const char *cap = std::getenv("CONV_CPU_ISA");
    if (cap && (std::strcmp(cap, "avx512") == 0 || std::strcmp(cap, "baseline") == 0))
        return "CONV_CPU_ISA caps the kernels below AMX";
    if (cpu_isa() != Isa::avx512) return "the CPU has no AVX-512 (the tile kernels' epilogues use it)";
    return probe_hardware();
#else
    return "not an x86-64 Linux build";
#endif
}

}  // namespace

const char *amx_unavailable() {
    static const char *const why = probe();  // once per process, thread-safe
    return why;
}

TileBackend tile_backend() {
    static const TileBackend backend = [] {
        const char *v = std::getenv("CONV_CPU_AMX");
        if (v && std::strcmp(v, "emulate") == 0) return TileBackend::emulated;
        return amx_unavailable() ? TileBackend::none : TileBackend::hardware;
    }();
    return backend;
}

const char *tile_backend_name(TileBackend b) {
    switch (b) {
    case TileBackend::hardware: return "amx";
    case TileBackend::emulated: return "amx (emulated)";
    default: return "none";
    }
}

}  // namespace conv::cpu
