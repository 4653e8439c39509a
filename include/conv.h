/*
 * conv.h -- libconv: N-d convolution with a stable C ABI.
 *
 * One header, C99, usable from C and C++. Everything behind it is private.
 *
 * Conventions that hold for every function below
 * ------------------------------------------------
 *  - Handles are opaque pointers. `conv_<noun>_destroy(NULL)` is a no-op.
 *  - Every function that can fail returns conv_status_t; results come back
 *    through pointer arguments. On failure a per-thread message naming the
 *    argument and the numbers involved is available from conv_last_error(),
 *    and NOTHING was changed: no output tensor written, no handle modified.
 *  - Nothing crosses this ABI but a status: no C++ exception, abort, exit or
 *    print, whatever the input.
 *  - Dimensions are int64_t and always listed N, C, spatial... whatever the
 *    memory layout; the layout only decides the strides. Tensors are dense.
 *  - Filters are listed (K, C/groups, spatial...). In channels-first layout
 *    they are stored K, C/groups, spatial... (OIHW); in channels-last layout
 *    K, spatial..., C/groups (OHWI).
 *  - Thread safety: a context may be used from several threads at once; a
 *    tensor may be read by several calls at once but written by one; a
 *    workspace serves one call at a time (a second call waits for it); a
 *    descriptor may be read by several calls at once but must not be
 *    modified while in use. Any handle may be destroyed from any thread once
 *    no call is using it.
 *
 * Enum values are explicit and are never renumbered; new values are only
 * appended. An unknown value passed in is refused with INVALID_ARGUMENT. See docs/abi.md for the compatibility rules.
 */
#ifndef CONV_H
#define CONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- export */

#if defined(CONV_STATIC_DEFINE)
#define CONV_API
#elif defined(_WIN32)
#if defined(CONV_BUILDING_LIBRARY)
#define CONV_API __declspec(dllexport)
#else
#define CONV_API __declspec(dllimport)
#endif
#else
#define CONV_API __attribute__((visibility("default")))
#endif

/* In C++ the enums have int as their fixed underlying type, so any int is a
 * valid value of them there as in C (and an unknown one is refused by the
 * library rather than being undefined behaviour); C sees the same enums. */
#ifdef __cplusplus
#define CONV_ENUM(name) enum name : int
#else
#define CONV_ENUM(name) enum name
#endif

/* --------------------------------------------------------------- version */

#define CONV_VERSION_MAJOR 0
#define CONV_VERSION_MINOR 1
#define CONV_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH, comparable with conv_version(). */
#define CONV_VERSION_NUMBER \
    (CONV_VERSION_MAJOR * 10000 + CONV_VERSION_MINOR * 100 + CONV_VERSION_PATCH)

/* The version of the library actually loaded, as CONV_VERSION_NUMBER. A
 * program can compare it with the header it was compiled against. */
CONV_API unsigned conv_version(void);

/* The same as "MAJOR.MINOR.PATCH", a static string. */
CONV_API const char *conv_version_string(void);

/* ---------------------------------------------------------------- status */

typedef CONV_ENUM(conv_status) {
    CONV_STATUS_SUCCESS = 0,
    /* An argument is NULL, out of range, or an unknown enum value. */
    CONV_STATUS_INVALID_ARGUMENT = 1,
    /* A handle is NULL where one is required, of the wrong kind, or destroyed. */
    CONV_STATUS_INVALID_HANDLE = 2,
    /* Tensor dimensions do not agree with each other or with the descriptor. */
    CONV_STATUS_SHAPE_MISMATCH = 3,
    /* Tensors disagree in dtype, layout or device, or with the context. */
    CONV_STATUS_TYPE_MISMATCH = 4,
    /* A valid request this build or device does not implement. */
    CONV_STATUS_UNSUPPORTED = 5,
    /* Host or device memory could not be allocated. Nothing was changed. */
    CONV_STATUS_OUT_OF_MEMORY = 6,
    /* A caller-supplied workspace is smaller than the call needs. */
    CONV_STATUS_WORKSPACE_TOO_SMALL = 7,
    /* A size or index computation would overflow int64_t (or what a backend
     * can index). */
    CONV_STATUS_OVERFLOW = 8,
    /* The device or backend is not compiled in or not present. */
    CONV_STATUS_NOT_AVAILABLE = 9,
    /* A backend library (BLAS, CUDA, cuDNN, ...) reported an error. */
    CONV_STATUS_BACKEND_ERROR = 10,
    /* A file could not be read or written. */
    CONV_STATUS_IO_ERROR = 11,
    /* A file is truncated, corrupt, or from another version or device. */
    CONV_STATUS_BAD_FILE = 12,
    /* A bug in libconv. Please report it with conv_last_error()'s text. */
    CONV_STATUS_INTERNAL_ERROR = 13
} conv_status_t;

