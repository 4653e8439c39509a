/* gpu_util.c -- see gpu_util.h. */
#include "gpu_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gu_require_gpu(void)
{
    int n = 0;
    if (conv_device_count(CONV_DEVICE_CUDA, &n) != CONV_STATUS_SUCCESS || n == 0) {
        printf("no usable CUDA GPU (or a libconv without the CUDA engine): skipping\n");
        exit(77);
    }
}

uint64_t gu_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(gu_rand(s) % (uint64_t)(hi - lo + 1));
}

int64_t gu_elems(const int64_t *dims, int ndim)
{
    int64_t p = 1;
    for (int i = 0; i < ndim; i++)
        p *= dims[i];
    return p;
}

size_t gu_size(conv_dtype_t dt)
{
    return dt == CONV_DTYPE_FLOAT64 ? 8 : dt == CONV_DTYPE_FLOAT32 ? 4 : 2;
}

/* ----------------------------------------------------------- conversions */

static float bits_f(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t f_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

static float half_to_float(uint16_t h)
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

static uint16_t float_to_half(float f)
{
    uint32_t x = f_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        float v = bits_f(a) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(f_bits(v) - 0x3f000000u));
    }
    uint32_t odd = (a >> 13) & 1u;
    a += 0xc8000fffu + odd;
    return (uint16_t)(sign | (uint16_t)(a >> 13));
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x = f_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

void gu_to_dtype(conv_dtype_t dt, const double *src, void *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case CONV_DTYPE_FLOAT64: ((double *)dst)[i] = src[i]; break;
        case CONV_DTYPE_FLOAT32: ((float *)dst)[i] = (float)src[i]; break;
        case CONV_DTYPE_FLOAT16: ((uint16_t *)dst)[i] = float_to_half((float)src[i]); break;
        default: ((uint16_t *)dst)[i] = float_to_bf16((float)src[i]); break;
        }
    }
}

void gu_from_dtype(conv_dtype_t dt, const void *src, double *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case CONV_DTYPE_FLOAT64: dst[i] = ((const double *)src)[i]; break;
        case CONV_DTYPE_FLOAT32: dst[i] = ((const float *)src)[i]; break;
        case CONV_DTYPE_FLOAT16: dst[i] = half_to_float(((const uint16_t *)src)[i]); break;
        default: dst[i] = bits_f((uint32_t)((const uint16_t *)src)[i] << 16); break;
        }
    }
}

double gu_round(conv_dtype_t dt, double v)
{
    unsigned char b[8];
    double r;
    gu_to_dtype(dt, &v, b, 1);
    gu_from_dtype(dt, b, &r, 1);
    return r;
}

/* Uniform in [-1, 1) on a grid every value of which the dtype holds
 * exactly, so GPU and CPU see the same numbers. */
static double random_value(uint64_t *s, conv_dtype_t dt)
{
    int64_t scale = dt == CONV_DTYPE_FLOAT16 ? 1024 : dt == CONV_DTYPE_BFLOAT16 ? 128
                  : dt == CONV_DTYPE_FLOAT32 ? (1 << 23) : (1ll << 52);
    int64_t j = (int64_t)(gu_rand(s) % (uint64_t)(2 * scale)) - scale;
    return (double)j / (double)scale;
}

/* -------------------------------------------------------------- problems */

conv_desc_t gu_desc(const gu_problem *p, int with_relu)
{
    conv_desc_t d = NULL;
    if (conv_desc_create(p->spatial, &d) != CONV_STATUS_SUCCESS)
        return NULL;
    conv_desc_set_strides(d, p->stride);
    conv_desc_set_dilations(d, p->dil);
    conv_desc_set_padding(d, p->pad_begin, p->pad_end);
    conv_desc_set_auto_pad(d, p->auto_pad);
    conv_desc_set_groups(d, p->groups);
    conv_desc_set_activation(d, with_relu && p->relu ? CONV_ACTIVATION_RELU : CONV_ACTIVATION_NONE);
    if (p->transposed) {
        conv_desc_set_mode(d, CONV_MODE_TRANSPOSED);
        conv_desc_set_output_padding(d, p->out_pad);
    }
    return d;
}

