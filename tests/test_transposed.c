/*
 * test_transposed.c -- CONV_MODE_TRANSPOSED (ONNX ConvTranspose) against the
 * naive reference. A transposed convolution T is the adjoint of the
 * convolution U it undoes: U's input is T's output (N, Cout, out), U's
 * output T's input (N, Cin, in), the filter (Cin, Cout/G, kernel) the same
 * memory. So, with integer data and exact comparisons:
 *   T forward          = U backward_data(dy = x) + bias, then relu
 *   T backward_data    = U forward(x = dy)
 *   T backward_filter  = U backward_filter(x = dy, dy = x); db = sums of dy
 * Random problems cover rank 1-3, both layouts, groups, stride, dilation,
 * explicit/VALID/SAME padding, output padding, batch 0, fp32/fp64.
 */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBLEMS 400 /* per pass */

/* A transposed problem: u is the convolution it undoes, as the reference
 * sees it (u.p.in = T's output sizes, u.p.out = T's input sizes, u.p.c =
 * Cout, u.p.k = Cin); the descriptor takes u's settings plus out_pad. */
typedef struct tproblem {
    tu_problem u;
    int64_t out_pad[3];
} tproblem;

/* The header's rule, per axis: out = (in - 1) * s - pb - pe + e + out_pad;
 * SAME gives out = in * s with the total padding split as for a convolution. */
static int resolve(tproblem *t)
{
    ref_problem *p = &t->u.p;
    for (int a = 0; a < p->spatial; a++) {
        int64_t in = p->out[a], s = p->stride[a];
        int64_t e = (p->kernel[a] - 1) * p->dilation[a] + 1;
        int64_t span = (in - 1) * s + e + t->out_pad[a];
        int64_t pb = t->u.desc_pad_begin[a], pe = t->u.desc_pad_end[a];
        if (t->u.auto_pad == CONV_AUTO_PAD_VALID) {
            pb = pe = 0;
        } else if (t->u.auto_pad != CONV_AUTO_PAD_NOTSET) {
            int64_t total = span - in * s;
            if (total < 0)
                return 0; /* the header does not say: not drawn */
            pb = t->u.auto_pad == CONV_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        }
        p->pad_begin[a] = pb;
        t->u.pad_end[a] = pe;
        p->in[a] = span - pb - pe;
        if (p->in[a] < 1)
            return 0;
    }
    return 1;
}

static void random_tproblem(tu_rng *r, tproblem *t)
{
    static const int64_t kmax[3] = {5, 3, 3}, inmax[3] = {9, 5, 3};
    do {
        int spatial = (int)tu_range(r, 1, 3);
        int64_t ones[3] = {1, 1, 1};
        memset(t, 0, sizeof *t);
        tu_problem_init(&t->u, spatial, 1, 1, 1, ones, ones);
        ref_problem *p = &t->u.p;
        p->groups = tu_chance(r, 60) ? 1 : tu_range(r, 2, 3);
        p->c = p->groups * tu_range(r, 1, 3); /* Cout */
        p->k = p->groups * tu_range(r, 1, 3); /* Cin */
        p->n = tu_chance(r, 5) ? 0 : tu_range(r, 1, 2);
        p->channels_last = tu_chance(r, 50);
        int mode = (int)tu_range(r, 0, 99);
        t->u.auto_pad = mode < 55   ? CONV_AUTO_PAD_NOTSET
                        : mode < 70 ? CONV_AUTO_PAD_VALID
                        : mode < 85 ? CONV_AUTO_PAD_SAME_UPPER
                                    : CONV_AUTO_PAD_SAME_LOWER;
        for (int a = 0; a < spatial; a++) {
            p->kernel[a] = tu_range(r, 1, kmax[spatial - 1]);
            p->stride[a] = tu_range(r, 1, 3);
            p->dilation[a] = tu_range(r, 1, spatial == 3 ? 2 : 3);
            p->out[a] = tu_range(r, 1, inmax[spatial - 1]);
            int64_t most = p->stride[a] > p->dilation[a] ? p->stride[a] : p->dilation[a];
            t->out_pad[a] = tu_range(r, 0, most - 1);
            t->u.desc_pad_begin[a] = tu_range(r, 0, 3);
            t->u.desc_pad_end[a] = tu_range(r, 0, 3);
        }
        t->u.dtype = tu_chance(r, 50) ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32;
        t->u.bias = tu_chance(r, 50);
        p->relu = tu_chance(r, 30);
        t->u.algo = tu_chance(r, 50) ? CONV_ALGO_AUTO : CONV_ALGO_IM2COL_GEMM;
    } while (!resolve(t));
}

