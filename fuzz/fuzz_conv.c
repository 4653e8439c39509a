/*
 * fuzz_conv.c -- the libFuzzer target of libconv (scripts/fuzz.sh), also
 * built without libFuzzer by tests/test_fuzz_replay.c, which runs every
 * input of fuzz/corpus and fuzz/regressions through it.
 *
 * The first byte picks a mode; the rest is read as a stream of choices
 * (past its end every choice reads 0):
 *   0  shape inference with wild values: descriptor settings and dims near
 *      0, 2^31, 2^62, INT64_MAX, negative...; conv_output_dims and conv_cost.
 *      A refused setter changes nothing; a result must agree with the size
 *      rule computed here in 128-bit arithmetic, and a sane problem must not
 *      be refused.
 *   1  computation on tiny tensors: every setting of the descriptor, both
 *      layouts, fp32/fp64, bf16 where the CPU computes it (exact: one
 *      rounding of an exact float sum), refused types, bias, groups, transposed
 *      mode, forced algorithms, caller and too-small workspaces, one or
 *      three threads, sometimes a wrong output dim, a failing allocator, the
 *      numerical guard with a NaN, or conv_find_algorithms instead of the
 *      pass, or every buffer (wrapped tensors and workspace, and through a
 *      guarded allocator the library's own) against a PROT_NONE page after
 *      its end or before its start, where a kernel reaching past it crashes.
 *      Success must equal the naive reference; failure must leave every
 *      output byte as it was.
 *   2  tuning files: raw bytes, a valid header followed by fuzz, or fuzzed
 *      entries in an otherwise valid file; a refused file must leave the
 *      context's table unchanged, an accepted one must round-trip.
 *   3  handle misuse: sequences of create / destroy / use over a few slots,
 *      with destroyed, NULL and wrong-kind pointers passed back in.
 *   4  aliasing: one handle, or two wraps of overlapping memory, in an
 *      output role and another role of a pass or a search; it must be
 *      refused (INVALID_ARGUMENT where separate memory would succeed) with
 *      every byte unchanged.
 *   5  communicator failures: an in-process group whose ranks come late,
 *      time out at once or are aborted, freeing their buffers the moment
 *      their call returns; SUCCESS must hold the exact result.
 * Any broken invariant calls abort() (a crash for libFuzzer, a failure for
 * the replay test), naming what broke on stderr.
 */
#include <conv.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conv_reference.h"
#include "guard_memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ helpers */

static void broken(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void broken(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_conv: invariant broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n  last error: \"%s\"\n", conv_last_error());
    va_end(ap);
    abort();
}

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned u8(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static uint64_t u64(reader *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | u8(r);
    return v;
}

/* 0..n-1 */
static int64_t below(reader *r, int64_t n) { return (int64_t)(u8(r) % (unsigned)n); }

/* A size-like value: mostly interesting constants. */
static int64_t wild(reader *r)
{
    static const int64_t table[] = {0,
                                    1,
                                    2,
                                    3,
                                    7,
                                    -1,
                                    -2,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MAX - 1,
                                    INT64_MAX / 2,
                                    INT64_MAX / 2 + 1,
                                    (int64_t)1 << 31,
                                    ((int64_t)1 << 31) - 1,
                                    (int64_t)1 << 32,
                                    (int64_t)1 << 40,
                                    (int64_t)1 << 62,
                                    (int64_t)3037000499, /* floor(sqrt(2^63)) */
                                    (int64_t)3037000500,
                                    (int64_t)2097151, /* ~cbrt(2^63) */
                                    (int64_t)2097152};
    unsigned b = u8(r);
    if (b < 2 * sizeof table / sizeof table[0])
        return table[b / 2];
    if (b < 200)
        return (int64_t)(b - 2 * sizeof table / sizeof table[0]); /* small */
    return (int64_t)u64(r);
}

static int allowed(conv_status_t s, const conv_status_t *ok, int n)
{
    for (int i = 0; i < n; i++)
        if (s == ok[i])
            return 1;
    return 0;
}

static void check_message(conv_status_t s, const char *what)
{
    const char *m = conv_last_error();
    if (!m)
        broken("%s: conv_last_error() is NULL", what);
    if (s == CONV_STATUS_SUCCESS && m[0])
        broken("%s: success left a message \"%s\"", what, m);
    if (s != CONV_STATUS_SUCCESS && !m[0])
        broken("%s: status %d with an empty message", what, (int)s);
}

/* ------------------------------------------------------------ state */

static conv_context_t g_ctx[2];     /* 1 and 3 threads */
static conv_context_t g_tuning_ctx; /* for tuning files */
static char g_path[256], g_check_path[256];
static char g_header[512]; /* "libconv-tuning N\nlibrary ...\ndevice ...\n" */

static void init_once(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    if (conv_context_create(CONV_DEVICE_CPU, 0, &g_ctx[0]) ||
        conv_context_create(CONV_DEVICE_CPU, 0, &g_ctx[1]) ||
        conv_context_create(CONV_DEVICE_CPU, 0, &g_tuning_ctx) ||
        conv_context_set_threads(g_ctx[0], 1) || conv_context_set_threads(g_ctx[1], 3) ||
        conv_context_set_threads(g_tuning_ctx, 1))
        broken("cannot create the contexts");
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_path, sizeof g_path, "%s/conv-fuzz-%d.tuning", dir, (int)getpid());
    snprintf(g_check_path, sizeof g_check_path, "%s/conv-fuzz-%d.check", dir, (int)getpid());
    /* the header a valid file has on this machine: from an empty table */
    if (conv_context_save_tuning(g_tuning_ctx, g_path))
        broken("cannot save an empty tuning table");
    FILE *f = fopen(g_path, "rb");
    size_t n = f ? fread(g_header, 1, sizeof g_header - 1, f) : 0;
    if (f)
        fclose(f);
    g_header[n] = '\0';
    char *entries = strstr(g_header, "entries ");
    if (!entries)
        broken("unexpected tuning file: %s", g_header);
    *entries = '\0';
}

/* ------------------------------------------------ mode 0: shape inference */

typedef __int128 i128;

/* A count as libconv defines it: 0 when any factor is 0, else the product;
 * -1 when that does not fit in int64. */
static i128 count_of(const i128 *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] == 0)
            return 0;
    i128 r = 1;
    for (int i = 0; i < n; i++) {
        r *= v[i];
        if (r > INT64_MAX)
            return -1;
    }
    return r;
}

/* The size rule of conv.h for a convolution with explicit padding, in
 * 128-bit arithmetic. 1 when every size is valid and every count (the three
 * tensors' elements, the kernel size, C/G x kernel) fits int64. */
static int model_output(int spatial, const int64_t *x, const int64_t *w, int64_t groups,
                        const int64_t *s, const int64_t *d, const int64_t *pb, const int64_t *pe,
                        int64_t *y)
{
    for (int i = 0; i < spatial + 2; i++)
        if (x[i] < 0 || w[i] < 0)
            return 0;
    if ((i128)w[1] * groups != x[1] || w[0] % groups)
        return 0;
    i128 xs[5] = {x[0], x[1], 1, 1, 1}, ys[5] = {x[0], w[0], 1, 1, 1}, ks[3] = {1, 1, 1};
    y[0] = x[0];
    y[1] = w[0];
    for (int a = 0; a < spatial; a++) {
        i128 k = w[2 + a];
        if (k < 1)
            return 0;
        i128 e = (k - 1) * d[a] + 1, padded = (i128)x[2 + a] + pb[a] + pe[a];
        if (e > INT64_MAX || padded > INT64_MAX)
            return 0;
        i128 num = padded - e;
        i128 out = (num >= 0 ? num / s[a] : -((-num + s[a] - 1) / s[a])) + 1;
        if (out < 1 || out > INT64_MAX)
            return 0;
        y[2 + a] = (int64_t)out;
        xs[2 + a] = x[2 + a];
        ys[2 + a] = out;
        ks[a] = k;
    }
    i128 red[4] = {w[1], ks[0], ks[1], ks[2]}, wc[5] = {w[0], w[1], ks[0], ks[1], ks[2]};
    return count_of(xs + 2, 3) >= 0 && count_of(ys + 2, 3) >= 0 && count_of(xs, 5) >= 0 &&
           count_of(ys, 5) >= 0 && count_of(ks, 3) >= 0 && count_of(red, 4) >= 0 &&
           count_of(wc, 5) >= 0;
}

