#include "cpu/jit/direct_tile.h"

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <type_traits>

#include "cpu/jit/cache.h"
#include "cpu/jit/jit.h"

#if CONV_HAVE_XBYAK
// Fresh pages per kernel (mmap), never heap memory shared with other data:
// turning a kernel's pages read-execute must not touch anything else.
#define XBYAK_USE_MMAP_ALLOCATOR
#include <xbyak/xbyak.h>
#endif

namespace conv::cpu::jit {

bool DirectTileSpec::operator==(const DirectTileSpec &o) const {
    return nv == o.nv && ur == o.ur && ymm == o.ymm && wrap == o.wrap && channel_x == o.channel_x &&
           position_x == o.position_x && channel_w == o.channel_w &&
           vector_w == o.vector_w && tap_x == o.tap_x && tap_w == o.tap_w && live_lo == o.live_lo && live_hi == o.live_hi;
}

#if CONV_HAVE_XBYAK
namespace {

constexpr int kLanes = 16;
constexpr int kRegisters = 32;
constexpr int kYmmRegisters = 16;
constexpr int64_t kMaxInstructions = 4096;  // ~40 KiB of code: beyond, the compiled tile
constexpr int64_t kLoopTaps = 25;           // taps a channel from which a kernel's rows are a loop

size_t hash_spec(const DirectTileSpec &s) {
    size_t h = std::hash<int64_t>()(((s.nv * 64 + s.ur) * 64 + s.wrap) * 2 + s.ymm);
    auto mix = [&h](int64_t v) { hash_mix(h, std::hash<int64_t>()(v)); };
    mix(s.channel_x), mix(s.position_x), mix(s.channel_w), mix(s.vector_w);
    for (size_t t = 0; t < s.tap_x.size(); ++t) mix(s.tap_x[t]), mix(s.tap_w[t]);
    for (size_t t = 0; t < s.live_lo.size(); ++t) mix(s.live_lo[t] * 256 + s.live_hi[t]);
    return h;
}

// Per tap: the weight loads, the broadcasts and the FMAs, at most.
int64_t tap_instructions(const DirectTileSpec &s) {
    const int halves = s.ymm ? 2 : 1;
    return (int64_t)(halves * s.nv + 1) * (s.ur + 1);
}

// A channel's taps as `count` repeats of their first `period`, each repeat
// dx elements on in x and dw in w (a kernel's rows, or a 3-D kernel's
// slices), the live positions of a tap the same in every repeat; period 0:
// none such, or too few taps to be worth a loop. At least two repeats (the
// AVX-512 tile loops only where unrolled is too much code), three for the
// AVX2 tile (its bound as measured: it loops wherever it can).
struct KernelRows {
    int64_t period = 0, count = 0, dx = 0, dw = 0;
};
KernelRows kernel_rows(const DirectTileSpec &s) {
    const int64_t n = (int64_t)s.tap_x.size();
    if (n < kLoopTaps) return {};
    for (int64_t per = 1; per <= n / (s.ymm ? 3 : 2); ++per) {
        if (n % per != 0) continue;
        const int64_t dx = s.tap_x[per] - s.tap_x[0], dw = s.tap_w[per] - s.tap_w[0];
        bool same = true;
        for (int64_t t = per; t < n && same; ++t)
            same = s.tap_x[t] - s.tap_x[t - per] == dx && s.tap_w[t] - s.tap_w[t - per] == dw &&
                   (s.live_lo.empty() ||
                    (s.live_lo[t] == s.live_lo[t - per] && s.live_hi[t] == s.live_hi[t - per]));
        constexpr int64_t kLimit = (int64_t(1) << 29) - 4096;
        if (same && std::abs(n / per * dx) < kLimit && std::abs(n / per * dw) < kLimit)
            return {per, n / per, dx, dw};
    }
    return {};
}

// The zmm tile's taps as a loop over the kernel's rows (a 3-D kernel's
// slices) only where unrolled they would be more code than
// kMaxInstructions (ResNet3D's 3x7x7 conv1: 147 taps, compiled tiles
// before, 1.08x so; 1 and 2 threads). Where both fit, ResNet-50's 7x7 conv1
// ran as fast looped (0.998x). The AVX2 tile loops wherever the rows repeat.
KernelRows looped_rows(const DirectTileSpec &s) {
    if (!s.ymm && (int64_t)s.tap_x.size() * tap_instructions(s) <= kMaxInstructions) return {};
    return kernel_rows(s);
}

// Taps whose code a tile holds: one repeat where they loop.
int64_t coded_taps(const DirectTileSpec &s) {
    const KernelRows k = looped_rows(s);
    return k.period ? k.period : (int64_t)s.tap_x.size();
}

bool fits(const DirectTileSpec &s) {
    if (s.nv < 1 || s.ur < 1 || s.nv > 4) return false;
    if (s.position_x < 1 || (s.ymm && s.position_x != 1)) return false;
    if (s.ymm) {  // accumulators, weight halves, broadcast; the wrap within the tile
        if (s.nv > 3 || 2 * s.nv * s.ur + 2 * s.nv + 1 > kYmmRegisters) return false;
        if (s.wrap < 1 || s.wrap > s.ur) return false;
    } else if (s.nv * s.ur + s.nv + (s.nv > 1) > kRegisters) {  // accumulators, weights, broadcast
        return false;
    }
    if (s.tap_x.size() != s.tap_w.size()) return false;
    if (s.live_lo.size() != s.live_hi.size() || (!s.live_lo.empty() && (s.ymm || s.live_lo.size() != s.tap_x.size())))
        return false;
    for (size_t t = 0; t < s.live_lo.size(); ++t)
        if (s.live_lo[t] < 0 || s.live_hi[t] > s.ur) return false;
    if (coded_taps(s) * tap_instructions(s) > kMaxInstructions) return false;
    // Every displacement and per-channel advance is a signed 32-bit immediate.
    constexpr int64_t kLimit = (int64_t(1) << 31) / (int64_t)sizeof(float) - 4096;
    auto small = [&](int64_t v) { return v >= -kLimit && v <= kLimit; };
    if (!small(s.channel_x) || !small(s.channel_w) || !small(s.vector_w * 3)) return false;
    for (size_t t = 0; t < s.tap_x.size(); ++t)
        if (!small(s.tap_x[t] + s.ur * s.position_x) || !small(s.tap_w[t])) return false;
    return true;
}

class DirectTileCode final : public DirectTileKernel, private Xbyak::CodeGenerator {
public:
    explicit DirectTileCode(const DirectTileSpec &s)
        : Xbyak::CodeGenerator(code_bytes(s), Xbyak::DontSetProtectRWE) {
        generate(s);
        setProtectModeRE();  // written; from now on only executed
    }
    DirectTileFn fn() const override { return getCode<DirectTileFn>(); }

private:
    static size_t code_bytes(const DirectTileSpec &s) {
        // At most 12 bytes an instruction (EVEX, SIB, 32-bit displacement),
        // the tile's entry and exit, rounded up to whole pages.
        const size_t body = (size_t)coded_taps(s) * (size_t)tap_instructions(s) * 12;
        const size_t edges = (size_t)(s.ymm ? 2 : 1) * s.nv * s.ur * 3 * 12 + 256;
        return (body + edges + 4095) / 4096 * 4096;
    }

