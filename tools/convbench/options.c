/*
 * options.c -- the command line. Every option takes "--opt VALUE" or
 * "--opt=VALUE"; anything wrong is a message and exit status 2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convbench.h"
#include "onednn_api.h" /* ONEDNN_WHEEL_VERSION, for --help */


const char *cb_op_name(conv_op_t op)
{
    switch (op) {
    case CONV_OP_FORWARD: return "fwd";
    case CONV_OP_BACKWARD_DATA: return "bwd_data";
    case CONV_OP_BACKWARD_FILTER: return "bwd_filter";
    }
    return "?";
}

const char *cb_dtype_name(conv_dtype_t dtype)
{
    switch (dtype) {
    case CONV_DTYPE_FLOAT64: return "f64";
    case CONV_DTYPE_FLOAT16: return "f16";
    case CONV_DTYPE_BFLOAT16: return "bf16";
    default: return "f32";
    }
}

const char *cb_layout_name(conv_layout_t layout)
{
    return layout == CONV_LAYOUT_CHANNELS_LAST ? "nhwc" : "nchw";
}

/* Every solver of both engines, as the library lists them (conv_algo_list). */
static void print_algos(FILE *f)
{
    for (int device = CONV_DEVICE_CPU; device <= CONV_DEVICE_CUDA; device++) {
        conv_algo_t algos[256];
        int n = 0;
        if (conv_algo_list((conv_device_t)device, 256, algos, &n) != CONV_STATUS_SUCCESS)
            continue;
        fprintf(f, "\n                   %s:", device == CONV_DEVICE_CPU ? "cpu" : "cuda");
        for (int i = 0; i < n && i < 256; i++)
            fprintf(f, " %s", conv_algo_name(algos[i]));
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: convbench [options]\n"
            "Times libconv's passes on the convolutions of real networks and, with\n"
            "--verify, checks them against a naive reference.\n\n"
            "  --suite NAME     a built-in suite or 'all' (default resnet50); see --list\n"
            "  --layer SPEC     one custom layer instead of a suite (repeatable), see below\n"
            "  --batch N        images per call (default 1)\n"
            "  --op OP          fwd, bwd_data, bwd_filter or all; a comma list works too\n"
            "                   (default all)\n"
            "  --dtype T        f32, f64, f16 or bf16 (default f32; f16 on a GPU, bf16 on a\n"
            "                   GPU or an AVX-512 CPU)\n"
            "  --math M         strict, default or fast (conv_context_set_math; on a GPU\n"
            "                   fast allows TF32 for f32); default: the context's default\n"
            "  --layout L       nchw (channels_first) or nhwc (channels_last) (default nchw)\n"
            "  --threads N      CPU threads (default: the context's default)\n"
            "  --device D       cpu or cuda (default: cuda when a GPU is present, else cpu)\n"
            "  --warmup N       untimed calls before timing (default 2)\n"
            "  --repeats N      timed calls (default: until 0.3 s or, past 20 ms, 50\n"
            "                   calls; at least 3, at most 4000)\n"
            "  --rounds N       time each pass N times (warm-up and repeats each time),\n"
            "                   with --peer alternating with the peer's: ms and peer ms\n"
            "                   are the medians of the rounds' medians and ratio the\n"
            "                   median of the rounds' ratios, which a host's drift moves\n"
            "                   less than one long timing of each (default 1)\n"
            "  --algo NAME      force an algorithm for every pass, or --algo F,D,W one per\n"
            "                   pass (forward, backward-data, backward-filter; 'auto' for\n"
            "                   the library's choice); a pass it does not apply to is n/a:");
    print_algos(f);
    fprintf(f,
            "\n"
            "                   (layers it does not apply to are reported n/a)\n"
            "  --tune           benchmark the algorithms of each pass first and time the\n"
            "                   fastest (conv_find_algorithms); without it the library's\n"
            "                   heuristic chooses\n"
            "  --verify         fill inputs with uniform [-1,1) values (fixed seed), outputs\n"
            "                   with NaN; after timing check that no NaN is left and compare\n"
            "                   a sample of outputs with the reference (exit 1 on a mismatch)\n"
            "  --json FILE      also write every row to FILE as a JSON array\n"
            "  --peer NAME      also time every layer and pass with another library, in\n"
            "                   this process, right after libconv, with the same batch,\n"
            "                   dtype, warm-up, repeats and median, on random inputs\n"
            "                   filled once; rows gain 'peer ms' and 'ratio' = peer ms /\n"
            "                   libconv ms (> 1: libconv is faster), totals the peer's\n"
            "                   count-weighted sum and the whole-suite ratio. 'none' or:\n");
    for (int i = 0; i < cb_n_peers; i++)
        fprintf(f, "    %-14s %s\n", cb_peers[i].name, cb_peers[i].help);
    fprintf(f,
            "  --peer-lib PATH  the peer's library, or a folder holding it (directly or in\n"
            "                   lib/). Default for onednn: $CONVBENCH_ONEDNN_LIB (the same\n"
            "                   PATH), else scripts/onednn.sh's cache\n"
            "                   (${XDG_CACHE_HOME:-~/.cache}/libconv/onednn-%s), else\n"
            "                   libdnnl.so.3 on the loader's path (LD_LIBRARY_PATH)\n",
            ONEDNN_WHEEL_VERSION);
    fprintf(f,
            "  --peer-apart     run the peer in a process of its own, with\n"
            "                   OMP_WAIT_POLICY=active, stopped (SIGSTOP) while libconv\n"
            "                   runs: each library at its best with several threads\n"
            "                   (passive OpenMP threads pay a wake-up per call; active\n"
            "                   ones in this process take CPUs from libconv's)\n"
            "  --peer-reorders  time the peer as a caller holding its tensors in libconv's\n"
            "                   layout (--layout) sees it: each timed call also reorders\n"
            "                   the pass's inputs into the primitive's layouts and its\n"
            "                   output back (none where they agree); with --prepared the\n"
            "                   weights of forward and backward-data are reordered once\n"
            "                   before timing, as libconv's are prepared once\n"
            "  --prepared       time each pass as a plan (conv_plan_create) whose weights\n"
            "                   are prepared once before timing (conv_plan_prepare_weights,\n"
            "                   forward and backward-data): a framework's steady state\n"
            "                   between weight updates, and the like of the peer's\n"
            "                   'primitive only' (its weights already in its own layout);\n"
            "                   without it each timed call is the one-shot conv_forward &c.\n"
            "  --peak           measure one thread's FMA peak (a loop of 12 independent\n"
            "                   512-bit FMA chains, 256-bit with AVX2, no loads) before\n"
            "                   and after the suite; totals then say what share of it\n"
            "                   times the threads they reach. Before the suite also the\n"
            "                   same loop with each FMA's operand loaded from L1, aligned\n"
            "                   and 4 bytes off (a kernel loading a vector per FMA meets\n"
            "                   that rate). Before and after, with two CPUs or more, a\n"
            "                   cache line's round trip between the first two (on a VM\n"
            "                   the host's placement of the vCPUs, which moves 2-thread\n"
            "                   timings of small layers)\n"
            "  --overhead       instead of a suite, the host's time per call on tiny\n"
            "                   problems (1x1 8->8 on 1x8x4x4, 3x3 8->8 on 1x8x8x8), for\n"
            "                   the passes of --op: 2000 warm-up calls, then 9 rounds of\n"
            "                   2500, the median round's ns per call of the one-shot calls\n"
            "                   (conv_forward & co.); 1 thread unless --threads; honours\n"
            "                   --dtype, --layout, --algo, --math, --device\n"
            "  --list           list the suites and their layers, then exit\n"
            "  --help           this text\n\n"
            "%s\n%s\n"
            "Rows report the median time of the timed calls, GFLOP/s from conv_cost\n"
            "(a multiply-add counts 2), and per pass whole-suite totals weighted by how\n"
            "often each layer occurs in the network.\n"
            "Exit status: 0 all good, 1 a libconv call or a verification failed, 2 bad usage,\n"
            "3 the --peer library cannot be loaded (the message says how to get it).\n",
            cb_layer_syntax, cb_tolerance_help);
}