static void fuzz_shapes(reader *r)
{
    int spatial = 1 + (int)below(r, 3), nd = spatial + 2;
    conv_desc_t d;
    if (conv_desc_create(spatial, &d))
        broken("conv_desc_create(%d)", spatial);
    int64_t v[3], v2[3], before[3], before2[3], groups = 1;
    int transposed = 0, auto_pad = 0;
    int settings = (int)below(r, 8);
    for (int i = 0; i < settings; i++) {
        int which = (int)below(r, 8);
        for (int a = 0; a < 3; a++) {
            v[a] = wild(r);
            v2[a] = wild(r);
        }
        conv_status_t s = CONV_STATUS_SUCCESS;
        switch (which) {
        case 0:
            conv_desc_get_strides(d, before);
            s = conv_desc_set_strides(d, v);
            check_message(s, "setter");
            if (s)
                conv_desc_get_strides(d, v);
            if (s && memcmp(v, before, (size_t)spatial * 8))
                broken("refused strides changed the descriptor");
            break;
        case 1:
            conv_desc_get_dilations(d, before);
            s = conv_desc_set_dilations(d, v);
            check_message(s, "setter");
            if (s)
                conv_desc_get_dilations(d, v);
            if (s && memcmp(v, before, (size_t)spatial * 8))
                broken("refused dilations changed the descriptor");
            break;
        case 2:
            conv_desc_get_padding(d, before, before2);
            s = conv_desc_set_padding(d, v, v2);
            check_message(s, "setter");
            if (s) {
                conv_desc_get_padding(d, v, v2);
                if (memcmp(v, before, (size_t)spatial * 8) ||
                    memcmp(v2, before2, (size_t)spatial * 8))
                    broken("refused padding changed the descriptor");
            }
            break;
        case 3: {
            int64_t g0;
            conv_desc_get_groups(d, &g0);
            s = conv_desc_set_groups(d, v[0]);
            check_message(s, "setter");
            conv_desc_get_groups(d, &groups);
            if (s ? groups != g0 : groups != v[0])
                broken("groups %lld after setting %lld (status %d)", (long long)groups,
                       (long long)v[0], (int)s);
            break;
        }
        case 4:
            s = conv_desc_set_output_padding(d, v);
            check_message(s, "setter");
            break;
        case 5:
            s = conv_desc_set_auto_pad(d, (conv_auto_pad_t)(v[0] % 6));
            check_message(s, "setter");
            if (!s)
                auto_pad = (int)(v[0] % 6);
            break;
        case 6:
            s = conv_desc_set_mode(d, (conv_mode_t)(v[0] % 3));
            check_message(s, "setter");
            if (!s)
                transposed = v[0] % 3 == 1;
            break;
        default:
            s = conv_desc_set_activation(d, (conv_activation_t)(v[0] % 3));
            check_message(s, "setter");
            break;
        }
        if (s && s != CONV_STATUS_INVALID_ARGUMENT)
            broken("setter %d returned %d", which, (int)s);
    }
    int64_t x[5], w[5], y[5], keep[5];
    for (int i = 0; i < nd; i++) {
        x[i] = wild(r);
        w[i] = wild(r);
    }
    if (u8(r) & 1) { /* consistent channels more often than chance */
        w[1] = groups > 0 && x[1] % groups == 0 ? x[1] / groups : w[1];
        if (groups > 0 && w[0] % groups)
            w[0] = groups;
    }
    for (int i = 0; i < 5; i++)
        y[i] = keep[i] = (int64_t)0x5A5A5A5A5A5A5A5A;
    conv_status_t s = conv_output_dims(d, nd, x, w, y);
    check_message(s, "conv_output_dims");
    static const conv_status_t shape_errors[] = {CONV_STATUS_SUCCESS, CONV_STATUS_SHAPE_MISMATCH,
                                                 CONV_STATUS_OVERFLOW,
                                                 CONV_STATUS_INVALID_ARGUMENT};
    if (!allowed(s, shape_errors, 4))
        broken("conv_output_dims returned %d", (int)s);
    if (s && memcmp(y, keep, sizeof y))
        broken("refused conv_output_dims wrote y_dims");
    int64_t st[3], di[3], pb[3], pe[3], model[5];
    conv_desc_get_strides(d, st);
    conv_desc_get_dilations(d, di);
    conv_desc_get_padding(d, pb, pe);
    if (!transposed && auto_pad == CONV_AUTO_PAD_NOTSET) {
        int ok = model_output(spatial, x, w, groups, st, di, pb, pe, model);
        if (s == CONV_STATUS_SUCCESS && (!ok || memcmp(model, y, (size_t)nd * 8)))
            broken("conv_output_dims accepted a shape the size rule %s", ok ? "sizes differently"
                                                                              : "refuses");
        /* every value below 2^20: a sane problem is never refused */
        int sane = ok;
        for (int i = 0; i < nd; i++)
            sane &= x[i] < (1 << 20) && w[i] < (1 << 20) && model[i] < (1 << 20);
        for (int a = 0; a < spatial; a++)
            sane &= st[a] < (1 << 20) && di[a] < (1 << 20) && pb[a] < (1 << 20) &&
                    pe[a] < (1 << 20);
        if (sane && s)
            broken("conv_output_dims refused a valid, small shape");
    }
    if (s == CONV_STATUS_SUCCESS)
        for (int a = 0; a < spatial; a++)
            if (y[2 + a] < 1)
                broken("output size %lld < 1", (long long)y[2 + a]);
    for (int op = 0; op < 3; op++) {
        double flops = -1, bytes = -1;
        conv_status_t c = conv_cost(d, (conv_op_t)op, (conv_dtype_t)below(r, 5), nd, x, w, &flops,
                                    &bytes);
        check_message(c, "conv_cost");
        if (c == CONV_STATUS_SUCCESS && (!(flops >= 0) || !(bytes >= 0)))
            broken("conv_cost gave flops %g bytes %g", flops, bytes);
        if (c != CONV_STATUS_SUCCESS && (flops != -1 || bytes != -1))
            broken("refused conv_cost wrote its results");
        if ((c == CONV_STATUS_SUCCESS) != (s == CONV_STATUS_SUCCESS) &&
            c != CONV_STATUS_INVALID_ARGUMENT)
            broken("conv_cost status %d but conv_output_dims %d", (int)c, (int)s);
    }
    conv_desc_destroy(d);
}

/* --------------------------------------------------- mode 1: computation */

static uint64_t g_rng;
static int64_t rnd_int(int lo, int hi)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (int64_t)(g_rng % (uint64_t)(hi - lo + 1));
}

/* A failing allocator: refuses every allocation after `budget`. */
typedef struct fail_alloc {
    long budget, calls, live;
} fail_alloc;
static void *fa_alloc(void *user, size_t bytes, size_t alignment)
{
    fail_alloc *a = user;
    if (a->calls++ >= a->budget)
        return NULL;
    void *p = aligned_alloc(alignment, bytes);
    if (p)
        a->live++;
    return p;
}
static void fa_free(void *user, void *p)
{
    fail_alloc *a = user;
    a->live--;
    free(p);
}

typedef struct ftensor {
    conv_tensor_t t;
    int nd;
    int64_t dims[5];
    int64_t elems;
    size_t bytes;
    void *data;  /* the tensor's elements */
    void *own;   /* our allocation when wrapped */
    void *saved; /* a copy of the bytes before the call */
} ftensor;

/* bf16 is the top half of a float; stored values round to nearest, ties to
 * even, as the library rounds each output once. */