/* A static English name for a status ("invalid argument"); never NULL, also
 * for values this version does not know. */
CONV_API const char *conv_status_string(conv_status_t status);

/* The message of the last failed call on the calling thread, or "" if the
 * last call succeeded. Valid until the next libconv call on this thread.
 * Messages of one thread never show in another. */
CONV_API const char *conv_last_error(void);

/* ----------------------------------------------------------------- enums */

typedef CONV_ENUM(conv_device) {
    CONV_DEVICE_CPU = 0,
    CONV_DEVICE_CUDA = 1
} conv_device_t;

typedef CONV_ENUM(conv_dtype) {
    CONV_DTYPE_FLOAT32 = 0,
    CONV_DTYPE_FLOAT64 = 1,
    CONV_DTYPE_FLOAT16 = 2,  /* storage only on the CPU: computing refuses */
    CONV_DTYPE_BFLOAT16 = 3  /* storage only on the CPU: computing refuses */
} conv_dtype_t;

typedef CONV_ENUM(conv_layout) {
    CONV_LAYOUT_CHANNELS_FIRST = 0, /* NCW, NCHW, NCDHW */
    CONV_LAYOUT_CHANNELS_LAST = 1  /* NWC, NHWC, NDHWC */
} conv_layout_t;

/* How padding is derived (ONNX auto_pad; Caffe2's legacy_pad VALID/SAME).
 * NOTSET uses the explicit begin/end padding of the descriptor. VALID means
 * no padding: out = floor((in - dilated_kernel) / stride) + 1. SAME_UPPER and
 * SAME_LOWER give out = ceil(in / stride) and pad by
 * total = max(0, (out - 1) * stride + dilated_kernel - in), the odd element
 * going at the end (UPPER) or at the beginning (LOWER). */
typedef CONV_ENUM(conv_auto_pad) {
    CONV_AUTO_PAD_NOTSET = 0,
    CONV_AUTO_PAD_VALID = 1,
    CONV_AUTO_PAD_SAME_UPPER = 2,
    CONV_AUTO_PAD_SAME_LOWER = 3
} conv_auto_pad_t;

/* Activation fused into the forward pass, applied after the bias. */
typedef CONV_ENUM(conv_activation) {
    CONV_ACTIVATION_NONE = 0,
    CONV_ACTIVATION_RELU = 1
} conv_activation_t;

/* What the descriptor computes (MIOpen's convolution mode).
 * TRANSPOSED is ONNX ConvTranspose / PyTorch conv_transpose: the adjoint of a
 * convolution. Its input x is (N, Cin, in...), its filter (Cin, Cout/groups,
 * kernel...) -- the same memory as the filter of the convolution it undoes --
 * and its output (N, Cout, out...) with, per spatial axis,
 *   out = (in - 1) * stride - pad_begin - pad_end + dilated_kernel + output_padding.
 * conv_forward computes it (bias of Cout elements, then the activation);
 * conv_backward_data gives its input gradient (a plain convolution of dy) and
 * conv_backward_filter its filter gradient and the bias gradient (sums of dy). */
typedef CONV_ENUM(conv_mode) {
    CONV_MODE_CONVOLUTION = 0,
    CONV_MODE_TRANSPOSED = 1
} conv_mode_t;

/* The three passes of a convolution layer. */
typedef CONV_ENUM(conv_op) {
    CONV_OP_FORWARD = 0,
    CONV_OP_BACKWARD_DATA = 1,
    CONV_OP_BACKWARD_FILTER = 2
} conv_op_t;

/* Algorithms. AUTO lets the library choose per problem. Forcing one that
 * does not apply to a problem makes the call fail with UNSUPPORTED. */
