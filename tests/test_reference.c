/*
 * test_reference.c -- checks the naive reference itself (every other test
 * trusts it): hand-computed examples, its point functions against its full
 * passes, and the identities a convolution must satisfy (adjoints, layout
 * independence). Uses no libconv function.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 1-D channels-first problem with one image and channel in, `k` out. */
static ref_problem problem_1d(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                              int64_t pad_begin, int64_t out)
{
    ref_problem p;
    memset(&p, 0, sizeof p);
    p.spatial = 1;
    p.n = p.c = p.k = p.groups = 1;
    p.in[0] = in;
    p.kernel[0] = kernel;
    p.stride[0] = stride;
    p.dilation[0] = dilation;
    p.pad_begin[0] = pad_begin;
    p.out[0] = out;
    return p;
}

static void assert_doubles(const double *got, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %lld: got %g want %g", (long long)i, got[i], want[i]);
}

static void test_padding_1d(void **state)
{
    (void)state;
    /* in 5, kernel 3, pad 1 both sides: y[o] = x[o-1] - x[o+1] */
    ref_problem p = problem_1d(5, 3, 1, 1, 1, 5);
    const double x[5] = {1, 2, 3, 4, 5}, w[3] = {1, 0, -1}, want[5] = {-2, -2, -2, -2, 4};
    double y[5], mag;
    ref_forward(&p, REF_FLOAT64, x, w, NULL, y);
    assert_doubles(y, want, 5);
    /* the last output sees x[3]*1 + x[4]*0 (+ a padded element) */
    assert_true(ref_forward_at(&p, REF_FLOAT64, x, w, NULL, 4, &mag) == 4.0);
    assert_true(mag == 4.0);
}

static void test_stride_dilation_1d(void **state)
{
    (void)state;
    /* in 7, kernel 2 dilated by 2 (spans 3), stride 2: y[o] = x[2o] + 10 x[2o+2] */
    ref_problem p = problem_1d(7, 2, 2, 2, 0, 3);
    const double x[7] = {1, 2, 3, 4, 5, 6, 7}, w[2] = {1, 10};
    double y[3], dx[7], dw[2], db[1];
    const double want_y[3] = {31, 53, 75};
    ref_forward(&p, REF_FLOAT64, x, w, NULL, y);
    assert_doubles(y, want_y, 3);

    /* transposed: each dy[o] lands on x[2o] (times 1) and x[2o+2] (times 10) */
    const double dy1[3] = {1, 1, 1}, want_dx[7] = {1, 0, 11, 0, 11, 0, 10};
    ref_backward_data(&p, REF_FLOAT64, w, dy1, dx);
    assert_doubles(dx, want_dx, 7);

    const double dy[3] = {1, 2, 3}, want_dw[2] = {1 + 6 + 15, 3 + 10 + 21}, want_db[1] = {6};
    ref_backward_filter(&p, REF_FLOAT64, x, dy, dw, db);
    assert_doubles(dw, want_dw, 2);
    assert_doubles(db, want_db, 1);
}

static void test_bias_relu_float(void **state)
{
    (void)state;
    ref_problem p = problem_1d(2, 1, 1, 1, 0, 2);
    p.relu = 1;
    const float x[2] = {1, -2}, w[1] = {1}, b[1] = {0.5f};
    float y[2];
    ref_forward(&p, REF_FLOAT32, x, w, b, y);
    assert_true(y[0] == 1.5f && y[1] == 0.0f);
    p.relu = 0;
    ref_forward(&p, REF_FLOAT32, x, w, b, y);
    assert_true(y[0] == 1.5f && y[1] == -1.5f);
}

static void test_offsets(void **state)
{
    (void)state;
    const int64_t dims[4] = {2, 3, 4, 5}, pos[2] = {2, 3};
    assert_int_equal(ref_offset(2, 0, dims, 0, 1, pos), (1 * 4 + 2) * 5 + 3);
    assert_int_equal(ref_offset(2, 1, dims, 0, 1, pos), (2 * 5 + 3) * 3 + 1);
    assert_int_equal(ref_offset(2, 1, dims, 1, 2, pos), ((1 * 4 + 2) * 5 + 3) * 3 + 2);
}

