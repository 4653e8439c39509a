/*
 * test_util.h -- helpers shared by the libconv tests: a reproducible random
 * number generator, a random problem generator, tensors over host buffers,
 * and the comparison of a pass's outputs with the naive reference.
 *
 * Helpers that call libconv return its status instead of asserting, so they
 * can also be used from worker threads (CMocka's asserts are main-thread
 * only); tests wrap them in assert_ok().
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "conv.h"
#include "conv_reference.h"

/* ------------------------------------------------------------- asserts */

/* Copies conv_last_error() first: any later libconv call may replace it. */
#define assert_status(expr, want)                                                            \
    do {                                                                                     \
        conv_status_t got_ = (expr), want_ = (want);                                         \
        if (got_ != want_) {                                                                 \
            char msg_[512];                                                                  \
            tu_copy_last_error(msg_, sizeof msg_);                                           \
            fail_msg("%s: got %d (%s), want %d (%s); last error: \"%s\"", #expr, (int)got_, \
                     conv_status_string(got_), (int)want_, conv_status_string(want_), msg_); \
        }                                                                                    \
    } while (0)
#define assert_ok(expr) assert_status((expr), CONV_STATUS_SUCCESS)

void tu_copy_last_error(char *buf, size_t size);

/* True when conv_last_error() contains every one of the numbers, each as a
 * whole number (not as part of a longer one): tu_error_mentions(64, 32). */