typedef CONV_ENUM(conv_algo) {
    CONV_ALGO_AUTO = 0,
    /* Unfold the input (im2col, or im2row for channels-last), one GEMM per
     * group over OpenBLAS. Applies to every problem. */
    CONV_ALGO_IM2COL_GEMM = 1,
    /* 1x1 kernel, stride 1, no padding: the input already is the GEMM
     * operand, no unfolding. */
    CONV_ALGO_GEMM_1X1 = 2,
    /* Depthwise convolutions (groups == C, any channel multiplier): each
     * output a direct sum of its kernel taps, vectorised along the row or
     * the channels. */
    CONV_ALGO_DEPTHWISE_DIRECT = 3
} conv_algo_t;

/* A static name for an algorithm ("im2col_gemm"); "unknown" for values this
 * version does not know. Never NULL. */
CONV_API const char *conv_algo_name(conv_algo_t algo);

/* --------------------------------------------------------------- handles */

typedef struct conv_context_s *conv_context_t;
typedef struct conv_workspace_s *conv_workspace_t;
typedef struct conv_tensor_s *conv_tensor_t;
typedef struct conv_desc_s *conv_desc_t;

/* --------------------------------------------------------------- devices */

/* Number of devices of a kind: 1 for CONV_DEVICE_CPU; for CONV_DEVICE_CUDA
 * the number of usable GPUs, 0 when none is present or CUDA support is not
 * compiled in. */
CONV_API conv_status_t conv_device_count(conv_device_t device, int *count);

/* --------------------------------------------------------------- context */

/* Creates a context for one device: CONV_DEVICE_CPU with index 0, or
 * CONV_DEVICE_CUDA with a GPU index. A CPU context starts with as many
 * threads as the process may run on (its CPU affinity), at most 64.
 * Fails with NOT_AVAILABLE when the device does not exist in this build or
 * on this machine. The context owns a thread pool and a pool of workspaces
 * used by calls that pass no workspace of their own. */
CONV_API conv_status_t conv_context_create(conv_device_t device, int device_index,
                                           conv_context_t *out);

/* Destroys the context. Tensors, workspaces and descriptors created with it
 * must be destroyed first or not used again. NULL is a no-op. */
CONV_API void conv_context_destroy(conv_context_t ctx);

/* The device kind and index the context was created for. */
CONV_API conv_status_t conv_context_get_device(conv_context_t ctx, conv_device_t *device,
                                               int *device_index);

/* Sets the number of threads a CPU context computes with, 1..1024. libconv
 * parallelises its own work (over images, groups and tiles) and calls
 * OpenBLAS from those threads single-threaded, so the total never exceeds
 * this number. For that reason the first CPU context created in a process
 * sets OpenBLAS's own thread count to 1 (openblas_set_num_threads); an
 * application that calls OpenBLAS directly and wants it threaded may set it
 * again afterwards (libconv's results stay correct, only oversubscribed).
 * Takes effect for calls that start after it returns. */
CONV_API conv_status_t conv_context_set_threads(conv_context_t ctx, int threads);
CONV_API conv_status_t conv_context_get_threads(conv_context_t ctx, int *threads);

/* ------------------------------------------------------------- workspace */

/* A workspace is scratch memory for one call at a time (calls that share one
 * take turns). A library-owned workspace grows to what a call needs and
 * keeps that size, so a steady state allocates nothing. */
CONV_API conv_status_t conv_workspace_create(conv_context_t ctx, conv_workspace_t *out);

/* Wraps caller memory of a fixed size (at least 64-byte aligned is best;
 * any alignment is accepted). It never grows: a call that needs more fails
 * with CONV_STATUS_WORKSPACE_TOO_SMALL, naming both sizes. The memory must
 * outlive the workspace; libconv never frees it. `bytes` may be 0. */
CONV_API conv_status_t conv_workspace_wrap(conv_context_t ctx, void *memory, size_t bytes,
                                           conv_workspace_t *out);

/* The current size in bytes (for a library-owned one, what it grew to). */
CONV_API conv_status_t conv_workspace_get_size(conv_workspace_t ws, size_t *bytes);