void gu_random_problem(uint64_t *s, conv_dtype_t dtype, int allow_transposed, gu_problem *p)
{
    for (;;) {
        memset(p, 0, sizeof *p);
        p->dtype = dtype;
        p->spatial = (int)range(s, 1, 3);
        p->channels_last = (int)range(s, 0, 1);
        p->transposed = allow_transposed && range(s, 0, 4) == 0;
        p->relu = range(s, 0, 2) == 0;
        p->bias = range(s, 0, 1) == 1;
        int64_t g = range(s, 0, 5);
        int64_t cg = range(s, 1, 5), kg = range(s, 1, 5);
        p->groups = g < 3 ? 1 : g == 3 ? 2 : 3;
        if (g == 5) { /* depthwise (a multiplier kg) */
            cg = 1;
            p->groups = range(s, 2, 6);
        }
        p->c = p->groups * cg;
        p->k = p->groups * kg;
        p->n = range(s, 0, 30) == 0 ? 0 : range(s, 1, 3);
        for (int a = 0; a < p->spatial; a++) {
            p->in[a] = p->spatial == 3 ? range(s, 1, 6) : range(s, 1, p->spatial == 1 ? 17 : 10);
            p->kernel[a] = range(s, 1, 3);
            p->stride[a] = range(s, 1, 3);
            p->dil[a] = range(s, 1, 2);
            p->pad_begin[a] = range(s, 0, 2);
            p->pad_end[a] = range(s, 0, 1) ? p->pad_begin[a] : range(s, 0, 2); /* asymmetric often */
            int64_t lim = p->stride[a] > p->dil[a] ? p->stride[a] : p->dil[a];
            p->out_pad[a] = range(s, 0, lim - 1);
        }
        int64_t ap = range(s, 0, 9);
        p->auto_pad = ap == 0 ? CONV_AUTO_PAD_SAME_UPPER : ap == 1 ? CONV_AUTO_PAD_SAME_LOWER
                    : ap == 2 ? CONV_AUTO_PAD_VALID : CONV_AUTO_PAD_NOTSET;
        int ndim = p->spatial + 2;
        p->x_dims[0] = p->n;
        p->x_dims[1] = p->c;
        if (p->transposed) {
            p->w_dims[0] = p->c;
            p->w_dims[1] = p->k / p->groups;
        } else {
            p->w_dims[0] = p->k;
            p->w_dims[1] = p->c / p->groups;
        }
        for (int a = 0; a < p->spatial; a++) {
            p->x_dims[2 + a] = p->in[a];
            p->w_dims[2 + a] = p->kernel[a];
        }
        conv_desc_t d = gu_desc(p, 1);
        conv_status_t st = conv_output_dims(d, ndim, p->x_dims, p->w_dims, p->y_dims);
        conv_desc_destroy(d);
        if (st != CONV_STATUS_SUCCESS)
            continue; /* an output size < 1 or output padding too large: draw again */
        if (gu_elems(p->y_dims, ndim) > 200000 || gu_elems(p->x_dims, ndim) > 200000)
            continue;
        p->b_elems = p->y_dims[1];
        return;
    }
}

void gu_describe(const gu_problem *p, char *buf, size_t size)
{
    static const char *const dt[] = {"f32", "f64", "f16", "bf16"};
    static const char *const ap[] = {"", " SAME_UPPER", " SAME_LOWER", " VALID"};
    int o = snprintf(buf, size, "%s %dD %s%s n%lld c%lld k%lld g%lld%s%s", dt[p->dtype], p->spatial,
                     p->channels_last ? "cl" : "cf", p->transposed ? " transposed" : "",
                     (long long)p->n, (long long)p->c, (long long)p->k, (long long)p->groups,
                     p->bias ? " bias" : "", p->relu ? " relu" : "");
    for (int a = 0; a < p->spatial && o > 0 && (size_t)o < size; a++)
        o += snprintf(buf + o, size - (size_t)o, " [in%lld k%lld s%lld d%lld p%lld,%lld op%lld]",
                      (long long)p->in[a], (long long)p->kernel[a], (long long)p->stride[a],
                      (long long)p->dil[a], (long long)p->pad_begin[a], (long long)p->pad_end[a],
                      (long long)p->out_pad[a]);
    if (o > 0 && (size_t)o < size)
        snprintf(buf + o, size - (size_t)o, "%s", ap[p->auto_pad]);
}

gu_tolerance gu_tol(conv_dtype_t dt, conv_math_t math)
{
    gu_tolerance t;
    t.k_norm = math == CONV_MATH_STRICT ? 0 : 64;
    switch (dt) {
    case CONV_DTYPE_FLOAT64: t.eps_out = 0x1p-53; t.eps_acc = 0x1p-53; t.k_mid = 0; break;
    case CONV_DTYPE_FLOAT32: t.eps_out = 0x1p-24; t.eps_acc = math == CONV_MATH_FAST ? 0x1p-11 : 0x1p-24; t.k_mid = 0; break;
    case CONV_DTYPE_FLOAT16: t.eps_out = 0x1p-11; t.eps_acc = 0x1p-24; t.k_mid = 8; break;
    default: t.eps_out = 0x1p-8; t.eps_acc = 0x1p-24; t.k_mid = 8; break;
    }
    return t;
}

/* --------------------------------------------------------------- passes */

typedef struct arrays {
    double *x, *w, *y, *b; /* host values, fp64 */
} arrays;

