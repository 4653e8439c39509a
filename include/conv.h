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
    CONV_STATUS_INTERNAL_ERROR = 13,
    /* The numerical guard (conv_context_set_check_numerics) found a NaN or an
     * infinity in an output. Unlike every other failure, the outputs HAVE
     * been written: the check runs after the computation. */
    CONV_STATUS_NUMERICAL_ERROR = 14
} conv_status_t;

/* A static English name for a status ("invalid argument"); never NULL, also
 * for values this version does not know. */
CONV_API const char *conv_status_string(conv_status_t status);

/* The message of the last failed call on the calling thread, or "" if the
 * last call succeeded (except conv_device_count, which explains a count of
 * 0 there). Valid until the next libconv call on this thread.
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
    CONV_DTYPE_FLOAT16 = 2,  /* computed on a GPU; storage only on the CPU */
    CONV_DTYPE_BFLOAT16 = 3  /* computed on a GPU, and on a CPU with AVX-512 */
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
    /* 1x1 kernel, no padding, any stride: at stride 1 the input already is
     * the GEMM operand, no unfolding; at larger strides the positions read
     * are first copied into the workspace. */
    CONV_ALGO_GEMM_1X1 = 2,
    /* Depthwise convolutions (groups == C, any channel multiplier): each
     * output a direct sum of its kernel taps, vectorised along the row or
     * the channels. */
    CONV_ALGO_DEPTHWISE_DIRECT = 3,
    /* Winograd F(4x4, 3x3): 2-D 3x3 kernels, stride 1, no dilation, padding
     * 0..2; all three passes. 4x fewer multiplications than direct
     * summation, with about 10x its rounding error (not chosen under
     * CONV_MATH_STRICT). */
    CONV_ALGO_WINOGRAD_4X4_3X3 = 4,
    /* 1-D and 2-D convolutions, any kernel, stride, dilation, padding and
     * groups: each output summed straight from a padded copy of the input,
     * no unfolded matrix (AVX-512 kernels where the CPU has them); forward,
     * backward-filter, and backward-data at stride 1. */
    CONV_ALGO_IMPLICIT_GEMM = 5,
    /* The CUDA engine's algorithms: cuDNN's, one id per family, the same id
     * for the three passes where cuDNN has that family for them (docs/gpu.md
     * has the table). The CPU refuses them and the GPU the CPU's. */
    /* fwd IMPLICIT_GEMM, bwd-data ALGO_0, bwd-filter ALGO_0: no workspace;
     * the two backward ones are non-deterministic (atomic adds). */
    CONV_ALGO_CUDNN_IMPLICIT_GEMM = 100,
    /* fwd IMPLICIT_PRECOMP_GEMM, bwd-data ALGO_1, bwd-filter ALGO_1. */
    CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM = 101,
    /* fwd GEMM (explicit im2col), bwd-filter ALGO_3 (non-deterministic). */
    CONV_ALGO_CUDNN_GEMM = 102,
    /* fwd DIRECT (cuDNN implements it for no problem today; kept for the
     * mapping to be complete). */
    CONV_ALGO_CUDNN_DIRECT = 103,
    /* FFT: fwd, bwd-data and bwd-filter FFT. Error bound like Winograd's,
     * relative to the largest inputs rather than each output's products. */
    CONV_ALGO_CUDNN_FFT = 104,
    /* FFT in 32x32 tiles: fwd, bwd-data and bwd-filter FFT_TILING
     * (3-D: fwd and bwd-data). */
    CONV_ALGO_CUDNN_FFT_TILING = 105,
    /* Winograd fused (3x3 kernels): fwd, bwd-data, bwd-filter WINOGRAD. */
    CONV_ALGO_CUDNN_WINOGRAD = 106,
    /* Winograd with separate transform kernels: fwd, bwd-data, bwd-filter
     * WINOGRAD_NONFUSED. */
    CONV_ALGO_CUDNN_WINOGRAD_NONFUSED = 107
} conv_algo_t;

/* A static name for an algorithm ("im2col_gemm"); "unknown" for values this
 * version does not know. Never NULL. */
CONV_API const char *conv_algo_name(conv_algo_t algo);

/* The algorithm (solver) with this name, as conv_algo_name() gives it and
 * CONV_VERBOSE prints it ("winograd_4x4_3x3", "auto"). Every solver of every
 * engine built into this library has a name; solvers added after this
 * header was written have no enum value above but an id from this function,
 * which conv_desc_set_algorithm accepts and conv_algo_name turns back into
 * the name (such ids are stable within a library version, not across
 * versions: store names, not those ids). INVALID_ARGUMENT for an unknown
 * name, listing the known ones. */
CONV_API conv_status_t conv_algo_from_name(const char *name, conv_algo_t *algo);

/* The algorithms (solvers) of a device kind's engine, in that engine's order
 * of preference: every id conv_desc_set_algorithm may force on such a
 * device, the ones without an enum value above included. Writes the first
 * min(capacity, count) ids to `algos` (which may be NULL when capacity is
 * 0) and the number there are to `*count`, so a first call with capacity 0
 * sizes the array. The list is the same for every call of one library
 * version; a build without the CUDA engine still lists its solvers (forcing
 * one there fails with UNSUPPORTED). INVALID_ARGUMENT for an unknown device
 * kind or a negative capacity. */
CONV_API conv_status_t conv_algo_list(conv_device_t device, int capacity, conv_algo_t *algos,
                                      int *count);

/* --------------------------------------------------------------- handles */

typedef struct conv_context_s *conv_context_t;
typedef struct conv_workspace_s *conv_workspace_t;
typedef struct conv_tensor_s *conv_tensor_t;
typedef struct conv_desc_s *conv_desc_t;

/* --------------------------------------------------------------- devices */

/* Number of devices of a kind: 1 for CONV_DEVICE_CPU; for CONV_DEVICE_CUDA
 * the number of usable GPUs, 0 when none is present or CUDA support is not
 * compiled in. cuDNN and the CUDA driver are looked for at run time: when
 * the count is 0, conv_last_error() says why (the library that was looked
 * for and not found, no driver, no GPU) although the call succeeded. */
