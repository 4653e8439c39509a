#include "dispatch/lowering.h"

#include "core/dtype.h"
#include "core/error.h"
#include "cpu/epilogue.h"
#include "dispatch/registry.h"

namespace conv::dispatch {

Lowered lower(const Pass &pass, const ConvGeometry &g) {
    if (!g.transposed) return {pass.op, pass.x, pass.w, pass.y, pass.bias, g};
    ConvGeometry inner = g;
    inner.activation = CONV_ACTIVATION_NONE;
    switch (pass.op) {
    case CONV_OP_FORWARD: return {CONV_OP_BACKWARD_DATA, pass.y, pass.w, pass.x, nullptr, inner};
    case CONV_OP_BACKWARD_DATA: return {CONV_OP_FORWARD, pass.y, pass.w, pass.x, nullptr, inner};
    default: return {CONV_OP_BACKWARD_FILTER, pass.y, pass.w, pass.x, nullptr, inner};
    }
}

std::string problem_key(const Lowered &l, conv_dtype_t dtype) {
    static const char *const kOps[] = {"fwd", "bwd_data", "bwd_filter"};
    const ConvGeometry &g = l.g;
    // Every axis, leading ones included, so that a 1-D problem and a 2-D one
    // of height 1 share a choice: they are the same computation.
    auto axes = [](const int64_t *v) {
        return format("%lldx%lldx%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    };
    return format("%s %s %s n%lld c%lld k%lld g%lld in%s k%s s%s d%s pb%s pe%s%s", kOps[l.op],
                  dtype_name(dtype), g.layout == CONV_LAYOUT_CHANNELS_LAST ? "cl" : "cf",
                  (long long)g.n, (long long)g.c, (long long)g.k, (long long)g.groups,
                  axes(g.in).c_str(), axes(g.kernel).c_str(), axes(g.stride).c_str(),
                  axes(g.dilation).c_str(), axes(g.pad_begin).c_str(), axes(g.pad_end).c_str(),
                  g.activation == CONV_ACTIVATION_RELU ? " relu" : "");
}

const cpu::Algorithm &select_algorithm(Context &ctx, const ConvParams &params, const Pass &pass,
                                       const Lowered &l) {
    conv_algo_t forced = params.algo[pass.op];
    if (forced == CONV_ALGO_AUTO) {
        int tuned;
        if (ctx.tuning().find(problem_key(l, pass.x->dtype()), &tuned)) {
            const cpu::Algorithm *a = find_cpu((conv_algo_t)tuned);
            if (a && a->why_not(l.g, l.op).empty()) return *a;
        }
    }
    return choose_cpu(l.g, l.op, forced);
}

void execute(const ConvParams &params, const Pass &pass, const Lowered &l,
             const cpu::Algorithm &algo, void *scratch, ThreadPool &pool, int threads) {
    conv_dtype_t dtype = pass.x->dtype();
    cpu::ConvArgs args{l.op, &l.g, dtype, l.x->data(), l.w->data(), l.y->data(),
                       l.bias ? l.bias->data() : nullptr};
    algo.run(args, scratch, pool, threads);
    if (!l.g.transposed) return;
    // The transposed output has the lowered convolution's input shape.
    cpu::ChannelShape out{l.g.layout, l.g.n, l.g.c, l.g.in_size()};
    if (pass.op == CONV_OP_FORWARD)
        cpu::bias_act_tensor(out, dtype, pass.y->data(), pass.bias ? pass.bias->data() : nullptr,
                             params.activation == CONV_ACTIVATION_RELU, pool, threads);
    else if (pass.op == CONV_OP_BACKWARD_FILTER && pass.bias)
        cpu::channel_sums(out, dtype, pass.y->data(), pass.bias->data(), pool, threads);
}

}  // namespace conv::dispatch
