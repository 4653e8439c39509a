/* test_util.c -- see test_util.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "test_util.h"

#include "guard_memory.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- asserts */

void tu_copy_last_error(char *buf, size_t size)
{
    const char *e = conv_last_error();
    snprintf(buf, size, "%s", e ? e : "(NULL)");
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int mentions(const char *text, int64_t number)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%" PRId64, number < 0 ? -number : number);
    size_t len = strlen(digits);
    for (const char *at = strstr(text, digits); at; at = strstr(at + 1, digits)) {
        if ((at == text || !is_digit(at[-1])) && !is_digit(at[len]))
            return 1;
    }
    return 0;
}

int tu_error_mentions_n(const int64_t *numbers, int count)
{
    const char *text = conv_last_error();
    if (!text)
        return 0;
    for (int i = 0; i < count; i++)
        if (!mentions(text, numbers[i]))
            return 0;
    return 1;
}

/* -------------------------------------------------------------- random */

void tu_seed(tu_rng *r, uint64_t seed)
{
    r->state = seed;
}

/* splitmix64: tiny, and good enough to pick shapes and small integers. */
uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t tu_range(tu_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(tu_next(r) % (uint64_t)(hi - lo + 1));
}

int tu_chance(tu_rng *r, int percent)
{
    return tu_range(r, 0, 99) < percent;
}