CONV_API void conv_workspace_destroy(conv_workspace_t ws);

/* ---------------------------------------------------------------- tensor */

/* Creates a tensor that owns its memory on the context's device, 64-byte
 * aligned and zero-filled. ndim is 3..5 (N, C and 1..3 spatial dims); every
 * dim is >= 0 (a zero batch is allowed, as are zero channels). */
CONV_API conv_status_t conv_tensor_create(conv_context_t ctx, conv_dtype_t dtype,
                                          conv_layout_t layout, int ndim, const int64_t *dims,
                                          conv_tensor_t *out);

/* Creates a tensor that borrows caller memory (`data` may be NULL only when
 * the tensor has no elements). The caller keeps the memory alive while the
 * tensor exists; libconv never frees it. */
CONV_API conv_status_t conv_tensor_wrap(conv_context_t ctx, conv_dtype_t dtype,
                                        conv_layout_t layout, int ndim, const int64_t *dims,
                                        void *data, conv_tensor_t *out);

CONV_API void conv_tensor_destroy(conv_tensor_t t);

CONV_API conv_status_t conv_tensor_get_dtype(conv_tensor_t t, conv_dtype_t *dtype);
CONV_API conv_status_t conv_tensor_get_layout(conv_tensor_t t, conv_layout_t *layout);
CONV_API conv_status_t conv_tensor_get_ndim(conv_tensor_t t, int *ndim);
/* Dimension `axis` (0 = N, 1 = C, 2.. = spatial) in logical order. */
CONV_API conv_status_t conv_tensor_get_dim(conv_tensor_t t, int axis, int64_t *dim);
CONV_API conv_status_t conv_tensor_get_elements(conv_tensor_t t, int64_t *elements);
CONV_API conv_status_t conv_tensor_get_bytes(conv_tensor_t t, size_t *bytes);
/* The address of the first element (device memory for a device tensor). */
CONV_API conv_status_t conv_tensor_get_data(conv_tensor_t t, void **data);

/* Copies exactly conv_tensor_get_bytes() bytes from host memory into the
 * tensor, or from the tensor out to host memory; `bytes` must equal that
 * size. */
CONV_API conv_status_t conv_tensor_copy_from(conv_tensor_t t, const void *host, size_t bytes);
CONV_API conv_status_t conv_tensor_copy_to(conv_tensor_t t, void *host, size_t bytes);

/* ------------------------------------------------------------ descriptor */

/* Creates a convolution descriptor for 1, 2 or 3 spatial dims with the
 * defaults: strides 1, dilations 1, padding 0, auto-pad NOTSET, groups 1,
 * no activation, algorithm AUTO for every pass. A descriptor belongs to no
 * context and may be used with any. */
CONV_API conv_status_t conv_desc_create(int spatial_dims, conv_desc_t *out);
CONV_API void conv_desc_destroy(conv_desc_t desc);

CONV_API conv_status_t conv_desc_get_spatial_dims(conv_desc_t desc, int *spatial_dims);

/* Each takes spatial_dims values (D, H, W order; H, W for 2-D). Strides and
 * dilations are >= 1; paddings >= 0. Explicit padding may be asymmetric. */
CONV_API conv_status_t conv_desc_set_strides(conv_desc_t desc, const int64_t *strides);
CONV_API conv_status_t conv_desc_set_dilations(conv_desc_t desc, const int64_t *dilations);
CONV_API conv_status_t conv_desc_set_padding(conv_desc_t desc, const int64_t *begin,
                                             const int64_t *end);
CONV_API conv_status_t conv_desc_get_strides(conv_desc_t desc, int64_t *strides);
CONV_API conv_status_t conv_desc_get_dilations(conv_desc_t desc, int64_t *dilations);
CONV_API conv_status_t conv_desc_get_padding(conv_desc_t desc, int64_t *begin, int64_t *end);

/* Auto-pad mode; when not NOTSET it overrides the explicit padding. */
CONV_API conv_status_t conv_desc_set_auto_pad(conv_desc_t desc, conv_auto_pad_t mode);
CONV_API conv_status_t conv_desc_get_auto_pad(conv_desc_t desc, conv_auto_pad_t *mode);

/* Groups >= 1. Input channels C and output channels K must both be
 * divisible by it; groups == C is a depthwise convolution. */
