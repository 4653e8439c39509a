// What a solver works out once per plan (Algorithm::plan_run, handed to
// run() in ConvArgs::planned) must change nothing but the time: every CPU
// solver, on depthwise and small dense problems whose kernels keep tables
// in their plans (the channels-first plane kernels' lane masks: flat
// planes, planes copied by rows, narrow rows, a channel multiplier;
// direct_avx512's shape and steps, its backward-filter's column tables and
// generated tiles), runs
// each pass with its plan's tables and without them (worked out per call,
// as for calls that come without a plan), from NaN-filled outputs: the
// same bits, every output written. Exits 77 (skipped) where no solver made
// a plan to compare, as on CPUs without AVX-512.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "cpu/algorithm.h"

namespace {

using namespace conv;
using namespace conv::cpu;

struct Layer {
    int64_t n, c, k, groups, h, w, stride, pad;
};

ConvGeometry geometry(const Layer &l) {
    ConvGeometry g;
    g.spatial = 2;
    g.n = l.n, g.c = l.c, g.k = l.k, g.groups = l.groups;
    g.in[1] = l.h, g.in[2] = l.w;
    g.kernel[1] = g.kernel[2] = 3;
    g.stride[1] = g.stride[2] = l.stride;
    g.pad_begin[1] = g.pad_begin[2] = g.pad_end[1] = g.pad_end[2] = l.pad;
    g.out[1] = (l.h + 2 * l.pad - 3) / l.stride + 1;
    g.out[2] = (l.w + 2 * l.pad - 3) / l.stride + 1;
    return g;
}

struct Buffers {
    std::vector<float> x, w, y;
    float *written(conv_op_t op) {
        return op == CONV_OP_FORWARD ? y.data() : op == CONV_OP_BACKWARD_DATA ? x.data() : w.data();
    }
    size_t written_size(conv_op_t op) const {
        return op == CONV_OP_FORWARD ? y.size() : op == CONV_OP_BACKWARD_DATA ? x.size() : w.size();
    }
};

// The pass's inputs from `seed`, its output all NaN.
Buffers buffers(const ConvGeometry &g, conv_op_t op, unsigned seed) {
    Buffers b;
    b.x.resize((size_t)(g.n * g.c * g.in_size()));
    b.w.resize((size_t)(g.k * g.cg() * g.kernel_size()));
    b.y.resize((size_t)(g.n * g.k * g.out_size()));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto *v : {&b.x, &b.w, &b.y})
        for (float &e : *v) e = u(rng);
    float *out = b.written(op);
    for (size_t i = 0; i < b.written_size(op); ++i) out[i] = NAN;
    return b;
}

void run(const Algorithm &a, const Problem &p, const RunPlan *planned, Buffers &b, ThreadPool &pool) {
    const size_t bytes = a.workspace_bytes(p) + 64;
    std::unique_ptr<unsigned char[]> ws(new unsigned char[bytes]);
    void *aligned = ws.get() + (64 - reinterpret_cast<uintptr_t>(ws.get()) % 64) % 64;
    ConvArgs args{p.op, &p.g, p.dtype, b.x.data(), b.w.data(), b.y.data(), nullptr};
    args.strict = p.math == CONV_MATH_STRICT, args.math = p.math;  // as the engine's plan passes them
    args.planned = planned;
    a.run(args, aligned, pool, p.threads);
}

}  // namespace

int main() {
    const Layer layers[] = {
        {2, 1, 16, 1, 8, 8, 1, 1},     // a channel multiplier on a flat plane
        {2, 1, 32, 1, 28, 28, 1, 0},   // ... on planes copied by rows
        {3, 2, 40, 2, 7, 7, 1, 1},     // two source channels, multiplier 20
        {2, 3, 12, 3, 12, 12, 1, 1},   // multiplier 4
        {2, 8, 8, 8, 16, 16, 1, 1},    // rows of one vector
        {2, 8, 8, 8, 20, 20, 1, 1},    // wider planes
        {2, 6, 6, 6, 9, 11, 2, 1},     // stride 2
        {2, 5, 10, 5, 6, 6, 1, 1},     // multiplier 2
        {2, 3, 8, 1, 6, 6, 1, 1},      // dense
        {2, 16, 20, 1, 8, 8, 1, 1},    // dense, columns a tap of several channels (windows)
        {1, 22, 32, 1, 11, 9, 2, 1},   // ... at stride 2
        {2, 20, 12, 2, 7, 7, 1, 1},    // ... in groups
    };
    const Algorithm *algorithms[] = {
        &gemm_1x1_algorithm(),   &depthwise_direct_algorithm(), &winograd_4x4_3x3_algorithm(),
        &direct_avx512_algorithm(), &implicit_gemm_algorithm(), &im2col_gemm_algorithm(),
    };
    const int threads = 2;
    ThreadPool pool(threads);
    int compared = 0, planned = 0, failures = 0;
    for (const Layer &l : layers)
        for (conv_op_t op : {CONV_OP_FORWARD, CONV_OP_BACKWARD_DATA, CONV_OP_BACKWARD_FILTER})
            for (const Algorithm *a : algorithms) {
                Problem p;
                p.op = p.user_op = op;
                p.g = geometry(l);
                p.threads = threads;
                p.math = CONV_MATH_STRICT;
                if (a->why_not(p)) continue;
                const std::shared_ptr<const RunPlan> plan = a->plan_run(p);
                Buffers with = buffers(p.g, op, 7), without = buffers(p.g, op, 7);
                run(*a, p, plan.get(), with, pool);
                run(*a, p, nullptr, without, pool);
                const size_t count = with.written_size(op);
                const float *o1 = with.written(op), *o2 = without.written(op);
                size_t nans = 0;
                for (size_t i = 0; i < count; ++i) nans += std::isnan(o1[i]) ? 1 : 0;
                const bool same = std::memcmp(o1, o2, count * sizeof(float)) == 0;
                if (!same || nans) {
                    std::printf("FAIL: %s, %s, C%lld K%lld g%lld %lldx%lld s%lld p%lld: %s, %zu NaN left\n",
                                a->name(), op == CONV_OP_FORWARD ? "forward"
                                           : op == CONV_OP_BACKWARD_DATA ? "backward-data" : "backward-filter",
                                (long long)l.c, (long long)l.k, (long long)l.groups, (long long)l.h,
                                (long long)l.w, (long long)l.stride, (long long)l.pad,
                                same ? "same bits" : "other bits without the plan", nans);
                    ++failures;
                }
                ++compared;
                planned += plan ? 1 : 0;
            }
    std::printf("%d passes compared, %d of them with a plan's tables, %d failures\n", compared, planned, failures);
    if (failures) return 1;
    return planned ? 0 : 77;
}