CONV_API conv_status_t conv_device_count(conv_device_t device, int *count);

/* --------------------------------------------------------------- context */

/* Creates a context for one device: CONV_DEVICE_CPU with index 0, or
 * CONV_DEVICE_CUDA with a GPU index. A CPU context starts with as many
 * threads as the process may run on (its CPU affinity), at most 64.
 * Fails with NOT_AVAILABLE when the device does not exist in this build or
 * on this machine (CUDA without a GPU; an index past the devices there are,
 * e.g. CPU index 1), and with INVALID_ARGUMENT for a negative index or an
 * unknown device kind. The context owns a thread pool and a pool of workspaces
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

/* ------------------------------------------ context: host memory and checks */

/* A caller-supplied host allocator. `alloc` returns `bytes` bytes aligned to
 * `alignment` (a power of two; 64 today), or NULL when it cannot -- the call
 * that needed the memory then fails with CONV_STATUS_OUT_OF_MEMORY and
 * changes nothing. `free_fn` releases a block `alloc` returned (never NULL).
 * Both receive the `user` pointer given with them, may be called from any
 * thread (also concurrently, from calls running on several threads) and
 * must not call libconv. */
typedef void *(*conv_alloc_fn_t)(void *user, size_t bytes, size_t alignment);
typedef void (*conv_free_fn_t)(void *user, void *memory);

/* Sets the host allocator of a CPU context; alloc == NULL and free_fn ==
 * NULL restore the default (aligned malloc/free); one NULL without the
 * other is INVALID_ARGUMENT. A CUDA context (whose memory is device memory)
 * refuses it with UNSUPPORTED.
 *  - What uses it: the elements of tensors made by conv_tensor_create and
 *    the scratch of workspaces made by conv_workspace_create after this call
 *    returns, and the workspaces the context's own pool allocates for calls
 *    that pass none. Wrapped tensors and workspaces never allocate. Small
 *    bookkeeping (handles, messages, tuning entries) comes from the C++
 *    runtime (operator new); its failure also gives OUT_OF_MEMORY.
 *  - Lifetime: every block goes back to the `free_fn` of the allocator it
 *    came from, with that allocator's `user`. So an allocator (its functions
 *    and `user`) must stay usable until every tensor and workspace created
 *    while it was set has been destroyed, and until the context is
 *    destroyed or another allocator has been set and the calls that were
 *    running at that moment have returned. Setting an allocator releases the
 *    idle workspaces of the context's pool at once (through their own
 *    allocator); a pool workspace in use by a running call is released when
 *    that call ends.
 *  - Thread safety: may be called while other threads use the context;
 *    allocations that start after it returns use the new allocator. */
CONV_API conv_status_t conv_context_set_allocator(conv_context_t ctx, conv_alloc_fn_t alloc,
                                                  conv_free_fn_t free_fn, void *user);

/* The numerical guard, off by default: when on, every pass on the context
 * (conv_forward, conv_backward_data, conv_backward_filter and the trial runs'
 * final result of conv_find_algorithms) reads its outputs after computing
 * them, and the first NaN or infinity fails the call with
 * CONV_STATUS_NUMERICAL_ERROR; conv_last_error() names the pass, the tensor
 * (y, dx, dw or db) and the index of the first bad element in memory order.
 * THE ONE EXCEPTION to "a failed call changes nothing": the outputs have
 * been written (the check runs after the fact). Costs one read of each
 * output. Setting the environment variable CONV_CHECK_NUMERICS to anything
 * but "" or "0" turns it on for every context created afterwards. Takes
 * effect for calls that start after it returns. */
CONV_API conv_status_t conv_context_set_check_numerics(conv_context_t ctx, int on);
CONV_API conv_status_t conv_context_get_check_numerics(conv_context_t ctx, int *on);

/* How much accuracy the algorithm choice may trade for speed.
 * DEFAULT: any algorithm with a documented error bound, such as Winograd
 * F(4x4,3x3) on the CPU, whose error is about 10x that of direct
 * summation (docs/algorithms.md); on a GPU, fp32 math stays fp32 (no TF32).
 * STRICT: only algorithms that sum products directly (im2col+GEMM, direct),
 * whose error is that of a dot product in the tensor's dtype.
 * FAST: also reduced-precision internal math where a device has it: TF32
 * tensor cores for fp32 on a GPU; on a CPU with AMX tiles, fp32 tensors
 * with bf16 products and fp32 sums (the brgemm solvers, when forced: each
 * product's inputs rounded to 8 significant bits, relative error about
 * 2^-8 per product; docs/algorithms.md). Otherwise the same as DEFAULT.
 * A forced algorithm (conv_desc_set_algorithm) is used whatever the mode. */
typedef CONV_ENUM(conv_math) {
    CONV_MATH_DEFAULT = 0,
    CONV_MATH_STRICT = 1,
    CONV_MATH_FAST = 2
} conv_math_t;

CONV_API conv_status_t conv_context_set_math(conv_context_t ctx, conv_math_t math);
CONV_API conv_status_t conv_context_get_math(conv_context_t ctx, conv_math_t *math);