static conv_status_t make_desc(const tproblem *t, conv_op_t op, conv_desc_t *d)
{
    conv_status_t s = tu_make_desc(&t->u, op, d);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_mode(*d, CONV_MODE_TRANSPOSED);
    if (s == CONV_STATUS_SUCCESS)
        s = conv_desc_set_output_padding(*d, t->out_pad);
    return s;
}

/* The tensors of T: x (N, Cin, in) = u's y, w = u's w, y (N, Cout, out) = u's x,
 * b (1, Cout, 1...). */
typedef struct ttensors {
    tu_tensor x, w, b, y;
} ttensors;

static void make_tensors(ttensors *tt, conv_context_t ctx, const tproblem *t, int wrap)
{
    const tu_problem *u = &t->u;
    conv_layout_t layout =
        u->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST : CONV_LAYOUT_CHANNELS_FIRST;
    int64_t dims[5];
    int nd = tu_y_dims(u, dims);
    memset(tt, 0, sizeof *tt);
    assert_ok(tu_tensor_make(&tt->x, ctx, u->dtype, layout, nd, dims, wrap));
    tu_w_dims(u, dims);
    assert_ok(tu_tensor_make(&tt->w, ctx, u->dtype, layout, nd, dims, wrap));
    tu_x_dims(u, dims);
    assert_ok(tu_tensor_make(&tt->y, ctx, u->dtype, layout, nd, dims, wrap));
    for (int i = 0; i < nd; i++)
        dims[i] = i == 1 ? u->p.c : 1;
    assert_ok(tu_tensor_make(&tt->b, ctx, u->dtype, layout, nd, dims, wrap));
}

static void free_tensors(ttensors *tt)
{
    tu_tensor_free(&tt->x);
    tu_tensor_free(&tt->w);
    tu_tensor_free(&tt->b);
    tu_tensor_free(&tt->y);
}

/* Channel (axis 1) of element i of T's output, (N, Cout, u.in...). */
static int64_t out_channel(const tproblem *t, int64_t i)
{
    const ref_problem *p = &t->u.p;
    if (p->channels_last)
        return i % p->c;
    int64_t plane = 1;
    for (int a = 0; a < p->spatial; a++)
        plane *= p->in[a];
    return (i / plane) % p->c;
}

/* Compares `got` with wanted values in the dtype (bit-exact). */
static void expect_equal(const char *what, const char *name, const tu_tensor *got,
                         const void *want)
{
    for (int64_t i = 0; i < got->elems; i++) {
        double w = got->dtype == CONV_DTYPE_FLOAT64 ? ((const double *)want)[i]
                                                    : (double)((const float *)want)[i];
        if (!(tu_get(got, i) == w))
            fail_msg("%s: %s[%" PRId64 "] got %.17g want %.17g", what, name, i, tu_get(got, i),
                     w);
    }
}