    void generate(const DirectTileSpec &s) {
        if (s.ymm) return generate_ymm(s);
        using namespace Xbyak;
        // System V: x, w, channels, out, mode.
        const Reg64 x = rdi, w = rsi, channels = rdx, out = rcx, mode = r8;
        const Reg64 vec = r9, vec3 = r10;  // one and three weight vectors, bytes
        const int nv = s.nv, ur = s.ur;
        auto acc = [&](int v, int i) { return Zmm(v * ur + i); };
        auto wreg = [&](int v) { return Zmm(nv * ur + v); };
        const Zmm bcast(nv * ur + nv);
        auto sum = [&](int v, int i) { return zword[out + (i * nv + v) * kLanes * 4]; };
        // Weight vector v of the tap whose weights start `off` elements in.
        auto weights = [&](int v, int64_t off) {
            const int disp = (int)(off * 4);
            switch (v) {
            case 0: return zword[w + disp];
            case 1: return zword[w + vec + disp];
            case 2: return zword[w + vec * 2 + disp];
            default: return zword[w + vec3 + disp];
            }
        };

        // Sum a: position a / nv, vector a % nv.
        auto reg = [&](int a) { return acc(a % nv, a / nv); };
        auto slot = [&](int a) { return sum(a % nv, a / nv); };
        Label loop, summed;
        mov(vec, s.vector_w * 4);
        lea(vec3, ptr[vec + vec * 2]);
        enter(nv * ur, mode, reg, slot, channels, s.tap_x.empty(), loop, summed);
        auto taps = [&](size_t t0, size_t t1) {
            for (size_t t = t0; t < t1; ++t) {
                const int lo = s.live_lo.empty() ? 0 : s.live_lo[t], hi = s.live_lo.empty() ? ur : s.live_hi[t];
                if (lo >= hi) continue;  // every position reads the padding
                for (int v = 0; v < nv; ++v) vmovaps(wreg(v), weights(v, s.tap_w[t]));
                for (int i = lo; i < hi; ++i) {
                    const int64_t at = (s.tap_x[t] + i * s.position_x) * 4;
                    if (nv == 1) {  // one use: the FMA's own broadcast
                        vfmadd231ps(acc(0, i), wreg(0), ptr_b[x + (int)at]);
                        continue;
                    }
                    // Several uses: one broadcast into a register. An FMA with
                    // a broadcast operand per vector measured 5-10% slower
                    // (ResNet-50 3x3 and 1x1 layers, 1 thread, interleaved).
                    vbroadcastss(bcast, ptr[x + (int)at]);
                    for (int v = 0; v < nv; ++v) vfmadd231ps(acc(v, i), wreg(v), bcast);
                }
            }
        };
        channel_taps(looped_rows(s), s.tap_x.size(), taps, x, nullptr, w);  // looped where unrolled is too much code
        add(x, (int)(s.channel_x * 4));
        add(w, (int)(s.channel_w * 4));
        dec(channels);
        jnz(loop, T_NEAR);
        L(summed);
        leave(nv * ur, mode, reg, slot);
    }

