/*
 * onednn_api.h -- the slice of oneDNN's 3.x C API that --peer onednn uses,
 * declared here so that convbench builds without oneDNN's headers and loads
 * the library at run time (onednn_load.c: dlopen + dlsym).
 *
 * Why not include <oneapi/dnnl/dnnl.h>: convbench must build and run on a
 * machine without oneDNN (CI, a user who never benchmarks against it), and
 * the peer must then say how to get it rather than vanish from the build.
 * A separately built plugin would still need the headers at build time and
 * would go untested wherever they are missing. The part used here is small
 * and fixed by oneDNN's ABI, which is stable across a major version: the
 * handles are opaque pointers, the constants below are the values of
 * oneDNN 3.x's dnnl_types.h / dnnl_common_types.h / dnnl_config.h (checked
 * against 3.2), and every function is looked up by its name. The names keep
 * oneDNN's with the prefix onednn_/ONEDNN_, so that they cannot clash with
 * the real header's and a reader can find each in oneDNN's documentation.
 *
 * oneDNN 2.x has a different C API (operation descriptors, memory
 * descriptors by value), and is not supported: onednn_load refuses it.
 */
#ifndef CONVBENCH_ONEDNN_API_H
#define CONVBENCH_ONEDNN_API_H

#include <stddef.h>
#include <stdint.h>

/* Opaque handles (dnnl_engine_t & co.). */
typedef struct onednn_engine *onednn_engine_t;
typedef struct onednn_stream *onednn_stream_t;
typedef struct onednn_memory_desc *onednn_memory_desc_t; /* 3.x: a handle, not a struct */
typedef const struct onednn_memory_desc *const_onednn_memory_desc_t;
typedef struct onednn_memory *onednn_memory_t;
typedef struct onednn_primitive_attr *onednn_primitive_attr_t;
typedef struct onednn_primitive_desc *onednn_primitive_desc_t;
typedef const struct onednn_primitive_desc *const_onednn_primitive_desc_t;
typedef struct onednn_primitive *onednn_primitive_t;

typedef int onednn_status_t; /* dnnl_status_t: 0 is dnnl_success */
enum { ONEDNN_SUCCESS = 0, ONEDNN_INVALID_ARGUMENTS = 2 };

enum { ONEDNN_MAX_NDIMS = 12 };
typedef int64_t onednn_dim_t;
typedef onednn_dim_t onednn_dims_t[ONEDNN_MAX_NDIMS];

typedef struct onednn_version_t { /* dnnl_version_t */
    int major, minor, patch;
    const char *hash;
    unsigned cpu_runtime; /* ONEDNN_RUNTIME_* */
    unsigned gpu_runtime;
} onednn_version_t;

typedef struct onednn_exec_arg_t { /* dnnl_exec_arg_t */
    int arg;                       /* ONEDNN_ARG_* */
    onednn_memory_t memory;
} onednn_exec_arg_t;

/* dnnl_data_type_t */
enum { ONEDNN_BF16 = 2, ONEDNN_F32 = 3 };
/* dnnl_format_tag_t: `any` and the plain layouts of 3 to 6 dimensions */
enum { ONEDNN_FORMAT_TAG_ANY = 1, ONEDNN_ABC = 4, ONEDNN_ABCD = 5, ONEDNN_ABCDE = 6,
       ONEDNN_ABCDEF = 7 };
/* dnnl_engine_kind_t, dnnl_stream_flags_t */
enum { ONEDNN_ENGINE_CPU = 1, ONEDNN_STREAM_DEFAULT_FLAGS = 1 };
/* dnnl_prop_kind_t, dnnl_alg_kind_t */
enum { ONEDNN_FORWARD_TRAINING = 64, ONEDNN_CONVOLUTION_AUTO = 3 };
/* dnnl_query_t, dnnl_scratchpad_mode_t */
enum { ONEDNN_QUERY_IMPL_INFO_STR = 8, ONEDNN_QUERY_SCRATCHPAD_MD = 136,
       ONEDNN_QUERY_EXEC_ARG_MD = 255 };