/* Prints the complaint; returns the usage exit status. */
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "convbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(convbench --help lists the options)\n");
    va_end(ap);
    return 2;
}

static int parse_count(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return bad("%s needs an integer in %ld..%ld, not '%s'", opt, lo, hi, s);
    *out = v;
    return 0;
}

static int parse_ops(const char *s, int *mask)
{
    char tmp[64];
    if (strlen(s) >= sizeof tmp)
        return -1;
    strcpy(tmp, s);
    *mask = 0;
    for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
        if (strcmp(t, "all") == 0)
            *mask |= CB_OP_ALL;
        else if (strcmp(t, "fwd") == 0)
            *mask |= CB_OP_FWD;
        else if (strcmp(t, "bwd_data") == 0)
            *mask |= CB_OP_BWD_DATA;
        else if (strcmp(t, "bwd_filter") == 0)
            *mask |= CB_OP_BWD_FILTER;
        else
            return -1;
    }
    return *mask ? 0 : -1;
}

static int parse_layout(const char *s, conv_layout_t *out)
{
    static const char *const first[] = {"nchw", "channels_first", "ncw", "ncdhw"};
    static const char *const last[] = {"nhwc", "channels_last", "nwc", "ndhwc"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, first[i]) == 0) {
            *out = CONV_LAYOUT_CHANNELS_FIRST;
            return 0;
        }
        if (strcmp(s, last[i]) == 0) {
            *out = CONV_LAYOUT_CHANNELS_LAST;
            return 0;
        }
    }
    return -1;
}

