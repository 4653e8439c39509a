#include "core/geometry.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"

namespace conv {

bool ConvGeometry::is_pointwise() const {
    for (int i = 0; i < 3; ++i)
        if (kernel[i] != 1 || stride[i] != 1 || pad_begin[i] != 0 || pad_end[i] != 0) return false;
    return true;
}

bool ConvGeometry::is_planar() const {
    return in[0] == 1 && kernel[0] == 1 && out[0] == 1 && pad_begin[0] == 0 && pad_end[0] == 0;
}

double ConvGeometry::flops() const {
    return 2.0 * (double)n * (double)k * (double)out_size() * (double)cg() *
           (double)kernel_size();
}

std::string ConvGeometry::describe() const {
    auto axes = [&](const int64_t *v) {
        std::string s;
        for (int i = 3 - spatial; i < 3; ++i) {
            if (i > 3 - spatial) s += 'x';
            s += std::to_string(v[i]);
        }
        return s;
    };
    return format("N%lld C%lld K%lld in %s k%s s%s d%s p%s/%s g%lld", (long long)n, (long long)c,
                  (long long)k, axes(in).c_str(), axes(kernel).c_str(), axes(stride).c_str(),
                  axes(dilation).c_str(), axes(pad_begin).c_str(), axes(pad_end).c_str(),
                  (long long)groups);
}

// Padding of one axis under the descriptor's auto-pad rule.
static void resolve_padding(const ConvParams &p, int axis, int64_t in, int64_t dilated,
                            int64_t *begin, int64_t *end) {
    int64_t s = p.stride[axis];
    switch (p.auto_pad) {
    case CONV_AUTO_PAD_NOTSET:
        *begin = p.pad_begin[axis];
        *end = p.pad_end[axis];
        return;
    case CONV_AUTO_PAD_VALID:
        *begin = *end = 0;
        return;
    case CONV_AUTO_PAD_SAME_UPPER:
    case CONV_AUTO_PAD_SAME_LOWER: {
        int64_t out = ceil_div(in, s);
        int64_t need = checked_add(checked_mul(out > 0 ? out - 1 : 0, s, "padding"), dilated,
                                   "padding");
        int64_t total = need > in ? need - in : 0;
        int64_t small = total / 2, large = total - total / 2;
        *begin = p.auto_pad == CONV_AUTO_PAD_SAME_UPPER ? small : large;
        *end = p.auto_pad == CONV_AUTO_PAD_SAME_UPPER ? large : small;
        return;
    }
    default: break;  // unknown values
    }
    fail(CONV_STATUS_INVALID_ARGUMENT, "unknown auto-pad mode %d", (int)p.auto_pad);
}

// Every count the engines compute must fit in int64 -- the elements of the
// three tensors, the kernel size and the GEMM reduction -- so that sizes
// such as in_size() or reduction() can be used without overflow checks.
static void check_counts(const ConvGeometry &g) {
    checked_product({g.in[0], g.in[1], g.in[2]}, "input positions");
    checked_product({g.out[0], g.out[1], g.out[2]}, "output positions");
    checked_product({g.n, g.c, g.in[0], g.in[1], g.in[2]}, "input element count");
    checked_product({g.n, g.k, g.out[0], g.out[1], g.out[2]}, "output element count");
    checked_product({g.kernel[0], g.kernel[1], g.kernel[2]}, "kernel size");
    checked_product({g.c / g.groups, g.kernel[0], g.kernel[1], g.kernel[2]}, "reduction size");
    checked_product({g.k, g.c / g.groups, g.kernel[0], g.kernel[1], g.kernel[2]},
                    "filter element count");
}

ConvGeometry make_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                           const int64_t *x_dims, const int64_t *w_dims) {
    if (ndim != p.spatial + 2)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "tensor rank %d does not match the descriptor's %d spatial dims (expected rank %d)",
             ndim, p.spatial, p.spatial + 2);
    for (int i = 0; i < ndim; ++i) {
        if (x_dims[i] < 0 || w_dims[i] < 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "negative dim %d: input %lld, filter %lld", i,
                 (long long)x_dims[i], (long long)w_dims[i]);
    }
    ConvGeometry g;
    g.spatial = p.spatial;
    g.layout = layout;
    g.n = x_dims[0];
    g.c = x_dims[1];
    g.k = w_dims[0];
    g.groups = p.groups;
    g.activation = p.activation;
    if (checked_mul(w_dims[1], p.groups, "channels") != g.c)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "input channels %lld != filter channels %lld x groups %lld", (long long)g.c,
             (long long)w_dims[1], (long long)p.groups);
    if (g.k % p.groups != 0)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "output channels %lld (filter dim 0) not divisible by groups %lld",
             (long long)g.k, (long long)p.groups);
    int lead = 3 - p.spatial;  // normalise to D, H, W
    for (int a = 0; a < p.spatial; ++a) {
        int i = lead + a;
        int64_t in = x_dims[2 + a], ker = w_dims[2 + a];
        if (ker < 1)
            fail(CONV_STATUS_SHAPE_MISMATCH, "kernel size %lld on spatial axis %d must be >= 1",
                 (long long)ker, a);
        int64_t dilated = checked_add(checked_mul(ker - 1, p.dilation[a], "dilated kernel"), 1,
                                      "dilated kernel");
        int64_t pb, pe;
        resolve_padding(p, a, in, dilated, &pb, &pe);
        int64_t padded = checked_add(checked_add(in, pb, "padded input"), pe, "padded input");
        int64_t out = floor_div(padded - dilated, p.stride[a]) + 1;
        if (out < 1)
            fail(CONV_STATUS_SHAPE_MISMATCH,
                 "output size on spatial axis %d would be %lld: input %lld + padding %lld+%lld "
                 "is smaller than kernel %lld dilated by %lld to %lld (stride %lld)",
                 a, (long long)out, (long long)in, (long long)pb, (long long)pe, (long long)ker,
                 (long long)p.dilation[a], (long long)dilated, (long long)p.stride[a]);
        g.in[i] = in;
        g.kernel[i] = ker;
        g.out[i] = out;
        g.stride[i] = p.stride[a];
        g.dilation[i] = p.dilation[a];
        g.pad_begin[i] = pb;
        g.pad_end[i] = pe;
    }
    check_counts(g);
    return g;
}