enum { ONEDNN_SCRATCHPAD_MODE_USER = 1 };
/* dnnl_fpmath_mode_t: strict 0, bf16 1, f16 2, any 3, tf32 4. */
enum { ONEDNN_FPMATH_MODE_BF16 = 1 };
/* DNNL_ARG_*: execution arguments */
enum { ONEDNN_ARG_SRC = 1, ONEDNN_ARG_DST = 17, ONEDNN_ARG_WEIGHTS = 33,
       ONEDNN_ARG_SCRATCHPAD = 80, ONEDNN_ARG_DIFF_SRC = 129, ONEDNN_ARG_DIFF_DST = 145,
       ONEDNN_ARG_DIFF_WEIGHTS = 161, ONEDNN_ARG_FROM = ONEDNN_ARG_SRC,
       ONEDNN_ARG_TO = ONEDNN_ARG_DST };
/* DNNL_RUNTIME_*: dnnl_version_t's cpu_runtime */
enum { ONEDNN_RUNTIME_SEQ = 1, ONEDNN_RUNTIME_OMP = 2, ONEDNN_RUNTIME_TBB = 4,
       ONEDNN_RUNTIME_THREADPOOL = 8 };
/* DNNL_MEMORY_ALLOCATE: dnnl_memory_create allocates the buffer itself */
#define ONEDNN_MEMORY_ALLOCATE ((void *)(size_t)-1)