/* ------------------------------------------------ context: CUDA devices */
/*
 * A CUDA context (conv_context_create(CONV_DEVICE_CUDA, k, &ctx)) drives GPU
 * k through cuDNN (docs/gpu.md). Tensors and workspaces made with it live in
 * that GPU's memory; conv_tensor_wrap on it wraps device pointers (from
 * cudaMalloc, PyTorch's tensor.data_ptr(), CuPy's ...); passing a tensor of
 * another device or context kind to a call fails with TYPE_MISMATCH.
 *
 * Asynchrony: every pass (conv_forward, conv_backward_data,
 * conv_backward_filter, conv_find_algorithms' final run) is ENQUEUED on the
 * context's stream and returns before the GPU is done; its outputs are
 * ready once conv_context_synchronize() returns, or for any later work on
 * the same stream. Copies between host and device memory
 * (conv_tensor_copy_from, conv_tensor_copy_to, conv_tensor_copy with a host
 * side) are synchronous with the host: they return when the data has
 * arrived, after the work enqueued before them. Device-to-device
 * conv_tensor_copy is enqueued like a pass. Tensor creation waits for its
 * zero-fill.
 *
 * Handles: cuDNN handles are made per GPU and per calling thread, on first
 * use, and bound to the context's stream at each call, so one context may
 * be used from several threads at once (each gets its own handle).
 *
 * Errors: a CUDA or cuDNN failure is CONV_STATUS_BACKEND_ERROR with their
 * own message (cudaGetErrorString, cudnnGetErrorString and cuDNN's
 * last-error text); device memory exhaustion is CONV_STATUS_OUT_OF_MEMORY,
 * reported before any output is written.
 *
 * Math (conv_context_set_math) on a GPU: DEFAULT and STRICT compute fp32 in
 * fp32 (no TF32: results stay within fp32 rounding of the CPU engine's);
 * FAST allows TF32 tensor cores for fp32. fp16 and bf16 always compute on
 * tensor cores with fp32 accumulation; fp64 in fp64. STRICT also leaves out
 * cuDNN's FFT and Winograd algorithms, as it leaves out Winograd on the CPU.
 */

/* The CUDA stream (a cudaStream_t) the context enqueues its work on, so
 * that libconv interleaves with the caller's own: NULL goes back to the
 * context's own stream (a non-blocking stream created with the context).
 * The caller keeps its stream alive while the context uses it. Takes effect
 * for calls that start after it returns. CPU context: UNSUPPORTED. */
CONV_API conv_status_t conv_context_set_stream(conv_context_t ctx, void *cuda_stream);

/* The stream calls are enqueued on now (the caller's, or the context's own);
 * NULL for a CPU context. */
CONV_API conv_status_t conv_context_get_stream(conv_context_t ctx, void **cuda_stream);

/* Waits until every call enqueued on the context's stream has finished (the
 * documented way to wait for a GPU context); returns the first asynchronous
 * error the GPU reported, if any. A no-op returning SUCCESS on a CPU
 * context, whose calls are complete when they return. */
CONV_API conv_status_t conv_context_synchronize(conv_context_t ctx);

/* Deterministic mode (off by default): the algorithm choice -- the
 * heuristic, conv_find_algorithms and tuned choices -- only takes
 * algorithms that give bit-identical results from run to run (on a GPU:
 * cuDNN's CUDNN_DETERMINISTIC ones; the non-deterministic ones add with
 * atomics). A forced algorithm is used as forced. The CPU engine is always
 * deterministic at a given thread count; there the flag changes nothing.
 * Takes effect for calls that start after it returns. */
CONV_API conv_status_t conv_context_set_deterministic(conv_context_t ctx, int on);
CONV_API conv_status_t conv_context_get_deterministic(conv_context_t ctx, int *on);

/* An upper bound, in bytes, on the workspace an algorithm the library
 * chooses may need (GPU: the heuristic and conv_find_algorithms skip those
 * that need more). 0, the default, means no bound (conv_find_algorithms then
 * tries those needing at most half of the GPU's free memory). Forced
 * algorithms are not bounded. The CPU engine's needs are small and fixed:
 * there the bound is recorded and ignored. */
CONV_API conv_status_t conv_context_set_workspace_limit(conv_context_t ctx, size_t bytes);
CONV_API conv_status_t conv_context_get_workspace_limit(conv_context_t ctx, size_t *bytes);

/* What the context runs on, as written in tuning files: "cpu <model name>
 * (<isa>)" -- isa is "avx512+amx", "avx512" or "baseline", the vector and
 * tile instructions the CPU kernels use (capped by the environment variable
 * CONV_CPU_ISA=avx512 or baseline; "avx512+amx-emulated" under
 * CONV_CPU_AMX=emulate, a test mode), then "+jit" where kernels are
 * generated at run time for each problem (AVX-512 builds with Xbyak, unless
 * the environment variable CONV_CPU_JIT=0) --
 * or "cuda <GPU name> sm_<cc> cudnn <version> cudart <version>". Writes at
 * most `capacity` bytes, NUL included (truncating). */
CONV_API conv_status_t conv_context_get_device_name(conv_context_t ctx, char *name,
                                                    size_t capacity);

/* The trace (like oneDNN's ONEDNN_VERBOSE). Level 1 prints one line per
 * executed pass to stderr:
 *   conv_verbose,exec,cpu,fwd,float32,channels-first,x=1x64x56x56,w=64x64x3x3,
 *   y=1x64x56x56,s=1x1,d=1x1,p=1x1:1x1,g=1,bias,relu,solver=winograd_4x4_3x3,
 *   plan=hit,0.412
 * (the last field is milliseconds of host time: on a GPU the time to
 * enqueue; cudnn_graph adds impl=<cuDNN's engine configuration> after the
 * solver). Level 2 also prints, when a plan is made, each solver that was
 * passed over and why (conv_verbose,skip,...). 0 (the default) prints
 * nothing. A new context starts at the level in the environment variable
 * CONV_VERBOSE, read when the context is created. */
CONV_API conv_status_t conv_context_set_verbose(conv_context_t ctx, int level);
CONV_API conv_status_t conv_context_get_verbose(conv_context_t ctx, int *level);

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
 * the tensor has no elements; otherwise its address must be a multiple of
 * the element size, else INVALID_ARGUMENT). The caller keeps the memory
 * alive while the tensor exists; libconv never frees it. */
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
/* For a device tensor these copy between host and device memory and return
 * when the copy is complete (after the work already enqueued on its
 * context's stream). */
CONV_API conv_status_t conv_tensor_copy_from(conv_tensor_t t, const void *host, size_t bytes);
CONV_API conv_status_t conv_tensor_copy_to(conv_tensor_t t, void *host, size_t bytes);

/* Copies src into dst: the same dtype, layout and dims, any devices (host to
 * host, host to device, device to host, device to device, also between two
 * GPUs). Device to device is enqueued on dst's context's stream (after the
 * work enqueued on src's, when the two differ); a copy with a host side is
 * synchronous with the host. The two must not overlap unless identical. */
CONV_API conv_status_t conv_tensor_copy(conv_tensor_t dst, conv_tensor_t src);