    // The AVX2 tile: as above with each vector two ymm halves (the packed
    // weights and the sums keep their 16-lane layout), one broadcast
    // register per position (each feeds 2 * NV FMAs), positions from
    // `wrap` on read through x2.
    void generate_ymm(const DirectTileSpec &s) {
        using namespace Xbyak;
        // System V: x, w, channels, out, mode, x2.
        const Reg64 x = rdi, w = rsi, channels = rdx, out = rcx, mode = r8, x2 = r9;
        const Reg64 vec = r10;  // one weight vector, bytes
        const int halves = 2 * s.nv, ur = s.ur;
        auto acc = [&](int h, int i) { return Ymm(i * halves + h); };  // [position][half], as the sums
        auto wreg = [&](int h) { return Ymm(ur * halves + h); };
        const Ymm bcast(ur * halves + halves);
        auto sum = [&](int h, int i) { return yword[out + (i * halves + h) * 32]; };
        // Half h (vector h / 2) of the tap whose weights start `off` elements in.
        auto weights = [&](int h, int64_t off) {
            const int disp = (int)(off * 4 + (h % 2) * 32);
            switch (h / 2) {
            case 0: return yword[w + disp];
            case 1: return yword[w + vec + disp];
            default: return yword[w + vec * 2 + disp];
            }
        };
        auto source = [&](int i, int64_t off) {
            const int disp = (int)((off + i) * 4);
            return i < s.wrap ? ptr[x + disp] : ptr[x2 + disp];
        };

        auto reg = [&](int a) { return acc(a % halves, a / halves); };
        auto slot = [&](int a) { return sum(a % halves, a / halves); };
        Label loop, summed;
        mov(vec, s.vector_w * 4);
        enter(halves * ur, mode, reg, slot, channels, s.tap_x.empty(), loop, summed);
        auto taps = [&](size_t t0, size_t t1) {
            for (size_t t = t0; t < t1; ++t) {
                for (int h = 0; h < halves; ++h) vmovaps(wreg(h), weights(h, s.tap_w[t]));
                for (int i = 0; i < ur; ++i) {
                    vbroadcastss(bcast, source(i, s.tap_x[t]));
                    for (int h = 0; h < halves; ++h) vfmadd231ps(acc(h, i), wreg(h), bcast);
                }
            }
        };
        // Many taps (conv1: 3 channels x 49) in a loop over the kernel's rows,
        // x, x2 and w advancing and then put back: unrolled, a 49-tap tile was
        // ~6 KiB of code a variant, and ResNet-50's conv1 forward ran at the
        // same speed with 8 accumulators as with 12 -- bound by fetching its
        // instructions, not by its FMAs. Looped: 1.2-1.28x (Zen 3).
        channel_taps(looped_rows(s), s.tap_x.size(), taps, x, s.wrap < ur ? &x2 : nullptr, w);
        add(x, (int)(s.channel_x * 4));
        if (s.wrap < ur) add(x2, (int)(s.channel_x * 4));
        add(w, (int)(s.channel_w * 4));
        dec(channels);
        jnz(loop, T_NEAR);
        L(summed);
        leave(halves * ur, mode, reg, slot);
    }