static double from_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (isnan(f))
        return 0x7fc0;
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static double get_v(conv_dtype_t dt, const void *p, int64_t i)
{
    if (dt == CONV_DTYPE_BFLOAT16)
        return from_bf16(((const uint16_t *)p)[i]);
    return dt == CONV_DTYPE_FLOAT64 ? ((const double *)p)[i] : ((const float *)p)[i];
}
static void set_v(conv_dtype_t dt, void *p, int64_t i, double v)
{
    if (dt == CONV_DTYPE_BFLOAT16)
        ((uint16_t *)p)[i] = to_bf16(v);
    else if (dt == CONV_DTYPE_FLOAT64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* Where wrapped memory lies: malloc, or against a guard page (mode 1's
 * guard placement). */
static int g_guarded;
static guard_side g_guard_side;

static void *fuzz_alloc(size_t bytes)
{
    return g_guarded ? guard_alloc(bytes, 1, g_guard_side) : malloc(bytes + 1);
}
static void fuzz_free(void *p)
{
    if (g_guarded)
        guard_free(p);
    else
        free(p);
}

static int ftensor_make(ftensor *f, conv_context_t ctx, conv_dtype_t dt, conv_layout_t lay,
                        int nd, const int64_t *dims, int wrap, size_t esize)
{
    memset(f, 0, sizeof *f);
    f->nd = nd;
    f->elems = 1;
    for (int i = 0; i < nd; i++) {
        f->dims[i] = dims[i];
        f->elems *= dims[i];
    }
    f->bytes = (size_t)f->elems * esize;
    conv_status_t s;
    if (wrap) {
        f->own = fuzz_alloc(f->bytes);
        if (!f->own)
            broken("no memory for a %zu-byte tensor", f->bytes);
        s = conv_tensor_wrap(ctx, dt, lay, nd, dims, f->own, &f->t);
    } else {
        s = conv_tensor_create(ctx, dt, lay, nd, dims, &f->t);
    }
    if (s) {
        fuzz_free(f->own);
        f->own = NULL;
        f->t = NULL;
        return 0;
    }
    if (conv_tensor_get_data(f->t, &f->data))
        broken("conv_tensor_get_data");
    return 1;
}

static void ftensor_free(ftensor *f)
{
    conv_tensor_destroy(f->t);
    fuzz_free(f->own);
    free(f->saved);
    memset(f, 0, sizeof *f);
}

static void ftensor_save(ftensor *f)
{
    free(f->saved);
    f->saved = malloc(f->bytes + 1);
    if (f->bytes)
        memcpy(f->saved, f->data, f->bytes);
}

static int ftensor_same(const ftensor *f)
{
    return !f->bytes || memcmp(f->saved, f->data, f->bytes) == 0;
}

/* The channel (axis 1) of element i of a dense tensor. */
static int64_t channel_of(const ftensor *f, int last, int64_t i)
{
    int64_t sp = 1;
    for (int a = 2; a < f->nd; a++)
        sp *= f->dims[a];
    return last ? i % f->dims[1] : i / sp % f->dims[1];
}

/* The tensor's elements as the reference reads them: bf16 widened to a new
 * float array (the caller frees it), other dtypes as they are. */
static void *widened(conv_dtype_t dt, const ftensor *f)
{
    if (dt != CONV_DTYPE_BFLOAT16)
        return f->data;
    float *v = malloc(((size_t)f->elems + 1) * sizeof(float));
    for (int64_t i = 0; i < f->elems; i++)
        v[i] = (float)get_v(dt, f->data, i);
    return v;
}

/* Compares an output with the reference's values (same dtype). */
static void compare(const char *what, conv_dtype_t dt, const ftensor *got, const void *want,
                    double tol)
{
    for (int64_t i = 0; i < got->elems; i++) {
        double g = get_v(dt, got->data, i), w = get_v(dt, want, i);
        if (g == w)
            continue;
        if (fabs(g - w) <= tol)
            continue;
        broken("%s: element %lld is %.17g, the reference says %.17g (tolerance %g)", what,
               (long long)i, g, w, tol);
    }
}

/* Whether the CPU engine computes bf16 here: AVX-512 (F, BW, DQ, VL) and
 * no CONV_CPU_ISA=baseline cap. Probed once with a 1x1 convolution (the
 * build may lack the AVX-512 kernels); computing bf16 without AVX-512 or
 * under the cap is itself a broken invariant. */
static int bf16_computes(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    const int64_t dims[3] = {1, 1, 1};
    const uint16_t one = 0x3f80, three = 0x4040;
    conv_tensor_t x = NULL, w = NULL, y = NULL;
    conv_desc_t d = NULL;
    conv_context_t ctx = g_ctx[0];
    if (conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &x) ||
        conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &w) ||
        conv_tensor_create(ctx, CONV_DTYPE_BFLOAT16, CONV_LAYOUT_CHANNELS_FIRST, 3, dims, &y) ||
        conv_desc_create(1, &d) || conv_tensor_copy_from(x, &one, 2) ||
        conv_tensor_copy_from(w, &three, 2))
        broken("cannot make the bf16 probe");
    conv_status_t s = conv_forward(ctx, d, x, w, NULL, y, NULL);
    int names_avx512 = strstr(conv_last_error(), "AVX-512") != NULL;
    uint16_t got = 0;
    if (conv_tensor_copy_to(y, &got, 2))
        broken("cannot read the bf16 probe");
    conv_desc_destroy(d);
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(y);
    const char *cap = getenv("CONV_CPU_ISA");
    int avx512 = 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    if (s == CONV_STATUS_SUCCESS) {
        if (got != three)
            broken("the bf16 probe computed %g, not 3", from_bf16(got));
        if (!avx512 || (cap && strcmp(cap, "baseline") == 0))
            broken("bf16 was computed without AVX-512 or under CONV_CPU_ISA=%s",
                   cap ? cap : "(unset)");
    } else if (s != CONV_STATUS_UNSUPPORTED || !names_avx512) {
        broken("the bf16 probe returned %d, not UNSUPPORTED naming AVX-512", (int)s);
    }
    known = s == CONV_STATUS_SUCCESS;
    return known;
}

