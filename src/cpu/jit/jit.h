// Code generated at run time for one problem (Xbyak, the generator oneDNN
// uses): loop bounds, strides and tap offsets become constants and
// displacements of the instructions, accumulators stay in registers however
// many a tile has, and a broadcast is an FMA's memory operand instead of a
// register.
//
// Generated code is W^X: written into fresh pages mapped read-write, then
// made read-execute before it is first called; never both writable and
// executable. Kernels live in a process-wide cache keyed by everything that
// is a constant of their code, so a plan (or the per-context plan cache the
// one-shot calls go through) generates each kernel once, not per call.
#pragma once

namespace conv::cpu::jit {

// Whether kernels are generated in this process: libconv built with Xbyak,
// a CPU with AVX-512 or AVX2 (cpu_isa(); each generator says which forms
// it makes), and CONV_CPU_JIT not set to 0 (which
// keeps the compiled kernels; the tests run both). Decided once.
bool enabled();

// A generated kernel: its entry point, callable while a holder keeps the
// kernel (a shared_ptr from its generator's cache).
template <class Fn>
class Kernel {
public:
    virtual ~Kernel() = default;
    virtual Fn fn() const = 0;
};

}  // namespace conv::cpu::jit