ConvGeometry make_transposed_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                                      const int64_t *x_dims, const int64_t *w_dims) {
    if (ndim != p.spatial + 2)
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "tensor rank %d does not match the descriptor's %d spatial dims (expected rank %d)",
             ndim, p.spatial, p.spatial + 2);
    for (int i = 0; i < ndim; ++i)
        if (x_dims[i] < 0 || w_dims[i] < 0)
            fail(CONV_STATUS_INVALID_ARGUMENT, "negative dim %d: input %lld, filter %lld", i,
                 (long long)x_dims[i], (long long)w_dims[i]);
    if (x_dims[1] != w_dims[0])
        fail(CONV_STATUS_SHAPE_MISMATCH,
             "transposed convolution input channels %lld != filter dim 0 (%lld)",
             (long long)x_dims[1], (long long)w_dims[0]);
    if (w_dims[0] % p.groups != 0)
        fail(CONV_STATUS_SHAPE_MISMATCH, "input channels %lld not divisible by groups %lld",
             (long long)w_dims[0], (long long)p.groups);
    ConvGeometry g;
    g.spatial = p.spatial;
    g.layout = layout;
    g.n = x_dims[0];
    g.k = w_dims[0];
    g.c = checked_mul(w_dims[1], p.groups, "output channels");
    g.groups = p.groups;
    g.activation = p.activation;
    int lead = 3 - p.spatial;
    for (int a = 0; a < p.spatial; ++a) {
        int i = lead + a;
        int64_t in = x_dims[2 + a], ker = w_dims[2 + a], s = p.stride[a], d = p.dilation[a];
        int64_t op = p.output_padding[a];
        if (ker < 1)
            fail(CONV_STATUS_SHAPE_MISMATCH, "kernel size %lld on spatial axis %d must be >= 1",
                 (long long)ker, a);
        if (in < 1)
            fail(CONV_STATUS_SHAPE_MISMATCH,
                 "transposed convolution input size on spatial axis %d is %lld: must be >= 1", a,
                 (long long)in);
        if (op >= s && op >= d)
            fail(CONV_STATUS_INVALID_ARGUMENT,
                 "output padding %lld on spatial axis %d must be smaller than stride %lld or "
                 "dilation %lld",
                 (long long)op, a, (long long)s, (long long)d);
        int64_t dilated = checked_add(checked_mul(ker - 1, d, "dilated kernel"), 1,
                                      "dilated kernel");
        // Length the windows span: (in - 1) * stride + dilated + output padding.
        int64_t span = checked_add(checked_add(checked_mul(in - 1, s, "output size"), dilated,
                                               "output size"),
                                   op, "output size");
        int64_t pb = 0, pe = 0;
        if (p.auto_pad == CONV_AUTO_PAD_NOTSET) {
            pb = p.pad_begin[a];
            pe = p.pad_end[a];
        } else if (p.auto_pad != CONV_AUTO_PAD_VALID) {
            int64_t total = std::max<int64_t>(0, span - checked_mul(in, s, "output size"));
            int64_t small = total / 2, large = total - total / 2;
            pb = p.auto_pad == CONV_AUTO_PAD_SAME_UPPER ? small : large;
            pe = p.auto_pad == CONV_AUTO_PAD_SAME_UPPER ? large : small;
        }
        int64_t out = span - checked_add(pb, pe, "padding");  // span >= 1: no overflow
        if (out < 1)
            fail(CONV_STATUS_SHAPE_MISMATCH,
                 "transposed convolution output size on spatial axis %d would be %lld: input "
                 "%lld, stride %lld, kernel %lld dilated by %lld to %lld, output padding %lld, "
                 "padding %lld+%lld",
                 a, (long long)out, (long long)in, (long long)s, (long long)ker, (long long)d,
                 (long long)dilated, (long long)op, (long long)pb, (long long)pe);
        g.in[i] = out;
        g.out[i] = in;
        g.kernel[i] = ker;
        g.stride[i] = s;
        g.dilation[i] = d;
        g.pad_begin[i] = pb;
        g.pad_end[i] = pe - op;
    }
    check_counts(g);
    g.transposed = true;
    return g;
}

ConvGeometry make_pass_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                                const int64_t *x_dims, const int64_t *w_dims) {
    if (p.mode == CONV_MODE_TRANSPOSED)
        return make_transposed_geometry(p, layout, ndim, x_dims, w_dims);
    return make_geometry(p, layout, ndim, x_dims, w_dims);
}

void input_dims(const ConvGeometry &g, int64_t *x_dims) {
    x_dims[0] = g.n;
    x_dims[1] = g.c;
    for (int a = 0; a < g.spatial; ++a) x_dims[2 + a] = g.in[3 - g.spatial + a];
}

void output_dims(const ConvGeometry &g, int64_t *y_dims) {
    y_dims[0] = g.n;
    y_dims[1] = g.k;
    for (int a = 0; a < g.spatial; ++a) y_dims[2 + a] = g.out[3 - g.spatial + a];
}

}  // namespace conv
