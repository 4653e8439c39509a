// ConvGeometry: one convolution problem with every size resolved -- batch,
// channels, groups, spatial sizes, padding from the auto-pad rule -- checked
// for consistency and overflow. Spatial ranks 1 and 2 are normalised to 3-D
// by leading axes of size 1 (kernel 1, stride 1, no padding), so every engine
// loop is written once, for D x H x W.
#pragma once

#include <cstdint>
#include <string>

#include "conv.h"
#include "core/params.h"

namespace conv {

struct ConvGeometry {
    int spatial = 2;  // the user's rank, for messages and keys
    conv_layout_t layout = CONV_LAYOUT_CHANNELS_FIRST;
    int64_t n = 0, c = 0, k = 0, groups = 1;
    int64_t in[3] = {1, 1, 1};
    int64_t kernel[3] = {1, 1, 1};
    int64_t out[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1};
    int64_t dilation[3] = {1, 1, 1};
    int64_t pad_begin[3] = {0, 0, 0};
    int64_t pad_end[3] = {0, 0, 0};
    conv_activation_t activation = CONV_ACTIVATION_NONE;
    // Built for a transposed convolution: the user's input is this
    // convolution's output and the user's output its input.
    bool transposed = false;

    int64_t cg() const { return c / groups; }   // input channels per group
    int64_t kg() const { return k / groups; }   // output channels per group
    // Counts known to fit (make_geometry checks them); an input axis may be
    // 0 (padding alone makes the output), then there are no input positions.
    int64_t in_size() const { return in[0] && in[1] && in[2] ? in[0] * in[1] * in[2] : 0; }
    int64_t out_size() const { return out[0] * out[1] * out[2]; }
    int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
    int64_t reduction() const { return cg() * kernel_size(); }  // GEMM inner size

    // 1x1 kernel, stride 1, no padding: the input is already the GEMM operand.
    bool is_pointwise() const;
    // At most 2-D: the depth axis is one plane in, one kernel tap, one plane
    // out, unpadded. (Depth padding on a plane of depth 1 is a 3-D problem:
    // its output plane reads only padding, so only the bias reaches it.)
    bool is_planar() const;
    // Double the multiply-adds of one pass (the same for all three).
    double flops() const;
    // "C64 K64 56x56 k3x3 s1x1 d1x1 p1,1/1,1 g1" for messages and keys.
    std::string describe() const;
};

// Resolves the geometry from a descriptor and the dims of the input (or dx)
// and the filter (or dw): validates ranks, channels, groups, kernel, output
// sizes and overflow; throws SHAPE_MISMATCH / INVALID_ARGUMENT / OVERFLOW
// with the numbers. `ndim` counts N and C.
ConvGeometry make_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                           const int64_t *x_dims, const int64_t *w_dims);

// The convolution whose backward-data pass a transposed convolution is: from
// the transposed input dims (N, Cin, in...) and filter (Cin, Cout/G, k...),
// a geometry with c = Cout, k = Cin, in = the transposed output size and
// out = the transposed input size. Its end padding is pad_end -
// output_padding and may be negative: the last output_padding rows are
// reached by no window.
ConvGeometry make_transposed_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                                      const int64_t *x_dims, const int64_t *w_dims);

// The geometry of the descriptor's mode (either of the two above).
ConvGeometry make_pass_geometry(const ConvParams &p, conv_layout_t layout, int ndim,
                                const int64_t *x_dims, const int64_t *w_dims);

// Output dims (N, K, out...) of a geometry, in the user's rank.
void output_dims(const ConvGeometry &g, int64_t *y_dims);
// Input dims (N, C, in...) of a geometry, in the user's rank.
void input_dims(const ConvGeometry &g, int64_t *x_dims);

}  // namespace conv
