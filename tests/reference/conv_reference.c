/*
 * conv_reference.c -- the naive direct convolution of conv_reference.h.
 *
 * Every pass is computed one output element at a time by its *_at function
 * (the full passes just loop over the elements), so the sampled check used
 * for big layers and the full check of small ones are the same code.
 * Unused spatial axes are normalised to size 1 so the loops always run over
 * three axes.
 */
#include "conv_reference.h"

#include <string.h>

#include <math.h>
#include <stddef.h>

/* The problem normalised to three spatial axes, with dense element strides
 * of x (N, C, in), w (K, C/G, kernel) and y (N, K, out) in their layout. */
typedef struct geo {
    int relu;
    int64_t n, c, k, cg, kg;
    int64_t in[3], ker[3], out[3], str[3], dil[3], pad[3];
    int64_t xs[5], ws[5], ys[5];
} geo;

/* Strides of a dense (d0, d1, sp0, sp1, sp2) tensor: channels-first stores
 * d0, d1, sp...; channels-last stores d0, sp..., d1. */
static void dense_strides(int channels_last, int64_t d1, const int64_t *sp, int64_t *s)
{
    if (!channels_last) {
        s[4] = 1;
        s[3] = sp[2];
        s[2] = sp[1] * sp[2];
        s[1] = sp[0] * s[2];
        s[0] = d1 * s[1];
    } else {
        s[1] = 1;
        s[4] = d1;
        s[3] = sp[2] * d1;
        s[2] = sp[1] * s[3];
        s[0] = sp[0] * s[2];
    }
}

static geo make_geo(const ref_problem *p)
{
    geo g;
    g.relu = p->relu;
    g.n = p->n;
    g.c = p->c;
    g.k = p->k;
    g.cg = p->c / p->groups;
    g.kg = p->k / p->groups;
    for (int a = 0; a < 3; a++) {
        int used = a < p->spatial;
        g.in[a] = used ? p->in[a] : 1;
        g.ker[a] = used ? p->kernel[a] : 1;
        g.out[a] = used ? p->out[a] : 1;
        g.str[a] = used ? p->stride[a] : 1;
        g.dil[a] = used ? p->dilation[a] : 1;
        g.pad[a] = used ? p->pad_begin[a] : 0;
    }
    dense_strides(p->channels_last, g.c, g.in, g.xs);
    dense_strides(p->channels_last, g.cg, g.ker, g.ws);
    dense_strides(p->channels_last, g.k, g.out, g.ys);
    return g;
}

/* Logical coordinates (d0, d1, s0, s1, s2) of a linear index. */
static void decode(int64_t index, const int64_t *s, const int64_t *d1_sp, int64_t *co)
{
    co[0] = index / s[0];
    for (int a = 1; a < 5; a++)
        co[a] = (index / s[a]) % d1_sp[a - 1];
}

