/*
 * verify.c -- test data and the check of a pass against the reference.
 *
 * The check runs after the timed calls, on what the last of them left:
 *  1. no NaN anywhere in the output (it was NaN-filled before the first
 *     call, so a NaN is an element no call wrote), then
 *  2. a sample of elements against the reference's *_at functions, each
 *     held to the bound below.
 *
 * Bound: |got - ref| <= tol * abs_sum, tol = base * sqrt(L), where abs_sum
 * is the sum of |products| that form the element (from the reference) and
 * L the reduction length. Rounding errors of an L-term sum grow like
 * sqrt(L) * u * abs_sum with high probability (Higham & Mary's
 * probabilistic analysis; L * u is the rarely reached worst case). The base,
 * about 170 u in f32, leaves room for algorithms that transform their
 * operands (Winograd, FFT). An indexing bug moves an element by about
 * abs_sum / sqrt(L), so it exceeds the bound while L < 1 / base: always for
 * fwd and bwd_data, for bwd_filter (L = N * output volume) up to about 1e5.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv_reference.h"
#include "convbench.h"

static const double tol_base_f32 = 1e-5;
static const double tol_base_f64 = 1e-12;

/* Every element of fwd and bwd_data costs one reduction of C*kernel terms;
 * one of bwd_filter costs N * output volume, hence the smaller sample. */
static const int64_t sample_max = 2000;
static const int64_t sample_max_bwd_filter = 200;

const char cb_tolerance_help[] =
    "  --verify bound, per sampled output element:\n"
    "    |got - ref| <= base * sqrt(L) * abs_sum\n"
    "  abs_sum: the sum of |products| forming the element (the reference gives it);\n"
    "  base: 1e-5 for f32, 1e-12 for f64; L: the reduction length,\n"
    "  plus 4 units of the output dtype for f16 (2^-11) and bf16 (2^-8), and 2^-10\n"
    "  for f32 with --math fast (TF32),\n"
    "    fwd: C/groups * kernel volume, bwd_data: K/groups * kernel volume,\n"
    "    bwd_filter: N * output volume.\n"
    "  Sample: all elements when there are at most 2000 (bwd_filter: 200),\n"
    "  otherwise that many at fixed pseudo-random places spread over the tensor,\n"
    "  first and last included. Any NaN left in an output also fails (outputs\n"
    "  are NaN-filled before the first call). The JSON's max_rel_err is the\n"
    "  largest |got - ref| / abs_sum.\n";

/* splitmix64: tiny, fast, the same sequence everywhere. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void cb_fill_random(void *data, conv_dtype_t dtype, int64_t n, uint64_t seed)
{
    uint64_t state = seed;
    for (int64_t i = 0; i < n; i++) {
        double v = (double)(next_u64(&state) >> 11) * 0x1.0p-52 - 1.0; /* [-1, 1) */
        if (dtype == CONV_DTYPE_FLOAT64)
            ((double *)data)[i] = v;
        else
            ((float *)data)[i] = (float)v;
    }
}

static float bits_f(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t f_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

int cb_is_16bit(conv_dtype_t dtype)
{
    return dtype == CONV_DTYPE_FLOAT16 || dtype == CONV_DTYPE_BFLOAT16;
}

static uint16_t to_half(float f)
{
    uint32_t x = f_bits(f), a = x & 0x7fffffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (a >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u)
        return (uint16_t)(sign | (uint16_t)(f_bits(bits_f(a) + 0.5f) - 0x3f000000u));
    a += 0xc8000fffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)(a >> 13));
}

static float from_half(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu)
        return bits_f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return bits_f(sign | ((exp + 112u) << 23) | (man << 13));
}

void cb_to_16bit(conv_dtype_t dtype, const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CONV_DTYPE_FLOAT16) {
            dst[i] = to_half(src[i]);
        } else {
            uint32_t x = f_bits(src[i]);
            dst[i] = (x & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((x >> 16) | 0x40u)
                                                     : (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
        }
    }
}

void cb_from_16bit(conv_dtype_t dtype, const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = dtype == CONV_DTYPE_FLOAT16 ? from_half(src[i]) : bits_f((uint32_t)src[i] << 16);
}

void cb_fill_nan(void *data, conv_dtype_t dtype, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CONV_DTYPE_FLOAT64)
            ((double *)data)[i] = NAN;
        else
            ((float *)data)[i] = NAN;
    }
}

static double element(const void *data, conv_dtype_t dtype, int64_t i)
{
    return dtype == CONV_DTYPE_FLOAT64 ? ((const double *)data)[i]
                                       : (double)((const float *)data)[i];
}