/* The device kind and index of the context the tensor was made with. */
CONV_API conv_status_t conv_tensor_get_device(conv_tensor_t t, conv_device_t *device,
                                              int *device_index);

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
 * fp32 and fp64, and bf16 (fp32 sums, each output rounded to bf16 once) on
 * CPUs with AVX-512; fp16 tensors, and bf16 ones elsewhere, are refused with
 * UNSUPPORTED. The CUDA
 * engine computes fp32, fp64, fp16 and bf16 and enqueues the pass on the
 * context's stream (see "context: CUDA devices"). Tensors
 * must share dtype, layout and the context's device. An output must not be
 * the same tensor as, nor share memory with, any other tensor of the call
 * (an input, or the other output): INVALID_ARGUMENT naming both roles; this
 * holds for conv_find_algorithms too. Before any element is written every
 * argument is checked; a failed call leaves every output untouched.
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
 * temporary name and renamed, so readers never see half a file. Nothing
 * another user could plant is followed: the temporary is a new file in the
 * target's directory under a random name, created exclusively (O_CREAT |
 * O_EXCL | O_NOFOLLOW) with mode 0600 and given 0666 less the umask before
 * the rename; a symbolic link at `path` itself is refused with
 * CONV_STATUS_IO_ERROR (save to the path it points to instead). */
CONV_API conv_status_t conv_context_save_tuning(conv_context_t ctx, const char *path);

/* Reads choices saved by conv_context_save_tuning and adds them to the
 * context's (an entry for a problem already tuned replaces it). A file that
 * is truncated, corrupt, from another libconv version or measured on
 * another device is refused with CONV_STATUS_BAD_FILE and nothing is
 * applied; an unreadable one gives CONV_STATUS_IO_ERROR. */
CONV_API conv_status_t conv_context_load_tuning(conv_context_t ctx, const char *path);

/* Forgets every tuned choice of the context. */
CONV_API conv_status_t conv_context_clear_tuning(conv_context_t ctx);

/* ----------------------------------------------------------------- plans */
/*
 * A plan is one pass of one problem, prepared once and executed many times
 * (oneDNN's primitive, cuDNN's execution plan, FFTW's plan): the shapes,
 * dtype and layout are fixed when it is made, the solver chosen (forced by
 * the descriptor, the context's tuned choice, or the heuristic), its
 * workspace size known. Executing it validates only the tensors against the
 * plan's shapes. The one-shot calls above (conv_forward, ...) keep plans in
 * a per-context cache and behave exactly like executing one.
 *
 * A plan is immutable once created, except for its prepared weights (below),
 * and may be executed from several threads at once. It refers to the
 * context it was made with (its threads, workspace pool, device, math mode
 * at creation): once that context is destroyed, executing the plan fails
 * with INVALID_HANDLE (as for every handle, the context must not be destroyed
 * while a call -- a plan's execution included -- is using it). Settings of
 * the context changed after the plan was
 * made (threads, math, deterministic, workspace limit, tuning) do not
 * change the plan; make a new one to see them. The descriptor is read only
 * at creation.
 */
typedef struct conv_plan_s *conv_plan_t;

/* Makes the plan of pass `op` for tensors of `dtype` and `layout` with input
 * dims `x_dims` (N, C, spatial...; dx's for BACKWARD_DATA) and filter dims
 * `w_dims` (dw's for BACKWARD_FILTER), `ndim` each, as for
 * conv_output_dims. `with_bias`: the forward pass will be given a bias, or
 * the backward-filter pass a db (0 or 1; ignored for BACKWARD_DATA). No
 * tensor memory is read. Fails as the pass itself would for these shapes
 * (SHAPE_MISMATCH, UNSUPPORTED for a forced algorithm that does not apply,
 * ...). */
CONV_API conv_status_t conv_plan_create(conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                                        conv_dtype_t dtype, conv_layout_t layout, int ndim,
                                        const int64_t *x_dims, const int64_t *w_dims,
                                        int with_bias, conv_plan_t *out);
CONV_API void conv_plan_destroy(conv_plan_t plan);

/* Runs the pass. Tensors in the roles of conv_workspace_size plus the bias:
 * forward (x, w, b, y), backward-data (dx, w, NULL, dy), backward-filter
 * (x, dw, db, dy). Their dims, dtype, layout and device must be the plan's,
 * and `b` present exactly when the plan was made with_bias (SHAPE_MISMATCH
 * or TYPE_MISMATCH otherwise); outputs must not overlap inputs. `ws` as for
 * conv_forward. Same results as the one-shot call. */
CONV_API conv_status_t conv_plan_execute(conv_plan_t plan, conv_tensor_t x, conv_tensor_t w,
                                         conv_tensor_t b, conv_tensor_t y, conv_workspace_t ws);

/* Workspace bytes an execution needs (as conv_workspace_size). */
CONV_API conv_status_t conv_plan_get_workspace_size(conv_plan_t plan, size_t *bytes);
/* The solver the plan runs: its id (see conv_algo_from_name) and its name,
 * a static string. */
CONV_API conv_status_t conv_plan_get_algorithm(conv_plan_t plan, conv_algo_t *algo);
CONV_API conv_status_t conv_plan_get_solver_name(conv_plan_t plan, const char **name);

/* Prepared weights, for inference and for any run of many passes between
 * weight updates: the plan transforms or re-blocks the filter `w` once (the
 * Winograd-domain filter, for one) into memory of its own, and later
 * executions use that copy instead of transforming w's data again.
 * THE RULE: the prepared copy is made from w's contents at this call; an
 * execution uses it whatever the w tensor passed then holds, so after every
 * change of the weights call conv_plan_prepare_weights again (or
 * conv_plan_release_weights to go back to reading w). A plan whose solver
 * has nothing to prepare (*prepared = 0) keeps reading w at every
 * execution, so the rule is always safe to follow. Must not run while the
 * plan is being executed by another thread. Forward and backward-data
 * plans; `w` must have the plan's filter dims, dtype and layout. */
CONV_API conv_status_t conv_plan_prepare_weights(conv_plan_t plan, conv_tensor_t w,
                                                 int *prepared);