static double load(const void *p, ref_dtype t, int64_t i)
{
    if (t == REF_BFLOAT16) {
        uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return t == REF_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void store(void *p, ref_dtype t, int64_t i, double v)
{
    if (t == REF_BFLOAT16) {
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        if (f != f)
            bits = 0x7fc00000u;
        else
            bits += 0x7fffu + ((bits >> 16) & 1u); /* to nearest, ties to even */
        ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
    } else if (t == REF_FLOAT32) {
        ((float *)p)[i] = (float)v;
    } else {
        ((double *)p)[i] = v;
    }
}

static int64_t prod3(const int64_t *v)
{
    return v[0] * v[1] * v[2];
}

int64_t ref_x_elements(const ref_problem *p)
{
    geo g = make_geo(p);
    return g.n * g.c * prod3(g.in);
}

int64_t ref_w_elements(const ref_problem *p)
{
    geo g = make_geo(p);
    return g.k * g.cg * prod3(g.ker);
}

int64_t ref_y_elements(const ref_problem *p)
{
    geo g = make_geo(p);
    return g.n * g.k * prod3(g.out);
}

int64_t ref_offset(int spatial, int channels_last, const int64_t *dims, int64_t n, int64_t c,
                   const int64_t *pos)
{
    int64_t sp[3] = {1, 1, 1}, at[3] = {0, 0, 0}, s[5];
    for (int a = 0; a < spatial; a++) {
        sp[a] = dims[2 + a];
        at[a] = pos[a];
    }
    dense_strides(channels_last, dims[1], sp, s);
    return n * s[0] + c * s[1] + at[0] * s[2] + at[1] * s[3] + at[2] * s[4];
}

/* y[n,k,o] = sum over cg, kernel of x[n, g*Cg+cg, o*stride - pad + kpos*dil] * w[k,cg,kpos]. */
static double forward_at(const geo *g, ref_dtype t, const void *x, const void *w, const void *b,
                         int64_t index, double *abs_sum)
{
    int64_t co[5], yd[4] = {g->k, g->out[0], g->out[1], g->out[2]};
    decode(index, g->ys, yd, co);
    const int64_t n = co[0], k = co[1], c0 = (k / g->kg) * g->cg;
    double acc = 0.0, mag = 0.0;
    for (int64_t cg = 0; cg < g->cg; cg++) {
        for (int64_t k0 = 0; k0 < g->ker[0]; k0++) {
            int64_t i0 = co[2] * g->str[0] - g->pad[0] + k0 * g->dil[0];
            if (i0 < 0 || i0 >= g->in[0])
                continue;
            for (int64_t k1 = 0; k1 < g->ker[1]; k1++) {
                int64_t i1 = co[3] * g->str[1] - g->pad[1] + k1 * g->dil[1];
                if (i1 < 0 || i1 >= g->in[1])
                    continue;
                for (int64_t k2 = 0; k2 < g->ker[2]; k2++) {
                    int64_t i2 = co[4] * g->str[2] - g->pad[2] + k2 * g->dil[2];
                    if (i2 < 0 || i2 >= g->in[2])
                        continue;
                    double pr = load(x, t,
                                     n * g->xs[0] + (c0 + cg) * g->xs[1] + i0 * g->xs[2] +
                                         i1 * g->xs[3] + i2 * g->xs[4]) *
                                load(w, t,
                                     k * g->ws[0] + cg * g->ws[1] + k0 * g->ws[2] +
                                         k1 * g->ws[3] + k2 * g->ws[4]);
                    acc += pr;
                    mag += fabs(pr);
                }
            }
        }
    }
    if (b) {
        double bv = load(b, t, k);
        acc += bv;
        mag += fabs(bv);
    }
    if (g->relu && acc < 0.0)
        acc = 0.0;
    if (abs_sum)
        *abs_sum = mag;
    return acc;
}

/* dx[n,c,i] = sum of dy[n,k,o] * w[k,cg,kpos] over k of c's group and the
 * (kpos, o) with o*stride - pad + kpos*dil == i. */
static double backward_data_at(const geo *g, ref_dtype t, const void *w, const void *dy,
                               int64_t index, double *abs_sum)
{
    int64_t co[5], xd[4] = {g->c, g->in[0], g->in[1], g->in[2]};
    decode(index, g->xs, xd, co);
    const int64_t n = co[0], c = co[1], cg = c % g->cg, k0g = (c / g->cg) * g->kg;
    double acc = 0.0, mag = 0.0;
    for (int64_t k = k0g; k < k0g + g->kg; k++) {
        for (int64_t q0 = 0; q0 < g->ker[0]; q0++) {
            int64_t t0 = co[2] + g->pad[0] - q0 * g->dil[0];
            if (t0 < 0 || t0 % g->str[0] != 0 || t0 / g->str[0] >= g->out[0])
                continue;
            for (int64_t q1 = 0; q1 < g->ker[1]; q1++) {
                int64_t t1 = co[3] + g->pad[1] - q1 * g->dil[1];
                if (t1 < 0 || t1 % g->str[1] != 0 || t1 / g->str[1] >= g->out[1])
                    continue;
                for (int64_t q2 = 0; q2 < g->ker[2]; q2++) {
                    int64_t t2 = co[4] + g->pad[2] - q2 * g->dil[2];
                    if (t2 < 0 || t2 % g->str[2] != 0 || t2 / g->str[2] >= g->out[2])
                        continue;
                    double pr = load(dy, t,
                                     n * g->ys[0] + k * g->ys[1] + (t0 / g->str[0]) * g->ys[2] +
                                         (t1 / g->str[1]) * g->ys[3] +
                                         (t2 / g->str[2]) * g->ys[4]) *
                                load(w, t,
                                     k * g->ws[0] + cg * g->ws[1] + q0 * g->ws[2] +
                                         q1 * g->ws[3] + q2 * g->ws[4]);
                    acc += pr;
                    mag += fabs(pr);
                }
            }
        }
    }
    if (abs_sum)
        *abs_sum = mag;
    return acc;
}

/* dw[k,cg,kpos] = sum over n, o of dy[n,k,o] * x[n, g*Cg+cg, o*stride - pad + kpos*dil]. */
static double backward_filter_at(const geo *g, ref_dtype t, const void *x, const void *dy,
                                 int64_t index, double *abs_sum)
{
    int64_t co[5], wd[4] = {g->cg, g->ker[0], g->ker[1], g->ker[2]};
    decode(index, g->ws, wd, co);
    const int64_t k = co[0], c = (k / g->kg) * g->cg + co[1];
    double acc = 0.0, mag = 0.0;
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t o0 = 0; o0 < g->out[0]; o0++) {
            int64_t i0 = o0 * g->str[0] - g->pad[0] + co[2] * g->dil[0];
            if (i0 < 0 || i0 >= g->in[0])
                continue;
            for (int64_t o1 = 0; o1 < g->out[1]; o1++) {
                int64_t i1 = o1 * g->str[1] - g->pad[1] + co[3] * g->dil[1];
                if (i1 < 0 || i1 >= g->in[1])
                    continue;
                for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                    int64_t i2 = o2 * g->str[2] - g->pad[2] + co[4] * g->dil[2];
                    if (i2 < 0 || i2 >= g->in[2])
                        continue;
                    double pr = load(dy, t,
                                     n * g->ys[0] + k * g->ys[1] + o0 * g->ys[2] +
                                         o1 * g->ys[3] + o2 * g->ys[4]) *
                                load(x, t,
                                     n * g->xs[0] + c * g->xs[1] + i0 * g->xs[2] +
                                         i1 * g->xs[3] + i2 * g->xs[4]);
                    acc += pr;
                    mag += fabs(pr);
                }
            }
        }
    }
    if (abs_sum)
        *abs_sum = mag;
    return acc;
}