static int64_t volume(const int64_t *v, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

static void to_problem(const cb_options *o, const cb_layer *l, ref_problem *p)
{
    memset(p, 0, sizeof *p);
    p->spatial = l->spatial;
    p->channels_last = o->layout == CONV_LAYOUT_CHANNELS_LAST;
    p->n = o->batch;
    p->c = l->c;
    p->k = l->k;
    p->groups = l->groups;
    for (int a = 0; a < l->spatial; a++) {
        p->in[a] = l->in[a];
        p->kernel[a] = l->kernel[a];
        p->out[a] = cb_out_size(l, a);
        p->stride[a] = l->stride[a];
        p->dilation[a] = l->dilation[a];
        p->pad_begin[a] = l->pad_begin[a];
    }
}

/* The reduction length L of the bound. */
static double reduction_length(const ref_problem *p, conv_op_t op)
{
    int64_t kvol = volume(p->kernel, p->spatial);
    switch (op) {
    case CONV_OP_FORWARD: return (double)(p->c / p->groups * kvol);
    case CONV_OP_BACKWARD_DATA: return (double)(p->k / p->groups * kvol);
    case CONV_OP_BACKWARD_FILTER: return (double)(p->n * volume(p->out, p->spatial));
    }
    return 1;
}

static double reference_at(const ref_problem *p, ref_dtype dt, conv_op_t op,
                           const cb_host_data *h, int64_t i, double *abs_sum)
{
    switch (op) {
    case CONV_OP_FORWARD: return ref_forward_at(p, dt, h->x, h->w, NULL, i, abs_sum);
    case CONV_OP_BACKWARD_DATA: return ref_backward_data_at(p, dt, h->w, h->dy, i, abs_sum);
    case CONV_OP_BACKWARD_FILTER: return ref_backward_filter_at(p, dt, h->x, h->dy, i, abs_sum);
    }
    return NAN;
}

void cb_verify(const cb_options *o, const cb_layer *l, conv_op_t op, const cb_host_data *h,
               cb_verify_result *r)
{
    static const char *const out_name[] = {"y", "dx", "dw"};
    conv_dtype_t dtype = o->dtype;
    ref_dtype dt = dtype == CONV_DTYPE_FLOAT64 ? REF_FLOAT64 : REF_FLOAT32;
    ref_problem p;
    to_problem(o, l, &p);

    memset(r, 0, sizeof *r);
    r->status = CB_VERIFY_OK;
    r->max_rel_err = NAN;
    r->tol = (dtype == CONV_DTYPE_FLOAT64 ? tol_base_f64 : tol_base_f32) *
             sqrt(reduction_length(&p, op));
    /* fp16/bf16: the inputs are exact (cb_fill_random rounds them), the
     * accumulation is fp32; the output's own rounding and a few partial sums
     * rounded to the dtype add up to 4 units of it. f32 with --math fast
     * (TF32 operands, 10-bit mantissas) adds 2^-10 per product. */
    if (dtype == CONV_DTYPE_FLOAT16)
        r->tol += 4 * 0x1p-11;
    else if (dtype == CONV_DTYPE_BFLOAT16)
        r->tol += 4 * 0x1p-8;
    else if (dtype == CONV_DTYPE_FLOAT32 && o->math == CONV_MATH_FAST)
        r->tol += 0x1p-10;

    int64_t n = h->out_elements, first_nan = -1;
    for (int64_t i = 0; i < n; i++)
        if (isnan(element(h->out, dtype, i)) && r->nan_count++ == 0)
            first_nan = i;

    /* Stratified: sample s lies at a pseudo-random place in the s-th of
     * `want` equal slices, so the sample is spread and has no repeats. */
    int64_t want = op == CONV_OP_BACKWARD_FILTER ? sample_max_bwd_filter : sample_max;
    if (want > n)
        want = n;
    uint64_t state = 0x5EEDull + (uint64_t)op;
    double worst = -1;
    for (int64_t s = 0; s < want; s++) {
        int64_t lo = s * n / want, hi = (s + 1) * n / want;
        int64_t i = s == 0 ? 0 : s == want - 1 ? n - 1
                                               : lo + (int64_t)(next_u64(&state) % (uint64_t)(hi - lo));
        double got = element(h->out, dtype, i);
        if (isnan(got))
            continue; /* counted above */
        double abs_sum = 0;
        double ref = reference_at(&p, dt, op, h, i, &abs_sum);
        double err = fabs(got - ref);
        double rel = abs_sum > 0 ? err / abs_sum : err > 0 ? INFINITY : 0;
        r->checked++;
        if (!(err <= r->tol * abs_sum))
            r->status = CB_VERIFY_FAIL;
        if (rel > worst) {
            worst = rel;
            r->max_rel_err = rel;
            snprintf(r->detail, sizeof r->detail, "%s[%lld] = %.9g, reference %.9g, abs_sum %.4g",
                     out_name[op], (long long)i, got, ref, abs_sum);
        }
    }
    if (r->nan_count) {
        r->status = CB_VERIFY_FAIL;
        snprintf(r->detail, sizeof r->detail,
                 "%lld of %lld elements of %s never written (still NaN), the first %s[%lld]",
                 (long long)r->nan_count, (long long)n, out_name[op], out_name[op],
                 (long long)first_nan);
    }
}
