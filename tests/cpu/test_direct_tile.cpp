// direct_avx512's generated tile (src/cpu/jit/direct_tile.h) over more taps
// a channel than its code takes unrolled, called directly: the generator
// must make it (a null kernel here would leave the pass on the compiled
// tile, and test_jit's bit comparison with nothing to compare), as a loop
// over the kernel's repeats, and every sum must equal a scalar fused
// multiply-add walk in the tile's order (channels, then taps): 3-D kernels
// of 3 x 7 x 7 and 2 x 5 x 7 taps, positions on the border that leave
// taps out (live_lo, live_hi) and kernel rows no position reads (dead
// taps inside the loop), 1 to 4 vectors, each of the three modes (the sums
// overwritten, run on from the output, summed from zero and added).
// Skipped (77) where no tiles are generated: no AVX-512, a build without
// Xbyak, CONV_CPU_JIT=0.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "cpu/isa.h"
#include "cpu/jit/direct_tile.h"
#include "cpu/jit/jit.h"

using namespace conv::cpu;

namespace {

constexpr int kLanes = 16;
int failures = 0;

struct Shape {
    int nv, ur, slices, rows, cols, channels;
    int64_t dead_row;  // a kernel row no position reads (-1: none)
};

// The spec of `sh`: the source a plane of `width` columns and `height`
// rows a slice per channel, position i at column i; tap (z, r, c) reads x
// at z * slice + r * width + c from the position, its weights
// tap * 16 on. Positions before `first` or from `last` on read padding
// at the kernel's first and last columns.
jit::DirectTileSpec make_spec(const Shape &sh, int64_t width, int64_t height) {
    jit::DirectTileSpec s;
    s.nv = sh.nv, s.ur = sh.ur;
    const int64_t slice = width * height;
    s.channel_x = slice * sh.slices, s.position_x = 1;
    const int64_t taps = (int64_t)sh.slices * sh.rows * sh.cols;
    s.channel_w = taps * kLanes, s.vector_w = s.channel_w + 64;  // a vector's weights past a channel's
    for (int z = 0; z < sh.slices; ++z)
        for (int r = 0; r < sh.rows; ++r)
            for (int c = 0; c < sh.cols; ++c) {
                s.tap_x.push_back(z * slice + r * width + c);
                s.tap_w.push_back((int64_t)s.tap_x.size() * kLanes - kLanes);
                int8_t lo = 0, hi = (int8_t)sh.ur;
                if (c == 0) lo = 1;                    // the first position's left tap is padding
                if (c == sh.cols - 1) hi = (int8_t)(sh.ur - 1);  // the last position's right one
                if (r == sh.dead_row) lo = hi = 0;     // a row of padding
                s.live_lo.push_back(lo), s.live_hi.push_back(hi);
            }
    return s;
}

void check(const Shape &sh, int mode, std::mt19937 &rng) {
    const int64_t width = sh.ur + sh.cols + 3, height = sh.rows + 2;
    const jit::DirectTileSpec s = make_spec(sh, width, height);
    const int64_t taps = (int64_t)s.tap_x.size();
    // The case is only worth its name where the taps unrolled would not fit.
    const int64_t unrolled = taps * (sh.nv + 1) * (sh.ur + 1);
    if (unrolled <= 4096) {
        std::printf("FAIL: %d x %d over %lld taps fits unrolled (%lld instructions)\n", sh.nv, sh.ur,
                    (long long)taps, (long long)unrolled);
        ++failures;
        return;
    }
    auto kernel = jit::direct_tile(s);
    if (!kernel) {
        std::printf("FAIL: no tile generated for %d x %d over %lld taps\n", sh.nv, sh.ur, (long long)taps);
        ++failures;
        return;
    }
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> x((size_t)(s.channel_x * sh.channels + width * height));
    for (float &v : x) v = u(rng);
    // Weights 64-byte aligned, as the packed ones are (aligned vector loads).
    std::vector<float> w_store((size_t)(s.channel_w * sh.channels + s.vector_w * sh.nv + kLanes));
    for (float &v : w_store) v = u(rng);
    const float *w = w_store.data();
    while (reinterpret_cast<uintptr_t>(w) % 64) ++w;
    const size_t sums = (size_t)sh.ur * sh.nv * kLanes;
    std::vector<float> out_store(sums + kLanes);
    // 64-byte aligned output (the tile stores whole vectors).
    float *out = out_store.data();
    while (reinterpret_cast<uintptr_t>(out) % 64) ++out;
    std::vector<float> before(sums);
    for (size_t i = 0; i < sums; ++i) out[i] = before[i] = u(rng);
    kernel->fn()(x.data(), w, sh.channels, out, mode, nullptr);
    int64_t bad = 0;
    for (int i = 0; i < sh.ur; ++i)
        for (int v = 0; v < sh.nv; ++v)
            for (int l = 0; l < kLanes; ++l) {
                const size_t at = ((size_t)i * sh.nv + v) * kLanes + l;
                float acc = mode == 1 ? before[at] : 0.f;
                for (int c = 0; c < sh.channels; ++c)
                    for (int64_t t = 0; t < taps; ++t) {
                        if (i < s.live_lo[t] || i >= s.live_hi[t]) continue;
                        const float wt = w[(size_t)(c * s.channel_w + s.tap_w[t] + v * s.vector_w + l)];
                        const float xt = x[(size_t)(c * s.channel_x + s.tap_x[t] + i)];
                        acc = std::fma(wt, xt, acc);
                    }
                if (mode == 2) acc += before[at];
                if (!(out[at] == acc) && bad++ < 3)
                    std::printf("FAIL: %d x %d, %d channels, %lld taps, mode %d: position %d vector %d lane %d: "
                                "%.9g, expected %.9g\n",
                                sh.nv, sh.ur, sh.channels, (long long)taps, mode, i, v, l, out[at], acc);
            }
    if (bad) ++failures;
}

}  // namespace

int main() {
    if (!jit::enabled() || cpu_isa() != Isa::avx512) {
        std::printf("skipped: no AVX-512 tiles are generated here\n");
        return 77;
    }
    std::mt19937 rng(0x5eed7);
    const Shape shapes[] = {
        {4, 6, 3, 7, 7, 3, -1},  // ResNet3D's conv1: 147 taps, 5145 instructions unrolled
        {4, 5, 3, 7, 7, 2, 0},   // each slice's top row reads padding: 147 x 30
        {3, 8, 3, 7, 7, 4, 4},   // 147 x 36
        {2, 12, 3, 6, 7, 1, 3},  // 126 x 39
        {1, 30, 3, 7, 7, 2, 6},  // one vector (the FMA's own broadcast): 147 x 62
    };
    for (const Shape &sh : shapes)
        for (int mode = 0; mode < 3; ++mode) check(sh, mode, rng);
    if (failures) {
        std::printf("%d case(s) failed\n", failures);
        return 1;
    }
    std::printf("all generated many-tap tiles match the scalar walk\n");
    return 0;
}
