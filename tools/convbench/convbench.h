/*
 * convbench.h -- the pieces of convbench and what they share.
 *
 * convbench measures libconv on the layers of real networks through the
 * public API only (conv.h) and checks results against the naive reference
 * (conv_reference.h). One file per idea:
 *   suites.c    the built-in layer tables
 *   layer.c     a layer: its custom-spec syntax, output size, shape text
 *   options.c   the command line
 *   runner.c    tensors, the timed loop, one row per layer and pass
 *   verify.c    random fill, NaN pre-fill, comparison with the reference
 *   report.c    header line, table rows, totals, JSON
 *   peer.c      the --peer table: other libraries timed side by side
 *   peer_onednn.c  the oneDNN peer (oneDNN 3.x, loaded at run time)
 *   onednn_load.c  finding and loading oneDNN (onednn_api.h: the part used)
 *   overhead.c  --overhead: host time per call on tiny problems
 *   fma_peak.c  --peak: one thread's FMA peak
 *   cpu_link.c  --peak: a cache line's round trip between two CPUs
 *   main.c      wiring
 */
#ifndef CONVBENCH_H
#define CONVBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "conv.h"

#define CB_MAX_SPATIAL 3
#define CB_MAX_CUSTOM 32

/* ------------------------------------------------------------------ layers */

typedef struct cb_layer {
    const char *name;
    int spatial; /* 1..3: W, HxW or DxHxW */
    int64_t c, k, groups;
    int64_t in[CB_MAX_SPATIAL], kernel[CB_MAX_SPATIAL], stride[CB_MAX_SPATIAL];
    int64_t pad_begin[CB_MAX_SPATIAL], pad_end[CB_MAX_SPATIAL], dilation[CB_MAX_SPATIAL];
    int count; /* occurrences in the network: weights the whole-suite totals */
} cb_layer;

typedef struct cb_suite {
    const char *name;
    const char *about;
    const cb_layer *layers;
    int n_layers;
} cb_suite;

/* suites.c */
extern const cb_suite cb_suites[];
extern const int cb_n_suites;
const cb_suite *cb_find_suite(const char *name);

/* layer.c */
/* Output size along one spatial axis (the formula of conv_output_dims). */
int64_t cb_out_size(const cb_layer *l, int axis);
/* A one-line summary, e.g. "64->256 56x56 k1x1 s1 p0" (+ " d2", " g32"). */
void cb_layer_shape(const cb_layer *l, char *buf, size_t len);
/* Parses "c=64,k=64,in=56x56,kernel=3x3,stride=1,pad=1,dil=1,groups=1"
 * (syntax in cb_layer_syntax). Returns 0, or -1 with a message in err. */
int cb_parse_layer(const char *spec, cb_layer *out, char *err, size_t errlen);
extern const char cb_layer_syntax[];

/* ----------------------------------------------------------------- options */

struct cb_peer;

enum { CB_OP_FWD = 1 << CONV_OP_FORWARD,
       CB_OP_BWD_DATA = 1 << CONV_OP_BACKWARD_DATA,
       CB_OP_BWD_FILTER = 1 << CONV_OP_BACKWARD_FILTER,
       CB_OP_ALL = CB_OP_FWD | CB_OP_BWD_DATA | CB_OP_BWD_FILTER };

typedef struct cb_options {
    const char *suite;              /* a suite name, "all", or NULL: not given */
    cb_layer custom[CB_MAX_CUSTOM]; /* --layer, in order */
    int n_custom;
    int64_t batch;
    int ops; /* CB_OP_* mask */
    conv_dtype_t dtype;
    conv_layout_t layout;
    int threads;       /* 0: the context's default */
    int device;        /* -1: CUDA if present, else CPU */
    int warmup;
    int repeats;       /* 0: adaptive (see runner.c) */
    conv_algo_t algo[3]; /* per pass (conv_op_t): CONV_ALGO_AUTO unless --algo */
    int math;          /* --math: a conv_math_t, or -1 for the context's default */
    int verify;
    int tune; /* benchmark-select each pass (conv_find_algorithms) before timing */
    const char *json;  /* NULL: no JSON */
    const struct cb_peer *peer; /* --peer; NULL: none */
    const char *peer_lib;       /* --peer-lib: the peer's library or its folder; NULL: not given */
    int peer_apart;             /* --peer-apart: the peer in a process of its own (peer_apart.c) */
    int peer_reorders;          /* --peer-reorders: the peer's reorders from and to libconv's layout timed */
    int rounds;                 /* --rounds: timings of each pass, alternating with the peer's (>= 1) */
    int list;
    int overhead; /* --overhead: time calls on tiny problems instead of a suite */
    int prepared; /* --prepared: time plans with weights prepared once (conv_plan_*) */
    int peak;     /* --peak: measure the FMA peak; totals in percent of it */
} cb_options;