static conv_status_t run_pass(conv_context_t ctx, conv_desc_t d, conv_op_t op, conv_tensor_t x,
                              conv_tensor_t w, conv_tensor_t y, conv_tensor_t b)
{
    switch (op) {
    case CONV_OP_FORWARD: return conv_forward(ctx, d, x, w, b, y, NULL);
    case CONV_OP_BACKWARD_DATA: return conv_backward_data(ctx, d, w, y, x, NULL);
    default: return conv_backward_filter(ctx, d, x, y, w, b, NULL);
    }
}

/* Runs op on `ctx` with tensors of `dt` holding the values in `in`; the
 * outputs come back into `out` (as doubles). Outputs start as all-ones
 * bytes (NaN in every float format), so an element never written shows. */
static conv_status_t pass_on(conv_context_t ctx, conv_dtype_t dt, const gu_problem *p,
                             conv_desc_t d, conv_op_t op, const arrays *in, arrays *out,
                             char *err, size_t errlen)
{
    int ndim = p->spatial + 2;
    conv_layout_t layout = p->channels_last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST;
    int64_t b_dims[5] = {1, p->b_elems, 1, 1, 1};
    const int64_t *dims[4] = {p->x_dims, p->w_dims, p->y_dims, b_dims};
    double *const src[4] = {in->x, in->w, in->y, in->b};
    double *const dst[4] = {out->x, out->w, out->y, out->b};
    int is_out[4] = {op == CONV_OP_BACKWARD_DATA, op == CONV_OP_BACKWARD_FILTER,
                     op == CONV_OP_FORWARD, op == CONV_OP_BACKWARD_FILTER};
    int used[4] = {1, 1, 1, p->bias && op != CONV_OP_BACKWARD_DATA};
    conv_tensor_t t[4] = {NULL, NULL, NULL, NULL};
    conv_status_t s = CONV_STATUS_SUCCESS;
    void *buf = NULL;
    for (int i = 0; i < 4 && s == CONV_STATUS_SUCCESS; i++) {
        if (!used[i])
            continue;
        int64_t n = gu_elems(dims[i], ndim);
        s = conv_tensor_create(ctx, dt, layout, ndim, dims[i], &t[i]);
        if (s != CONV_STATUS_SUCCESS) {
            snprintf(err, errlen, "conv_tensor_create: %s", conv_last_error());
            break;
        }
        free(buf);
        buf = malloc((size_t)(n ? n : 1) * gu_size(dt));
        if (is_out[i])
            memset(buf, 0xff, (size_t)n * gu_size(dt));
        else
            gu_to_dtype(dt, src[i], buf, n);
        s = conv_tensor_copy_from(t[i], buf, (size_t)n * gu_size(dt));
        if (s != CONV_STATUS_SUCCESS)
            snprintf(err, errlen, "conv_tensor_copy_from: %s", conv_last_error());
    }
    if (s == CONV_STATUS_SUCCESS) {
        s = run_pass(ctx, d, op, t[0], t[1], t[2], t[3]);
        if (s != CONV_STATUS_SUCCESS)
            snprintf(err, errlen, "pass: %s: %s", conv_status_string(s), conv_last_error());
    }
    if (s == CONV_STATUS_SUCCESS) {
        s = conv_context_synchronize(ctx);
        if (s != CONV_STATUS_SUCCESS)
            snprintf(err, errlen, "conv_context_synchronize: %s", conv_last_error());
    }
    for (int i = 0; i < 4 && s == CONV_STATUS_SUCCESS; i++) {
        if (!used[i] || !is_out[i])
            continue;
        int64_t n = gu_elems(dims[i], ndim);
        free(buf);
        buf = malloc((size_t)(n ? n : 1) * gu_size(dt));
        s = conv_tensor_copy_to(t[i], buf, (size_t)n * gu_size(dt));
        if (s != CONV_STATUS_SUCCESS)
            snprintf(err, errlen, "conv_tensor_copy_to: %s", conv_last_error());
        else
            gu_from_dtype(dt, buf, dst[i], n);
    }
    free(buf);
    for (int i = 0; i < 4; i++)
        conv_tensor_destroy(t[i]);
    return s;
}