CONV_API conv_status_t conv_desc_set_groups(conv_desc_t desc, int64_t groups);
CONV_API conv_status_t conv_desc_get_groups(conv_desc_t desc, int64_t *groups);

/* Activation fused into conv_forward (after the bias). The backward passes
 * take dY as the gradient with respect to the output BEFORE the activation:
 * for ReLU the caller masks the incoming gradient with (y > 0) first. */
CONV_API conv_status_t conv_desc_set_activation(conv_desc_t desc, conv_activation_t act);
CONV_API conv_status_t conv_desc_get_activation(conv_desc_t desc, conv_activation_t *act);

/* Convolution or transposed convolution (default CONVOLUTION). */
CONV_API conv_status_t conv_desc_set_mode(conv_desc_t desc, conv_mode_t mode);
CONV_API conv_status_t conv_desc_get_mode(conv_desc_t desc, conv_mode_t *mode);

/* Output padding of a transposed convolution, spatial_dims values: extra
 * rows at the end of each output axis that no input reaches (they receive
 * only the bias), used to pick among the output sizes a strided convolution
 * maps to the same input size. Each must be smaller than the stride or the
 * dilation of its axis when the call is made; ignored in CONVOLUTION mode.
 * With SAME_UPPER/SAME_LOWER a transposed convolution has out = in * stride,
 * the total padding (in - 1) * stride + dilated_kernel + output_padding - out
 * split as for a convolution. */
CONV_API conv_status_t conv_desc_set_output_padding(conv_desc_t desc, const int64_t *padding);
CONV_API conv_status_t conv_desc_get_output_padding(conv_desc_t desc, int64_t *padding);

/* Forces an algorithm for one pass (CONV_ALGO_AUTO restores the choice). */
CONV_API conv_status_t conv_desc_set_algorithm(conv_desc_t desc, conv_op_t op, conv_algo_t algo);
CONV_API conv_status_t conv_desc_get_algorithm(conv_desc_t desc, conv_op_t op,
                                               conv_algo_t *algo);

/* ------------------------------------------------- shape and cost inference */

/* Output dims of the forward pass: given ndim (= spatial_dims + 2)
 * input dims (N, C, spatial...) and filter dims (K, C/groups, kernel...),
 * writes ndim dims (N, K, out spatial...). For every spatial axis, with
 * dilated kernel e = (kernel - 1) * dilation + 1:
 *   out = floor((in + pad_begin + pad_end - e) / stride) + 1
 * (padding from the auto-pad rule when set). Fails with SHAPE_MISMATCH when
 * the channels do not match (C != (C/groups) * groups), K is not divisible by
 * groups, or an output size would be < 1. In TRANSPOSED mode the filter is
 * (Cin, Cout/groups, kernel...) and the output (N, Cout, out...) as given at
 * conv_mode_t. */
CONV_API conv_status_t conv_output_dims(conv_desc_t desc, int ndim, const int64_t *x_dims,
                                        const int64_t *w_dims, int64_t *y_dims);

/* The cost of one pass of a problem given by input and filter dims: `flops`
 * counts a multiply-add as 2 (the same for the three passes), `bytes` the
 * minimum memory traffic (each tensor the pass reads or writes, once), for
 * elements of `dtype`. Like Caffe2's CostInferenceForConv. Dims as for
 * conv_output_dims, in either mode. */
CONV_API conv_status_t conv_cost(conv_desc_t desc, conv_op_t op, conv_dtype_t dtype, int ndim,
                                 const int64_t *x_dims, const int64_t *w_dims, double *flops,
                                 double *bytes);

/* ------------------------------------------------------------- workspace sizes */

/* The workspace bytes a pass needs for these tensors with this context (its
 * thread count included) and the algorithm that would be chosen. The three
 * tensors play the roles of input, filter and output whatever the pass:
 * for BACKWARD_DATA pass (dx, w, dy), for BACKWARD_FILTER (x, dw, dy). */
CONV_API conv_status_t conv_workspace_size(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                           conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                           size_t *bytes);