static void fuzz_compute(reader *r)
{
    init_once();
    conv_context_t ctx = g_ctx[u8(r) & 1];
    int spatial = 1 + (int)below(r, 3), nd = spatial + 2;
    int last = (int)(u8(r) & 1);
    conv_layout_t lay = last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST;
    unsigned dsel = u8(r);
    conv_dtype_t dt = dsel < 120 ? CONV_DTYPE_FLOAT32
                      : dsel < 240 ? CONV_DTYPE_FLOAT64
                                   : (conv_dtype_t)(2 + dsel % 3); /* f16, bf16, unknown 4 */
    int computable = dt == CONV_DTYPE_FLOAT32 || dt == CONV_DTYPE_FLOAT64 ||
                     (dt == CONV_DTYPE_BFLOAT16 && bf16_computes());
    size_t esize = dt == CONV_DTYPE_FLOAT64 ? 8 : dt == CONV_DTYPE_FLOAT32 ? 4 : 2;
    conv_op_t op = (conv_op_t)below(r, 3);
    int transposed = below(r, 4) == 0;
    int64_t groups = 1 + below(r, 3), cg = 1 + below(r, 3), kg = 1 + below(r, 3);
    int64_t n = below(r, 3);
    int64_t in[3], ker[3], str[3], dil[3], pb[3], pe[3], opad[3];
    int maxin = spatial == 3 ? 4 : 7;
    for (int a = 0; a < spatial; a++) {
        in[a] = 1 + below(r, maxin);
        ker[a] = 1 + below(r, 3);
        str[a] = 1 + below(r, 3);
        dil[a] = 1 + below(r, 2);
        pb[a] = below(r, 3);
        pe[a] = below(r, 3);
        opad[a] = below(r, 2);
    }
    int auto_pad = (int)below(r, 8);
    auto_pad = auto_pad < 4 ? 0 : auto_pad - 4;
    int relu = (int)(u8(r) & 1), bias = (int)(u8(r) & 1);
    /* 0 AUTO, 1..4 conv.h's algorithms, 5..7 a solver of the CPU engine's
     * list (conv_algo_list: those without a conv.h value too) */
    unsigned forced_byte = u8(r), forced = forced_byte % 8;
    conv_algo_t algo = forced <= 4 ? (conv_algo_t)forced : CONV_ALGO_AUTO;
    if (forced > 4) {
        conv_algo_t list[128];
        int count = 0;
        if (conv_algo_list(CONV_DEVICE_CPU, 128, list, &count) || count < 1 || count > 128)
            broken("conv_algo_list");
        algo = list[(forced_byte >> 3) % (unsigned)count];
    }
    int ws_kind = (int)below(r, 3); /* NULL, created, wrapped */
    int64_t ws_delta = (int64_t)below(r, 161) - 80;
    int wrap = (int)(u8(r) & 1);
    unsigned special = u8(r);
    int perturb = special % 8 == 1;                 /* a wrong output dim */
    int oom = special % 8 == 2;                     /* a failing allocator */
    int guard = special % 8 == 3 || special % 8 == 4; /* numerical guard... */
    int poison = special % 8 == 4;                  /* ... with a NaN in an input */
    int search = special % 8 == 5;                  /* conv_find_algorithms instead */
    g_guarded = special % 8 == 6;                   /* every buffer against a guard page */
    g_guard_side = (special >> 3) & 1 ? GUARD_BEFORE : GUARD_AFTER;
    long oom_budget = (long)below(r, 4);
    g_rng = u64(r) | 1;

    /* descriptor */
    conv_desc_t d;
    if (conv_desc_create(spatial, &d))
        broken("conv_desc_create");
    if (conv_desc_set_groups(d, groups) || conv_desc_set_strides(d, str) ||
        conv_desc_set_dilations(d, dil) || conv_desc_set_padding(d, pb, pe) ||
        conv_desc_set_output_padding(d, opad) ||
        conv_desc_set_auto_pad(d, (conv_auto_pad_t)auto_pad) ||
        conv_desc_set_activation(d, relu ? CONV_ACTIVATION_RELU : CONV_ACTIVATION_NONE) ||
        conv_desc_set_mode(d, transposed ? CONV_MODE_TRANSPOSED : CONV_MODE_CONVOLUTION) ||
        conv_desc_set_algorithm(d, op, algo))
        broken("a valid descriptor setting was refused");

    /* dims: x (N, Cin, in), w per mode, y from shape inference */
    int64_t C = groups * cg, K = groups * kg;
    int64_t xd[5], wd[5], yd[5], bd[5];
    /* w is (K, C/G, k...) in both modes: a convolution maps C channels to K,
     * a transposed one K (= w[0], its input) to C */
    xd[0] = n;
    xd[1] = transposed ? K : C;
    wd[0] = K;
    wd[1] = cg;
    for (int a = 0; a < spatial; a++) {
        xd[2 + a] = in[a];
        wd[2 + a] = ker[a];
    }
    conv_status_t s = conv_output_dims(d, nd, xd, wd, yd);
    check_message(s, "conv_output_dims");
    if (s) {
        conv_desc_destroy(d);
        return; /* too small for the kernel, or a bad output padding */
    }
    int64_t outc = yd[1];
    /* the size rule, computed here */
    for (int a = 0; a < spatial; a++) {
        int64_t e = (ker[a] - 1) * dil[a] + 1, want, b = pb[a], en = pe[a];
        if (!transposed) {
            if (auto_pad == CONV_AUTO_PAD_VALID)
                b = en = 0;
            if (auto_pad >= CONV_AUTO_PAD_SAME_UPPER) {
                int64_t o = (in[a] + str[a] - 1) / str[a];
                int64_t total = (o - 1) * str[a] + e - in[a];
                total = total > 0 ? total : 0;
                b = auto_pad == CONV_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
                en = total - b;
            }
            want = (in[a] + b + en - e) / str[a] + 1;
        } else {
            int64_t span = (in[a] - 1) * str[a] + e + opad[a];
            if (auto_pad == CONV_AUTO_PAD_VALID)
                b = en = 0;
            if (auto_pad >= CONV_AUTO_PAD_SAME_UPPER) {
                int64_t total = span - in[a] * str[a];
                total = total > 0 ? total : 0;
                b = auto_pad == CONV_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
                en = total - b;
            }
            want = span - b - en;
        }
        if (yd[2 + a] != want)
            broken("output size %lld on axis %d, the rule gives %lld", (long long)yd[2 + a], a,
                   (long long)want);
        pb[a] = b; /* effective begin padding, for the reference */
    }

    /* the reference problem: the convolution itself, or the one a
     * transposed convolution undoes (its input is our output) */
    ref_problem p;
    memset(&p, 0, sizeof p);
    p.spatial = spatial;
    p.channels_last = last;
    p.n = n;
    p.groups = groups;
    p.relu = 0;
    for (int a = 0; a < spatial; a++) {
        p.kernel[a] = ker[a];
        p.stride[a] = str[a];
        p.dilation[a] = dil[a];
        p.pad_begin[a] = pb[a];
        p.in[a] = transposed ? yd[2 + a] : in[a];
        p.out[a] = transposed ? in[a] : yd[2 + a];
    }
    p.c = transposed ? outc : C;
    p.k = K;
    int64_t macs = ref_y_elements(&p) * (p.c / groups);
    for (int a = 0; a < spatial; a++)
        macs *= ker[a];
    if (macs > 60000 || ref_x_elements(&p) > 8192 || ref_y_elements(&p) > 8192) {
        conv_desc_destroy(d);
        return;
    }

    /* tensors: x, w, y in the user's roles; bias of outc elements */
    bd[0] = 1;
    bd[1] = outc;
    for (int a = 0; a < spatial; a++)
        bd[2 + a] = 1;
    if (perturb) { /* one wrong dim in y (or the bias) */
        int which = (int)rnd_int(0, nd);
        if (which == nd && bias && op != CONV_OP_BACKWARD_DATA && !search) /* the bias is read */
            bd[1] += 1;
        else
            yd[which % nd] += rnd_int(0, 1) ? 1 : -1;
        if (yd[which % nd] < 0)
            yd[which % nd] = 2;
    }
    if (getenv("CONV_FUZZ_DEBUG")) { /* what the input means, for triage */
        fprintf(stderr, "compute: %s op %d spatial %d %s dtype %d groups %lld C %lld K %lld n %lld"
                        " auto_pad %d relu %d bias %d algo %d ws %d%+lld wrap %d special %u\n",
                transposed ? "transposed" : "convolution", (int)op, spatial,
                last ? "channels-last" : "channels-first", (int)dt, (long long)groups,
                (long long)C, (long long)K, (long long)n, auto_pad, relu, bias, (int)algo, ws_kind,
                (long long)ws_delta, wrap, special % 8);
        for (int a = 0; a < spatial; a++)
            fprintf(stderr, "  axis %d: in %lld k %lld s %lld d %lld pad %lld/%lld opad %lld\n", a,
                    (long long)in[a], (long long)ker[a], (long long)str[a], (long long)dil[a],
                    (long long)pb[a], (long long)pe[a], (long long)opad[a]);
        for (int i = 0; i < nd; i++)
            fprintf(stderr, "  dim %d: x %lld w %lld y %lld b %lld\n", i, (long long)xd[i],
                    (long long)wd[i], (long long)yd[i], (long long)bd[i]);
    }
    ftensor x, w, y, b;
    memset(&b, 0, sizeof b);
    fail_alloc fa = {oom_budget, 0, 0};
    if (oom)
        conv_context_set_allocator(ctx, fa_alloc, fa_free, &fa);
    if (g_guarded)
        conv_context_set_allocator(ctx, guard_alloc_fn, guard_free_fn, &g_guard_side);
    int made = ftensor_make(&x, ctx, dt, lay, nd, xd, wrap, esize);
    made = ftensor_make(&w, ctx, dt, lay, nd, wd, wrap, esize) && made;
    made = ftensor_make(&y, ctx, dt, lay, nd, yd, wrap, esize) && made;
    int use_bias = bias && op != CONV_OP_BACKWARD_DATA && !search; /* a search takes none */
    if (use_bias)
        made = ftensor_make(&b, ctx, dt, lay, nd, bd, wrap, esize) && made;
    if (!made) {
        if (!oom && computable)
            broken("cannot make the tensors");
        goto cleanup;
    }

    /* inputs: small integers; outputs: NaN */
    ftensor *outs[2] = {NULL, NULL}, *ins[3] = {NULL, NULL, NULL};
    int nout = 0, nin = 0;
    if (op == CONV_OP_FORWARD) {
        outs[nout++] = &y;
        ins[nin++] = &x;
        ins[nin++] = &w;
        if (use_bias)
            ins[nin++] = &b;
    } else if (op == CONV_OP_BACKWARD_DATA) {
        outs[nout++] = &x;
        ins[nin++] = &w;
        ins[nin++] = &y;
    } else {
        outs[nout++] = &w;
        if (use_bias)
            outs[nout++] = &b;
        ins[nin++] = &x;
        ins[nin++] = &y;
    }
    if (computable) {
        for (int i = 0; i < nin; i++)
            for (int64_t e = 0; e < ins[i]->elems; e++)
                set_v(dt, ins[i]->data, e, (double)rnd_int(-3, 3));
        for (int i = 0; i < nout; i++)
            for (int64_t e = 0; e < outs[i]->elems; e++)
                set_v(dt, outs[i]->data, e, NAN);
        if (poison && ins[0]->elems)
            set_v(dt, ins[0]->data, rnd_int(0, (int)ins[0]->elems - 1), NAN);
    } else {
        for (int i = 0; i < nout; i++)
            if (outs[i]->bytes)
                memset(outs[i]->data, 0xA5, outs[i]->bytes);
    }
    for (int i = 0; i < nout; i++)
        ftensor_save(outs[i]);
    ftensor *inputs_saved[3];
    for (int i = 0; i < nin; i++) {
        ftensor_save(ins[i]);
        inputs_saved[i] = ins[i];
    }

    /* workspace */
    conv_workspace_t ws = NULL;
    void *ws_mem = NULL;
    size_t need = 0;
    conv_status_t qs = conv_workspace_size(ctx, d, op, x.t, w.t, y.t, &need);
    check_message(qs, "conv_workspace_size");
    if (ws_kind == 1) {
        if (conv_workspace_create(ctx, &ws))
            broken("conv_workspace_create");
    } else if (ws_kind == 2 && qs == CONV_STATUS_SUCCESS) {
        int64_t size = (int64_t)need + ws_delta;
        size = size < 0 ? 0 : size;
        ws_mem = fuzz_alloc((size_t)size);
        if (!ws_mem)
            broken("no memory for a %lld-byte workspace", (long long)size);
        if (conv_workspace_wrap(ctx, ws_mem, (size_t)size, &ws))
            broken("conv_workspace_wrap");
    }
    conv_algo_t chosen = CONV_ALGO_AUTO;
    conv_status_t cs = conv_chosen_algorithm(ctx, d, op, x.t, w.t, y.t, &chosen);
    if (cs != qs)
        broken("conv_chosen_algorithm %d but conv_workspace_size %d", (int)cs, (int)qs);
    if (guard)
        conv_context_set_check_numerics(ctx, 1);

    /* the call */
    conv_algo_t winners[8];
    int count = -1;
    if (search) {
        double ms[8];
        size_t wsb[8];
        s = conv_find_algorithms(ctx, d, op, x.t, w.t, y.t, ws, 8, winners, ms, wsb, &count);
        if (s == CONV_STATUS_SUCCESS) {
            if (count < 1)
                broken("a successful search returned %d results", count);
            for (int i = 1; i < count; i++)
                if (!(ms[i] >= ms[i - 1]))
                    broken("search results not sorted by time");
            chosen = winners[0]; /* the winner leaves its result */
            conv_algo_t after; /* a forced algorithm stays forced (or refused) */
            if (algo == CONV_ALGO_AUTO) {
                if (conv_chosen_algorithm(ctx, d, op, x.t, w.t, y.t, &after))
                    broken("conv_chosen_algorithm after a search");
                if (after != winners[0])
                    broken("the search's winner %d is not chosen afterwards (%d)",
                           (int)winners[0], (int)after);
            }
        } else if (count != -1) {
            broken("a failed search wrote its count");
        }
    } else if (op == CONV_OP_FORWARD)
        s = conv_forward(ctx, d, x.t, w.t, use_bias ? b.t : NULL, y.t, ws);
    else if (op == CONV_OP_BACKWARD_DATA)
        s = conv_backward_data(ctx, d, w.t, y.t, x.t, ws);
    else
        s = conv_backward_filter(ctx, d, x.t, y.t, w.t, use_bias ? b.t : NULL, ws);
    check_message(s, "the pass");
    conv_context_set_check_numerics(ctx, 0);
    for (int i = 0; i < nin; i++)
        if (!ftensor_same(inputs_saved[i]))
            broken("the pass changed an input");

    if (getenv("CONV_FUZZ_DEBUG"))
        fprintf(stderr, "compute: status %d (%s)\n", (int)s, conv_status_string(s));
    if (s != CONV_STATUS_SUCCESS) {
        static const conv_status_t expected[] = {
            CONV_STATUS_SHAPE_MISMATCH,      CONV_STATUS_UNSUPPORTED,
            CONV_STATUS_OUT_OF_MEMORY,       CONV_STATUS_WORKSPACE_TOO_SMALL,
            CONV_STATUS_NUMERICAL_ERROR,     CONV_STATUS_INVALID_ARGUMENT};
        if (!allowed(s, expected, 6))
            broken("the pass returned %d (%s)", (int)s, conv_status_string(s));
        if (s == CONV_STATUS_SHAPE_MISMATCH && !perturb)
            broken("a consistent problem was refused as a shape mismatch");
        if (s == CONV_STATUS_OUT_OF_MEMORY && !oom)
            broken("OUT_OF_MEMORY without a failing allocator");
        if (s == CONV_STATUS_WORKSPACE_TOO_SMALL && (ws_kind != 2 || ws_delta >= 0))
            broken("WORKSPACE_TOO_SMALL with a large enough workspace");
        if (s == CONV_STATUS_UNSUPPORTED && computable && (algo == CONV_ALGO_AUTO || search) &&
            !(search && ws_kind == 2 && ws_delta < 0))
            broken("UNSUPPORTED with the algorithm left to the library");
        if (s == CONV_STATUS_NUMERICAL_ERROR) {
            if (!guard)
                broken("NUMERICAL_ERROR with the guard off");
            int found = 0;
            for (int i = 0; i < nout; i++)
                for (int64_t e = 0; e < outs[i]->elems; e++)
                    found |= !isfinite(get_v(dt, outs[i]->data, e));
            if (!found)
                broken("NUMERICAL_ERROR but every output is finite");
        } else {
            for (int i = 0; i < nout; i++)
                if (!ftensor_same(outs[i]))
                    broken("a failed pass (status %d) wrote its output", (int)s);
        }
        if (s == CONV_STATUS_INVALID_ARGUMENT && !perturb)
            broken("a consistent problem was refused as an invalid argument");
        goto cleanup_ws;
    }
    if (perturb)
        broken("a wrong output shape was accepted");
    if (!computable)
        broken("a %d tensor was computed", (int)dt);
    if (qs != CONV_STATUS_SUCCESS && !(search && algo != CONV_ALGO_AUTO)) /* search: unforced */
        broken("the pass ran but conv_workspace_size refused it (%d)", (int)qs);
    if (guard)
        for (int i = 0; i < nout; i++)
            for (int64_t e = 0; e < outs[i]->elems; e++)
                if (!isfinite(get_v(dt, outs[i]->data, e)))
                    broken("the numerical guard let a non-finite output through");
    if (poison)
        goto cleanup_ws; /* NaN in, nothing exact to compare */

    /* the reference: in the tensors' dtype; bf16 in float over the widened
     * values, then rounded once per output as the library does */
    {
        int bf16 = dt == CONV_DTYPE_BFLOAT16;
        conv_dtype_t rdt = bf16 ? CONV_DTYPE_FLOAT32 : dt;
        size_t resize = bf16 ? 4 : esize;
        ref_dtype rt = rdt == CONV_DTYPE_FLOAT64 ? REF_FLOAT64 : REF_FLOAT32;
        void *xd_ = widened(dt, &x), *wd_ = widened(dt, &w), *yd_ = widened(dt, &y);
        void *bd_ = use_bias ? widened(dt, &b) : NULL;
        void *want = calloc((size_t)outs[0]->elems + 1, resize);
        void *want_db =
            use_bias && op == CONV_OP_BACKWARD_FILTER ? calloc((size_t)outc + 1, resize) : NULL;
        const void *bias_data = use_bias ? bd_ : NULL;
        if (!transposed) {
            p.relu = relu;
            if (op == CONV_OP_FORWARD)
                ref_forward(&p, rt, xd_, wd_, bias_data, want);
            else if (op == CONV_OP_BACKWARD_DATA)
                ref_backward_data(&p, rt, wd_, yd_, want);
            else
                ref_backward_filter(&p, rt, xd_, yd_, want, want_db);
        } else if (op == CONV_OP_FORWARD) {
            /* the undone convolution's backward-data of x, then bias, relu */
            ref_backward_data(&p, rt, wd_, xd_, want);
            for (int64_t e = 0; e < y.elems; e++) {
                double v = get_v(rdt, want, e);
                if (bias_data)
                    v += get_v(rdt, bias_data, channel_of(&y, last, e));
                if (relu && v < 0)
                    v = 0;
                set_v(rdt, want, e, v);
            }
        } else if (op == CONV_OP_BACKWARD_DATA) {
            ref_forward(&p, rt, yd_, wd_, NULL, want);
        } else {
            ref_backward_filter(&p, rt, yd_, xd_, want, NULL);
            if (want_db) {
                double *sums = calloc((size_t)outc + 1, sizeof(double));
                for (int64_t e = 0; e < y.elems; e++)
                    sums[channel_of(&y, last, e)] += get_v(rdt, yd_, e);
                for (int64_t k = 0; k < outc; k++)
                    set_v(rdt, want_db, k, sums[k]);
                free(sums);
            }
        }
        if (bf16) { /* round in place: bf16 elements fit where floats were */
            for (int64_t e = 0; e < outs[0]->elems; e++)
                set_v(dt, want, e, get_v(rdt, want, e));
            for (int64_t k = 0; want_db && k < outc; k++)
                set_v(dt, want_db, k, get_v(rdt, want_db, k));
        }
        /* exact for integer data (float sums of small integers are exact),
         * but for Winograd (transforms round) */
        double tol = 0;
        if (chosen == CONV_ALGO_WINOGRAD_4X4_3X3) {
            double bound = 9.0 * (double)(p.c > p.k ? p.c : p.k) * 27 * (double)(n + 1);
            tol = (dt == CONV_DTYPE_FLOAT64 ? 1e-13 : 1e-5) * bound;
        }
        char what[128];
        snprintf(what, sizeof what, "%s%s pass %d algorithm %s", transposed ? "transposed " : "",
                 bf16 ? "bf16" : dt == CONV_DTYPE_FLOAT64 ? "fp64" : "fp32", (int)op,
                 conv_algo_name(chosen));
        compare(what, dt, outs[0], want, tol);
        if (want_db)
            compare("db", dt, &b, want_db, 0);
        free(want);
        free(want_db);
        if (bf16) {
            free(xd_);
            free(wd_);
            free(yd_);
            free(bd_);
        }
    }
cleanup_ws:
    if (search)
        conv_context_clear_tuning(ctx); /* keep the shared context untuned */
    conv_workspace_destroy(ws);
    fuzz_free(ws_mem);
cleanup:
    ftensor_free(&x);
    ftensor_free(&w);
    ftensor_free(&y);
    ftensor_free(&b);
    if (g_guarded) {
        conv_context_set_allocator(ctx, NULL, NULL, NULL); /* releases the pool's blocks */
        g_guarded = 0;
        if (guard_live_blocks())
            broken("%ld guarded blocks never freed", guard_live_blocks());
    }
    if (oom) {
        conv_context_set_allocator(ctx, NULL, NULL, NULL);
        if (fa.live)
            broken("%ld blocks of the failing allocator never freed", fa.live);
    }
    conv_desc_destroy(d);
}