/* db[k] = sum of dy over batch and space. */
static double bias_grad_at(const geo *g, ref_dtype t, const void *dy, int64_t k)
{
    double acc = 0.0;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)
            for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                for (int64_t o2 = 0; o2 < g->out[2]; o2++)
                    acc += load(dy, t,
                                n * g->ys[0] + k * g->ys[1] + o0 * g->ys[2] + o1 * g->ys[3] +
                                    o2 * g->ys[4]);
    return acc;
}

double ref_forward_at(const ref_problem *p, ref_dtype dtype, const void *x, const void *w,
                      const void *b, int64_t index, double *abs_sum)
{
    geo g = make_geo(p);
    return forward_at(&g, dtype, x, w, b, index, abs_sum);
}

double ref_backward_data_at(const ref_problem *p, ref_dtype dtype, const void *w,
                            const void *dy, int64_t index, double *abs_sum)
{
    geo g = make_geo(p);
    return backward_data_at(&g, dtype, w, dy, index, abs_sum);
}

double ref_backward_filter_at(const ref_problem *p, ref_dtype dtype, const void *x,
                              const void *dy, int64_t index, double *abs_sum)
{
    geo g = make_geo(p);
    return backward_filter_at(&g, dtype, x, dy, index, abs_sum);
}

void ref_forward(const ref_problem *p, ref_dtype dtype, const void *x, const void *w,
                 const void *b, void *y)
{
    geo g = make_geo(p);
    int64_t count = g.n * g.k * prod3(g.out);
    for (int64_t i = 0; i < count; i++)
        store(y, dtype, i, forward_at(&g, dtype, x, w, b, i, NULL));
}

void ref_backward_data(const ref_problem *p, ref_dtype dtype, const void *w, const void *dy,
                       void *dx)
{
    geo g = make_geo(p);
    int64_t count = g.n * g.c * prod3(g.in);
    for (int64_t i = 0; i < count; i++)
        store(dx, dtype, i, backward_data_at(&g, dtype, w, dy, i, NULL));
}

void ref_backward_filter(const ref_problem *p, ref_dtype dtype, const void *x, const void *dy,
                         void *dw, void *db)
{
    geo g = make_geo(p);
    int64_t count = g.k * g.cg * prod3(g.ker);
    for (int64_t i = 0; i < count; i++)
        store(dw, dtype, i, backward_filter_at(&g, dtype, x, dy, i, NULL));
    if (db)
        for (int64_t k = 0; k < g.k; k++)
            store(db, dtype, k, bias_grad_at(&g, dtype, dy, k));
}
