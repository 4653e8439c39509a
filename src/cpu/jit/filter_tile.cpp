#include "cpu/jit/filter_tile.h"

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

bool filter_tiles_generated() { return enabled() && cpu_isa() == Isa::avx512; }

namespace {
int64_t row_len(const FilterTileSpec &s) { return s.len ? s.len : s.wo; }
}  // namespace

bool FilterTileSpec::operator==(const FilterTileSpec &o) const {
    return nv == o.nv && nc == o.nc && dy_vec == o.dy_vec && dy_pos == o.dy_pos && wo == o.wo &&
           row_len(*this) == row_len(o) && offsets == o.offsets;
}

#if CONV_HAVE_XBYAK
namespace {

constexpr int kLanes = 16;
constexpr int64_t kUnrolledRow = 16;  // rows of up to this many positions run unrolled

bool fits(const FilterTileSpec &s) {
    if (s.nv < 1 || s.nv > 4 || s.nc < 1 || s.nc > 16 || (int)s.offsets.size() != s.nc) return false;
    if (s.nv * s.nc + s.nv + 1 > 32 || s.wo < 1) return false;  // accumulators, dy, broadcast
    if (s.len < 0 || s.len > s.wo) return false;
    constexpr int64_t kLimit = (int64_t(1) << 31) / (int64_t)sizeof(float) - 64;
    auto small = [&](int64_t v) { return v >= -kLimit && v <= kLimit; };
    if (s.dy_pos < 1 || !small(s.dy_vec * 3) || !small(s.wo * s.dy_pos) || !small(s.wo * kLanes)) return false;
    for (int64_t o : s.offsets)
        if (!small(o)) return false;
    return true;
}

class FilterTileCode final : public FilterTileKernel, private Xbyak::CodeGenerator {
public:
    explicit FilterTileCode(const FilterTileSpec &s) : Xbyak::CodeGenerator(16384, Xbyak::DontSetProtectRWE) {
        generate(s);
        setProtectModeRE();  // written; from now on only executed
    }
    FilterTileFn fn() const override { return getCode<FilterTileFn>(); }

private:
    void generate(const FilterTileSpec &s) {
        using namespace Xbyak;
        // System V: dy, x, rows, rstep, sums, mode.
        const Reg64 dy = rdi, x = rsi, rows = rdx, rstep = rcx, sums = r8, mode = r9;
        const Reg64 pdy = r10, px = r11, ow = rax, vec = r12, vec3 = r13;  // r12, r13: saved
        const int nv = s.nv, nc = s.nc;
        auto acc = [&](int v, int j) { return Zmm(v * nc + j); };
        auto d = [&](int v) { return Zmm(nv * nc + v); };
        const Zmm bcast(nv * nc + nv);
        auto sum = [&](int v, int j) { return zword[sums + (j * nv + v) * kLanes * 4]; };
        auto dy_at = [&](int v, int disp) {
            switch (v) {
            case 0: return zword[pdy + disp];
            case 1: return zword[pdy + vec + disp];
            case 2: return zword[pdy + vec * 2 + disp];
            default: return zword[pdy + vec3 + disp];
            }
        };

        push(r12);
        push(r13);
        Label running, summing, row, position, summed, plain;
        cmp(mode, 1);
        je(running, T_NEAR);
        for (int v = 0; v < nv; ++v)
            for (int j = 0; j < nc; ++j) vpxord(acc(v, j), acc(v, j), acc(v, j));
        jmp(summing, T_NEAR);
        L(running);
        for (int j = 0; j < nc; ++j)
            for (int v = 0; v < nv; ++v) vmovaps(acc(v, j), sum(v, j));
        L(summing);
        mov(vec, s.dy_vec * 4);
        lea(vec3, ptr[vec + vec * 2]);
        shl(rstep, 2);  // bytes
        test(rows, rows);
        jle(summed, T_NEAR);
        // One position: its dy vectors, then each column's broadcast x
        // times them; `i` positions on from pdy and px.
        auto position_step = [&](int i) {
            for (int v = 0; v < nv; ++v) {
                if (s.dy_pos == kLanes)
                    vmovaps(d(v), dy_at(v, (int)(i * kLanes * 4)));
                else
                    vmovups(d(v), dy_at(v, (int)(i * s.dy_pos * 4)));
            }
            for (int j = 0; j < nc; ++j) {
                const int at = (int)(s.offsets[j] * 4) + i * 4;
                if (nv == 1) {  // one use: the FMA's own broadcast
                    vfmadd231ps(acc(0, j), d(0), ptr_b[px + at]);
                    continue;
                }
                vbroadcastss(bcast, ptr[px + at]);
                for (int v = 0; v < nv; ++v) vfmadd231ps(acc(v, j), d(v), bcast);
            }
        };
        L(row);
        mov(pdy, dy);
        mov(px, x);
        const int64_t len = row_len(s);
        if (len <= kUnrolledRow) {
            // Short rows unrolled: the loop's exit, mispredicted once a row,
            // cost ~8% of a row of 14 (a scratch loop of this tile: 209-217
            // GFLOP/s on rows of 14, 228-231 on rows of 56). In the passes, 1
            // thread, 3-5 alternated rounds: 14x14 1.02-1.04x, 7x7 and 8x8
            // 1.02-1.03x (batch 32), 28x28 (not unrolled) even.
            for (int i = 0; i < len; ++i) position_step(i);
        } else {
            mov(ow, len);
            align(16);
            L(position);
            position_step(0);
            add(pdy, (int)(s.dy_pos * 4));
            add(px, 4);
            dec(ow);
            jnz(position, T_NEAR);
        }
        add(dy, (int)(s.wo * s.dy_pos * 4));
        add(x, rstep);
        dec(rows);
        jnz(row, T_NEAR);
        L(summed);
        cmp(mode, 2);
        jne(plain, T_NEAR);
        for (int j = 0; j < nc; ++j)
            for (int v = 0; v < nv; ++v) vaddps(acc(v, j), acc(v, j), sum(v, j));
        L(plain);
        for (int j = 0; j < nc; ++j)
            for (int v = 0; v < nv; ++v) vmovaps(sum(v, j), acc(v, j));
        pop(r13);
        pop(r12);
        vzeroupper();
        ret();
    }
};

struct SpecHash {
    size_t operator()(const FilterTileSpec &s) const {
        size_t h = std::hash<int64_t>()(s.nv * 64 + s.nc);
        hash_mix(h, std::hash<int64_t>()(s.dy_vec));
        hash_mix(h, std::hash<int64_t>()(s.dy_pos));
        hash_mix(h, std::hash<int64_t>()(s.wo));
        hash_mix(h, std::hash<int64_t>()(row_len(s)));
        for (int64_t o : s.offsets) hash_mix(h, std::hash<int64_t>()(o));
        return h;
    }
};

}  // namespace

std::shared_ptr<const FilterTileKernel> filter_tile(const FilterTileSpec &spec) {
    if (!filter_tiles_generated() || !fits(spec)) return nullptr;
    // Never destroyed: plans may outlive static destructors.
    static auto *cache = new KernelCache<FilterTileSpec, FilterTileKernel, SpecHash>;
    return cache->get(spec, [](const FilterTileSpec &s) { return std::make_shared<const FilterTileCode>(s); });
}

#else  // built without Xbyak

std::shared_ptr<const FilterTileKernel> filter_tile(const FilterTileSpec &) { return nullptr; }

#endif

}  // namespace conv::cpu::jit
