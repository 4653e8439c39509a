#include "cpu/jit/narrow_tile.h"

#include <algorithm>
#include <cstddef>
#include <functional>

#include "cpu/isa.h"
#include "cpu/jit/cache.h"
#include "cpu/jit/jit.h"

#if CONV_HAVE_XBYAK
#define XBYAK_USE_MMAP_ALLOCATOR  // fresh pages per kernel (cpu/jit/direct_tile.cpp)
#include <xbyak/xbyak.h>
#endif

namespace conv::cpu::jit {

bool NarrowTileSpec::operator==(const NarrowTileSpec &o) const {
    return m == o.m && r == o.r && kr == o.kr && ks == o.ks && row == o.row && channel_x == o.channel_x &&
           tap_w == o.tap_w && dst_row == o.dst_row && dst_channel == o.dst_channel && live_begin == o.live_begin &&
           live_end == o.live_end;
}

#if CONV_HAVE_XBYAK
namespace {

constexpr int kLanes = 16;
constexpr int kMaxTapColumns = 7;    // one mask register each: k1..k7
constexpr int kMaxTaps = 49;         // ~1700 instructions at 8 x 3: beyond, the compiled block
constexpr int kMaxRegisters = 32;

size_t hash_spec(const NarrowTileSpec &s) {
    size_t h = std::hash<int64_t>()(((s.m * 16 + s.r) * 16 + s.kr) * 16 + s.ks);
    hash_mix(h, std::hash<int64_t>()(s.row));
    hash_mix(h, std::hash<int64_t>()(s.channel_x));
    hash_mix(h, std::hash<int64_t>()(s.tap_w));
    hash_mix(h, std::hash<int64_t>()(s.dst_row));
    hash_mix(h, std::hash<int64_t>()(s.dst_channel));
    hash_mix(h, std::hash<int64_t>()(s.live_begin * 64 + s.live_end));
    return h;
}

bool fits(const NarrowTileSpec &s) {
    if (s.m < 1 || s.r < 1 || s.kr < 1 || s.ks < 1 || s.ks > kMaxTapColumns || s.kr * s.ks > kMaxTaps) return false;
    if (s.m * s.r + s.r + 1 > kMaxRegisters) return false;  // sums, source rows, a broadcast
    if (s.live_begin < 0 || s.live_begin > s.live_end || s.live_end > s.kr + s.r - 1) return false;
    // Every displacement and per-channel advance is a signed 32-bit immediate.
    constexpr int64_t kLimit = (int64_t(1) << 31) / (int64_t)sizeof(float) - 4096;
    auto small = [&](int64_t v) { return v >= 0 && v <= kLimit; };
    return s.row >= 1 && s.tap_w >= s.m && small(s.channel_x) && small((s.kr + s.r) * s.row + s.ks) &&
           small(s.kr * s.ks * s.tap_w) && small(s.dst_row * s.r + s.dst_channel * s.m);
}

class NarrowTileCode final : public NarrowTileKernel, private Xbyak::CodeGenerator {
public:
    explicit NarrowTileCode(const NarrowTileSpec &s) : Xbyak::CodeGenerator(code_bytes(s), Xbyak::DontSetProtectRWE) {
        generate(s);
        setProtectModeRE();  // written; from now on only executed
    }
    NarrowTileFn fn() const override { return getCode<NarrowTileFn>(); }

private:
    static size_t code_bytes(const NarrowTileSpec &s) {
        // At most 12 bytes an instruction (EVEX, SIB, 32-bit displacement):
        // per tap R loads and M broadcasts with R FMAs each; the entry and exit.
        const size_t body = (size_t)s.kr * s.ks * (s.r + s.m * (1 + s.r)) * 12;
        const size_t edges = (size_t)s.m * s.r * 8 * 12 + 1024;
        return (body + edges + 4095) / 4096 * 4096;
    }