    // A channel's taps, `all` of them, `taps(t0, t1)` emitting [t0, t1):
    // where they repeat (k.period), one repeat's code in a loop over
    // k.count, the source pointers (x, and x2 unless null) advancing k.dx
    // elements a repeat and w k.dw, then put back.
    template <class Taps>
    void channel_taps(const KernelRows &k, size_t all, Taps taps, const Xbyak::Reg64 &x, const Xbyak::Reg64 *x2,
                      const Xbyak::Reg64 &w) {
        if (!k.period) return taps(0, all);
        const Xbyak::Reg64 count = rax;
        Xbyak::Label row;
        mov(count, k.count);
        L(row);
        taps(0, (size_t)k.period);
        add(x, (int)(k.dx * 4));
        if (x2) add(*x2, (int)(k.dx * 4));
        add(w, (int)(k.dw * 4));
        dec(count);
        jnz(row, T_NEAR);
        sub(x, (int)(k.count * k.dx * 4));
        if (x2) sub(*x2, (int)(k.count * k.dx * 4));
        sub(w, (int)(k.count * k.dw * 4));
    }

    // The tile's entry, by `mode`: its `count` accumulators reg(a) zeroed
    // (0, 2) or loaded from their sums slot(a) (1, a running sum); then the
    // top of the loop over channels, to `summed` where there is none (or no
    // tap: a phase no tap reaches sums zeros).
    template <class Reg, class Slot>
    void enter(int count, const Xbyak::Reg64 &mode, Reg reg, Slot slot, const Xbyak::Reg64 &channels,
               bool no_taps, Xbyak::Label &loop, Xbyak::Label &summed) {
        Xbyak::Label running, summing;
        cmp(mode, 1);
        je(running, T_NEAR);
        for (int a = 0; a < count; ++a) {
            if constexpr (std::is_same_v<decltype(reg(0)), Xbyak::Zmm>)
                vpxord(reg(a), reg(a), reg(a));
            else
                vxorps(reg(a), reg(a), reg(a));
        }
        jmp(summing, T_NEAR);
        L(running);
        for (int a = 0; a < count; ++a) vmovaps(reg(a), slot(a));
        L(summing);
        test(channels, channels);
        jle(summed, T_NEAR);
        if (no_taps) jmp(summed, T_NEAR);
        align(16);
        L(loop);
    }

    // Its exit: the sums added to slot(a) (mode 2, two-level summation) or
    // stored there.
    template <class Reg, class Slot>
    void leave(int count, const Xbyak::Reg64 &mode, Reg reg, Slot slot) {
        Xbyak::Label plain;
        cmp(mode, 2);
        jne(plain, T_NEAR);
        for (int a = 0; a < count; ++a) vaddps(reg(a), reg(a), slot(a));
        L(plain);
        for (int a = 0; a < count; ++a) vmovaps(slot(a), reg(a));
        vzeroupper();
        ret();
    }
};

struct SpecHash {
    size_t operator()(const DirectTileSpec &s) const { return hash_spec(s); }
};

}  // namespace

std::shared_ptr<const DirectTileKernel> direct_tile(const DirectTileSpec &spec) {
    if (!enabled() || !fits(spec)) return nullptr;
    // Never destroyed: plans may outlive static destructors.
    static auto *cache = new KernelCache<DirectTileSpec, DirectTileKernel, SpecHash>;
    return cache->get(spec, [](const DirectTileSpec &s) { return std::make_shared<const DirectTileCode>(s); });
}

#else  // built without Xbyak

std::shared_ptr<const DirectTileKernel> direct_tile(const DirectTileSpec &) { return nullptr; }

#endif

}  // namespace conv::cpu::jit
