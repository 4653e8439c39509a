#include "cpu/jit/jit.h"

#include <cstdlib>
#include <cstring>

#include "cpu/isa.h"

namespace conv::cpu::jit {

bool enabled() {
    static const bool on = [] {
#if CONV_HAVE_XBYAK
        const char *env = std::getenv("CONV_CPU_JIT");
        if (env && std::strcmp(env, "0") == 0) return false;
        return cpu_isa() == Isa::avx512 || cpu_isa() == Isa::avx2;
#else
        return false;
#endif
    }();
    return on;
}

}  // namespace conv::cpu::jit