/* The functions, as X(return type, name without "dnnl_", parameters). */
#define ONEDNN_FUNCTIONS(X)                                                                      \
    X(const onednn_version_t *, version, (void))                                                 \
    X(int, get_effective_cpu_isa, (void)) /* a dnnl_cpu_isa_t */                                 \
    X(const char *, status2str, (onednn_status_t))                                               \
    X(onednn_status_t, engine_create, (onednn_engine_t *, int kind, size_t index))               \
    X(onednn_status_t, engine_destroy, (onednn_engine_t))                                        \
    X(onednn_status_t, stream_create, (onednn_stream_t *, onednn_engine_t, unsigned flags))      \
    X(onednn_status_t, stream_wait, (onednn_stream_t))                                           \
    X(onednn_status_t, stream_destroy, (onednn_stream_t))                                        \
    X(onednn_status_t, memory_desc_create_with_tag,                                              \
      (onednn_memory_desc_t *, int ndims, const onednn_dims_t dims, int data_type, int tag))     \
    X(onednn_status_t, memory_desc_create_with_strides,                                          \
      (onednn_memory_desc_t *, int ndims, const onednn_dims_t dims, int data_type,               \
       const onednn_dims_t strides))                                                             \
    X(int, memory_desc_equal, (const_onednn_memory_desc_t, const_onednn_memory_desc_t))          \
    X(onednn_status_t, memory_desc_destroy, (onednn_memory_desc_t))                              \
    X(size_t, memory_desc_get_size, (const_onednn_memory_desc_t))                                \
    X(onednn_status_t, memory_create,                                                            \
      (onednn_memory_t *, const_onednn_memory_desc_t, onednn_engine_t, void *handle))            \
    X(onednn_status_t, memory_get_data_handle, (onednn_memory_t, void **handle))                 \
    X(onednn_status_t, memory_destroy, (onednn_memory_t))                                        \
    X(onednn_status_t, primitive_attr_create, (onednn_primitive_attr_t *))                       \
    X(onednn_status_t, primitive_attr_set_scratchpad_mode, (onednn_primitive_attr_t, int mode))  \
    X(onednn_status_t, primitive_attr_set_fpmath_mode, (onednn_primitive_attr_t, int mode))      \
    X(onednn_status_t, primitive_attr_destroy, (onednn_primitive_attr_t))                        \
    X(onednn_status_t, convolution_forward_primitive_desc_create,                                \
      (onednn_primitive_desc_t *, onednn_engine_t, int prop_kind, int alg_kind,                  \
       const_onednn_memory_desc_t src, const_onednn_memory_desc_t weights,                       \
       const_onednn_memory_desc_t bias, const_onednn_memory_desc_t dst,                          \
       const onednn_dims_t strides, const onednn_dims_t dilates, const onednn_dims_t padding_l,  \
       const onednn_dims_t padding_r, onednn_primitive_attr_t))                                  \
    X(onednn_status_t, convolution_backward_data_primitive_desc_create,                          \
      (onednn_primitive_desc_t *, onednn_engine_t, int alg_kind,                                 \
       const_onednn_memory_desc_t diff_src, const_onednn_memory_desc_t weights,                  \
       const_onednn_memory_desc_t diff_dst, const onednn_dims_t strides,                         \
       const onednn_dims_t dilates, const onednn_dims_t padding_l,                               \
       const onednn_dims_t padding_r, const_onednn_primitive_desc_t hint_fwd,                    \
       onednn_primitive_attr_t))                                                                 \
    X(onednn_status_t, convolution_backward_weights_primitive_desc_create,                       \
      (onednn_primitive_desc_t *, onednn_engine_t, int alg_kind, const_onednn_memory_desc_t src, \
       const_onednn_memory_desc_t diff_weights, const_onednn_memory_desc_t diff_bias,            \
       const_onednn_memory_desc_t diff_dst, const onednn_dims_t strides,                         \
       const onednn_dims_t dilates, const onednn_dims_t padding_l,                               \
       const onednn_dims_t padding_r, const_onednn_primitive_desc_t hint_fwd,                    \
       onednn_primitive_attr_t))                                                                 \
    X(onednn_status_t, reorder_primitive_desc_create,                                            \
      (onednn_primitive_desc_t *, const_onednn_memory_desc_t src, onednn_engine_t,               \
       const_onednn_memory_desc_t dst, onednn_engine_t, onednn_primitive_attr_t))                \
    X(const_onednn_memory_desc_t, primitive_desc_query_md,                                       \
      (const_onednn_primitive_desc_t, int what, int index))                                      \
    X(onednn_status_t, primitive_desc_query,                                                     \
      (const_onednn_primitive_desc_t, int what, int index, void *result))                        \
    X(onednn_status_t, primitive_desc_destroy, (onednn_primitive_desc_t))                        \
    X(onednn_status_t, primitive_create, (onednn_primitive_t *, const_onednn_primitive_desc_t))  \
    X(onednn_status_t, primitive_execute,                                                        \
      (onednn_primitive_t, onednn_stream_t, int nargs, const onednn_exec_arg_t *args))           \
    X(onednn_status_t, primitive_destroy, (onednn_primitive_t))

/* The loaded library: one pointer per function above, and where it is. */
typedef struct onednn_api {
#define ONEDNN_POINTER(ret, name, params) ret(*name) params;
    ONEDNN_FUNCTIONS(ONEDNN_POINTER)
#undef ONEDNN_POINTER
    void *handle;    /* dlopen's */
    char path[1024]; /* the file loaded */
} onednn_api;

/* The soname of oneDNN 3.x, and the wheels scripts/onednn.sh unpacks. */
#define ONEDNN_SONAME "libdnnl.so.3"
#define ONEDNN_WHEEL_VERSION "2023.2.0"

/* Loads oneDNN 3.x into `api` from `where` (a libdnnl.so.3 file or a folder
 * holding it, directly or in lib/), or when `where` is NULL from
 * $CONVBENCH_ONEDNN_LIB, else scripts/onednn.sh's cache folder, else the
 * dynamic loader's search path. Returns 0, or 1 with what was tried and
 * how to get oneDNN in err. Loaded once: the library stays in the process
 * (its OpenMP threads may still be parked in it at exit). */
int onednn_load(onednn_api *api, const char *where, char *err, size_t errlen);

#endif