CONV_API conv_status_t conv_plan_release_weights(conv_plan_t plan);

/* ======================================================================
 * Gradient communication: data-parallel training across GPUs, processes
 * and machines (docs/comm.md)
 * ======================================================================
 *
 * N ranks run the same network, each on its own part of the batch, and
 * average their gradients after backward. A communicator (conv_comm_t)
 * joins the ranks and runs collectives; a gradient reducer (conv_reducer_t)
 * averages a network's gradients bucket by bucket while backward is still
 * producing them, and can apply a fused SGD step.
 *
 * Backends (conv_comm_backend_t):
 *  - LOCAL: N ranks that are N threads of one process, through shared
 *    memory. Always built, no dependency. conv_comm_create_local.
 *  - MPI: ranks that are MPI processes, on one machine or several, on host
 *    memory. Built when MPI is found at configure time (CONV_WITH_MPI); the
 *    MPI library (Open MPI's libmpi.so.40, or $CONV_MPI_LIBRARY) is loaded
 *    when first needed. conv_comm_create_mpi, conv_comm_create_mpi_world.
 *  - NCCL: one rank per GPU, on device memory. Built when the NCCL and CUDA
 *    headers are found at configure time (CONV_WITH_NCCL); libnccl.so.2 and
 *    the CUDA runtime are loaded when first needed, so libconv itself runs
 *    on machines without them. conv_comm_unique_id + conv_comm_create_nccl,
 *    or conv_comm_create_nccl_all.
 *  A function of a backend this build lacks, or that this machine cannot
 *  run (no GPU, no libnccl), fails with CONV_STATUS_NOT_AVAILABLE and says
 *  which; conv_comm_backend_available() asks beforehand.
 *
 * Buffers: collectives take a pointer, an element count and a dtype (not a
 * conv_tensor_t: a gradient bucket is a slice of one flat buffer, and a
 * tensor's memory is conv_tensor_get_data() / conv_tensor_get_elements()).
 * The memory is host memory for LOCAL and MPI, device memory of the
 * communicator's GPU for NCCL. Dtypes: FLOAT32, FLOAT64, FLOAT16, BFLOAT16.
 *
 * Collective calls: every rank of a communicator calls the same collectives
 * in the same order with the same count, dtype, op and root (LOCAL checks
 * this and fails every rank with INVALID_ARGUMENT, naming the numbers; MPI
 * and NCCL cannot). A communicator serves one call at a time: it is used by
 * one thread (a second call while one runs fails with INVALID_ARGUMENT),
 * except conv_comm_abort, conv_comm_get_error and the getters, which any
 * thread may call at any time. While a reducer's step is in flight the
 * reducer is the communicator's user.
 *
 * Failures are statuses, never hangs:
 *  - Every collective waits at most the communicator's timeout
 *    (conv_comm_set_timeout; default CONV_COMM_DEFAULT_TIMEOUT seconds, or
 *    the environment variable CONV_COMM_TIMEOUT when set at creation).
 *  - conv_comm_abort, from any thread, makes calls in progress and later
 *    ones fail.
 *  - After a timeout, an abort or a backend error the communicator is
 *    aborted for good (sticky): every later collective fails at once with
 *    CONV_STATUS_BACKEND_ERROR, and conv_comm_get_error reports why. Create
 *    a new communicator to go on. On LOCAL the whole group of ranks is
 *    aborted together, so every rank fails within its timeout; on MPI and
 *    NCCL the other ranks fail by their own timeout (or NCCL's detection).
 *  - A failed collective leaves its output buffer unspecified.
 *
 * Reductions: SUM adds the N ranks' values; AVERAGE divides that sum by N,
 * once. On the host (LOCAL, MPI) FLOAT16 and BFLOAT16 values are converted
 * to float, summed in float, divided, and rounded back to nearest-even once;
 * FLOAT32 sums in float and FLOAT64 in double. LOCAL adds in rank order,
 * so its results are deterministic; MPI adds in the order of the MPI
 * library's algorithm and NCCL in its ring/tree order (NCCL's AVERAGE uses
 * its own ncclAvg rounding), so only sums that are exact in the dtype
 * (integer-valued data, for example) agree bit for bit across backends.
 */

typedef struct conv_comm_s *conv_comm_t;
typedef struct conv_reducer_s *conv_reducer_t;

typedef CONV_ENUM(conv_comm_backend) {
    CONV_COMM_BACKEND_LOCAL = 0, /* threads of one process, shared memory */
    CONV_COMM_BACKEND_MPI = 1,   /* MPI processes, host memory */
    CONV_COMM_BACKEND_NCCL = 2   /* one GPU per rank, device memory */
} conv_comm_backend_t;

typedef CONV_ENUM(conv_reduce_op) {
    CONV_REDUCE_SUM = 0,
    CONV_REDUCE_AVERAGE = 1 /* the sum divided by the number of ranks */
} conv_reduce_op_t;

/* The health of a communicator (conv_comm_get_error). */
typedef CONV_ENUM(conv_comm_state) {
    CONV_COMM_STATE_OK = 0,
    /* conv_comm_abort was called (for LOCAL: on any rank of the group), or
     * a LOCAL rank's communicator was destroyed while the others still
     * needed it. */
    CONV_COMM_STATE_ABORTED = 1,
    /* A collective waited longer than the timeout. */
    CONV_COMM_STATE_TIMED_OUT = 2,
    /* The backend (MPI, NCCL, CUDA) reported an error. */
    CONV_COMM_STATE_FAILED = 3
} conv_comm_state_t;

/* The size of the opaque id that joins NCCL ranks (conv_comm_unique_id). */
#define CONV_COMM_UNIQUE_ID_BYTES 128

/* The timeout of a new communicator, in seconds. */
#define CONV_COMM_DEFAULT_TIMEOUT 600.0

/* ---------------------------------------------------- communicator: creation */

/* Whether a backend can be used here: *available = 1 when it is built into
 * this library and usable on this machine (LOCAL: always; MPI: built in
 * and its library loads; NCCL: built in, libnccl.so.2 and the CUDA runtime
 * load, and at least one GPU is present), else 0. An unknown backend is INVALID_ARGUMENT. */
