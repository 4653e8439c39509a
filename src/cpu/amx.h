// Intel AMX (Advanced Matrix Extensions) for this process: whether the tile
// solvers may run on the CPU's tiles, on emulated ones, or not at all.
//
// Hardware tiles need all of: CPUID's AMX-TILE and AMX-BF16 bits, a tile
// palette in CPUID leaf 0x1D (some VMs set the bits with a zero palette and
// then raise #UD), the OS's XTILECFG/XTILEDATA state in XCR0, and the
// kernel's per-process permission (arch_prctl(ARCH_REQ_XCOMP_PERM, 18),
// asked once, thread-safely); and no cap below it (CONV_CPU_ISA=avx512 or
// baseline). Any refusal means "no AMX", never a crash: amx_unavailable()
// says which, for the level-2 trace and the solvers' refusals.
//
// Emulated tiles (CONV_CPU_AMX=emulate) run the same kernels over a plain
// C++ model of the few tile instructions used (cpu/tiles.h), on any CPU:
// that is how the tile code's layouts, blocking and edges are tested on a
// machine without AMX. Slow; for tests only.
#pragma once

namespace conv::cpu {

enum class TileBackend { none, hardware, emulated };

// What the tile solvers run on in this process: the hardware where it is
// usable (and not emulation asked for), emulated tiles where
// CONV_CPU_AMX=emulate, else none. Decided once.
TileBackend tile_backend();

// Null when the hardware tiles are usable; else why not ("the CPU has no
// AMX-BF16", "the kernel refused the tile state: ...", "CONV_CPU_ISA caps
// it"). A static string.
const char *amx_unavailable();

// "amx", "amx (emulated)" or "none": for device signatures and convbench.
const char *tile_backend_name(TileBackend b);

}  // namespace conv::cpu