/* ---------------------------------------------------- mode 2: tuning files */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        broken("cannot read %s", path);
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 4096 > cap) {
            cap = (n + 4096) * 2;
            buf = realloc(buf, cap);
        }
        got = fread(buf + n, 1, 4096, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
        broken("cannot write %s", path);
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void fuzz_tuning(reader *r)
{
    init_once();
    conv_context_t ctx = g_tuning_ctx;
    conv_context_clear_tuning(ctx);
    /* sometimes a table with an entry of its own first */
    if (u8(r) & 1) {
        const char *seed_file = "entries 1\nfwd float32 cf n1 c1 k1 g1 in1x1x1 k1x1x1 s1x1x1 "
                                "d1x1x1 pb0x0x0 pe0x0x0\tim2col_gemm\n";
        char body[1024];
        snprintf(body, sizeof body, "%s%s", g_header, seed_file);
        char file[1200];
        int len = snprintf(file, sizeof file, "%schecksum %016llx\nend\n", body,
                           (unsigned long long)fnv1a(body, strlen(body)));
        write_all(g_path, file, (size_t)len);
        if (conv_context_load_tuning(ctx, g_path))
            broken("a valid tuning file was refused");
    }
    if (conv_context_save_tuning(ctx, g_check_path))
        broken("conv_context_save_tuning");
    size_t before_len;
    char *before = read_all(g_check_path, &before_len);

    unsigned sub = u8(r) % 3;
    size_t flen = 0;
    char *file = malloc(strlen(g_header) + 2 * r->n + 128);
    if (sub == 0) { /* raw bytes */
        memcpy(file, r->p, r->n);
        flen = r->n;
    } else if (sub == 1) { /* a valid header, then the bytes */
        flen = strlen(g_header);
        memcpy(file, g_header, flen);
        memcpy(file + flen, r->p, r->n);
        flen += r->n;
    } else { /* the bytes as entries of a file that is otherwise valid */
        size_t lines = 0;
        for (size_t i = 0; i < r->n; i++)
            lines += r->p[i] == '\n';
        int len = sprintf(file, "%sentries %zu\n", g_header, lines);
        memcpy(file + len, r->p, r->n);
        flen = (size_t)len + r->n;
        if (r->n == 0 || r->p[r->n - 1] != '\n') { /* the last partial line dropped */
            while (flen > (size_t)len && file[flen - 1] != '\n')
                flen--;
        }
        flen += (size_t)sprintf(file + flen, "checksum %016llx\nend\n",
                                (unsigned long long)fnv1a(file, flen));
    }
    write_all(g_path, file, flen);
    conv_status_t s = conv_context_load_tuning(ctx, g_path);
    check_message(s, "conv_context_load_tuning");
    if (s != CONV_STATUS_SUCCESS && s != CONV_STATUS_BAD_FILE)
        broken("loading a tuning file returned %d", (int)s);
    if (s == CONV_STATUS_BAD_FILE) {
        if (conv_context_save_tuning(ctx, g_check_path))
            broken("conv_context_save_tuning");
        size_t after_len;
        char *after = read_all(g_check_path, &after_len);
        if (after_len != before_len || memcmp(after, before, before_len))
            broken("a refused tuning file changed the table");
        free(after);
    } else {
        /* accepted: saving and loading again gives the same table */
        if (conv_context_save_tuning(ctx, g_check_path))
            broken("conv_context_save_tuning");
        size_t a_len, b_len;
        char *a = read_all(g_check_path, &a_len);
        conv_context_clear_tuning(ctx);
        if (conv_context_load_tuning(ctx, g_check_path))
            broken("a saved tuning file was refused");
        if (conv_context_save_tuning(ctx, g_check_path))
            broken("conv_context_save_tuning");
        char *b = read_all(g_check_path, &b_len);
        if (a_len != b_len || memcmp(a, b, a_len))
            broken("a tuning table did not round-trip");
        free(a);
        free(b);
    }
    free(before);
    free(file);
}

/* -------------------------------------------------- mode 3: handle misuse */

static void fuzz_handles(reader *r)
{
    init_once();
    conv_context_t ctx = g_ctx[0];
    enum { T = 4, D = 2, W = 2 };
    conv_tensor_t t[T] = {0};
    conv_desc_t d[D] = {0};
    conv_workspace_t w[W] = {0};
    int t_live[T] = {0}, d_live[D] = {0}, w_live[W] = {0};
    int steps = (int)below(r, 48);
    for (int i = 0; i < steps; i++) {
        unsigned op = u8(r) % 10, slot = u8(r);
        conv_status_t s = CONV_STATUS_SUCCESS;
        int64_t dims[4] = {below(r, 3), 1 + below(r, 3), 1 + below(r, 4), 1 + below(r, 4)};
        switch (op) {
        case 0: /* create a tensor (the old handle of the slot may be stale) */
            if (t_live[slot % T])
                conv_tensor_destroy(t[slot % T]);
            s = conv_tensor_create(ctx, (conv_dtype_t)(slot % 2), CONV_LAYOUT_CHANNELS_FIRST, 4,
                                   dims, &t[slot % T]);
            t_live[slot % T] = s == CONV_STATUS_SUCCESS;
            break;
        case 1: /* destroy, keeping the pointer: stale from now on */
            conv_tensor_destroy(t[slot % T]);
            t_live[slot % T] = 0;
            break;
        case 2:
            if (d_live[slot % D])
                conv_desc_destroy(d[slot % D]);
            s = conv_desc_create(2, &d[slot % D]);
            d_live[slot % D] = s == CONV_STATUS_SUCCESS;
            break;
        case 3:
            conv_desc_destroy(d[slot % D]);
            d_live[slot % D] = 0;
            break;
        case 4:
            if (w_live[slot % W])
                conv_workspace_destroy(w[slot % W]);
            s = conv_workspace_create(ctx, &w[slot % W]);
            w_live[slot % W] = s == CONV_STATUS_SUCCESS;
            break;
        case 5:
            conv_workspace_destroy(w[slot % W]);
            w_live[slot % W] = 0;
            break;
        case 6: { /* a pass over whatever the slots hold, any kind in any place */
            void *any[T + D + W + 1];
            for (int k = 0; k < T; k++)
                any[k] = t[k];
            for (int k = 0; k < D; k++)
                any[T + k] = d[k];
            for (int k = 0; k < W; k++)
                any[T + D + k] = w[k];
            any[T + D + W] = NULL;
            int m = T + D + W + 1;
            s = conv_forward(ctx, (conv_desc_t)any[u8(r) % m], (conv_tensor_t)any[u8(r) % m],
                             (conv_tensor_t)any[u8(r) % m], (conv_tensor_t)any[u8(r) % m],
                             (conv_tensor_t)any[u8(r) % m], (conv_workspace_t)any[u8(r) % m]);
            break;
        }
        case 7: {
            size_t bytes;
            int64_t g;
            s = conv_tensor_get_bytes(t[slot % T], &bytes);
            if (t_live[slot % T] && s != CONV_STATUS_SUCCESS)
                broken("a live tensor was refused");
            if (!t_live[slot % T] && s == CONV_STATUS_SUCCESS) {
                /* only fine when a live tensor has reused the address */
                int reused = 0;
                for (int k = 0; k < T; k++)
                    reused |= t_live[k] && t[k] == t[slot % T];
                if (!reused)
                    broken("a destroyed tensor was accepted");
            }
            check_message(s, "conv_tensor_get_bytes");
            s = conv_desc_get_groups(d[slot % D], &g);
            check_message(s, "conv_desc_get_groups");
            s = conv_workspace_get_size(w[slot % W], &bytes);
            break;
        }
        case 8: /* wrong kinds */
            s = conv_desc_set_groups((conv_desc_t)t[slot % T], 2);
            if (s == CONV_STATUS_SUCCESS && t[slot % T])
                broken("a tensor was accepted as a descriptor");
            check_message(s, "conv_desc_set_groups");
            s = conv_tensor_get_bytes((conv_tensor_t)w[slot % W], &(size_t){0});
            if (s == CONV_STATUS_SUCCESS && w[slot % W])
                broken("a workspace was accepted as a tensor");
            break;
        default: { /* backward passes and queries over the slots */
            size_t bytes;
            s = conv_workspace_size(ctx, d[slot % D], (conv_op_t)(u8(r) % 4), t[0], t[1], t[2],
                                    &bytes);
            check_message(s, "conv_workspace_size");
            if (s == CONV_STATUS_SUCCESS || s == CONV_STATUS_SHAPE_MISMATCH)
                s = conv_backward_filter(ctx, d[slot % D], t[0], t[2], t[1], t[3], w[slot % W]);
            break;
        }
        }
        if (op != 1 && op != 3 && op != 5) /* destroy returns nothing, sets no message */
            check_message(s, "handle sequence");
        if (s == CONV_STATUS_INTERNAL_ERROR || s == CONV_STATUS_BACKEND_ERROR)
            broken("handle sequence step %u returned %d", op, (int)s);
    }
    for (int k = 0; k < T; k++)
        if (t_live[k])
            conv_tensor_destroy(t[k]);
    for (int k = 0; k < D; k++)
        if (d_live[k])
            conv_desc_destroy(d[k]);
    for (int k = 0; k < W; k++)
        if (w_live[k])
            conv_workspace_destroy(w[k]);
}

/* ------------------------------------------------------ mode 4: aliasing */

enum { AX, AW, AB, AY, ASLOTS }; /* tensor slots: x, w, b, y (roles per pass as in conv.h) */

/* Runs `op` (or the search) over the four slots (b may be NULL). */
static conv_status_t alias_call(conv_context_t ctx, conv_desc_t d, conv_op_t op, int search,
                                conv_tensor_t *t)
{
    if (search) {
        int count = -7;
        conv_status_t s = conv_find_algorithms(ctx, d, op, t[AX], t[AW], t[AY], NULL, 0, NULL,
                                               NULL, NULL, &count);
        if (s != CONV_STATUS_SUCCESS && count != -7)
            broken("a failed search wrote *count");
        return s;
    }
    switch (op) {
    case CONV_OP_FORWARD: return conv_forward(ctx, d, t[AX], t[AW], t[AB], t[AY], NULL);
    case CONV_OP_BACKWARD_DATA: return conv_backward_data(ctx, d, t[AW], t[AY], t[AX], NULL);
    default: return conv_backward_filter(ctx, d, t[AX], t[AY], t[AW], t[AB], NULL);
    }
}

/* One handle -- or two tensors wrapping overlapping memory -- in an output
 * role and another role of a pass or a search, over small 2-D shapes drawn
 * so that they often fit both roles. The call must fail and change no byte
 * of any tensor; when the same call with separate memory in the two roles
 * succeeds, it must fail with INVALID_ARGUMENT (the aliasing check). */
static void fuzz_alias(reader *r)
{
    init_once();
    conv_context_t ctx = g_ctx[u8(r) & 1];
    conv_op_t op = (conv_op_t)below(r, 3);
    int search = (int)(u8(r) & 1), partial = (int)(u8(r) & 1);
    int64_t dims[ASLOTS][4] = {
        {1 + below(r, 2), 1 + below(r, 3), 1 + below(r, 5), 1 + below(r, 5)}, /* x */
        {1 + below(r, 3), 0, 1 + below(r, 3), 1 + below(r, 3)},              /* w */
        {1, 0, 1, 1},                                                         /* b */
        {0, 0, 0, 0}};                                                        /* y */
    dims[AW][1] = dims[AX][1];
    dims[AB][1] = dims[AW][0];
    int64_t pad[2] = {below(r, 2), below(r, 2)};
    int has_bias = !search && op != CONV_OP_BACKWARD_DATA && (u8(r) & 1);
    int out = op == CONV_OP_FORWARD ? AY : op == CONV_OP_BACKWARD_DATA ? AX : AW;
    if (op == CONV_OP_BACKWARD_FILTER && has_bias && (u8(r) & 1))
        out = AB;
    int other = (int)below(r, ASLOTS);
    if (other == out || (other == AB && !has_bias))
        other = out == AX ? AW : AX;
    int shape_from_other = (int)(u8(r) & 1); /* the shared tensor's dims */
    int64_t offset = (int64_t)u8(r);          /* partial: elements into the output */
    g_rng = u64(r) | 1;                       /* the tensors' values */

    conv_desc_t d;
    if (conv_desc_create(2, &d) || conv_desc_set_padding(d, pad, pad))
        broken("a valid descriptor was refused");
    if (conv_output_dims(d, 4, dims[AX], dims[AW], dims[AY])) { /* no such problem */
        conv_desc_destroy(d);
        return;
    }
    if (!partial)
        memcpy(dims[shape_from_other ? out : other], dims[shape_from_other ? other : out],
               sizeof dims[0]);
    int64_t elems[ASLOTS];
    for (int i = 0; i < ASLOTS; i++)
        elems[i] = dims[i][0] * dims[i][1] * dims[i][2] * dims[i][3];
    if (partial)
        offset %= elems[out];

    /* the same call on separate memory: what the shapes alone give */
    conv_tensor_t sep[ASLOTS] = {0};
    for (int i = 0; i < ASLOTS; i++)
        if ((i != AB || has_bias) &&
            conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims[i],
                               &sep[i]))
            broken("conv_tensor_create");
    conv_status_t alone = alias_call(ctx, d, op, search, sep);
    for (int i = 0; i < ASLOTS; i++)
        conv_tensor_destroy(sep[i]);

    /* the aliased call: tensors wrapping one buffer each, the shared pair
     * one handle (or two wraps, `offset` elements apart) */
    float *mem[ASLOTS] = {0};
    conv_tensor_t t[ASLOTS] = {0};
    size_t bytes[ASLOTS];
    for (int i = 0; i < ASLOTS; i++)
        bytes[i] = (size_t)elems[i] * sizeof(float);
    for (int i = 0; i < ASLOTS; i++) {
        if ((i == AB && !has_bias) || i == other)
            continue;
        size_t room = bytes[i] + (i == out && partial ? bytes[other] + 4 * (size_t)offset : 0);
        mem[i] = malloc(room);
        for (size_t e = 0; e < room / sizeof(float); e++)
            mem[i][e] = (float)rnd_int(-3, 3);
        if (conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims[i],
                             mem[i], &t[i]))
            broken("conv_tensor_wrap");
    }
    if (partial) {
        if (conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, dims[other],
                             mem[out] + offset, &t[other]))
            broken("conv_tensor_wrap");
    } else {
        t[other] = t[out];
    }
    size_t total = bytes[out] + (partial ? bytes[other] + 4 * (size_t)offset : 0);
    float *saved[ASLOTS] = {0};
    size_t saved_bytes[ASLOTS] = {0};
    for (int i = 0; i < ASLOTS; i++)
        if (mem[i]) {
            saved_bytes[i] = i == out ? total : bytes[i];
            saved[i] = malloc(saved_bytes[i] + 1);
            memcpy(saved[i], mem[i], saved_bytes[i]);
        }
    conv_status_t s = alias_call(ctx, d, op, search, t);
    check_message(s, "aliased call");
    if (s == CONV_STATUS_SUCCESS)
        broken("an output sharing memory with another tensor of the call was accepted (op %d%s, "
               "slots %d and %d, %s)", (int)op, search ? " search" : "", out, other,
               partial ? "overlapping wraps" : "one handle");
    if (alone == CONV_STATUS_SUCCESS && s != CONV_STATUS_INVALID_ARGUMENT)
        broken("aliasing refused with status %d, not INVALID_ARGUMENT", (int)s);
    for (int i = 0; i < ASLOTS; i++)
        if (mem[i] && memcmp(saved[i], mem[i], saved_bytes[i]) != 0) {
            size_t e = 0;
            while (saved[i][e] == mem[i][e])
                e++;
            broken("a refused aliased call changed slot %d: element %zu of %zu is %g, was %g", i,
                   e, saved_bytes[i] / sizeof(float), mem[i][e], saved[i][e]);
        }
    for (int i = 0; i < ASLOTS; i++) {
        if (i != other || partial)
            conv_tensor_destroy(t[i]);
        free(mem[i]);
        free(saved[i]);
    }
    conv_desc_destroy(d);
}