/* Depthwise channels-last 2-D 1x1: each output channel scales its own input. */
static void test_groups_channels_last(void **state)
{
    (void)state;
    ref_problem p;
    memset(&p, 0, sizeof p);
    p.spatial = 2;
    p.channels_last = 1;
    p.n = 1;
    p.c = 2;
    p.k = 4; /* channel multiplier 2 */
    p.groups = 2;
    p.in[0] = p.out[0] = 2;
    p.in[1] = p.out[1] = 3;
    p.kernel[0] = p.kernel[1] = p.stride[0] = p.stride[1] = p.dilation[0] = p.dilation[1] = 1;
    double x[12], y[24];
    const double w[4] = {2, 3, 5, 7};
    for (int i = 0; i < 12; i++)
        x[i] = i + 1;
    ref_forward(&p, REF_FLOAT64, x, w, NULL, y);
    const int64_t xd[4] = {1, 2, 2, 3}, yd[4] = {1, 4, 2, 3};
    for (int64_t h = 0; h < 2; h++)
        for (int64_t v = 0; v < 3; v++)
            for (int64_t k = 0; k < 4; k++) {
                const int64_t pos[2] = {h, v};
                double in = x[ref_offset(2, 1, xd, 0, k / 2, pos)];
                assert_true(y[ref_offset(2, 1, yd, 0, k, pos)] == w[k] * in);
            }
}

/* 3-D, all ones, kernel 2x2x2, padding 1: outputs count the covered inputs. */
static void test_3d_counts(void **state)
{
    (void)state;
    ref_problem p;
    memset(&p, 0, sizeof p);
    p.spatial = 3;
    p.n = p.c = p.k = p.groups = 1;
    for (int a = 0; a < 3; a++) {
        p.in[a] = 3;
        p.kernel[a] = 2;
        p.stride[a] = p.dilation[a] = p.pad_begin[a] = 1;
        p.out[a] = 4;
    }
    double x[27], w[8], y[64];
    for (int i = 0; i < 27; i++)
        x[i] = 1;
    for (int i = 0; i < 8; i++)
        w[i] = 1;
    ref_forward(&p, REF_FLOAT64, x, w, NULL, y);
    const int64_t dims[5] = {1, 1, 4, 4, 4};
    const int64_t corner[3] = {0, 0, 0}, center[3] = {1, 2, 1}, edge[3] = {0, 1, 2},
                  face[3] = {3, 0, 3};
    assert_true(y[ref_offset(3, 0, dims, 0, 0, corner)] == 1);
    assert_true(y[ref_offset(3, 0, dims, 0, 0, center)] == 8);
    assert_true(y[ref_offset(3, 0, dims, 0, 0, edge)] == 4);
    assert_true(y[ref_offset(3, 0, dims, 0, 0, face)] == 1);
}

/* Random problems with integer data in double buffers. */
typedef struct rcase {
    tu_problem tp;
    double *x, *w, *b, *y;
} rcase;

static void rcase_make(rcase *c, tu_rng *r)
{
    tu_random_problem(r, &c->tp);
    const ref_problem *p = &c->tp.p;
    int64_t nx = ref_x_elements(p), nw = ref_w_elements(p), ny = ref_y_elements(p);
    c->x = malloc(sizeof(double) * (size_t)(nx + 1));
    c->w = malloc(sizeof(double) * (size_t)(nw + 1));
    c->b = malloc(sizeof(double) * (size_t)(p->k + 1));
    c->y = malloc(sizeof(double) * (size_t)(ny + 1));
    double *bufs[4] = {c->x, c->w, c->b, c->y};
    int64_t counts[4] = {nx, nw, p->k, ny};
    for (int i = 0; i < 4; i++)
        for (int64_t j = 0; j < counts[i]; j++)
            bufs[i][j] = (double)tu_range(r, -3, 3);
}