static double *alloc_d(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

conv_algo_t gu_gpu_algo(void)
{
    const char *name = getenv("CONV_TEST_GPU_ALGO");
    conv_algo_t algo = CONV_ALGO_AUTO;
    if (name && *name && conv_algo_from_name(name, &algo) != CONV_STATUS_SUCCESS) {
        fprintf(stderr, "CONV_TEST_GPU_ALGO=%s: %s\n", name, conv_last_error());
        exit(1);
    }
    return algo;
}

int gu_compare(conv_context_t gpu, conv_context_t cpu, const gu_problem *p, conv_op_t op,
               uint64_t seed, gu_tolerance tol, gu_check *out)
{
    int ndim = p->spatial + 2;
    int64_t nx = gu_elems(p->x_dims, ndim), nw = gu_elems(p->w_dims, ndim);
    int64_t ny = gu_elems(p->y_dims, ndim), nb = p->b_elems;
    arrays in = {alloc_d(nx), alloc_d(nw), alloc_d(ny), alloc_d(nb)};
    arrays absin = {alloc_d(nx), alloc_d(nw), alloc_d(ny), alloc_d(nb)};
    arrays ref = {alloc_d(nx), alloc_d(nw), alloc_d(ny), alloc_d(nb)};
    arrays abs = {alloc_d(nx), alloc_d(nw), alloc_d(ny), alloc_d(nb)};
    arrays got = {alloc_d(nx), alloc_d(nw), alloc_d(ny), alloc_d(nb)};
    uint64_t s = seed;
    double *vals[4] = {in.x, in.w, in.y, in.b}, *avals[4] = {absin.x, absin.w, absin.y, absin.b};
    int64_t cnt[4] = {nx, nw, ny, nb};
    for (int i = 0; i < 4; i++)
        for (int64_t j = 0; j < cnt[i]; j++) {
            vals[i][j] = random_value(&s, p->dtype);
            avals[i][j] = fabs(vals[i][j]);
        }
    memset(out, 0, sizeof *out);
    out->ok = 1;
    char err[400] = "";
    conv_desc_t d = gu_desc(p, 1), dabs = gu_desc(p, 0);
    conv_status_t st = pass_on(cpu, CONV_DTYPE_FLOAT64, p, d, op, &in, &ref, err, sizeof err);
    if (st == CONV_STATUS_SUCCESS)
        st = pass_on(cpu, CONV_DTYPE_FLOAT64, p, dabs, op, &absin, &abs, err, sizeof err);
    if (st != CONV_STATUS_SUCCESS) {
        out->ok = 0;
        snprintf(out->msg, sizeof out->msg, "CPU reference failed: %s", err);
    } else {
        if (gu_gpu_algo() != CONV_ALGO_AUTO)
            conv_desc_set_algorithm(d, op, gu_gpu_algo());
        st = pass_on(gpu, p->dtype, p, d, op, &in, &got, err, sizeof err);
        if (st != CONV_STATUS_SUCCESS) {
            out->ok = 0;
            snprintf(out->msg, sizeof out->msg, "GPU: %s", err);
        }
    }
    /* The longest reduction any element of any pass of this problem has. */
    int64_t kvol = 1, xs = 1, ys = 1;
    for (int a = 0; a < p->spatial; a++) {
        kvol *= p->kernel[a];
        xs *= p->x_dims[2 + a];
        ys *= p->y_dims[2 + a];
    }
    double L = (double)((p->c > p->k ? p->c : p->k) * kvol + p->n * (xs > ys ? xs : ys)) + 1;
    if (out->ok) {
        static const char *const names[4] = {"x", "w", "y", "b"};
        double *r[4] = {ref.x, ref.w, ref.y, ref.b}, *a[4] = {abs.x, abs.w, abs.y, abs.b};
        double *g[4] = {got.x, got.w, got.y, got.b};
        int outs[4] = {op == CONV_OP_BACKWARD_DATA, op == CONV_OP_BACKWARD_FILTER,
                       op == CONV_OP_FORWARD, op == CONV_OP_BACKWARD_FILTER && p->bias};
        for (int i = 0; i < 4; i++) {
            if (!outs[i])
                continue;
            double amax = 0;
            for (int64_t j = 0; j < cnt[i]; j++)
                amax = a[i][j] > amax ? a[i][j] : amax;
            for (int64_t j = 0; j < cnt[i]; j++) {
                double e = fabs(g[i][j] - r[i][j]);
                double t = tol.eps_out * fabs(r[i][j]) + 2 * L * tol.eps_acc * a[i][j] +
                           tol.k_mid * tol.eps_out * a[i][j] + tol.k_norm * L * tol.eps_acc * amax +
                           1e-300;
                double q = e / t;
                if (!(e <= t)) {
                    if (out->ok)
                        snprintf(out->msg, sizeof out->msg,
                                 "%s[%lld] = %.9g, reference %.9g (abs sum %.4g, tolerance %.3g)",
                                 names[i], (long long)j, g[i][j], r[i][j], a[i][j], t);
                    out->ok = 0;
                }
                if (q > out->worst || isnan(q))
                    out->worst = isnan(q) ? INFINITY : q;
            }
        }
    }
    conv_desc_destroy(d);
    conv_desc_destroy(dabs);
    arrays *all[5] = {&in, &absin, &ref, &abs, &got};
    for (int i = 0; i < 5; i++) {
        free(all[i]->x);
        free(all[i]->w);
        free(all[i]->y);
        free(all[i]->b);
    }
    return st;
}