#define tu_error_mentions(...)                               \
    tu_error_mentions_n((const int64_t[]){__VA_ARGS__},      \
                        (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
int tu_error_mentions_n(const int64_t *numbers, int count);

/* -------------------------------------------------------------- random */

typedef struct tu_rng {
    uint64_t state;
} tu_rng;

void tu_seed(tu_rng *r, uint64_t seed);
uint64_t tu_next(tu_rng *r);
int64_t tu_range(tu_rng *r, int64_t lo, int64_t hi); /* inclusive */
int tu_chance(tu_rng *r, int percent);
double tu_uniform(tu_rng *r); /* [-1, 1) */

/* The base seed and problem count of a randomised test: CONV_TEST_SEED and
 * CONV_TEST_COUNT in the environment override the defaults, so a failure
 * printed as "seed S" reruns alone with CONV_TEST_SEED=S CONV_TEST_COUNT=1. */
uint64_t tu_env_seed(uint64_t fallback);
int tu_env_count(int fallback);

/* The CPU kernels a context runs, as the end of its device name says:
 * "(avx512...)", "(avx2...)" or "(baseline)" (the CPU, or CONV_CPU_ISA). */
typedef enum { TU_ISA_BASELINE, TU_ISA_AVX2, TU_ISA_AVX512 } tu_isa;
tu_isa tu_cpu_isa(conv_context_t ctx);

/* ------------------------------------------------------------ problems */

typedef struct tu_problem {
    ref_problem p;              /* as the reference sees it: effective pad_begin, out */
    int64_t pad_end[3];         /* effective end padding */
    int64_t desc_pad_begin[3];  /* explicit padding given to the descriptor; */
    int64_t desc_pad_end[3];    /* ignored by the library when auto_pad is set */
    conv_auto_pad_t auto_pad;
    conv_dtype_t dtype;
    int bias;                   /* forward: add a bias; backward_filter: compute db */
    int bias_k_first;           /* bias dims (K, 1, ...) instead of (1, K, 1, ...) */
    conv_algo_t algo;           /* forced for the pass under test */
} tu_problem;

/* Sets in/kernel/stride/dilation/padding from the arguments (1..3 values
 * each, as used by `spatial`); groups 1, fp32, channels-first, no bias. */
void tu_problem_init(tu_problem *tp, int spatial, int64_t n, int64_t c, int64_t k,
                     const int64_t *in, const int64_t *kernel);

/* Derives the effective padding and output sizes from the descriptor's
 * settings by the rule written in conv.h (independently of the library).
 * Returns 0 when some output size would be < 1. */
int tu_resolve(tu_problem *tp);

/* A random, resolved problem small enough for a quick exact check: rank
 * 1..3, either layout, groups (depthwise too), stride 1..3, dilation 1..3
 * (1..2 in 3-D), asymmetric or automatic padding, batch 0..3, random
 * dtype, bias, relu; algorithm AUTO. */
void tu_random_problem(tu_rng *r, tu_problem *tp);

/* Turns tp into a 1x1, stride 1, unpadded problem (keeping its sizes). */
void tu_make_1x1(tu_problem *tp);
/* Whether CONV_ALGO_GEMM_1X1 applies: kernel 1, dilation 1, no padding (any stride). */
int tu_is_1x1(const tu_problem *tp);
/* Whether tp->algo applies to tp (conv.h's rules): 1x1 as above,
 * DEPTHWISE_DIRECT when groups == C, the others always. */
int tu_algo_applies(const tu_problem *tp);

/* Dims of x, w, y and the bias; each returns ndim. */
int tu_x_dims(const tu_problem *tp, int64_t *dims);
int tu_w_dims(const tu_problem *tp, int64_t *dims);
int tu_y_dims(const tu_problem *tp, int64_t *dims);
int tu_b_dims(const tu_problem *tp, int64_t *dims);

/* Index of the channel (axis 1) holding element `index` of a y tensor. */
int64_t tu_y_channel(const tu_problem *tp, int64_t index);

void tu_describe(const tu_problem *tp, char *buf, size_t size);

/* A descriptor with all of tp's settings, tp->algo forced for `op`. */
conv_status_t tu_make_desc(const tu_problem *tp, conv_op_t op, conv_desc_t *out);

const char *tu_op_name(conv_op_t op);
size_t tu_dtype_size(conv_dtype_t dtype);
ref_dtype tu_ref_dtype(conv_dtype_t dtype);

/* Copies a dense tensor of `dims` (N, C, spatial...) from one layout to the
 * other (from channels-first when from_last is 0). */
void tu_relayout(int spatial, const int64_t *dims, size_t elem_size, int from_last,
                 const void *src, void *dst);

/* memcpy / memcmp (as a bool) that accept the NULL data of empty tensors. */
void tu_copy(void *dst, const void *src, size_t n);
int tu_same(const void *a, const void *b, size_t n);

/* ------------------------------------------------------------- tensors */

typedef struct tu_tensor {
    conv_tensor_t t;
    void *data;      /* host address of the elements */
    int64_t elems;
    size_t bytes;
    conv_dtype_t dtype;
    void *own;       /* our allocation behind a wrapped tensor */
    int wrap;        /* TU_OWNED, TU_WRAP_... */
} tu_tensor;

/* A library-owned tensor (wrap == TU_OWNED) or one wrapping our own memory:
 * from malloc (TU_WRAP_MALLOC), or against a PROT_NONE page after its end
 * or before its start (guard_memory.h). */
enum { TU_OWNED = 0, TU_WRAP_MALLOC = 1, TU_WRAP_GUARD_AFTER = 2, TU_WRAP_GUARD_BEFORE = 3 };
conv_status_t tu_tensor_make(tu_tensor *tt, conv_context_t ctx, conv_dtype_t dtype,
                             conv_layout_t layout, int ndim, const int64_t *dims, int wrap);
void tu_tensor_free(tu_tensor *tt);

double tu_get(const tu_tensor *tt, int64_t i);
void tu_set(tu_tensor *tt, int64_t i, double v);
void tu_fill_int(tu_tensor *tt, tu_rng *r, int lo, int hi);
void tu_fill_real(tu_tensor *tt, tu_rng *r);
void tu_fill_nan(tu_tensor *tt);
void tu_fill_pattern(tu_tensor *tt, unsigned char byte);

/* ---------------------------------------------------------------- cases */

/* The four tensors of a problem. Their roles depend on the pass:
 * forward x, w, b -> y; backward_data w, y (dy) -> x (dx);
 * backward_filter x, y (dy) -> w (dw), b (db). */
typedef struct tu_case {
    tu_problem tp;
    tu_tensor x, w, b, y; /* b.t is NULL without bias */
} tu_case;

conv_status_t tu_case_make(tu_case *c, conv_context_t ctx, const tu_problem *tp, int wrap);
void tu_case_free(tu_case *c);

/* Fills the inputs of `op` with integers in [-3, 3] (exact in fp32 for
 * these sizes) or reals in [-1, 1), and its outputs with NaN. */
void tu_case_fill(tu_case *c, conv_op_t op, tu_rng *r, int real);

conv_status_t tu_case_run(tu_case *c, conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                          conv_workspace_t ws);

/* The output tensors of `op` (1 or 2); returns their number. */
int tu_case_outputs(tu_case *c, conv_op_t op, tu_tensor **outs);

/* Compares the outputs of `op` with the reference: bit-exact after
 * rounding to the dtype (integer data) or within a rounding tolerance
 * scaled by each element's sum of |products|. Returns 0 when they agree,
 * else writes what differs into msg. */
int tu_case_check(tu_case *c, conv_op_t op, int exact, char *msg, size_t size);
/* The same with `factor` times the rounding tolerance (0: exactly): for
 * checks that an algorithm with a larger error bound wrote every output
 * with a plausible value, not for its accuracy. */
int tu_case_check_loose(tu_case *c, conv_op_t op, double factor, char *msg, size_t size);

/* Flags of tu_run_checked: the tensors wrap caller memory; the pass runs
 * on a workspace of exactly the bytes conv_workspace_size asks for (a
 * kernel using more trips AddressSanitizer or its neighbour's data); that
 * memory lies against a PROT_NONE page after its end (GUARD_AFTER) or
 * before its start (GUARD_BEFORE), so a kernel reaching past it crashes. */
enum {
    TU_RUN_WRAP = 1,
    TU_RUN_EXACT_WORKSPACE = 2,
    TU_RUN_GUARD_AFTER = 4,
    TU_RUN_GUARD_BEFORE = 8
};
/* The tu_tensor_make mode of a tu_run_checked flag set. */
int tu_wrap_mode(int flags);

/* Makes the case and descriptor of tp, fills them (r; integers unless
 * `real`, outputs NaN), runs `op` on ctx and ws (or an exact one, see the
 * flags) and compares with the reference (exactly unless `real`). Returns
 * 0, or 1 with `what` and what failed written into `failure`. */
int tu_run_checked(conv_context_t ctx, conv_workspace_t ws, const tu_problem *tp, conv_op_t op,
                   tu_rng *r, int real, int flags, const char *what, char *failure, size_t size);

/* One pass of a randomised kernel test: draws the thread count (1-3, run on
 * contexts[threads - 1]) and the flags above, names the case by its seed,
 * and fails the test unless the pass matches the reference. Backward-data
 * runs without the bias (it has none). */
void tu_check_random_pass(conv_context_t contexts[3], uint64_t seed, const tu_problem *tp,
                          conv_op_t op, tu_rng *r, int real);

/* `op` of tp on 1, 2 and 3 threads (tu_contexts), exact workspaces, the
 * output against a guard page before its start (2 threads: line-aligned)
 * or after its end (1 and 3), every element checked (exactly unless
 * `real`); fails the test naming `what` and the thread count. */
void tu_check_guarded_threads(const tu_problem *tp, conv_op_t op, tu_rng *r, int real, const char *what);

/* `op` of tp on 1, 2 and 3 threads (tu_contexts) on the same real data
 * (from `seed`): each result matches the reference and all three have the
 * same bits; fails the test naming `what`, the seed and the thread count. */
void tu_check_bits_by_threads(const tu_problem *tp, conv_op_t op, uint64_t seed, const char *what);

/* Case `index` of a table: `op` of tp in `math` through
 * tu_check_guarded_threads (real data) and tu_check_bits_by_threads (data
 * from `seed`); the contexts are left in default math. */
void tu_check_case_by_threads(const tu_problem *tp, conv_op_t op, conv_math_t math, tu_rng *r, uint64_t seed,
                              size_t index);

/* A plan of `op` for tp on ctx (its layout, dims and bias; the descriptor
 * from tu_make_desc). */
conv_status_t tu_plan_of(conv_context_t ctx, const tu_problem *tp, conv_op_t op, conv_plan_t *plan);

/* Prepared weights on a plan of `op` (forward or backward-data) of tp,
 * whose solver must be `solver`: the plan gives the one-shot result with
 * them, keeps using them after w changes (stale, by the documented rule)
 * until prepared again, and reads w again once released. `prepared` is
 * what conv_plan_prepare_weights must report (1: the solver keeps a copy). */
void tu_check_prepared_weights(conv_context_t ctx, const tu_problem *tp, conv_op_t op, tu_rng *r,
                               const char *solver, int prepared);

/* Runs `op` of tp (its forced algorithm named `algo_name`) expecting a
 * refusal: UNSUPPORTED, a message naming the algorithm, outputs unchanged.
 * Returns 0, or 1 with what differed written into `failure`. */
int tu_check_declined(conv_context_t ctx, const tu_problem *tp, conv_op_t op, uint64_t seed,
                      const char *algo_name, char *failure, size_t size);

/* Contexts with 1, 2, ... `count` threads (context i has i + 1), for the
 * tests' setup and teardown. */
conv_status_t tu_thread_contexts_create(conv_context_t *ctxs, int count);
void tu_thread_contexts_destroy(conv_context_t *ctxs, int count);

/* cmocka group fixtures over tu_contexts: contexts of 1, 2 and 3 threads
 * (what tu_check_random_pass draws from). */
extern conv_context_t tu_contexts[3];
int tu_contexts_setup(void **state);
int tu_contexts_teardown(void **state);

/* One random problem (from `seed`) of pass `op` on ctx and ws (NULL: the
 * context's pool), with an algorithm drawn from [first_algo, 3] forced where
 * it applies and `fallback` where it does not, checked exactly against the
 * reference. Returns 0, or 1 with what failed written into `failure`. For
 * tests whose worker threads must not assert. */
int tu_run_random_exact(conv_context_t ctx, conv_workspace_t ws, uint64_t seed, conv_op_t op,
                        conv_algo_t first_algo, conv_algo_t fallback, char *failure,
                        size_t size);

/* ----------------------------------------------------------- solvers */

/* The most solvers one engine lists (conv.h's ids and a private range). */
#define TU_MAX_ALGOS 128

/* The CPU engine's solvers in its order of preference (conv_algo_list),
 * after CONV_ALGO_AUTO when with_auto; returns their number. Tests that
 * force "every solver" iterate this list, so a new solver is in them
 * without an edit. */
int tu_cpu_algos(conv_algo_t *algos, int capacity, int with_auto);
/* Whether `a` is one of the CPU engine's solvers (AUTO is not). */
int tu_is_cpu_solver(conv_algo_t a);

/* A solver's randomised test, the scaffold kernel tests share: `count`
 * problems (seeds seed0, seed0 + 1, ...; CONV_TEST_SEED=S CONV_TEST_COUNT=1
 * reruns one), each drawn by `gen` -- which sets the pass, the problem and
 * tp->algo -- and checked with tu_check_random_pass on tu_contexts (1-3
 * threads, wrapped or owned tensors, exact or pooled workspaces, guard
 * pages) in math mode `math`; drawn again where the problem has no output. */
typedef void (*tu_problem_gen)(tu_rng *r, tu_problem *tp, conv_op_t *op, int wide);
void tu_check_solver_random(tu_problem_gen gen, int wide, int real, uint64_t seed0, int count0,
                            conv_math_t math);

/* Seconds on a monotonic clock. */
double tu_now(void);

/* Copies of the outputs' bytes, and whether they are still the same. */
typedef struct tu_snapshot {
    int count;
    void *bytes[2];
} tu_snapshot;
void tu_snapshot_take(tu_snapshot *s, tu_case *c, conv_op_t op);
int tu_snapshot_same(const tu_snapshot *s, tu_case *c, conv_op_t op);
void tu_snapshot_free(tu_snapshot *s);

#endif