static void rcase_free(rcase *c)
{
    free(c->x);
    free(c->w);
    free(c->b);
    free(c->y);
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Full passes == point functions, and the two adjoint identities
 * <dy, F(x, w)> == <Bdata(w, dy), x> == <Bfilter(x, dy), w>, exact for
 * integer data. */
static void test_random_identities(void **state)
{
    (void)state;
    tu_rng r;
    tu_seed(&r, 1234);
    for (int iter = 0; iter < 300; iter++) {
        rcase c;
        rcase_make(&c, &r);
        ref_problem *p = &c.tp.p;
        p->relu = 0;
        int64_t nx = ref_x_elements(p), nw = ref_w_elements(p), ny = ref_y_elements(p);
        double *fy = malloc(sizeof(double) * (size_t)(ny + 1));
        double *dx = malloc(sizeof(double) * (size_t)(nx + 1));
        double *dw = malloc(sizeof(double) * (size_t)(nw + 1));
        double db[64];
        ref_forward(p, REF_FLOAT64, c.x, c.w, NULL, fy);
        ref_backward_data(p, REF_FLOAT64, c.w, c.y, dx);
        ref_backward_filter(p, REF_FLOAT64, c.x, c.y, dw, db);
        char desc[512];
        tu_describe(&c.tp, desc, sizeof desc);
        for (int64_t i = 0; i < ny; i++)
            if (ref_forward_at(p, REF_FLOAT64, c.x, c.w, NULL, i, NULL) != fy[i])
                fail_msg("forward_at %lld, %s", (long long)i, desc);
        for (int64_t i = 0; i < nx; i++)
            if (ref_backward_data_at(p, REF_FLOAT64, c.w, c.y, i, NULL) != dx[i])
                fail_msg("backward_data_at %lld, %s", (long long)i, desc);
        for (int64_t i = 0; i < nw; i++)
            if (ref_backward_filter_at(p, REF_FLOAT64, c.x, c.y, i, NULL) != dw[i])
                fail_msg("backward_filter_at %lld, %s", (long long)i, desc);
        double a = dot(c.y, fy, ny), bd = dot(dx, c.x, nx), bf = dot(dw, c.w, nw);
        if (a != bd || a != bf)
            fail_msg("adjoint: %g %g %g, iter %d, %s", a, bd, bf, iter, desc);
        for (int64_t k = 0; k < p->k; k++) {
            double s = 0;
            for (int64_t i = 0; i < ny; i++)
                s += tu_y_channel(&c.tp, i) == k ? c.y[i] : 0.0;
            if (s != db[k])
                fail_msg("db[%lld]: %g != %g, %s", (long long)k, db[k], s, desc);
        }
        free(fy);
        free(dx);
        free(dw);
        rcase_free(&c);
    }
}

/* The same convolution stored channels-first and channels-last. */
static void test_random_layouts(void **state)
{
    (void)state;
    tu_rng r;
    tu_seed(&r, 99);
    for (int iter = 0; iter < 200; iter++) {
        rcase c;
        rcase_make(&c, &r);
        ref_problem *p = &c.tp.p, q = *p;
        q.channels_last = !p->channels_last;
        int64_t xd[5], wd[5], yd[5];
        int nd = tu_x_dims(&c.tp, xd);
        tu_w_dims(&c.tp, wd);
        tu_y_dims(&c.tp, yd);
        int64_t nx = ref_x_elements(p), nw = ref_w_elements(p), ny = ref_y_elements(p);
        double *qx = malloc(sizeof(double) * (size_t)(nx + 1));
        double *qw = malloc(sizeof(double) * (size_t)(nw + 1));
        double *y1 = malloc(sizeof(double) * (size_t)(ny + 1));
        double *y2 = malloc(sizeof(double) * (size_t)(ny + 1));
        double *y3 = malloc(sizeof(double) * (size_t)(ny + 1));
        tu_relayout(nd - 2, xd, sizeof(double), p->channels_last, c.x, qx);
        tu_relayout(nd - 2, wd, sizeof(double), p->channels_last, c.w, qw);
        ref_forward(p, REF_FLOAT64, c.x, c.w, c.b, y1);
        ref_forward(&q, REF_FLOAT64, qx, qw, c.b, y2);
        tu_relayout(nd - 2, yd, sizeof(double), q.channels_last, y2, y3);
        assert_doubles(y1, y3, ny);
        free(qx);
        free(qw);
        free(y1);
        free(y2);
        free(y3);
        rcase_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padding_1d),        cmocka_unit_test(test_stride_dilation_1d),
        cmocka_unit_test(test_bias_relu_float),   cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_groups_channels_last), cmocka_unit_test(test_3d_counts),
        cmocka_unit_test(test_random_identities), cmocka_unit_test(test_random_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
