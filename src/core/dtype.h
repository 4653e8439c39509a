// Element types and layouts as the engines see them.
#pragma once

#include <cstddef>

#include "conv.h"

namespace conv {

inline bool dtype_valid(int d) { return d >= CONV_DTYPE_FLOAT32 && d <= CONV_DTYPE_BFLOAT16; }
inline bool layout_valid(int l) {
    return l == CONV_LAYOUT_CHANNELS_FIRST || l == CONV_LAYOUT_CHANNELS_LAST;
}

inline size_t dtype_size(conv_dtype_t d) {
    switch (d) {
    case CONV_DTYPE_FLOAT32: return 4;
    case CONV_DTYPE_FLOAT64: return 8;
    case CONV_DTYPE_FLOAT16:
    case CONV_DTYPE_BFLOAT16: return 2;
    default: break;  // unknown values
    }
    return 0;
}

const char *dtype_name(conv_dtype_t d);
const char *layout_name(conv_layout_t l);
const char *device_name(conv_device_t d);

}  // namespace conv