static void run_one(conv_op_t op, uint64_t seed)
{
    tu_rng r;
    tproblem t;
    tu_seed(&r, seed);
    random_tproblem(&r, &t);
    if (op == CONV_OP_BACKWARD_DATA)
        t.u.bias = 0;
    conv_context_t ctx = tu_contexts[tu_range(&r, 0, 2)];
    char what[1024];
    int len = snprintf(what, sizeof what,
                       "seed %" PRIu64 " transposed %s out_pad=[%" PRId64 ",%" PRId64
                       ",%" PRId64 "], as the convolution it undoes: ",
                       seed, tu_op_name(op), t.out_pad[0], t.out_pad[1], t.out_pad[2]);
    tu_describe(&t.u, what + len, sizeof what - (size_t)len);

    ttensors tt;
    conv_desc_t d;
    make_tensors(&tt, ctx, &t, tu_chance(&r, 50));
    assert_ok(make_desc(&t, op, &d));

    /* shape inference: T's output dims from its input and filter */
    int64_t xd[5], wd[5], yd[5], got[5];
    int nd = tu_y_dims(&t.u, xd);
    tu_w_dims(&t.u, wd);
    tu_x_dims(&t.u, yd);
    conv_status_t s = conv_output_dims(d, nd, xd, wd, got);
    if (s != CONV_STATUS_SUCCESS || memcmp(got, yd, sizeof(int64_t) * (size_t)nd) != 0)
        fail_msg("%s: conv_output_dims status %d: %s", what, (int)s, conv_last_error());

    ref_problem plain = t.u.p;
    plain.relu = 0;
    ref_dtype rt = tu_ref_dtype(t.u.dtype);
    size_t es = tu_dtype_size(t.u.dtype);
    void *want = NULL;
    switch (op) {
    case CONV_OP_FORWARD:
        tu_fill_int(&tt.x, &r, -3, 3);
        tu_fill_int(&tt.w, &r, -3, 3);
        tu_fill_int(&tt.b, &r, -3, 3);
        tu_fill_nan(&tt.y);
        s = conv_forward(ctx, d, tt.x.t, tt.w.t, t.u.bias ? tt.b.t : NULL, tt.y.t, NULL);
        want = malloc(tt.y.bytes + es);
        ref_backward_data(&plain, rt, tt.w.data, tt.x.data, want);
        for (int64_t i = 0; i < tt.y.elems; i++) { /* bias, then relu */
            double v = rt == REF_FLOAT64 ? ((double *)want)[i] : ((float *)want)[i];
            v += t.u.bias ? tu_get(&tt.b, out_channel(&t, i)) : 0.0;
            v = t.u.p.relu && v < 0 ? 0.0 : v;
            if (rt == REF_FLOAT64)
                ((double *)want)[i] = v;
            else
                ((float *)want)[i] = (float)v;
        }
        if (s == CONV_STATUS_SUCCESS)
            expect_equal(what, "y", &tt.y, want);
        break;
    case CONV_OP_BACKWARD_DATA:
        tu_fill_int(&tt.w, &r, -3, 3);
        tu_fill_int(&tt.y, &r, -3, 3);
        tu_fill_nan(&tt.x);
        s = conv_backward_data(ctx, d, tt.w.t, tt.y.t, tt.x.t, NULL);
        want = malloc(tt.x.bytes + es);
        ref_forward(&plain, rt, tt.y.data, tt.w.data, NULL, want);
        if (s == CONV_STATUS_SUCCESS)
            expect_equal(what, "dx", &tt.x, want);
        break;
    case CONV_OP_BACKWARD_FILTER:
        tu_fill_int(&tt.x, &r, -3, 3);
        tu_fill_int(&tt.y, &r, -3, 3);
        tu_fill_nan(&tt.w);
        tu_fill_nan(&tt.b);
        s = conv_backward_filter(ctx, d, tt.x.t, tt.y.t, tt.w.t, t.u.bias ? tt.b.t : NULL, NULL);
        want = malloc(tt.w.bytes + (size_t)t.u.p.c * es + es);
        ref_backward_filter(&plain, rt, tt.y.data, tt.x.data, want, NULL);
        if (s != CONV_STATUS_SUCCESS)
            break;
        expect_equal(what, "dw", &tt.w, want);
        if (t.u.bias) {
            double sums[16] = {0};
            for (int64_t i = 0; i < tt.y.elems; i++)
                sums[out_channel(&t, i)] += tu_get(&tt.y, i);
            for (int64_t k = 0; k < t.u.p.c; k++)
                if (tu_get(&tt.b, k) != sums[k])
                    fail_msg("%s: db[%" PRId64 "] got %g want %g", what, k, tu_get(&tt.b, k),
                             sums[k]);
        }
        break;
    }
    if (s != CONV_STATUS_SUCCESS)
        fail_msg("%s: status %d (%s): %s", what, (int)s, conv_status_string(s),
                 conv_last_error());
    free(want);
    conv_desc_destroy(d);
    free_tensors(&tt);
}