/* ---------------------------------------------------------- computation */
/*
 * All passes overwrite their outputs (no accumulation into existing values:
 * to accumulate gradients over micro-batches, add the results). `ws` may be
 * NULL to use a workspace from the context's pool. The CPU engine computes
 * fp32 and fp64; fp16/bf16 tensors are refused with UNSUPPORTED. Tensors
 * must share dtype, layout and the context's device. Outputs must not
 * overlap inputs. Before any element is written every argument is checked;
 * a failed call leaves every output untouched.
 */

/* y = act(conv(x, w) + b). x: (N, C, in...), w: (K, C/G, kernel...),
 * b: NULL or a tensor of K elements (any dims whose product is K, e.g.
 * (1, K, 1[, 1...]) in the same dtype), y: exactly conv_output_dims(). */
CONV_API conv_status_t conv_forward(conv_context_t ctx, conv_desc_t desc, conv_tensor_t x,
                                    conv_tensor_t w, conv_tensor_t b, conv_tensor_t y,
                                    conv_workspace_t ws);

/* dx = gradient with respect to x of <dy, conv(x, w)>: the transposed
 * convolution of dy with w. dx has the input's dims. */
CONV_API conv_status_t conv_backward_data(conv_context_t ctx, conv_desc_t desc, conv_tensor_t w,
                                          conv_tensor_t dy, conv_tensor_t dx,
                                          conv_workspace_t ws);

/* dw = gradient with respect to w, summed over the batch; db (NULL to skip)
 * = sums of dy over batch and space, K elements. */
CONV_API conv_status_t conv_backward_filter(conv_context_t ctx, conv_desc_t desc, conv_tensor_t x,
                                            conv_tensor_t dy, conv_tensor_t dw, conv_tensor_t db,
                                            conv_workspace_t ws);

/* ------------------------------------------------- choosing an algorithm */

/* The algorithm a pass would run for these tensors: the descriptor's forced
 * one, else the context's tuned choice for this problem, else the built-in
 * heuristic's. Tensors in the roles of conv_workspace_size. */
CONV_API conv_status_t conv_chosen_algorithm(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                             conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                             conv_algo_t *algo);

/* Benchmarks every algorithm that applies to a pass (like cudnnFind*Ex):
 * each runs once to warm up, then `CONV_FIND_REPEATS` times; its median time
 * is reported. Results are sorted fastest first: up to `capacity` entries of
 * algos[i], milliseconds[i] and workspace_bytes[i] (any of the three arrays
 * may be NULL), and *count receives how many were written. The fastest is
 * remembered by the context for this problem and used by later calls whose
 * descriptor leaves the pass on CONV_ALGO_AUTO (see conv_chosen_algorithm).
 * Tensors in the roles of conv_workspace_size; the pass's OUTPUT tensor is
 * used for the trial runs and holds one of their results afterwards (all
 * algorithms compute the same values up to rounding). Inputs are unchanged.
 * `ws` (nullable: the context's pool) must be large enough for every
 * candidate; a caller-wrapped workspace that is too small for one skips
 * that candidate. Fails with UNSUPPORTED when no candidate could run. */
#define CONV_FIND_REPEATS 3
CONV_API conv_status_t conv_find_algorithms(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                            conv_tensor_t x, conv_tensor_t w, conv_tensor_t y,
                                            conv_workspace_t ws, int capacity, conv_algo_t *algos,
                                            double *milliseconds, size_t *workspace_bytes,
                                            int *count);

/* Writes the context's tuned choices to a file (a small text format with a
 * versioned header: the library version and the device -- CPU model or GPU
 * name -- the choices were measured on). The file is written under a
 * temporary name and renamed, so readers never see half a file. */
CONV_API conv_status_t conv_context_save_tuning(conv_context_t ctx, const char *path);

/* Reads choices saved by conv_context_save_tuning and adds them to the
 * context's (an entry for a problem already tuned replaces it). A file that
 * is truncated, corrupt, from another libconv version or measured on
 * another device is refused with CONV_STATUS_BAD_FILE and nothing is
 * applied; an unreadable one gives CONV_STATUS_IO_ERROR. */
CONV_API conv_status_t conv_context_load_tuning(conv_context_t ctx, const char *path);

/* Forgets every tuned choice of the context. */
CONV_API conv_status_t conv_context_clear_tuning(conv_context_t ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONV_H */