CONV_API conv_status_t conv_comm_backend_available(conv_comm_backend_t backend, int *available);

/* Creates the `nranks` communicators (1..1024) of one in-process group:
 * comms[r] is rank r. Each is meant to be used by its own thread; all of
 * them must take part in every collective. On failure no communicator is
 * created and comms is not written. Destroy each with conv_comm_destroy;
 * destroying one while others still run collectives makes those fail
 * (state ABORTED) rather than wait. */
CONV_API conv_status_t conv_comm_create_local(int nranks, conv_comm_t *comms);

/* Wraps an MPI communicator: `mpi_comm` points to an MPI_Comm (pass
 * &comm; a pointer because MPI_Comm is an int in some MPI libraries and a
 * pointer in others). The rank and size are those of the MPI communicator;
 * libconv works on its own duplicate of it (MPI_Comm_idup), so its traffic
 * never mixes with the application's. Collective: every rank of the MPI
 * communicator calls it, within the default timeout.
 * libconv never initialises or finalises MPI: the application calls
 * MPI_Init_thread first (fails with NOT_AVAILABLE, saying so, when MPI is not
 * initialised or already finalised) and destroys its libconv communicators
 * before MPI_Finalize. For a reducer to overlap communication with backward
 * (a thread of libconv calls MPI), initialise MPI with MPI_THREAD_MULTIPLE,
 * or MPI_THREAD_SERIALIZED when the application makes no MPI call of its
 * own between a step's first conv_reducer_mark_ready and its
 * conv_reducer_finish; with a lower level the reducer runs each bucket's
 * reduction on the calling thread, without overlap.
 * Host memory only. Fails with NOT_AVAILABLE in a build without MPI. */
CONV_API conv_status_t conv_comm_create_mpi(const void *mpi_comm, conv_comm_t *out);

/* The same for MPI_COMM_WORLD. */
CONV_API conv_status_t conv_comm_create_mpi_world(conv_comm_t *out);

/* Creates the opaque id that joins NCCL ranks (ncclGetUniqueId) into `id`,
 * `bytes` >= CONV_COMM_UNIQUE_ID_BYTES bytes. One rank creates it and the
 * application sends those bytes to every other rank by any channel (a file,
 * a socket, MPI: conv_comm_broadcast of CONV_COMM_UNIQUE_ID_BYTES / 4
 * FLOAT32 elements over an MPI communicator copies them bit for bit). */
CONV_API conv_status_t conv_comm_unique_id(void *id, size_t bytes);

/* Creates rank `rank` (0..nranks-1) of an NCCL communicator of `nranks`
 * ranks on GPU `device`, joined by the id from conv_comm_unique_id
 * (`id_bytes` = CONV_COMM_UNIQUE_ID_BYTES). Every rank calls it (from its
 * own process or thread) within the default timeout; the calling thread's
 * current CUDA device is left as it was. Collectives are enqueued on the
 * communicator's CUDA stream (conv_comm_set_stream) and return without
 * waiting for the GPU. Fails with NOT_AVAILABLE without NCCL or a GPU. */
CONV_API conv_status_t conv_comm_create_nccl(const void *id, size_t id_bytes, int nranks, int rank,
                                             int device, conv_comm_t *out);

/* Creates the `ndevices` communicators of one process driving several GPUs
 * (ncclCommInitAll): comms[i] is rank i on GPU devices[i] (devices may be
 * NULL for GPUs 0..ndevices-1). A collective then needs every rank's call:
 * call them from one thread per rank. On failure nothing is created. */
CONV_API conv_status_t conv_comm_create_nccl_all(int ndevices, const int *devices,
                                                 conv_comm_t *comms);

/* Destroys a communicator (NULL is a no-op). No call may be using it. A
 * reducer created on it keeps what it needs alive: the communicator's
 * resources are released when the reducer is destroyed too. An NCCL
 * communicator that is not aborted first waits for its enqueued work. */
CONV_API void conv_comm_destroy(conv_comm_t comm);

/* ---------------------------------------------------- communicator: queries */

CONV_API conv_status_t conv_comm_get_rank(conv_comm_t comm, int *rank);
CONV_API conv_status_t conv_comm_get_size(conv_comm_t comm, int *size);
CONV_API conv_status_t conv_comm_get_backend(conv_comm_t comm, conv_comm_backend_t *backend);
/* Where the communicator's buffers live: CONV_DEVICE_CPU (index 0) for
 * LOCAL and MPI, CONV_DEVICE_CUDA and the GPU index for NCCL. */
CONV_API conv_status_t conv_comm_get_device(conv_comm_t comm, conv_device_t *device,
                                            int *device_index);

/* How long one collective (and a conv_comm_synchronize, and each bucket
 * of a reducer) may wait for the other ranks before the communicator gives
 * up and aborts, in seconds: > 0, and INFINITY waits forever. Takes effect
 * for calls that start after it returns; may be called from any thread. */
CONV_API conv_status_t conv_comm_set_timeout(conv_comm_t comm, double seconds);
CONV_API conv_status_t conv_comm_get_timeout(conv_comm_t comm, double *seconds);

/* NCCL: the CUDA stream (a cudaStream_t) collectives are enqueued on; NULL
 * goes back to the communicator's own stream. The caller keeps the stream
 * alive while the communicator uses it. Other backends: UNSUPPORTED. */
CONV_API conv_status_t conv_comm_set_stream(conv_comm_t comm, void *cuda_stream);

/* ----------------------------------------------------- communicator: collectives */

/* recv = op over the ranks of send, `count` (>= 0) elements of `dtype` on
 * every rank. send == recv reduces in place; otherwise the two must not
 * overlap. LOCAL and MPI return when recv holds the result; NCCL returns
 * once the reduction is enqueued on the communicator's stream. */
CONV_API conv_status_t conv_comm_all_reduce(conv_comm_t comm, const void *send, void *recv,
                                            int64_t count, conv_dtype_t dtype,
                                            conv_reduce_op_t op);

/* Copies `count` elements of rank `root`'s buffer into every other rank's
 * buffer, bit for bit (any dtype). */