static void run_many(conv_op_t op, uint64_t base)
{
    uint64_t first = tu_env_seed(base);
    int n = tu_env_count(PROBLEMS);
    for (int i = 0; i < n; i++)
        run_one(op, first + (uint64_t)i);
    print_message("transposed %s: %d problems (seeds %" PRIu64 "..%" PRIu64 ")\n",
                  tu_op_name(op), n, first, first + (uint64_t)n - 1);
}

static void test_forward(void **state)
{
    (void)state;
    run_many(CONV_OP_FORWARD, 900000);
}

static void test_backward_data(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_DATA, 910000);
}

static void test_backward_filter(void **state)
{
    (void)state;
    run_many(CONV_OP_BACKWARD_FILTER, 920000);
}

/* Hand-computed: 1-D, in 3, kernel 3, stride 2, pad 1/1, output padding 1:
 * out = (3 - 1) * 2 - 2 + 3 + 1 = 6. Each x[i] adds x[i] * w[k] at 2i - 1 + k. */
static void test_hand_example(void **state)
{
    (void)state;
    conv_desc_t d;
    const int64_t s[1] = {2}, pb[1] = {1}, pe[1] = {1}, op[1] = {1};
    const int64_t xd[3] = {1, 1, 3}, wd[3] = {1, 1, 3}, yd[3] = {1, 1, 6};
    double x[3] = {1, 10, 100}, w[3] = {1, 2, 3}, y[6], keep[6];
    int64_t got[3];
    conv_tensor_t tx, tw, ty;
    assert_ok(conv_desc_create(1, &d));
    assert_ok(conv_desc_set_strides(d, s));
    assert_ok(conv_desc_set_padding(d, pb, pe));
    assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
    assert_ok(conv_desc_set_output_padding(d, op));
    assert_ok(conv_output_dims(d, 3, xd, wd, got));
    assert_int_equal(got[2], 6);
    assert_ok(conv_tensor_wrap(tu_contexts[0], CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, xd,
                               x, &tx));
    assert_ok(conv_tensor_wrap(tu_contexts[0], CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, wd,
                               w, &tw));
    assert_ok(conv_tensor_wrap(tu_contexts[0], CONV_DTYPE_FLOAT64, CONV_LAYOUT_CHANNELS_FIRST, 3, yd,
                               y, &ty));
    assert_ok(conv_forward(tu_contexts[0], d, tx, tw, NULL, ty, NULL));
    /* positions: x0 -> -1,0,1; x1 -> 1,2,3; x2 -> 3,4,5 (-1 is cut by the padding) */
    const double want[6] = {2, 3 + 10, 20, 30 + 100, 200, 300};
    for (int i = 0; i < 6; i++)
        assert_true(y[i] == want[i]);

    /* output padding must stay below stride or dilation: 2 is neither < 2 nor < 1 */
    const int64_t bad[1] = {2};
    assert_ok(conv_desc_set_output_padding(d, bad));
    memcpy(keep, y, sizeof keep);
    assert_status(conv_forward(tu_contexts[0], d, tx, tw, NULL, ty, NULL),
                  CONV_STATUS_INVALID_ARGUMENT);
    assert_memory_equal(keep, y, sizeof keep);
    assert_true(tu_error_mentions(2));
    conv_tensor_destroy(tx);
    conv_tensor_destroy(tw);
    conv_tensor_destroy(ty);
    conv_desc_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_example),
        cmocka_unit_test(test_forward),
        cmocka_unit_test(test_backward_data),
        cmocka_unit_test(test_backward_filter),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
