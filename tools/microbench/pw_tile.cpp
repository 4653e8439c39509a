// The 1x1 GEMM's 8 x 48 register tile (src/cpu/pointwise_avx512.cpp: 24
// accumulators, 3 panel loads and 8 broadcasts a reduction step) alone,
// against the FMA peak: a 512 -> 512 14x14-like pass (W 512 x 512 read as
// it stands, 1 MiB; B packed into four 48-column panels of 512 steps, 96 KiB
// each, in L2; row tiles outermost, as gemm_1x1's channels-first forward),
// 8 images. Variants, alternated rep by rep (medians of 40):
//   plain     outputs of 8 images (3 MiB) stored as the library did before
//   nt        the same stores non-temporal
//   prefetchw the tile asks for its output lines 32 steps before its end
// With `pack`, each image's panels are copied from its own source first;
// with `one`, every image writes the same 384 KiB of output (it stays in L2:
// the tile alone).
// Not part of the build:
//   g++ -O2 -mavx512f -mfma -mprfchw tools/microbench/pw_tile.cpp -o pw_tile
//   env -u OPENBLAS_CORETYPE taskset -c 1 ./pw_tile [pack] [one]
// GFLOP/s against `convbench --peak` (117.5 a thread on the Zen 4 of
// docs/performance.md's forty-sixth-session section).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int R = 512, K = 512, kPanels = 4, kWidth = 48, kImages = 8;
constexpr long kOut = (long)K * kWidth * kPanels;  // an image's output floats

enum class Store { plain, nt, prefetchw };

template <Store S>
__attribute__((noinline)) void tile(const float *a, const float *panel, float *out, long ldo) {
    __m512 acc[8][3];
    for (auto &row : acc)
        for (auto &v : row) v = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        if (S == Store::prefetchw && r == R - 32)
            for (int i = 0; i < 8; ++i)
                for (int v = 0; v < 4; ++v) __builtin_prefetch(out + i * ldo + 16 * v, 1, 3);
        const __m512 b0 = _mm512_load_ps(panel), b1 = _mm512_load_ps(panel + 16), b2 = _mm512_load_ps(panel + 32);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i * R]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
            acc[i][2] = _mm512_fmadd_ps(ai, b2, acc[i][2]);
        }
        ++a, panel += kWidth;
    }
    for (int i = 0; i < 8; ++i)
        for (int v = 0; v < 3; ++v)
            S == Store::nt ? _mm512_stream_ps(out + i * ldo + 16 * v, acc[i][v])
                           : _mm512_storeu_ps(out + i * ldo + 16 * v, acc[i][v]);
}

float *w, *panels, *outs, *sources;
bool pack = false, one = false;

template <Store S>
double pass() {
    const auto t0 = std::chrono::steady_clock::now();
    for (int n = 0; n < kImages; ++n) {
        float *out = outs + (one ? 0 : n * kOut);
        if (pack) {
            const float *x = sources + (long)n * R * kWidth * kPanels;
            for (int q = 0; q < kPanels; ++q)
                for (int r = 0; r < R; ++r)
                    for (int v = 0; v < 3; ++v)
                        _mm512_store_ps(panels + ((long)q * R + r) * kWidth + 16 * v,
                                        _mm512_loadu_ps(x + (long)r * kWidth * kPanels + q * kWidth + 16 * v));
        }
        for (int t = 0; t < K / 8; ++t)
            for (int q = 0; q < kPanels; ++q)
                tile<S>(w + (long)t * 8 * R, panels + (long)q * R * kWidth, out + t * 8 * kWidth * kPanels + q * kWidth,
                        kWidth * kPanels);
    }
    if (S == Store::nt) _mm_sfence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

float *fresh(long floats, float value) {
    auto *p = static_cast<float *>(std::aligned_alloc(64, floats * 4));
    std::fill(p, p + floats, value);
    return p;
}

}  // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        pack = pack || std::strcmp(argv[i], "pack") == 0;
        one = one || std::strcmp(argv[i], "one") == 0;
    }
    w = fresh((long)K * R, 0.001f);
    panels = fresh((long)R * kWidth * kPanels, 0.01f);
    outs = fresh(kImages * kOut, 0.f);
    sources = fresh((long)kImages * R * kWidth * kPanels, 0.5f);
    const char *names[] = {"plain", "nt", "prefetchw"};
    std::vector<double> t[3];
    for (int rep = 0; rep < 40; ++rep) {
        t[0].push_back(pass<Store::plain>());
        t[1].push_back(pass<Store::nt>());
        t[2].push_back(pass<Store::prefetchw>());
    }
    const double flops = 2.0 * kImages * K * R * kWidth * kPanels;
    for (int v = 0; v < 3; ++v) {
        std::sort(t[v].begin(), t[v].end());
        std::printf("%-10s median %6.1f GFLOP/s  best %6.1f\n", names[v], flops / t[v][20] * 1e-9, flops / t[v][0] * 1e-9);
    }
    return 0;
}