/* ----------------------------------------- mode 5: communicator failures */

/* An in-process group of 1..4 ranks (threads), one collective each --
 * all-reduce (sum or average, in place or not), broadcast or barrier --
 * with the same arguments on every rank, but some ranks late, with a tiny
 * timeout, or aborted from another thread. Every rank frees its buffers the
 * moment its call returns, so AddressSanitizer sees any rank touching them
 * afterwards. A call returns SUCCESS holding the exact result, or
 * BACKEND_ERROR with a message. */
typedef struct comm_rank {
    conv_comm_t comm;
    int rank, n, kind, in_place, average, root;
    int64_t count;
    conv_dtype_t dtype;
    double timeout, delay;
} comm_rank;

static double comm_value(int rank, int64_t i) { return (double)((rank + i * 7) % 5 - 2); }

static void *comm_rank_main(void *p)
{
    comm_rank *c = p;
    size_t es = c->dtype == CONV_DTYPE_FLOAT64 ? 8 : 4;
    size_t bytes = (size_t)c->count * es;
    void *send = malloc(bytes + 1), *recv = c->in_place ? send : malloc(bytes + 1);
    for (int64_t i = 0; i < c->count; i++)
        set_v(c->dtype, send, i, comm_value(c->rank, i));
    if (conv_comm_set_timeout(c->comm, c->timeout))
        broken("conv_comm_set_timeout");
    if (c->delay > 0)
        usleep((useconds_t)(c->delay * 1e6));
    conv_status_t s;
    if (c->kind == 0)
        s = conv_comm_all_reduce(c->comm, send, recv, c->count, c->dtype,
                                 c->average ? CONV_REDUCE_AVERAGE : CONV_REDUCE_SUM);
    else if (c->kind == 1)
        s = conv_comm_broadcast(c->comm, send, c->count, c->dtype, c->root);
    else
        s = conv_comm_barrier(c->comm);
    check_message(s, "collective");
    if (s != CONV_STATUS_SUCCESS && s != CONV_STATUS_BACKEND_ERROR)
        broken("a collective returned %d", (int)s);
    const void *result = c->kind == 0 ? recv : send;
    for (int64_t i = 0; s == CONV_STATUS_SUCCESS && c->kind < 2 && i < c->count; i++) {
        double want;
        if (c->kind == 1) {
            want = comm_value(c->root, i);
        } else {
            double sum = 0;
            for (int r = 0; r < c->n; r++)
                sum += comm_value(r, i);
            /* AVERAGE: the sum divided once, in the dtype's own arithmetic */
            if (!c->average)
                want = sum;
            else if (c->dtype == CONV_DTYPE_FLOAT64)
                want = sum / c->n;
            else
                want = (double)((float)sum / (float)c->n);
        }
        if (get_v(c->dtype, result, i) != want)
            broken("rank %d: element %lld is %g, want %g", c->rank, (long long)i,
                   get_v(c->dtype, result, i), want);
    }
    free(send); /* at once: no other rank may touch it any more */
    if (!c->in_place)
        free(recv);
    return NULL;
}