CONV_API conv_status_t conv_comm_broadcast(conv_comm_t comm, void *buffer, int64_t count,
                                           conv_dtype_t dtype, int root);

/* Returns when every rank has entered it (NCCL: and every rank's enqueued
 * collectives are complete on the GPU). */
CONV_API conv_status_t conv_comm_barrier(conv_comm_t comm);

/* Waits, within the timeout, until the collectives this rank enqueued are
 * complete (NCCL); returns at once for LOCAL and MPI, whose collectives are
 * complete when they return. Fails when the communicator has failed. */
CONV_API conv_status_t conv_comm_synchronize(conv_comm_t comm);

/* ------------------------------------------------------ communicator: failure */

/* Aborts the communicator, from any thread, also while another thread is
 * inside one of its collectives: that call and every later one fail with
 * CONV_STATUS_BACKEND_ERROR (state ABORTED). For LOCAL every rank of the
 * group is aborted; for MPI and NCCL this rank only (the others fail by
 * their own timeout). Aborting an aborted communicator does nothing. The
 * communicator must still be destroyed. On MPI, a collective that was
 * interrupted may still read and write its buffers until the MPI job ends
 * (MPI cannot cancel a collective): keep them allocated, and end the job
 * (MPI_Abort) as after any MPI failure. */
CONV_API conv_status_t conv_comm_abort(conv_comm_t comm);

/* The asynchronous-error query, from any thread, without waiting. Returns
 * CONV_STATUS_SUCCESS with *state = CONV_COMM_STATE_OK while the
 * communicator is healthy. Once it has failed, returns the failure's
 * status (CONV_STATUS_BACKEND_ERROR) with conv_last_error() giving the
 * reason ("all_reduce timed out after 2.0 s on rank 1 of 4: ranks 3 never
 * joined") and *state why; `state` may be NULL. For NCCL this also asks
 * NCCL (ncclCommGetAsyncError) and notices a collective that has been
 * running longer than the timeout. */
CONV_API conv_status_t conv_comm_get_error(conv_comm_t comm, conv_comm_state_t *state);

/* ------------------------------------------------------------- gradient reducer */
/*
 * A reducer averages the gradients of a network's parameters across the
 * ranks of a communicator, the way NVCaffe and PyTorch DDP do:
 *
 *   conv_reducer_create(comm, CONV_DTYPE_FLOAT32, &r);
 *   for each parameter, in FORWARD order:
 *       conv_reducer_add_param(r, weights, elements, &index);
 *   conv_reducer_setup(r);              (collective: same layout on every rank)
 *   conv_reducer_broadcast_params(r, 0); (collective: rank 0's weights everywhere)
 *   each step:
 *       forward; then backward, writing each parameter's gradient into
 *       conv_reducer_get_grad(r, index) and calling
 *       conv_reducer_mark_ready(r, index) as soon as it is there
 *       (conv_reducer_mark_unused for a parameter with no gradient);
 *       conv_reducer_finish(r);         (gradients now averaged over ranks)
 *       conv_reducer_apply_sgd(r, lr, momentum, weight_decay);
 *
 * The reducer owns ONE flat gradient buffer, laid out in bucket order, the
 * order backward produces gradients: the last registered parameter first.
 * Each parameter's gradient has a slot there, starting on a 64-byte
 * boundary; backward writes straight into it (wrap it as the dw tensor of
 * conv_backward_filter), so no gradient is copied. Consecutive slots form
 * buckets, closed at a size cap: by default a small first bucket of
 * 1 MiB (so communication starts early) and 25 MiB after that (PyTorch
 * DDP's rule; conv_reducer_set_bucket_bytes), or total size / buckets
 * (NVCaffe's rule, default 6 buckets; conv_reducer_set_bucket_count). A
 * bucket closes as soon as its parameters' bytes reach the cap, the
 * parameter that reaches it included (so a bucket exceeds the cap by at
 * most its last parameter).
 *
 * When the last parameter of a bucket is marked, its all-reduce (AVERAGE)
 * starts on a communication thread (LOCAL, MPI) or stream (NCCL) while
 * backward goes on; buckets are reduced strictly in bucket order on every
 * rank. conv_reducer_finish waits for them: on the host it returns when
 * the gradients are averaged; on a GPU it makes the reducer's compute
 * stream wait (no host synchronisation). The division by N happens once,
 * inside the reduction.
 *
 * Memory (weights and the gradient buffer) is on the communicator's device:
 * host memory for LOCAL and MPI, device memory for NCCL. Thread safety: one
 * call at a time per reducer, except conv_reducer_mark_ready and
 * conv_reducer_mark_unused, which several threads may call at once. The
 * reducer keeps its communicator alive; no other call may use that
 * communicator between a step's first mark and its finish.
 */

/* Creates a reducer over `comm` for gradients and weights of `dtype`
 * (FLOAT32, FLOAT64, FLOAT16 or BFLOAT16; one dtype for all parameters). */
CONV_API conv_status_t conv_reducer_create(conv_comm_t comm, conv_dtype_t dtype,
                                           conv_reducer_t *out);

/* Destroys a reducer (NULL is a no-op). Destroying one with a step in
 * flight (marks without finish) aborts its communicator, so that no rank
 * waits for buckets this one will never send. */
CONV_API void conv_reducer_destroy(conv_reducer_t r);

/* Registers a parameter of `count` (>= 1) elements, in forward order;
 * *index (may be NULL) receives its index, 0, 1, ... `weights` is the
 * parameter's memory, used by conv_reducer_broadcast_params and
 * conv_reducer_apply_sgd (it may be NULL on every rank when neither is
 * used); it must stay valid while the reducer exists. Before setup only. */
CONV_API conv_status_t conv_reducer_add_param(conv_reducer_t r, void *weights, int64_t count,
                                              int *index);

/* PyTorch DDP's bucket rule with these caps in bytes (>= 1): the first
 * bucket closes at `first_bucket_bytes`, the others at `bucket_bytes`. The
 * default is 1 MiB and 25 MiB. Before setup only. */
