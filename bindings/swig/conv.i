/* conv.i -- the part of the SWIG interface every language shares.
 *
 * A language's module file (bindings/python/..., bindings/java/...) first
 * declares its own typemaps (out-parameters, arrays, buffers), then includes
 * this file, which wraps the whole public header. New functions in conv.h
 * are wrapped with no change here; their typemaps follow from the argument
 * names and types, which follow a small set of patterns:
 *   - handle out-parameters:  conv_context_t *out, conv_tensor_t *out, ...
 *   - scalar out-parameters:  int *, int64_t *, size_t *, double *, enum *, void **
 *   - int64_t arrays in:      const int64_t *dims, *strides, *begin, ...
 *   - int64_t arrays out:     int64_t *y_dims, *strides, *begin, *end, ...
 *   - raw memory:             void *data, const void *host, void *memory
 */
%{
#include "conv.h"
%}

%include <stdint.i>

/* The export macro means nothing to SWIG: take the header's empty branch
 * (defining CONV_API itself would clash with the header's own #define). */
#define CONV_STATIC_DEFINE
%include "conv.h"