/* Fills `o` from argv. Returns 0 to go on, -1 when done (--help printed:
 * exit 0), or 2 after printing what is wrong with the command line. */
int cb_parse_options(int argc, char **argv, cb_options *o);
const char *cb_op_name(conv_op_t op);
const char *cb_dtype_name(conv_dtype_t dtype);
const char *cb_layout_name(conv_layout_t layout);

/* ------------------------------------------------------------------ rows */

typedef enum { CB_ROW_OK, CB_ROW_FAILED, CB_ROW_SKIPPED } cb_row_status;
/* The peer's side of a row: NOT_RUN without --peer. */
typedef enum { CB_PEER_NOT_RUN, CB_PEER_OK, CB_PEER_NA, CB_PEER_FAILED } cb_peer_status;
typedef enum { CB_VERIFY_NONE, CB_VERIFY_OK, CB_VERIFY_FAIL } cb_verify_status;

typedef struct cb_verify_result {
    cb_verify_status status;
    double max_rel_err;  /* max |got - ref| / abs_sum over the sample; NaN if none */
    double tol;          /* the bound it was held to (see verify.c) */
    int64_t checked;     /* sampled elements compared */
    int64_t nan_count;   /* NaN left anywhere in the output */
    char detail[160];    /* the worst element, or where NaN was left */
} cb_verify_result;

typedef struct cb_row {
    const char *suite;
    const cb_layer *layer;
    char shape[96];
    conv_op_t op;
    const char *algo;
    cb_row_status status;
    conv_status_t error_status; /* of the call that failed */
    char error[320];     /* the call, libconv's status and message when not OK */
    double ms;           /* median over the timed repeats */
    double min_ms;
    int repeats;
    double flops, bytes; /* conv_cost of one call at this batch */
    size_t workspace_bytes;
    cb_verify_result verify;
    /* --peer: the same layer and pass through the peer library */
    cb_peer_status peer_status;
    double peer_ms; /* median, the same timing policy (cb_time_calls) */
    double peer_min_ms;
    int peer_repeats;
    char peer_error[320]; /* why NA or FAILED */
    char peer_impl[48];   /* the peer's implementation when OK (oneDNN: "brg:avx512_core") */
    int peer_reorders;    /* --peer-reorders: the reorders its timed call runs with the primitive */
    /* --rounds: ms and peer_ms are the medians of the rounds' medians, ratio
     * the median of the rounds' peer ms / ms, ratio_low and ratio_high the
     * lowest and highest of those (NaN where no round has one) */
    int rounds;
    double ratio, ratio_low, ratio_high;
} cb_row;

/* ---------------------------------------------------------------- runner */

typedef struct cb_bench {
    const cb_options *opt;
    conv_context_t ctx;
    conv_device_t device;
    int threads;         /* the CPU context's thread count; 0 on a GPU */
    conv_workspace_t ws; /* one workspace for every call: it grows once, then is reused */
    conv_tensor_t sync;  /* a one-element tensor read back to wait for a GPU (runner.c) */
    int peer_open;       /* opt->peer->open succeeded: close it at the end */
    double fma_peak;     /* --peak: one thread's GFLOP/s before the suite; 0: not measured */
} cb_bench;

/* Runs every selected pass of one layer, writing one row per pass into
 * rows[]; returns the number of rows written (0..3). With --peer the peer
 * times each pass right after libconv. */
int cb_run_layer(cb_bench *b, const char *suite, const cb_layer *l, cb_row *rows);

/* Seeds of the three inputs, fixed so every run (and the peer) sees the
 * same data. */
enum { CB_SEED_X = 1, CB_SEED_W = 2, CB_SEED_DY = 3 };

/* The timing policy, one for libconv and every peer: o->warmup untimed
 * calls, then timed calls (o->repeats of them, or adaptively until about
 * 0.3 s or, past 20 ms, 50 calls; 3 to 4000 calls), and their median. `call` returns 0 when the call
 * succeeded; a nonzero value stops the timing and is returned. */
typedef struct cb_timing {
    double ms;     /* median */
    double min_ms;
    int repeats;
} cb_timing;
typedef int (*cb_call_fn)(void *arg);
/* How many doubles the `times` scratch of cb_time_calls needs. */
int cb_timing_slots(const cb_options *o);
int cb_time_calls(const cb_options *o, cb_call_fn call, void *arg, double *times, cb_timing *t);

/* ------------------------------------------------------------------ peers */

/* Another convolution library timed in the same process on the same layers
 * (--peer). The table in peer.c lists them; a new peer is one row there and
 * a peer_NAME.c with the four functions below. */
/* The peer's header line's room: its library's path (up to 1 KiB) and
 * what is timed. */
enum { CB_PEER_LINE = 2048 };