CONV_API conv_status_t conv_reducer_set_bucket_bytes(conv_reducer_t r, size_t first_bucket_bytes,
                                                     size_t bucket_bytes);

/* NVCaffe's bucket rule: every bucket closes at ceil(total bytes / buckets)
 * (1..65536), giving at most that many buckets; NVCaffe's default is 6.
 * Before setup only; the later of this and set_bucket_bytes applies. */
CONV_API conv_status_t conv_reducer_set_bucket_count(conv_reducer_t r, int buckets);

/* NCCL: the CUDA stream backward runs on (a cudaStream_t; NULL is the
 * legacy default stream, the default). A bucket's reduction starts after the
 * work enqueued on it before the mark, and conv_reducer_finish makes it wait
 * for the reductions. Before setup only. Other backends: UNSUPPORTED. */
CONV_API conv_status_t conv_reducer_set_stream(conv_reducer_t r, void *cuda_stream);

/* Lays out the buckets, allocates the gradient buffer (zero-filled) and
 * checks, collectively, that every rank registered the same parameters (the
 * same counts, in the same order, with the same dtype, bucket rule and
 * weights given or not): otherwise every rank fails with SHAPE_MISMATCH,
 * the message naming each rank's parameter and element counts. At least
 * one parameter is needed. A failed setup leaves the reducer as it was. */
CONV_API conv_status_t conv_reducer_setup(conv_reducer_t r);

/* ---------------------------------------------------- gradient reducer: layout */
/* Queries, after setup. Offsets and sizes are in elements of the dtype. */

CONV_API conv_status_t conv_reducer_get_param_count(conv_reducer_t r, int *count);
CONV_API conv_status_t conv_reducer_get_bucket_count(conv_reducer_t r, int *count);

/* Bucket `bucket` (0 = reduced first): the range [offset, offset + elements)
 * of the gradient buffer it covers (its parameters' slots with the padding
 * between them) and how many parameters it holds. Any pointer may be NULL. */
CONV_API conv_status_t conv_reducer_get_bucket(conv_reducer_t r, int bucket, int64_t *offset,
                                               int64_t *elements, int *params);

/* The bucket of parameter `param` and the offset of its gradient slot in
 * the buffer. Either pointer may be NULL. */
CONV_API conv_status_t conv_reducer_get_param_slot(conv_reducer_t r, int param, int *bucket,
                                                   int64_t *offset);

/* The address of parameter `param`'s gradient slot (count elements), where
 * backward writes its gradient; valid until the reducer is destroyed. */
CONV_API conv_status_t conv_reducer_get_grad(conv_reducer_t r, int param, void **grad);

/* The whole gradient buffer: its address and its size in elements (slots,
 * padding and a few elements the reducer uses itself). */
CONV_API conv_status_t conv_reducer_get_buffer(conv_reducer_t r, void **grads,
                                               int64_t *elements);

/* ----------------------------------------------------- gradient reducer: steps */

/* Copies rank `root`'s weights of every parameter to every other rank,
 * coalesced bucket by bucket (NVCaffe's on_start). Collective. Needs the
 * weights of every parameter (add_param with non-NULL weights). Not during
 * a step. */
CONV_API conv_status_t conv_reducer_broadcast_params(conv_reducer_t r, int root);

/* Parameter `param`'s gradient is complete in its slot. The first mark of a
 * step starts the step. When this completes a bucket and every earlier
 * bucket has started, the bucket's reduction starts (as do later complete
 * buckets). Marking a parameter twice in a step is INVALID_ARGUMENT. Fails
 * with the communicator's error once a reduction of this step has failed. */
CONV_API conv_status_t conv_reducer_mark_ready(conv_reducer_t r, int param);

/* Parameter `param` has no gradient this step: its slot is zero-filled
 * (on the reducer's stream for NCCL) and it counts as ready. */
CONV_API conv_status_t conv_reducer_mark_unused(conv_reducer_t r, int param);

/* Ends the step: waits for every bucket's reduction (host) or makes the
 * reducer's stream wait for them (NCCL), after which each gradient slot
 * holds the average over the ranks. A parameter that was neither marked
 * ready nor unused is an error, not a hang: its slot is zero-filled, every
 * bucket is still reduced (so no rank waits for this one), and the call
 * fails with INVALID_ARGUMENT naming the parameter; for LOCAL and MPI every
 * rank of the step fails so, each naming how many ranks missed a
 * parameter. After a failed finish the gradients are unspecified and the
 * next mark starts a new step. Fails with the communicator's error when a
 * reduction failed (timeout, abort). */
CONV_API conv_status_t conv_reducer_finish(conv_reducer_t r);

/* The fused SGD update of NVCaffe (ApplyUpdate) over every parameter, in
 * one pass over each bucket, after conv_reducer_finish:
 *     g' = g + weight_decay * w        (L2 regularisation)
 *     h  = momentum * h + learning_rate * g'
 *     w  = w - h
 * where g is the averaged gradient (left unchanged), w the weights given to
 * add_param and h a momentum history of the reducer's own (zero at first).
 * Arithmetic in float (double for FLOAT64), rounded once to the dtype. Needs
 * every parameter's weights. On an NCCL reducer (device memory) the step is
 * a kernel enqueued on the communicator's stream (conv_comm_set_stream),
 * needing libconv's CUDA engine (else UNSUPPORTED); FLOAT16 and BFLOAT16
 * weights are kept in an fp32 master copy of the reducer between steps (an
 * element the application rewrote is taken from its new value), so from the
 * second step on they may differ from the host's step by its roundings.
 * Not during a step. */
CONV_API conv_status_t conv_reducer_apply_sgd(conv_reducer_t r, double learning_rate,
                                              double momentum, double weight_decay);

/* Timings of the last finished step (host backends), in seconds:
 * `communication` is the time the step's bucket reductions took, added up
 * (waiting in them for slower ranks included); `exposed` is how long
 * conv_reducer_finish waited for them -- what was not hidden behind
 * backward. Both 0 before any step and on NCCL. Either pointer may be
 * NULL. */
CONV_API conv_status_t conv_reducer_get_step_times(conv_reducer_t r, double *communication,
                                                   double *exposed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CONV_H */
