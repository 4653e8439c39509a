// The settings of a convolution descriptor, independent of any tensor.
#pragma once

#include <cstdint>

#include "conv.h"

namespace conv {

constexpr int kMaxSpatial = 3;

struct ConvParams {
    int spatial = 2;
    int64_t stride[kMaxSpatial] = {1, 1, 1};
    int64_t dilation[kMaxSpatial] = {1, 1, 1};
    int64_t pad_begin[kMaxSpatial] = {0, 0, 0};
    int64_t pad_end[kMaxSpatial] = {0, 0, 0};
    conv_auto_pad_t auto_pad = CONV_AUTO_PAD_NOTSET;
    int64_t output_padding[kMaxSpatial] = {0, 0, 0};  // transposed mode only
    conv_mode_t mode = CONV_MODE_CONVOLUTION;
    int64_t groups = 1;
    conv_activation_t activation = CONV_ACTIVATION_NONE;
    conv_algo_t algo[3] = {CONV_ALGO_AUTO, CONV_ALGO_AUTO, CONV_ALGO_AUTO};  // per conv_op_t
};

}  // namespace conv