typedef struct comm_aborter {
    conv_comm_t comm;
    double delay;
} comm_aborter;

static void *comm_aborter_main(void *p)
{
    comm_aborter *a = p;
    usleep((useconds_t)(a->delay * 1e6));
    conv_comm_abort(a->comm);
    return NULL;
}

static void fuzz_comm(reader *r)
{
    static const double timeouts[] = {1e-9, 1e-4, 30.0, 30.0};
    static const double delays[] = {0, 0, 2e-4, 2e-3};
    int n = 1 + (int)below(r, 4);
    int kind = (int)below(r, 3), average = (int)(u8(r) & 1), in_place = (int)(u8(r) & 1);
    conv_dtype_t dtype = (u8(r) & 1) ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
    int64_t count = below(r, 4) == 0 ? (int64_t)u8(r) : (int64_t)(u8(r) << 8 | u8(r)) * 4;
    int root = (int)below(r, n);
    int abort_rank = (int)below(r, n + 2); /* >= n: no abort */
    double abort_delay = delays[below(r, 4)];
    conv_comm_t comms[4];
    if (conv_comm_create_local(n, comms))
        broken("conv_comm_create_local");
    comm_rank ranks[4];
    pthread_t threads[4];
    for (int i = 0; i < n; i++) {
        comm_rank c = {comms[i], i, n, kind, in_place, average, root, count, dtype,
                       timeouts[below(r, 4)], delays[below(r, 4)]};
        ranks[i] = c;
    }
    comm_aborter aborter = {abort_rank < n ? comms[abort_rank] : NULL, abort_delay};
    pthread_t abort_thread;
    if (aborter.comm && pthread_create(&abort_thread, NULL, comm_aborter_main, &aborter))
        broken("pthread_create");
    for (int i = 0; i < n; i++)
        if (pthread_create(&threads[i], NULL, comm_rank_main, &ranks[i]))
            broken("pthread_create");
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    if (aborter.comm)
        pthread_join(abort_thread, NULL);
    for (int i = 0; i < n; i++)
        conv_comm_destroy(comms[i]);
}

/* ------------------------------------------------------------ entry */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    switch (u8(&r) % 6) { /* 6: the corpus's older seeds (0..3, 49) keep their modes */
    case 0: fuzz_shapes(&r); break;
    case 1: fuzz_compute(&r); break;
    case 2: fuzz_tuning(&r); break;
    case 3: fuzz_handles(&r); break;
    case 4: fuzz_alias(&r); break;
    default: fuzz_comm(&r); break;
    }
    return 0;
}