typedef struct cb_peer {
    const char *name;  /* the --peer value and the JSON "peer" */
    const char *help;  /* what is measured, for --help */
    /* Once, after the context and before the header. Returns 0, or the exit
     * status (2: options it cannot serve, CB_EXIT_PEER_MISSING: its library
     * is not on this machine, 1: the library failed) with the reason, and
     * for a missing library how to get it, in err. */
    int (*open)(const cb_bench *b, char *err, size_t errlen);
    /* The header line: version, threads, what is timed. */
    void (*describe)(const cb_bench *b, char *buf, size_t len);
    /* Times pass `op` of `l` with the shared policy; fills r->peer_*. */
    void (*run)(const cb_bench *b, const cb_layer *l, conv_op_t op, double *times, cb_row *r);
    void (*close)(void);
} cb_peer;

/* convbench's exit status when the --peer library cannot be loaded (the
 * CTest of the peer skips on it). */
enum { CB_EXIT_PEER_MISSING = 3 };

extern const cb_peer cb_peers[];
extern const int cb_n_peers;
const cb_peer *cb_find_peer(const char *name);
/* --peer-apart: `inner` run in a child process with OMP_WAIT_POLICY=active,
 * stopped while libconv runs (peer_apart.c); the same name and help. */
const cb_peer *cb_peer_apart(const cb_peer *inner);

/* -------------------------------------------------------------- overhead */

/* --overhead: the table of host time per call on tiny problems, for the
 * passes of o->ops. Returns 0, or 1 after printing what failed. */
int cb_run_overhead(const cb_bench *b);

/* ---------------------------------------------------------------- verify */

/* Uniform values in [-1, 1) from a fixed seed, as float or double. */
void cb_fill_random(void *data, conv_dtype_t dtype, int64_t n, uint64_t seed);
/* Every element NaN, so elements a pass never writes show afterwards. */
void cb_fill_nan(void *data, conv_dtype_t dtype, int64_t n);
/* fp16/bf16 runs keep their host copies as floats holding exactly the
 * 16-bit values (so the reference sees what the GPU sees): conversion to
 * and from the 16-bit storage, rounding to nearest even. */
int cb_is_16bit(conv_dtype_t dtype);
void cb_to_16bit(conv_dtype_t dtype, const float *src, uint16_t *dst, int64_t n);
void cb_from_16bit(conv_dtype_t dtype, const uint16_t *src, float *dst, int64_t n);

/* The host copies one pass reads and writes, in the layer's layout. */
typedef struct cb_host_data {
    const void *x, *w, *dy; /* inputs (those the pass reads) */
    const void *out;        /* what libconv wrote: y, dx or dw */
    int64_t out_elements;
} cb_host_data;

/* Checks what one pass wrote (see verify.c for the bound). */
void cb_verify(const cb_options *o, const cb_layer *l, conv_op_t op, const cb_host_data *h,
               cb_verify_result *r);
/* The tolerance formula, for --help. */
extern const char cb_tolerance_help[];

/* ---------------------------------------------------------------- report */

void cb_print_header(const cb_bench *b);
void cb_print_table_head(const cb_options *o, const char *suite, int name_width,
                         int shape_width);
void cb_print_row(const cb_options *o, const cb_row *r, int name_width, int shape_width);
/* Whole-suite totals per pass, each row weighted by its layer's count; with
 * --peer also the peer's and the ratio. */
void cb_print_totals(const cb_bench *b, const char *suite, const cb_row *rows, int n_rows);

/* CLOCK_MONOTONIC in nanoseconds. */
double cb_now_ns(void);
/* Sorts v[0..n) and returns its median (n >= 1). */
double cb_median(double *v, int n);

/* --peak: GFLOP/s of one thread's loop of independent 512-bit FMAs (256-bit
 * on a CPU with AVX2 and no AVX-512; the median of 7 runs of ~30 ms); 0
 * where there is no such loop (not x86-64, or neither ISA). */
double cb_fma_peak(void);
/* The same loop with each FMA's operand a vector loaded from L1,
 * `offset_bytes` (0-60, a multiple of 4) past a 64-byte boundary: the bar
 * of a kernel that loads a vector per FMA. 0 where cb_fma_peak is. */
double cb_fma_load_peak(int offset_bytes);
/* The FMA width --peak measures: 512, 256 (AVX2, no AVX-512) or 0 (none). */
int cb_fma_peak_bits(void);
/* --peak: ns for a cache line to go from one CPU to another and back (the
 * median of 5 runs of 20000 round trips between the first two CPUs of the
 * calling thread's affinity, named in near_cpu and far_cpu); -1 where there
 * are fewer than two or a thread could not be started or pinned. */
double cb_line_round_trip_ns(int *near_cpu, int *far_cpu);
/* Returns 0, or -1 after printing why the file could not be written. */
int cb_write_json(const char *path, const cb_bench *b, const cb_row *rows, int n_rows);

#endif