/* Any solver's name (conv_algo_from_name), "auto" included: one for every
 * pass, or three separated by commas, one per pass. */
static int parse_algo(const char *s, conv_algo_t out[3])
{
    char names[3][128];
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 3 || len >= sizeof names[0]) {
            fprintf(stderr, "convbench: --algo: one name, or three separated by commas: %s\n", s);
            return 2;
        }
        memcpy(names[n], p, len);
        names[n++][len] = '\0';
        if (!comma)
            break;
        p = comma + 1;
    }
    if (n != 1 && n != 3) {
        fprintf(stderr, "convbench: --algo: one name, or three separated by commas: %s\n", s);
        return 2;
    }
    for (int op = 0; op < 3; op++)
        if (conv_algo_from_name(names[n == 1 ? 0 : op], &out[op]) != CONV_STATUS_SUCCESS) {
            fprintf(stderr, "convbench: --algo: %s\n", conv_last_error());
            return 2;
        }
    return 0;
}

static int parse_peer(const char *s, const cb_peer **out)
{
    *out = NULL;
    if (strcmp(s, "none") == 0)
        return 0;
    const cb_peer *p = cb_find_peer(s);
    if (!p) {
        fprintf(stderr, "convbench: unknown --peer '%s'; known: none", s);
        for (int i = 0; i < cb_n_peers; i++)
            fprintf(stderr, ", %s", cb_peers[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    *out = p;
    return 0;
}

int cb_parse_options(int argc, char **argv, cb_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    o->ops = CB_OP_ALL;
    o->dtype = CONV_DTYPE_FLOAT32;
    o->layout = CONV_LAYOUT_CHANNELS_FIRST;
    o->device = -1;
    o->warmup = 2;
    o->rounds = 1;
    o->algo[0] = o->algo[1] = o->algo[2] = CONV_ALGO_AUTO;
    o->math = -1;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return -1; /* caller exits 0 */
        }
        if (strcmp(arg, "--verify") == 0) {
            o->verify = 1;
            continue;
        }
        if (strcmp(arg, "--tune") == 0) {
            o->tune = 1;
            continue;
        }
        if (strcmp(arg, "--list") == 0) {
            o->list = 1;
            continue;
        }
        if (strcmp(arg, "--overhead") == 0) {
            o->overhead = 1;
            continue;
        }
        if (strcmp(arg, "--prepared") == 0) {
            o->prepared = 1;
            continue;
        }
        if (strcmp(arg, "--peak") == 0) {
            o->peak = 1;
            continue;
        }
        if (strcmp(arg, "--peer-apart") == 0) {
            o->peer_apart = 1;
            continue;
        }
        if (strcmp(arg, "--peer-reorders") == 0) {
            o->peer_reorders = 1;
            continue;
        }

        /* The rest take a value: "--opt=V" or "--opt V". */
        char name[32];
        const char *val;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (strncmp(arg, "--", 2) != 0 || len >= sizeof name)
            return bad("unexpected argument '%s'", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return bad("%s needs a value", name);

        long v = 0;
        int rc = 0;
        if (strcmp(name, "--suite") == 0) {
            if (strcmp(val, "all") != 0 && !cb_find_suite(val))
                return bad("unknown suite '%s'; see --list", val);
            o->suite = val;
        } else if (strcmp(name, "--layer") == 0) {
            char err[256];
            if (o->n_custom == CB_MAX_CUSTOM)
                return bad("at most %d --layer options", CB_MAX_CUSTOM);
            if (cb_parse_layer(val, &o->custom[o->n_custom], err, sizeof err) != 0)
                return bad("--layer %s: %s", val, err);
            o->n_custom++;
        } else if (strcmp(name, "--batch") == 0) {
            rc = parse_count(name, val, 1, 1L << 20, &v);
            o->batch = v;
        } else if (strcmp(name, "--op") == 0) {
            if (parse_ops(val, &o->ops) != 0)
                return bad("--op: '%s' is not fwd, bwd_data, bwd_filter or all", val);
        } else if (strcmp(name, "--dtype") == 0) {
            if (strcmp(val, "f32") == 0)
                o->dtype = CONV_DTYPE_FLOAT32;
            else if (strcmp(val, "f64") == 0)
                o->dtype = CONV_DTYPE_FLOAT64;
            else if (strcmp(val, "f16") == 0)
                o->dtype = CONV_DTYPE_FLOAT16;
            else if (strcmp(val, "bf16") == 0)
                o->dtype = CONV_DTYPE_BFLOAT16;
            else
                return bad("--dtype: '%s' is not f32, f64, f16 or bf16", val);
        } else if (strcmp(name, "--math") == 0) {
            if (strcmp(val, "strict") == 0)
                o->math = CONV_MATH_STRICT;
            else if (strcmp(val, "default") == 0)
                o->math = CONV_MATH_DEFAULT;
            else if (strcmp(val, "fast") == 0)
                o->math = CONV_MATH_FAST;
            else
                return bad("--math: '%s' is not strict, default or fast", val);
        } else if (strcmp(name, "--layout") == 0) {
            if (parse_layout(val, &o->layout) != 0)
                return bad("--layout: '%s' is not nchw (channels_first) or nhwc (channels_last)",
                           val);
        } else if (strcmp(name, "--threads") == 0) {
            rc = parse_count(name, val, 1, 1024, &v);
            o->threads = (int)v;
        } else if (strcmp(name, "--device") == 0) {
            if (strcmp(val, "cpu") == 0)
                o->device = CONV_DEVICE_CPU;
            else if (strcmp(val, "cuda") == 0)
                o->device = CONV_DEVICE_CUDA;
            else
                return bad("--device: '%s' is not cpu or cuda", val);
        } else if (strcmp(name, "--warmup") == 0) {
            rc = parse_count(name, val, 0, 1000000, &v);
            o->warmup = (int)v;
        } else if (strcmp(name, "--rounds") == 0) {
            rc = parse_count(name, val, 1, 1000, &v);
            o->rounds = (int)v;
        } else if (strcmp(name, "--repeats") == 0) {
            rc = parse_count(name, val, 1, 1000000, &v);
            o->repeats = (int)v;
        } else if (strcmp(name, "--algo") == 0) {
            rc = parse_algo(val, o->algo);
        } else if (strcmp(name, "--json") == 0) {
            o->json = val;
        } else if (strcmp(name, "--peer") == 0) {
            rc = parse_peer(val, &o->peer);
        } else if (strcmp(name, "--peer-lib") == 0) {
            o->peer_lib = val;
        } else {
            return bad("unknown option '%s'", name);
        }
        if (rc)
            return rc;
    }
    if (o->suite && o->n_custom)
        return bad("give either --suite or --layer, not both");
    if (o->peer_lib && !o->peer)
        return bad("--peer-lib %s: names the library of a --peer, and no --peer is given",
                   o->peer_lib);
    if (o->peer_apart && !o->peer)
        return bad("--peer-apart: says how to run a --peer, and no --peer is given");
    if (o->peer_reorders && !o->peer)
        return bad("--peer-reorders: says what to time of a --peer, and no --peer is given");
    if (o->peer_apart)
        o->peer = cb_peer_apart(o->peer);
    if (o->overhead && (o->suite || o->n_custom || o->batch != 1 || o->tune || o->verify ||
                        o->json || o->peer || o->prepared))
        return bad("--overhead times its own tiny problems at batch 1: it does not combine "
                   "with --suite, --layer, --batch, --tune, --verify, --json, --peer or --prepared");
    if (o->overhead && !o->threads)
        o->threads = 1; /* the overhead of one thread's calls */
    return 0;
}
