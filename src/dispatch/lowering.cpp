#include "dispatch/lowering.h"

#include <charconv>

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

namespace {

// Appends decimal digits: problem_key runs on every call with a tuned
// table, so it avoids printf (42k instructions per key with format()).
void append_int(std::string &s, int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
}

void append_axes(std::string &s, const char *tag, const int64_t *v) {
    s += tag;
    append_int(s, v[0]);
    s += 'x';
    append_int(s, v[1]);
    s += 'x';
    append_int(s, v[2]);
}

}  // namespace

std::string problem_key(const Lowered &l, conv_dtype_t dtype) {
    static const char *const kOps[] = {"fwd", "bwd_data", "bwd_filter"};
    const ConvGeometry &g = l.g;
    // "fwd float32 cf n1 c64 k64 g1 in1x56x56 k1x3x3 s1x1x1 d1x1x1 pb0x1x1
    // pe0x1x1[ relu]": every axis, leading ones included, so that a 1-D
    // problem and a 2-D one of height 1 share a choice (the same computation).
    std::string s;
    s.reserve(160);
    s += kOps[l.op];
    s += ' ';
    s += dtype_name(dtype);
    s += g.layout == CONV_LAYOUT_CHANNELS_LAST ? " cl n" : " cf n";
    append_int(s, g.n);
    s += " c";
    append_int(s, g.c);
    s += " k";
    append_int(s, g.k);
    s += " g";
    append_int(s, g.groups);
    append_axes(s, " in", g.in);
    append_axes(s, " k", g.kernel);
    append_axes(s, " s", g.stride);
    append_axes(s, " d", g.dilation);
    append_axes(s, " pb", g.pad_begin);
    append_axes(s, " pe", g.pad_end);
    if (g.activation == CONV_ACTIVATION_RELU) s += " relu";
    return s;
}

const cpu::Algorithm &select_algorithm(Context &ctx, const ConvParams &params, const Pass &pass,
                                       const Lowered &l) {
    conv_algo_t forced = params.algo[pass.op];
    bool strict_only = ctx.math() == CONV_MATH_STRICT;
    if (forced == CONV_ALGO_AUTO) {
        int tuned;
        // An untuned context (the common case) builds no key at all.
        if (!ctx.tuning().empty() && ctx.tuning().find(problem_key(l, pass.x->dtype()), &tuned)) {
            const cpu::Algorithm *a = find_cpu((conv_algo_t)tuned);
            if (a && (a->strict() || !strict_only) && !a->why_not(l.g, l.op)) return *a;
        }
    }
    return choose_cpu(l.g, l.op, pass.x->dtype(), forced, strict_only);
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
