// What libconv's two SGEMMs (sgemm_avx512.cpp, sgemm_avx2.cpp) share: how
// a finished tile meets C, the calls that read neither A nor B, when C is
// written by non-temporal stores, and the per-thread packing buffer. The
// register tiles, packing and blocking are each file's own.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace conv::cpu::sgemm {

// How a finished tile meets C: alpha*acc; alpha*acc + C; alpha*acc + beta*C;
// alpha*acc by non-temporal stores (whole aligned vectors; C not prefetched).
enum class Store { overwrite, add, scale, stream };

// The store of the block of k that starts at pc: blocks after the first add
// to what the first wrote.
inline Store store_for(int64_t pc, bool stream, float beta) {
    return pc > 0 ? Store::add
           : stream ? Store::stream
           : beta == 0.f ? Store::overwrite
           : beta == 1.f ? Store::add
                         : Store::scale;
}

// A call that reads neither A nor B (k == 0 or alpha == 0): C = beta C, as
// BLAS; returns whether the call was one.
inline bool scale_only(int64_t m, int64_t n, int64_t k, float alpha, float beta, float *c, int64_t ldc) {
    if (k != 0 && alpha != 0.f) return false;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return true;
}

// Non-temporal stores where C is final (write_once), written in one pass
// (one block of k, beta 0), outgrows L2 (1 MiB and more) and its rows are
// whole cache lines: a weight gradient from few positions (512->512 3x3 on
// 7x7: 2.4 M outputs of 49 products each) is bound by writing C, and
// ordinary stores first read every line of it. AVX-512, 1 thread,
// interleaved, 5 rounds, backward-filter (im2col) 512->512 3x3 7x7 7.29 ->
// 5.28 ms, 1024->2048 1x1 s2 14x14 5.61 -> 3.95, 256->256 3x3 s2 28x28 5.64
// -> 5.28.
inline bool streams_c(bool write_once, int64_t m, int64_t n, int64_t k, int64_t kc, float beta,
                      const float *c, int64_t ldc) {
    return write_once && beta == 0.f && k <= kc && m * n >= (1 << 18) &&
           reinterpret_cast<uintptr_t>(c) % 64 == 0 && ldc % 16 == 0;
}

// One thread's packing buffer of `Floats` floats: allocated on its first
// use at its largest size (pages are touched only as far as a call uses
// them), freed at thread exit.
template <int64_t Floats>
struct PackBuffer {
    float *data = nullptr;
    bool tried = false;
    ~PackBuffer() { std::free(data); }
    // The buffer, or null when it cannot be had.
    float *get() {
        if (!tried) {
            tried = true;
            // Not operator new: the buffer outlives the call by design, and a
            // failure here is answered by the caller's fallback, not bad_alloc.
            void *p = nullptr;
            if (posix_memalign(&p, 64, sizeof(float) * Floats) == 0) data = static_cast<float *>(p);
        }
        return data;
    }
};

}  // namespace conv::cpu::sgemm