double tu_uniform(tu_rng *r)
{
    return (double)(tu_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

uint64_t tu_env_seed(uint64_t fallback)
{
    const char *v = getenv("CONV_TEST_SEED");
    return v && *v ? strtoull(v, NULL, 0) : fallback;
}

int tu_env_count(int fallback)
{
    const char *v = getenv("CONV_TEST_COUNT");
    return v && *v ? atoi(v) : fallback;
}

tu_isa tu_cpu_isa(conv_context_t ctx)
{
    char name[256];
    assert_ok(conv_context_get_device_name(ctx, name, sizeof name));
    const char *isa = strrchr(name, '(');
    assert_non_null(isa);
    return strncmp(isa, "(avx512", 7) == 0 ? TU_ISA_AVX512
           : strncmp(isa, "(avx2", 5) == 0 ? TU_ISA_AVX2
                                          : TU_ISA_BASELINE;
}

/* ------------------------------------------------------------ problems */

void tu_problem_init(tu_problem *tp, int spatial, int64_t n, int64_t c, int64_t k,
                     const int64_t *in, const int64_t *kernel)
{
    memset(tp, 0, sizeof *tp);
    tp->p.spatial = spatial;
    tp->p.n = n;
    tp->p.c = c;
    tp->p.k = k;
    tp->p.groups = 1;
    for (int a = 0; a < 3; a++) {
        tp->p.in[a] = a < spatial ? in[a] : 1;
        tp->p.kernel[a] = a < spatial ? kernel[a] : 1;
        tp->p.stride[a] = 1;
        tp->p.dilation[a] = 1;
        tp->p.out[a] = 1;
    }
    tp->auto_pad = CONV_AUTO_PAD_NOTSET;
    tp->dtype = CONV_DTYPE_FLOAT32;
    tp->algo = CONV_ALGO_AUTO;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int tu_resolve(tu_problem *tp)
{
    ref_problem *p = &tp->p;
    int ok = 1;
    for (int a = 0; a < p->spatial; a++) {
        int64_t in = p->in[a], s = p->stride[a];
        int64_t e = (p->kernel[a] - 1) * p->dilation[a] + 1;
        int64_t pb = tp->desc_pad_begin[a], pe = tp->desc_pad_end[a];
        if (tp->auto_pad == CONV_AUTO_PAD_VALID) {
            pb = pe = 0;
        } else if (tp->auto_pad == CONV_AUTO_PAD_SAME_UPPER ||
                   tp->auto_pad == CONV_AUTO_PAD_SAME_LOWER) {
            int64_t out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + e - in;
            if (total < 0)
                total = 0;
            /* the odd element goes at the end (UPPER) or the beginning (LOWER) */
            pb = tp->auto_pad == CONV_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        }
        p->pad_begin[a] = pb;
        tp->pad_end[a] = pe;
        p->out[a] = floor_div(in + pb + pe - e, s) + 1;
        if (p->out[a] < 1)
            ok = 0;
    }
    return ok;
}

/* Multiply-adds of a forward pass, counting a zero batch as one image so
 * the size limits do not favour empty batches. */
static int64_t macs(const tu_problem *tp)
{
    ref_problem one = tp->p;
    one.n = 1;
    int64_t m = ref_y_elements(&one) * (tp->p.n > 1 ? tp->p.n : 1) * (tp->p.c / tp->p.groups);
    for (int a = 0; a < tp->p.spatial; a++)
        m *= tp->p.kernel[a];
    return m;
}

void tu_random_problem(tu_rng *r, tu_problem *tp)
{
    static const int64_t kmax[3] = {6, 4, 3}, span[3] = {14, 7, 4};
    for (;;) {
        int spatial = tu_chance(r, 30) ? 1 : tu_chance(r, 64) ? 2 : 3;
        int64_t zero[3] = {1, 1, 1};
        tu_problem_init(tp, spatial, 1, 1, 1, zero, zero);
        ref_problem *p = &tp->p;
        p->channels_last = tu_chance(r, 50);

        int kind = (int)tu_range(r, 0, 99);
        if (kind < 45) { /* plain */
            p->groups = 1;
            p->c = tu_range(r, 1, 6);
            p->k = tu_range(r, 1, 6);
        } else if (kind < 70) { /* grouped */
            p->groups = tu_range(r, 2, 3);
            p->c = p->groups * tu_range(r, 1, 3);
            p->k = p->groups * tu_range(r, 1, 3);
        } else { /* depthwise, channel multiplier 1..3 */
            p->c = p->groups = tu_range(r, 1, 6);
            p->k = p->c * tu_range(r, 1, 3);
        }
        p->n = tu_chance(r, 5) ? 0 : tu_chance(r, 37) ? 1 : tu_range(r, 2, spatial == 3 ? 2 : 3);

        int mode = (int)tu_range(r, 0, 99);
        tp->auto_pad = mode < 55   ? CONV_AUTO_PAD_NOTSET
                       : mode < 70 ? CONV_AUTO_PAD_VALID
                       : mode < 85 ? CONV_AUTO_PAD_SAME_UPPER
                                   : CONV_AUTO_PAD_SAME_LOWER;
        for (int a = 0; a < spatial; a++) {
            p->kernel[a] = tu_range(r, 1, kmax[spatial - 1]);
            p->stride[a] = tu_range(r, 1, 3);
            p->dilation[a] = tu_range(r, 1, spatial == 3 ? 2 : 3);
            /* explicit padding, also set (and to be ignored) in the auto modes */
            tp->desc_pad_begin[a] = tu_range(r, 0, 3);
            tp->desc_pad_end[a] = tu_range(r, 0, 3);
            int64_t e = (p->kernel[a] - 1) * p->dilation[a] + 1, lo = 1;
            if (tp->auto_pad == CONV_AUTO_PAD_NOTSET)
                lo = e - tp->desc_pad_begin[a] - tp->desc_pad_end[a];
            else if (tp->auto_pad == CONV_AUTO_PAD_VALID)
                lo = e;
            if (lo < 1)
                lo = 1;
            p->in[a] = tu_range(r, lo, lo + span[spatial - 1]);
        }
        tp->dtype = tu_chance(r, 50) ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
        tp->bias = tu_chance(r, 50);
        tp->bias_k_first = tu_chance(r, 25);
        p->relu = tu_chance(r, 30);
        if (tu_resolve(tp) && macs(tp) <= 60000 && ref_x_elements(p) <= 20000)
            return;
    }
}

void tu_make_1x1(tu_problem *tp)
{
    for (int a = 0; a < tp->p.spatial; a++) {
        tp->p.kernel[a] = tp->p.stride[a] = tp->p.dilation[a] = 1;
        if (tp->auto_pad == CONV_AUTO_PAD_NOTSET)
            tp->desc_pad_begin[a] = tp->desc_pad_end[a] = 0;
    }
    tu_resolve(tp);
}

int tu_is_1x1(const tu_problem *tp)
{
    for (int a = 0; a < tp->p.spatial; a++)
        if (tp->p.kernel[a] != 1 || tp->p.dilation[a] != 1 || tp->p.pad_begin[a] != 0 ||
            tp->pad_end[a] != 0)
            return 0;
    return 1;
}

int tu_algo_applies(const tu_problem *tp)
{
    switch (tp->algo) {
    case CONV_ALGO_GEMM_1X1: return tu_is_1x1(tp);
    case CONV_ALGO_DEPTHWISE_DIRECT: return tp->p.groups == tp->p.c && tp->p.c > 0;
    default: return 1;
    }
}

static int dims_of(const tu_problem *tp, int64_t d0, int64_t d1, const int64_t *sp,
                   int64_t *dims)
{
    dims[0] = d0;
    dims[1] = d1;
    for (int a = 0; a < tp->p.spatial; a++)
        dims[2 + a] = sp[a];
    return tp->p.spatial + 2;
}

int tu_x_dims(const tu_problem *tp, int64_t *dims)
{
    return dims_of(tp, tp->p.n, tp->p.c, tp->p.in, dims);
}

int tu_w_dims(const tu_problem *tp, int64_t *dims)
{
    return dims_of(tp, tp->p.k, tp->p.c / tp->p.groups, tp->p.kernel, dims);
}

int tu_y_dims(const tu_problem *tp, int64_t *dims)
{
    return dims_of(tp, tp->p.n, tp->p.k, tp->p.out, dims);
}

int tu_b_dims(const tu_problem *tp, int64_t *dims)
{
    static const int64_t ones[3] = {1, 1, 1};
    return tp->bias_k_first ? dims_of(tp, tp->p.k, 1, ones, dims)
                            : dims_of(tp, 1, tp->p.k, ones, dims);
}

int64_t tu_y_channel(const tu_problem *tp, int64_t index)
{
    if (tp->p.channels_last)
        return index % tp->p.k;
    int64_t plane = 1;
    for (int a = 0; a < tp->p.spatial; a++)
        plane *= tp->p.out[a];
    return (index / plane) % tp->p.k;
}

static const char *auto_pad_name(conv_auto_pad_t m)
{
    switch (m) {
    case CONV_AUTO_PAD_NOTSET: return "explicit";
    case CONV_AUTO_PAD_VALID: return "VALID";
    case CONV_AUTO_PAD_SAME_UPPER: return "SAME_UPPER";
    case CONV_AUTO_PAD_SAME_LOWER: return "SAME_LOWER";
    }
    return "?";
}

/* Appends "name=[a,b,c] " for the problem's spatial axes. */
static void put_axes(char **at, char *end, const char *name, int spatial, const int64_t *v)
{
    *at += snprintf(*at, (size_t)(end - *at), "%s=[", name);
    for (int a = 0; a < spatial && *at < end; a++)
        *at += snprintf(*at, (size_t)(end - *at), a ? ",%" PRId64 : "%" PRId64, v[a]);
    if (*at < end)
        *at += snprintf(*at, (size_t)(end - *at), "] ");
}

void tu_describe(const tu_problem *tp, char *buf, size_t size)
{
    const ref_problem *p = &tp->p;
    char *at = buf, *end = buf + size;
    at += snprintf(at, size,
                   "%dD %s %s n=%" PRId64 " c=%" PRId64 " k=%" PRId64 " groups=%" PRId64
                   " bias=%d%s relu=%d algo=%s pad=%s ",
                   p->spatial, p->channels_last ? "channels-last" : "channels-first",
                   tp->dtype == CONV_DTYPE_FLOAT64    ? "f64"
                   : tp->dtype == CONV_DTYPE_BFLOAT16 ? "bf16"
                                                      : "f32",
                   p->n, p->c, p->k, p->groups,
                   tp->bias, tp->bias_k_first ? "(K-first)" : "", p->relu,
                   conv_algo_name(tp->algo), auto_pad_name(tp->auto_pad));
    if (at >= end)
        return;
    put_axes(&at, end, "in", p->spatial, p->in);
    put_axes(&at, end, "kernel", p->spatial, p->kernel);
    put_axes(&at, end, "stride", p->spatial, p->stride);
    put_axes(&at, end, "dilation", p->spatial, p->dilation);
    put_axes(&at, end, "desc_pad_begin", p->spatial, tp->desc_pad_begin);
    put_axes(&at, end, "desc_pad_end", p->spatial, tp->desc_pad_end);
    put_axes(&at, end, "pad_begin", p->spatial, p->pad_begin);
    put_axes(&at, end, "pad_end", p->spatial, tp->pad_end);
    put_axes(&at, end, "out", p->spatial, p->out);
}

conv_status_t tu_make_desc(const tu_problem *tp, conv_op_t op, conv_desc_t *out)
{
    conv_desc_t d = NULL;
    conv_status_t s = conv_desc_create(tp->p.spatial, &d);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_strides(d, tp->p.stride);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_dilations(d, tp->p.dilation);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_padding(d, tp->desc_pad_begin, tp->desc_pad_end);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_auto_pad(d, tp->auto_pad);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_groups(d, tp->p.groups);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_activation(d, tp->p.relu ? CONV_ACTIVATION_RELU
                                                   : CONV_ACTIVATION_NONE);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_algorithm(d, op, tp->algo);
    if (s != CONV_STATUS_SUCCESS) {
        conv_desc_destroy(d);
        d = NULL;
    }
    *out = d;
    return s;
}

const char *tu_op_name(conv_op_t op)
{
    switch (op) {
    case CONV_OP_FORWARD: return "forward";
    case CONV_OP_BACKWARD_DATA: return "backward_data";
    case CONV_OP_BACKWARD_FILTER: return "backward_filter";
    }
    return "?";
}

size_t tu_dtype_size(conv_dtype_t dtype)
{
    return dtype == CONV_DTYPE_FLOAT64 ? 8 : dtype == CONV_DTYPE_FLOAT32 ? 4 : 2;
}

ref_dtype tu_ref_dtype(conv_dtype_t dtype)
{
    return dtype == CONV_DTYPE_FLOAT64    ? REF_FLOAT64
           : dtype == CONV_DTYPE_BFLOAT16 ? REF_BFLOAT16
                                          : REF_FLOAT32;
}

/* bf16: the top half of a float; stored to nearest, ties to even. */
static double from_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (f != f)
        return 0x7fc0;
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

void tu_relayout(int spatial, const int64_t *dims, size_t elem_size, int from_last,
                 const void *src, void *dst)
{
    int64_t sp[3] = {1, 1, 1}, pos[3];
    for (int a = 0; a < spatial; a++)
        sp[a] = dims[2 + a];
    for (int64_t n = 0; n < dims[0]; n++)
        for (int64_t c = 0; c < dims[1]; c++)
            for (pos[0] = 0; pos[0] < sp[0]; pos[0]++)
                for (pos[1] = 0; pos[1] < sp[1]; pos[1]++)
                    for (pos[2] = 0; pos[2] < sp[2]; pos[2]++) {
                        int64_t from = ref_offset(spatial, from_last, dims, n, c, pos);
                        int64_t to = ref_offset(spatial, !from_last, dims, n, c, pos);
                        memcpy((char *)dst + to * elem_size, (const char *)src + from * elem_size,
                               elem_size);
                    }
}

void tu_copy(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

int tu_same(const void *a, const void *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

/* ------------------------------------------------------------- tensors */

conv_status_t tu_tensor_make(tu_tensor *tt, conv_context_t ctx, conv_dtype_t dtype,
                             conv_layout_t layout, int ndim, const int64_t *dims, int wrap)
{
    memset(tt, 0, sizeof *tt);
    tt->dtype = dtype;
    tt->elems = 1;
    for (int i = 0; i < ndim; i++)
        tt->elems *= dims[i];
    tt->bytes = (size_t)tt->elems * tu_dtype_size(dtype);
    tt->wrap = wrap;
    conv_status_t s;
    if (wrap) {
        /* never empty, so a 0-element tensor still gets a valid pointer;
         * a guarded one ends (or starts) exactly at its guard page */
        tt->own = wrap == TU_WRAP_GUARD_AFTER    ? guard_alloc(tt->bytes, 1, GUARD_AFTER)
                  : wrap == TU_WRAP_GUARD_BEFORE ? guard_alloc(tt->bytes, 1, GUARD_BEFORE)
                                                 : malloc(tt->bytes ? tt->bytes : 1);
        if (!tt->own)
            return CONV_STATUS_OUT_OF_MEMORY;
        s = conv_tensor_wrap(ctx, dtype, layout, ndim, dims, tt->own, &tt->t);
    } else {
        s = conv_tensor_create(ctx, dtype, layout, ndim, dims, &tt->t);
    }
    if (s == CONV_STATUS_SUCCESS)
        s = conv_tensor_get_data(tt->t, &tt->data);
    if (s != CONV_STATUS_SUCCESS)
        tu_tensor_free(tt);
    return s;
}

void tu_tensor_free(tu_tensor *tt)
{
    conv_tensor_destroy(tt->t);
    if (tt->wrap >= TU_WRAP_GUARD_AFTER)
        guard_free(tt->own);
    else
        free(tt->own);
    memset(tt, 0, sizeof *tt);
}

double tu_get(const tu_tensor *tt, int64_t i)
{
    if (tt->dtype == CONV_DTYPE_BFLOAT16)
        return from_bf16(((const uint16_t *)tt->data)[i]);
    return tt->dtype == CONV_DTYPE_FLOAT64 ? ((const double *)tt->data)[i]
                                           : (double)((const float *)tt->data)[i];
}

void tu_set(tu_tensor *tt, int64_t i, double v)
{
    if (tt->dtype == CONV_DTYPE_BFLOAT16)
        ((uint16_t *)tt->data)[i] = to_bf16(v);
    else if (tt->dtype == CONV_DTYPE_FLOAT64)
        ((double *)tt->data)[i] = v;
    else
        ((float *)tt->data)[i] = (float)v;
}

void tu_fill_int(tu_tensor *tt, tu_rng *r, int lo, int hi)
{
    for (int64_t i = 0; i < tt->elems; i++)
        tu_set(tt, i, (double)tu_range(r, lo, hi));
}

void tu_fill_real(tu_tensor *tt, tu_rng *r)
{
    for (int64_t i = 0; i < tt->elems; i++)
        tu_set(tt, i, tu_uniform(r));
}

void tu_fill_nan(tu_tensor *tt)
{
    for (int64_t i = 0; i < tt->elems; i++)
        tu_set(tt, i, NAN);
}

void tu_fill_pattern(tu_tensor *tt, unsigned char byte)
{
    if (tt->bytes)
        memset(tt->data, byte, tt->bytes);
}

/* ---------------------------------------------------------------- cases */

conv_status_t tu_case_make(tu_case *c, conv_context_t ctx, const tu_problem *tp, int wrap)
{
    int64_t dims[5];
    conv_layout_t layout =
        tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST;
    memset(c, 0, sizeof *c);
    c->tp = *tp;
    int nd = tu_x_dims(tp, dims);
    conv_status_t s = tu_tensor_make(&c->x, ctx, tp->dtype, layout, nd, dims, wrap);
    if (s == CONV_STATUS_SUCCESS) {
        nd = tu_w_dims(tp, dims);
        s = tu_tensor_make(&c->w, ctx, tp->dtype, layout, nd, dims, wrap);
    }
    if (s == CONV_STATUS_SUCCESS) {
        nd = tu_y_dims(tp, dims);
        s = tu_tensor_make(&c->y, ctx, tp->dtype, layout, nd, dims, wrap);
    }
    if (s == CONV_STATUS_SUCCESS && tp->bias) {
        nd = tu_b_dims(tp, dims);
        s = tu_tensor_make(&c->b, ctx, tp->dtype, layout, nd, dims, wrap);
    }
    if (s != CONV_STATUS_SUCCESS)
        tu_case_free(c);
    return s;
}

void tu_case_free(tu_case *c)
{
    tu_tensor_free(&c->x);
    tu_tensor_free(&c->w);
    tu_tensor_free(&c->b);
    tu_tensor_free(&c->y);
}

int tu_case_outputs(tu_case *c, conv_op_t op, tu_tensor **outs)
{
    switch (op) {
    case CONV_OP_FORWARD:
        outs[0] = &c->y;
        return 1;
    case CONV_OP_BACKWARD_DATA:
        outs[0] = &c->x;
        return 1;
    case CONV_OP_BACKWARD_FILTER:
        outs[0] = &c->w;
        outs[1] = &c->b;
        return c->b.t ? 2 : 1;
    }
    return 0;
}

void tu_case_fill(tu_case *c, conv_op_t op, tu_rng *r, int real)
{
    tu_tensor *all[4] = {&c->x, &c->w, &c->b, &c->y}, *outs[2] = {NULL, NULL};
    int nout = tu_case_outputs(c, op, outs);
    for (int i = 0; i < 4; i++) {
        int is_out = 0;
        for (int j = 0; j < nout; j++)
            is_out |= all[i] == outs[j];
        if (!all[i]->t)
            continue;
        if (is_out)
            tu_fill_nan(all[i]);
        else if (real)
            tu_fill_real(all[i], r);
        else
            tu_fill_int(all[i], r, -3, 3);
    }
}

conv_status_t tu_case_run(tu_case *c, conv_context_t ctx, conv_desc_t desc, conv_op_t op,
                          conv_workspace_t ws)
{
    switch (op) {
    case CONV_OP_FORWARD:
        return conv_forward(ctx, desc, c->x.t, c->w.t, c->b.t, c->y.t, ws);
    case CONV_OP_BACKWARD_DATA:
        return conv_backward_data(ctx, desc, c->w.t, c->y.t, c->x.t, ws);
    case CONV_OP_BACKWARD_FILTER:
        return conv_backward_filter(ctx, desc, c->x.t, c->y.t, c->w.t, c->b.t, ws);
    }
    return CONV_STATUS_INVALID_ARGUMENT;
}

/* Compares one output tensor with wanted values; `tol` NULL means exact
 * equality after rounding to the dtype. */
static int compare(const char *name, const tu_tensor *got, const double *want,
                   const double *tol, char *msg, size_t size)
{
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < got->elems; i++) {
        double g = tu_get(got, i), w = want[i];
        if (got->dtype == CONV_DTYPE_FLOAT32)
            w = (double)(float)w;
        else if (got->dtype == CONV_DTYPE_BFLOAT16)
            w = from_bf16(to_bf16(w)); /* one rounding of the float sum */
        int ok = tol ? fabs(g - w) <= tol[i] : g == w;
        if (!ok && bad++ == 0)
            first = i;
    }
    if (!bad)
        return 0;
    snprintf(msg, size,
             "%s: %" PRId64 " of %" PRId64 " elements differ; first [%" PRId64
             "]: got %.17g want %.17g (tolerance %g)",
             name, bad, got->elems, first, tu_get(got, first), want[first],
             tol ? tol[first] : 0.0);
    return 1;
}

/* The rounding a summation order may cause, on the scale of |terms|. */
static double tolerance(conv_dtype_t dtype, double abs_sum)
{
    double eps = dtype == CONV_DTYPE_FLOAT64    ? DBL_EPSILON
                 : dtype == CONV_DTYPE_BFLOAT16 ? 1.0 / 256 /* the output's one rounding */
                                                : FLT_EPSILON;
    return 16.0 * eps * abs_sum + DBL_MIN;
}

/* Wanted values (and tolerances when tol != NULL) for the first output of op. */
static void want_main(const tu_case *c, conv_op_t op, double *want, double *tol, int64_t count)
{
    const ref_problem *p = &c->tp.p;
    ref_dtype t = tu_ref_dtype(c->tp.dtype);
    for (int64_t i = 0; i < count; i++) {
        double mag = 0.0;
        switch (op) {
        case CONV_OP_FORWARD:
            want[i] = ref_forward_at(p, t, c->x.data, c->w.data, c->b.t ? c->b.data : NULL, i,
                                     &mag);
            break;
        case CONV_OP_BACKWARD_DATA:
            want[i] = ref_backward_data_at(p, t, c->w.data, c->y.data, i, &mag);
            break;
        case CONV_OP_BACKWARD_FILTER:
            want[i] = ref_backward_filter_at(p, t, c->x.data, c->y.data, i, &mag);
            break;
        }
        if (tol)
            tol[i] = tolerance(c->tp.dtype, mag);
    }
}

/* Wanted values of the full pass, through the reference's full functions
 * (in the dtype, widened back to double). */
static void want_full(const tu_case *c, conv_op_t op, double *want, double *want_db)
{
    const ref_problem *p = &c->tp.p;
    ref_dtype t = tu_ref_dtype(c->tp.dtype);
    size_t es = tu_dtype_size(c->tp.dtype);
    int64_t count = op == CONV_OP_FORWARD         ? c->y.elems
                    : op == CONV_OP_BACKWARD_DATA ? c->x.elems
                                                  : c->w.elems;
    void *buf = malloc((size_t)count * es + 1), *db = malloc((size_t)c->tp.p.k * es + 1);
    switch (op) {
    case CONV_OP_FORWARD:
        ref_forward(p, t, c->x.data, c->w.data, c->b.t ? c->b.data : NULL, buf);
        break;
    case CONV_OP_BACKWARD_DATA:
        ref_backward_data(p, t, c->w.data, c->y.data, buf);
        break;
    case CONV_OP_BACKWARD_FILTER:
        ref_backward_filter(p, t, c->x.data, c->y.data, buf, want_db ? db : NULL);
        break;
    }
    for (int64_t i = 0; i < count; i++)
        want[i] = t == REF_FLOAT32    ? ((float *)buf)[i]
                  : t == REF_BFLOAT16 ? from_bf16(((uint16_t *)buf)[i])
                                      : ((double *)buf)[i];
    for (int64_t k = 0; want_db && k < c->tp.p.k; k++)
        want_db[k] = t == REF_FLOAT32    ? ((float *)db)[k]
                     : t == REF_BFLOAT16 ? from_bf16(((uint16_t *)db)[k])
                                         : ((double *)db)[k];
    free(buf);
    free(db);
}

int tu_case_check(tu_case *c, conv_op_t op, int exact, char *msg, size_t size)
{
    return tu_case_check_loose(c, op, exact ? 0.0 : 1.0, msg, size);
}

int tu_case_check_loose(tu_case *c, conv_op_t op, double factor, char *msg, size_t size)
{
    const int exact = factor == 0.0;
    tu_tensor *outs[2] = {NULL, NULL};
    int nout = tu_case_outputs(c, op, outs);
    int has_db = nout == 2;
    int64_t count = outs[0]->elems, k = c->tp.p.k;
    double *want = calloc((size_t)count + 1, sizeof(double));
    double *tol = exact ? NULL : calloc((size_t)count + 1, sizeof(double));
    double *want_db = calloc((size_t)k + 1, sizeof(double));
    double *tol_db = exact ? NULL : calloc((size_t)k + 1, sizeof(double));
    if (exact) {
        want_full(c, op, want, has_db ? want_db : NULL);
    } else {
        if (has_db) /* keeps db; `want` is overwritten just below */
            want_full(c, op, want, want_db);
        want_main(c, op, want, tol, count);
        if (has_db) {
            for (int64_t i = 0; i < c->y.elems; i++)
                tol_db[tu_y_channel(&c->tp, i)] += fabs(tu_get(&c->y, i));
            for (int64_t j = 0; j < k; j++)
                tol_db[j] = factor * tolerance(c->tp.dtype, tol_db[j]);
        }
        for (int64_t i = 0; i < count; i++)
            tol[i] *= factor;
    }
    static const char *names[3][2] = {{"y", ""}, {"dx", ""}, {"dw", "db"}};
    int bad = compare(names[op][0], outs[0], want, tol, msg, size);
    if (!bad && has_db)
        bad = compare(names[op][1], outs[1], want_db, tol_db, msg, size);
    free(want);
    free(tol);
    free(want_db);
    free(tol_db);
    return bad;
}

void tu_snapshot_take(tu_snapshot *s, tu_case *c, conv_op_t op)
{
    tu_tensor *outs[2] = {NULL, NULL};
    s->count = tu_case_outputs(c, op, outs);
    for (int i = 0; i < s->count; i++) {
        s->bytes[i] = malloc(outs[i]->bytes + 1);
        tu_copy(s->bytes[i], outs[i]->data, outs[i]->bytes);
    }
}

int tu_snapshot_same(const tu_snapshot *s, tu_case *c, conv_op_t op)
{
    tu_tensor *outs[2] = {NULL, NULL};
    tu_case_outputs(c, op, outs);
    for (int i = 0; i < s->count; i++)
        if (!tu_same(s->bytes[i], outs[i]->data, outs[i]->bytes))
            return 0;
    return 1;
}

void tu_snapshot_free(tu_snapshot *s)
{
    for (int i = 0; i < s->count; i++)
        free(s->bytes[i]);
    s->count = 0;
}

/* ----------------------------------------------------- worker-thread runs */

int tu_run_random_exact(conv_context_t ctx, conv_workspace_t ws, uint64_t seed, conv_op_t op,
                        conv_algo_t first_algo, conv_algo_t fallback, char *failure,
                        size_t size)
{
    tu_rng r;
    tu_problem tp;
    char what[1024];
    tu_seed(&r, seed);
    tu_random_problem(&r, &tp);
    tp.algo = (conv_algo_t)tu_range(&r, first_algo, 3);
    if (!tu_algo_applies(&tp))
        tp.algo = fallback;
    if (op == CONV_OP_BACKWARD_DATA)
        tp.bias = 0;
    int len = snprintf(what, sizeof what, "seed %" PRIu64 " %s ", seed, tu_op_name(op));
    tu_describe(&tp, what + len, sizeof what - (size_t)len);
    return tu_run_checked(ctx, ws, &tp, op, &r, 0, tu_chance(&r, 50), what, failure, size);
}

int tu_run_checked(conv_context_t ctx, conv_workspace_t ws, const tu_problem *tp, conv_op_t op,
                   tu_rng *r, int real, int flags, const char *what, char *failure, size_t size)
{
    tu_case c;
    conv_desc_t d = NULL;
    conv_workspace_t exact = NULL;
    void *memory = NULL;
    char msg[512];
    conv_status_t s = tu_case_make(&c, ctx, tp, tu_wrap_mode(flags));
    if (s != CONV_STATUS_SUCCESS) {
        snprintf(failure, size, "%s: setup status %d: %s", what, (int)s, conv_last_error());
        return 1;
    }
    s = tu_make_desc(tp, op, &d);
    if (s == CONV_STATUS_SUCCESS && (flags & TU_RUN_EXACT_WORKSPACE)) {
        size_t bytes = 0;
        s = conv_workspace_size(ctx, d, op, c.x.t, c.w.t, c.y.t, &bytes);
        const int guarded = flags & (TU_RUN_GUARD_AFTER | TU_RUN_GUARD_BEFORE);
        if (s == CONV_STATUS_SUCCESS &&
            !(memory = guarded ? guard_alloc(bytes, 1, flags & TU_RUN_GUARD_AFTER ? GUARD_AFTER
                                                                                  : GUARD_BEFORE)
                               : malloc(bytes + 1)))
            s = CONV_STATUS_OUT_OF_MEMORY;
        if (s == CONV_STATUS_SUCCESS)
            s = conv_workspace_wrap(ctx, memory, bytes, &exact);
        ws = exact;
    }
    if (s == CONV_STATUS_SUCCESS) {
        tu_case_fill(&c, op, r, real);
        s = tu_case_run(&c, ctx, d, op, ws);
    }
    int bad = 1;
    if (s != CONV_STATUS_SUCCESS)
        snprintf(failure, size, "%s: status %d: %s", what, (int)s, conv_last_error());
    else if (tu_case_check(&c, op, !real, msg, sizeof msg))
        snprintf(failure, size, "%s: %s", what, msg);
    else
        bad = 0;
    conv_workspace_destroy(exact);
    if (flags & (TU_RUN_GUARD_AFTER | TU_RUN_GUARD_BEFORE))
        guard_free(memory);
    else
        free(memory);
    conv_desc_destroy(d);
    tu_case_free(&c);
    return bad;
}

int tu_wrap_mode(int flags)
{
    if (!(flags & TU_RUN_WRAP))
        return TU_OWNED;
    return flags & TU_RUN_GUARD_AFTER    ? TU_WRAP_GUARD_AFTER
           : flags & TU_RUN_GUARD_BEFORE ? TU_WRAP_GUARD_BEFORE
                                         : TU_WRAP_MALLOC;
}

void tu_check_random_pass(conv_context_t contexts[3], uint64_t seed, const tu_problem *tp0,
                          conv_op_t op, tu_rng *r, int real)
{
    tu_problem tp = *tp0;
    if (op == CONV_OP_BACKWARD_DATA)
        tp.bias = 0;
    int threads = (int)tu_range(r, 1, 3);
    /* wrapped tensors and exact workspaces against a guard page, half the time */
    const int guard = (int)tu_range(r, 0, 3);
    int flags = (tu_chance(r, 50) ? TU_RUN_EXACT_WORKSPACE : 0) |
                (tu_chance(r, 50) ? TU_RUN_WRAP : 0) |
                (guard == 1 ? TU_RUN_GUARD_AFTER : guard == 2 ? TU_RUN_GUARD_BEFORE : 0);
    char what[1024], failure[2048];
    int len = snprintf(what, sizeof what, "seed %" PRIu64 " %s threads=%d ", seed,
                       tu_op_name(op), threads);
    tu_describe(&tp, what + len, sizeof what - (size_t)len);
    if (tu_run_checked(contexts[threads - 1], NULL, &tp, op, r, real, flags, what, failure,
                       sizeof failure))
        fail_msg("%s", failure);
}

void tu_check_guarded_threads(const tu_problem *tp, conv_op_t op, tu_rng *r, int real, const char *what)
{
    for (int threads = 1; threads <= 3; threads++) {
        char named[512], failure[2048];
        snprintf(named, sizeof named, "%s threads=%d", what, threads);
        const int flags = TU_RUN_EXACT_WORKSPACE | (threads == 2 ? TU_RUN_GUARD_BEFORE : TU_RUN_GUARD_AFTER);
        if (tu_run_checked(tu_contexts[threads - 1], NULL, tp, op, r, real, flags, named, failure, sizeof failure))
            fail_msg("%s", failure);
    }
}

void tu_check_bits_by_threads(const tu_problem *tp, conv_op_t op, uint64_t seed, const char *what)
{
    void *first = NULL;
    size_t bytes = 0;
    for (int t = 0; t < 3; t++) {
        tu_rng r;
        tu_seed(&r, seed); /* the same data for every thread count */
        tu_case c;
        conv_desc_t d;
        char msg[512];
        assert_ok(tu_case_make(&c, tu_contexts[t], tp, 0));
        assert_ok(tu_make_desc(tp, op, &d));
        tu_case_fill(&c, op, &r, 1);
        if (tu_case_run(&c, tu_contexts[t], d, op, NULL) != CONV_STATUS_SUCCESS)
            fail_msg("%s (seed %" PRIu64 "), %s, %d threads: %s", what, seed, tu_op_name(op), t + 1,
                     conv_last_error());
        if (tu_case_check(&c, op, 0, msg, sizeof msg))
            fail_msg("%s (seed %" PRIu64 "), %s, %d threads: %s", what, seed, tu_op_name(op), t + 1, msg);
        const tu_tensor *out = op == CONV_OP_FORWARD ? &c.y : op == CONV_OP_BACKWARD_DATA ? &c.x : &c.w;
        if (!first) {
            bytes = out->bytes;
            first = malloc(bytes);
            assert_non_null(first);
            tu_copy(first, out->data, bytes);
        } else if (!tu_same(first, out->data, bytes)) {
            fail_msg("%s (seed %" PRIu64 "), %s: %d threads differ from 1 thread", what, seed, tu_op_name(op),
                     t + 1);
        }
        conv_desc_destroy(d);
        tu_case_free(&c);
    }
    free(first);
}

void tu_check_case_by_threads(const tu_problem *tp, conv_op_t op, conv_math_t math, tu_rng *r, uint64_t seed,
                              size_t index)
{
    char what[480]; /* tu_check_guarded_threads adds the thread count within 512 */
    int len = snprintf(what, sizeof what, "case %zu ", index);
    tu_describe(tp, what + len, sizeof what - (size_t)len);
    for (int t = 0; t < 3; t++)
        assert_ok(conv_context_set_math(tu_contexts[t], math));
    tu_check_guarded_threads(tp, op, r, 1, what);
    tu_check_bits_by_threads(tp, op, seed, what);
    for (int t = 0; t < 3; t++)
        assert_ok(conv_context_set_math(tu_contexts[t], CONV_MATH_DEFAULT));
}

conv_status_t tu_plan_of(conv_context_t ctx, const tu_problem *tp, conv_op_t op, conv_plan_t *plan)
{
    conv_desc_t d;
    conv_status_t s = tu_make_desc(tp, op, &d);
    if (s != CONV_STATUS_SUCCESS)
        return s;
    int64_t xd[5], wd[5];
    int ndim = tu_x_dims(tp, xd);
    tu_w_dims(tp, wd);
    s = conv_plan_create(ctx, d, op, tp->dtype,
                         tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST,
                         ndim, xd, wd, tp->bias && op != CONV_OP_BACKWARD_DATA, plan);
    conv_desc_destroy(d);
    return s;
}

/* The pass's output (y forward, dx backward-data) from a one-shot call. */
static tu_tensor *one_shot(conv_context_t ctx, tu_case *c, conv_op_t op)
{
    conv_desc_t d;
    assert_ok(tu_make_desc(&c->tp, op, &d));
    if (op == CONV_OP_FORWARD) {
        assert_ok(conv_forward(ctx, d, c->x.t, c->w.t, c->b.t, c->y.t, NULL));
    } else {
        assert_ok(conv_backward_data(ctx, d, c->w.t, c->y.t, c->x.t, NULL));
    }
    conv_desc_destroy(d);
    return op == CONV_OP_FORWARD ? &c->y : &c->x;
}

static void run_plan(conv_plan_t plan, tu_case *c, conv_op_t op)
{
    conv_tensor_t b = op == CONV_OP_FORWARD ? c->b.t : NULL;
    tu_fill_nan(op == CONV_OP_FORWARD ? &c->y : &c->x);
    assert_ok(conv_plan_execute(plan, c->x.t, c->w.t, b, c->y.t, NULL));
}

void tu_check_prepared_weights(conv_context_t ctx, const tu_problem *tp, conv_op_t op, tu_rng *r,
                               const char *solver, int prepared)
{
    tu_case c;
    assert_ok(tu_case_make(&c, ctx, tp, 0));
    tu_case_fill(&c, op, r, 1);
    tu_tensor *out = op == CONV_OP_FORWARD ? &c.y : &c.x;
    size_t bytes = out->bytes;
    void *old_result = malloc(bytes), *new_result = malloc(bytes);
    memcpy(old_result, one_shot(ctx, &c, op)->data, bytes);

    conv_plan_t plan;
    assert_ok(tu_plan_of(ctx, tp, op, &plan));
    const char *name = NULL;
    assert_ok(conv_plan_get_solver_name(plan, &name));
    assert_string_equal(name, solver);
    int reported = -1;
    assert_ok(conv_plan_prepare_weights(plan, c.w.t, &reported));
    assert_int_equal(reported, prepared);
    run_plan(plan, &c, op);
    assert_memory_equal(out->data, old_result, bytes);

    tu_fill_real(&c.w, r); /* new weights, not prepared: stale */
    memcpy(new_result, one_shot(ctx, &c, op)->data, bytes);
    assert_memory_not_equal(new_result, old_result, bytes);
    run_plan(plan, &c, op);
    assert_memory_equal(out->data, prepared ? old_result : new_result, bytes);

    assert_ok(conv_plan_prepare_weights(plan, c.w.t, &reported)); /* fresh */
    run_plan(plan, &c, op);
    assert_memory_equal(out->data, new_result, bytes);

    assert_ok(conv_plan_release_weights(plan)); /* reads w again */
    tu_fill_real(&c.w, r);
    memcpy(new_result, one_shot(ctx, &c, op)->data, bytes);
    run_plan(plan, &c, op);
    assert_memory_equal(out->data, new_result, bytes);

    conv_plan_destroy(plan);
    tu_case_free(&c);
    free(old_result);
    free(new_result);
}

int tu_check_declined(conv_context_t ctx, const tu_problem *tp, conv_op_t op, uint64_t seed,
                      const char *algo_name, char *failure, size_t size)
{
    tu_case c;
    conv_desc_t d = NULL;
    conv_status_t s = tu_case_make(&c, ctx, tp, 0);
    if (s != CONV_STATUS_SUCCESS) {
        snprintf(failure, size, "setup status %d: %s", (int)s, conv_last_error());
        return 1;
    }
    s = tu_make_desc(tp, op, &d);
    if (s != CONV_STATUS_SUCCESS) {
        snprintf(failure, size, "descriptor status %d: %s", (int)s, conv_last_error());
        tu_case_free(&c);
        return 1;
    }
    tu_rng r;
    tu_seed(&r, seed);
    tu_case_fill(&c, op, &r, 1);
    tu_snapshot snap;
    tu_snapshot_take(&snap, &c, op);
    s = tu_case_run(&c, ctx, d, op, NULL);
    int bad = 1;
    if (s != CONV_STATUS_UNSUPPORTED)
        snprintf(failure, size, "%s: status %d (%s), want UNSUPPORTED", tu_op_name(op), (int)s,
                 conv_last_error());
    else if (!strstr(conv_last_error(), algo_name))
        snprintf(failure, size, "%s: the refusal \"%s\" does not name %s", tu_op_name(op),
                 conv_last_error(), algo_name);
    else if (!tu_snapshot_same(&snap, &c, op))
        snprintf(failure, size, "%s: the refused call wrote its output", tu_op_name(op));
    else
        bad = 0;
    tu_snapshot_free(&snap);
    conv_desc_destroy(d);
    tu_case_free(&c);
    return bad;
}

conv_status_t tu_thread_contexts_create(conv_context_t *ctxs, int count)
{
    for (int i = 0; i < count; i++) {
        conv_status_t s = conv_context_create(CONV_DEVICE_CPU, 0, &ctxs[i]);
        if (s == CONV_STATUS_SUCCESS)
            s = conv_context_set_threads(ctxs[i], i + 1);
        if (s != CONV_STATUS_SUCCESS)
            return s;
    }
    return CONV_STATUS_SUCCESS;
}

void tu_thread_contexts_destroy(conv_context_t *ctxs, int count)
{
    for (int i = 0; i < count; i++)
        conv_context_destroy(ctxs[i]);
}

conv_context_t tu_contexts[3];

int tu_contexts_setup(void **state)
{
    (void)state;
    return tu_thread_contexts_create(tu_contexts, 3) == CONV_STATUS_SUCCESS ? 0 : -1;
}

int tu_contexts_teardown(void **state)
{
    (void)state;
    tu_thread_contexts_destroy(tu_contexts, 3);
    return 0;
}

double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------- solvers */

int tu_cpu_algos(conv_algo_t *algos, int capacity, int with_auto)
{
    int n = 0, skip = with_auto ? 1 : 0;
    if (conv_algo_list(CONV_DEVICE_CPU, capacity - skip, algos + skip, &n) != CONV_STATUS_SUCCESS)
        fail_msg("conv_algo_list: %s", conv_last_error());
    if (n + skip > capacity)
        fail_msg("the CPU engine lists %d solvers, more than the test's %d", n, capacity - skip);
    if (with_auto)
        algos[0] = CONV_ALGO_AUTO;
    return n + skip;
}

int tu_is_cpu_solver(conv_algo_t a)
{
    conv_algo_t all[TU_MAX_ALGOS];
    int n = tu_cpu_algos(all, TU_MAX_ALGOS, 0);
    for (int i = 0; i < n; i++)
        if (all[i] == a)
            return 1;
    return 0;
}

void tu_check_solver_random(tu_problem_gen gen, int wide, int real, uint64_t seed0, int count0,
                            conv_math_t math)
{
    for (int i = 0; i < 3; i++)
        assert_ok(conv_context_set_math(tu_contexts[i], math));
    uint64_t first = tu_env_seed(seed0);
    int count = tu_env_count(count0);
    for (int i = 0; i < count; i++) {
        uint64_t seed = first + (uint64_t)i;
        tu_rng r;
        tu_seed(&r, seed);
        conv_op_t op;
        tu_problem tp;
        do
            gen(&r, &tp, &op, wide);
        while (!tu_resolve(&tp));
        tu_check_random_pass(tu_contexts, seed, &tp, op, &r, real);
    }
    for (int i = 0; i < 3; i++)
        assert_ok(conv_context_set_math(tu_contexts[i], CONV_MATH_DEFAULT));
}