    void generate(const NarrowTileSpec &s) {
        using namespace Xbyak;
        // System V: the call; its fields in registers.
        const Reg64 call = rdi, x = rsi, w = rdx, channels = rcx, sums = r8, mode = r9, dst = r10, bias = r11;
        const int m = s.m, r = s.r;
        auto acc = [&](int mm, int i) { return Zmm(mm * r + i); };
        auto src = [&](int i) { return Zmm(m * r + i); };
        const Zmm bcast(m * r + r);
        auto slot = [&](int mm, int i) { return zword[sums + (mm * r + i) * kLanes * 4]; };
        auto field = [&](size_t offset) { return qword[call + (int)offset]; };
        mov(x, field(offsetof(NarrowTileCall, x)));
        mov(w, field(offsetof(NarrowTileCall, w)));
        mov(channels, field(offsetof(NarrowTileCall, channels)));
        mov(sums, field(offsetof(NarrowTileCall, sums)));
        mov(mode, field(offsetof(NarrowTileCall, mode)));
        mov(dst, field(offsetof(NarrowTileCall, dst)));
        auto out = [&](int mm, int i) { return zword[dst + (int)((mm * s.dst_channel + i * s.dst_row) * 4)]; };
        for (int q = 0; q < s.ks; ++q) kmovw(Opmask(q + 1), ptr[call + (int)(offsetof(NarrowTileCall, masks) + q * 2)]);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vpxord(acc(mm, i), acc(mm, i), acc(mm, i));
        Label loop, summed;
        test(channels, channels);
        jle(summed, T_NEAR);
        align(16);
        L(loop);
        for (int tr = 0; tr < s.kr; ++tr)
            for (int q = 0; q < s.ks; ++q) {
                // The destination's lines asked for ownership among the
                // taps, a few a tap (the same again from the second channel
                // on: then hits): on a plane past L2 each store missed, and
                // all M x R asked for before the taps left 1.17x of this.
                const int t = tr * s.ks + q;
                for (int p = t; p < m * r; p += s.kr * s.ks) prefetchw(out(p / r, p % r));
                // Rows i whose tap row tr + i lies in the source (never
                // read elsewhere: x may point above the plane).
                const int first = std::max(0, s.live_begin - tr), end = std::min(r, s.live_end - tr);
                if (first >= end) continue;
                for (int i = first; i < end; ++i)
                    vmovups(src(i) | Opmask(q + 1) | T_z, ptr[x + (int)(((tr + i) * s.row + q) * 4)]);
                const int64_t wt = (tr * s.ks + q) * s.tap_w;
                for (int mm = 0; mm < m; ++mm) {
                    vbroadcastss(bcast, ptr[w + (int)((wt + mm) * 4)]);
                    for (int i = first; i < end; ++i) vfmadd231ps(acc(mm, i), bcast, src(i));
                }
            }
        add(x, (int)(s.channel_x * 4));
        add(w, (int)(s.kr * s.ks * s.tap_w * 4));
        dec(channels);
        jnz(loop, T_NEAR);
        L(summed);
        Label first, stored;
        test(mode, kNarrowAddSums);
        jz(first, T_NEAR);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vaddps(acc(mm, i), acc(mm, i), slot(mm, i));
        L(first);
        test(mode, kNarrowFinal);
        jnz(stored, T_NEAR);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vmovaps(slot(mm, i), acc(mm, i));
        vzeroupper();
        ret();

        // The final sums: bias, ReLU (the sum the second operand: NaN stays
        // NaN), stored whole or the lanes of mask 7 (k1-k7 hold at most 7
        // tap columns: kMaxTapColumns).
        L(stored);
        Label no_bias, no_relu, part, done;
        mov(bias, field(offsetof(NarrowTileCall, bias)));
        test(bias, bias);
        jz(no_bias, T_NEAR);
        for (int mm = 0; mm < m; ++mm) {
            vbroadcastss(bcast, ptr[bias + mm * 4]);
            for (int i = 0; i < r; ++i) vaddps(acc(mm, i), acc(mm, i), bcast);
        }
        L(no_bias);
        test(mode, kNarrowRelu);
        jz(no_relu, T_NEAR);
        vpxord(bcast, bcast, bcast);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vmaxps(acc(mm, i), bcast, acc(mm, i));
        L(no_relu);
        test(mode, kNarrowPartVector);
        jnz(part, T_NEAR);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vmovups(out(mm, i), acc(mm, i));
        jmp(done, T_NEAR);
        L(part);
        kmovw(k7, ptr[call + (int)(offsetof(NarrowTileCall, masks) + 7 * 2)]);
        for (int mm = 0; mm < m; ++mm)
            for (int i = 0; i < r; ++i) vmovups(out(mm, i) | k7, acc(mm, i));
        L(done);
        vzeroupper();
        ret();
    }
};

struct SpecHash {
    size_t operator()(const NarrowTileSpec &s) const { return hash_spec(s); }
};

}  // namespace

std::shared_ptr<const NarrowTileKernel> narrow_tile(const NarrowTileSpec &spec) {
    if (!enabled() || cpu_isa() != Isa::avx512 || !fits(spec)) return nullptr;
    // Never destroyed: plans may outlive static destructors.
    static auto *cache = new KernelCache<NarrowTileSpec, NarrowTileKernel, SpecHash>;
    return cache->get(spec, [](const NarrowTileSpec &s) { return std::make_shared<const NarrowTileCode>(s); });
}

#else  // built without Xbyak

std::shared_ptr<const NarrowTileKernel> narrow_tile(const NarrowTileSpec &) { return nullptr; }

#endif

}  // namespace conv::cpu::jit
