/*
 * test_properties.c -- identities the library must satisfy, checked without
 * (or beyond) the reference: channels-first == channels-last; a grouped
 * convolution == the concatenation of its per-group convolutions; repeated
 * runs are bit-identical; backward-data and backward-filter are the adjoints
 * of forward; gradients agree with finite differences (fp64); db == the sums
 * of dy.
 */
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static conv_context_t ctx1, ctx3; /* 1 and 3 threads */

static int setup(void **state)
{
    (void)state;
    if (conv_context_create(CONV_DEVICE_CPU, 0, &ctx1) != CONV_STATUS_SUCCESS ||
        conv_context_create(CONV_DEVICE_CPU, 0, &ctx3) != CONV_STATUS_SUCCESS)
        return -1;
    if (conv_context_set_threads(ctx1, 1) != CONV_STATUS_SUCCESS ||
        conv_context_set_threads(ctx3, 3) != CONV_STATUS_SUCCESS)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conv_context_destroy(ctx1);
    conv_context_destroy(ctx3);
    return 0;
}

/* A random problem with an algorithm that applies to it. */
static void draw(tu_rng *r, tu_problem *tp)
{
    tu_random_problem(r, tp);
    static const conv_algo_t algos[4] = {CONV_ALGO_AUTO, CONV_ALGO_IM2COL_GEMM,
                                         CONV_ALGO_GEMM_1X1, CONV_ALGO_DEPTHWISE_DIRECT};
    tp->algo = algos[tu_range(r, 0, 3)];
    if (!tu_algo_applies(tp))
        tp->algo = CONV_ALGO_AUTO;
}

/* Runs op on a case whose inputs are filled, failing the test on an error. */
static void run_ok(tu_case *c, conv_context_t ctx, conv_op_t op, const char *what)
{
    conv_desc_t d;
    conv_status_t s = tu_make_desc(&c->tp, op, &d);
    if (s == CONV_STATUS_SUCCESS)
        s = tu_case_run(c, ctx, d, op, NULL);
    if (s != CONV_STATUS_SUCCESS)
        fail_msg("%s %s: status %d: %s", what, tu_op_name(op), (int)s, conv_last_error());
    conv_desc_destroy(d);
}

static void describe_seed(char *buf, size_t size, const char *test, uint64_t seed,
                          const tu_problem *tp)
{
    int len = snprintf(buf, size, "%s seed %" PRIu64 ": ", test, seed);
    tu_describe(tp, buf + len, size - (size_t)len);
}

/* Dims of the tensor in slot i of a case: x, w, b, y. */
static int slot_dims(const tu_problem *tp, int i, int64_t *dims)
{
    switch (i) {
    case 0: return tu_x_dims(tp, dims);
    case 1: return tu_w_dims(tp, dims);
    case 2: return tu_b_dims(tp, dims);
    default: return tu_y_dims(tp, dims);
    }
}

static tu_tensor *slot(tu_case *c, int i)
{
    tu_tensor *all[4] = {&c->x, &c->w, &c->b, &c->y};
    return all[i];
}

static int is_output(tu_case *c, conv_op_t op, int i)
{
    tu_tensor *outs[2] = {NULL, NULL};
    int n = tu_case_outputs(c, op, outs);
    return outs[0] == slot(c, i) || (n == 2 && outs[1] == slot(c, i));
}

/* ------------------------------------------- channels-first == channels-last */

static void test_layouts_agree(void **state)
{
    (void)state;
    for (int op = 0; op < 3; op++) {
        for (uint64_t seed = 1000; seed < 1150; seed++) {
            tu_rng r;
            tu_problem tp, other;
            tu_case a, b;
            char what[1024];
            tu_seed(&r, seed);
            draw(&r, &tp);
            other = tp;
            other.p.channels_last = !tp.p.channels_last;
            describe_seed(what, sizeof what, "layouts", seed, &tp);
            assert_ok(tu_case_make(&a, ctx3, &tp, 1));
            assert_ok(tu_case_make(&b, ctx3, &other, 0));
            tu_case_fill(&a, (conv_op_t)op, &r, 0);
            for (int i = 0; i < 4; i++) {
                int64_t dims[5];
                int nd = slot_dims(&tp, i, dims);
                if (slot(&a, i)->t)
                    tu_relayout(nd - 2, dims, tu_dtype_size(tp.dtype), tp.p.channels_last,
                                slot(&a, i)->data, slot(&b, i)->data);
            }
            run_ok(&a, ctx3, (conv_op_t)op, what);
            run_ok(&b, ctx3, (conv_op_t)op, what);
            for (int i = 0; i < 4; i++) {
                if (!slot(&a, i)->t || !is_output(&a, (conv_op_t)op, i))
                    continue;
                int64_t dims[5];
                int nd = slot_dims(&tp, i, dims);
                void *back = malloc(slot(&a, i)->bytes + 1);
                tu_relayout(nd - 2, dims, tu_dtype_size(tp.dtype), other.p.channels_last,
                            slot(&b, i)->data, back);
                if (!tu_same(back, slot(&a, i)->data, slot(&a, i)->bytes))
                    fail_msg("%s %s: slot %d differs between layouts", what,
                             tu_op_name((conv_op_t)op), i);
                free(back);
            }
            tu_case_free(&a);
            tu_case_free(&b);
        }
    }
}

/* --------------------------------------- grouped == per-group concatenation */

/* Copies the sub-tensor of `big` that starts at `offset` on `axis` (0 or 1)
 * into `small` (to_small), or counts where they differ (!to_small). */
static int64_t walk_slice(const tu_problem *tp, const int64_t *big_dims, tu_tensor *big,
                          int axis, int64_t offset, const int64_t *small_dims, tu_tensor *small,
                          int to_small)
{
    int sp = tp->p.spatial, cl = tp->p.channels_last;
    int64_t pos[3], ext[3] = {1, 1, 1}, differ = 0;
    for (int a = 0; a < sp; a++)
        ext[a] = small_dims[2 + a];
    for (int64_t i0 = 0; i0 < small_dims[0]; i0++)
        for (int64_t i1 = 0; i1 < small_dims[1]; i1++)
            for (pos[0] = 0; pos[0] < ext[0]; pos[0]++)
                for (pos[1] = 0; pos[1] < ext[1]; pos[1]++)
                    for (pos[2] = 0; pos[2] < ext[2]; pos[2]++) {
                        int64_t s = ref_offset(sp, cl, small_dims, i0, i1, pos);
                        int64_t g = ref_offset(sp, cl, big_dims, i0 + (axis == 0) * offset,
                                               i1 + (axis == 1) * offset, pos);
                        if (to_small)
                            tu_set(small, s, tu_get(big, g));
                        else
                            differ += tu_get(small, s) != tu_get(big, g);
                    }
    return differ;
}

/* The axis a slot is split along by groups, and the width of one group. */
static int group_axis(const tu_problem *tp, int i, int64_t *width)
{
    int64_t cg = tp->p.c / tp->p.groups, kg = tp->p.k / tp->p.groups;
    switch (i) {
    case 0: *width = cg; return 1;            /* x: channels */
    case 1: *width = kg; return 0;            /* w: output channels */
    case 2: *width = kg; return tp->bias_k_first ? 0 : 1;
    default: *width = kg; return 1;           /* y: channels */
    }
}

static void test_groups_concatenate(void **state)
{
    (void)state;
    int done = 0;
    for (uint64_t seed = 2000; done < 3 * 120; seed++) {
        tu_rng r;
        tu_problem tp;
        tu_seed(&r, seed);
        draw(&r, &tp);
        if (tp.p.groups < 2)
            continue;
        conv_op_t op = (conv_op_t)(done++ % 3);
        char what[1024];
        describe_seed(what, sizeof what, "groups", seed, &tp);
        tu_case whole;
        assert_ok(tu_case_make(&whole, ctx3, &tp, 0));
        tu_case_fill(&whole, op, &r, 0);
        run_ok(&whole, ctx3, op, what);

        tu_problem one = tp;
        one.p.groups = 1;
        one.p.c = tp.p.c / tp.p.groups;
        one.p.k = tp.p.k / tp.p.groups;
        for (int64_t g = 0; g < tp.p.groups; g++) {
            tu_case part;
            assert_ok(tu_case_make(&part, ctx1, &one, 1));
            tu_case_fill(&part, op, &r, 0); /* outputs NaN; inputs replaced next */
            for (int i = 0; i < 4; i++) {
                int64_t bd[5], sd[5], width;
                if (!slot(&whole, i)->t || is_output(&whole, op, i))
                    continue;
                slot_dims(&tp, i, bd);
                slot_dims(&one, i, sd);
                int axis = group_axis(&tp, i, &width);
                walk_slice(&tp, bd, slot(&whole, i), axis, g * width, sd, slot(&part, i), 1);
            }
            run_ok(&part, ctx1, op, what);
            for (int i = 0; i < 4; i++) {
                int64_t bd[5], sd[5], width;
                if (!slot(&whole, i)->t || !is_output(&whole, op, i))
                    continue;
                slot_dims(&tp, i, bd);
                slot_dims(&one, i, sd);
                int axis = group_axis(&tp, i, &width);
                int64_t differ =
                    walk_slice(&tp, bd, slot(&whole, i), axis, g * width, sd, slot(&part, i), 0);
                if (differ)
                    fail_msg("%s %s: group %" PRId64 " slot %d: %" PRId64 " elements differ",
                             what, tu_op_name(op), g, i, differ);
            }
            tu_case_free(&part);
        }
        tu_case_free(&whole);
    }
}

/* ------------------------------------------------------- bit-identical reruns */

static void test_repeatable(void **state)
{
    (void)state;
    conv_workspace_t ws;
    assert_ok(conv_workspace_create(ctx3, &ws));
    for (int op = 0; op < 3; op++) {
        for (uint64_t seed = 3000; seed < 3100; seed++) {
            tu_rng r;
            tu_problem tp;
            tu_case c;
            char what[1024];
            tu_seed(&r, seed);
            draw(&r, &tp);
            describe_seed(what, sizeof what, "repeat", seed, &tp);
            assert_ok(tu_case_make(&c, ctx3, &tp, 0));
            tu_case_fill(&c, (conv_op_t)op, &r, 1); /* real data: order matters */
            conv_desc_t d;
            assert_ok(tu_make_desc(&tp, (conv_op_t)op, &d));
            tu_snapshot first = {0, {NULL, NULL}};
            for (int run = 0; run < 3; run++) {
                tu_tensor *outs[2] = {NULL, NULL};
                int nout = tu_case_outputs(&c, (conv_op_t)op, outs);
                for (int i = 0; i < nout; i++)
                    tu_fill_nan(outs[i]);
                assert_ok(tu_case_run(&c, ctx3, d, (conv_op_t)op, run == 1 ? ws : NULL));
                if (run == 0) {
                    tu_snapshot_take(&first, &c, (conv_op_t)op);
                } else if (!tu_snapshot_same(&first, &c, (conv_op_t)op)) {
                    fail_msg("%s %s: run %d differs from run 0", what, tu_op_name((conv_op_t)op),
                             run);
                }
            }
            /* a differing result is detectable: the snapshot is not vacuous */
            tu_tensor *outs[2] = {NULL, NULL};
            tu_case_outputs(&c, (conv_op_t)op, outs);
            if (outs[0]->elems > 0) {
                tu_set(outs[0], 0, tu_get(outs[0], 0) + 1.0);
                assert_false(tu_snapshot_same(&first, &c, (conv_op_t)op));
            }
            tu_snapshot_free(&first);
            conv_desc_destroy(d);
            tu_case_free(&c);
        }
    }
    conv_workspace_destroy(ws);
}

/* ------------------------------------------------------------------ adjoints */

static double dot(const tu_tensor *a, const tu_tensor *b)
{
    double s = 0;
    for (int64_t i = 0; i < a->elems; i++)
        s += tu_get(a, i) * tu_get(b, i);
    return s;
}

/* dy: a tensor shaped like the case's y, filled with reals. */
static void make_dy(tu_tensor *dy, const tu_problem *tp, tu_rng *r)
{
    int64_t dims[5];
    int nd = tu_y_dims(tp, dims);
    assert_ok(tu_tensor_make(dy, ctx1, tp->dtype,
                             tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST
                                                 : CONV_LAYOUT_CHANNELS_FIRST,
                             nd, dims, 1));
    tu_fill_real(dy, r);
}

/* The gradients of L = <dy, F(x, w) + b> by the library, from f's x and w:
 * bd.x = Bdata(w, dy); bf.w (and bf.b with a bias) = Bfilter(x, dy). */
static void gradients(tu_case *f, const tu_tensor *dy, conv_context_t ctx, tu_case *bd,
                      tu_case *bf, const char *what)
{
    assert_ok(tu_case_make(bd, ctx, &f->tp, 1));
    assert_ok(tu_case_make(bf, ctx, &f->tp, 1));
    tu_copy(bd->w.data, f->w.data, f->w.bytes);
    tu_copy(bd->y.data, dy->data, dy->bytes);
    tu_fill_nan(&bd->x);
    tu_copy(bf->x.data, f->x.data, f->x.bytes);
    tu_copy(bf->y.data, dy->data, dy->bytes);
    tu_fill_nan(&bf->w);
    if (bf->b.t)
        tu_fill_nan(&bf->b);
    run_ok(bd, ctx, CONV_OP_BACKWARD_DATA, what);
    run_ok(bf, ctx, CONV_OP_BACKWARD_FILTER, what);
}

/* <dy, F(x, w)> == <Bdata(w, dy), x> == <Bfilter(x, dy), w> in fp64, to
 * 1e-9 of the sum of |terms| (sum of |dy| * F(|x|, |w|)). */
static void test_adjoints(void **state)
{
    (void)state;
    for (uint64_t seed = 4000; seed < 4150; seed++) {
        tu_rng r;
        tu_problem tp;
        tu_case fwd, bd, bf;
        tu_tensor dy;
        char what[1024];
        tu_seed(&r, seed);
        draw(&r, &tp);
        tp.dtype = CONV_DTYPE_FLOAT64;
        tp.bias = 0;
        tp.p.relu = 0;
        describe_seed(what, sizeof what, "adjoint", seed, &tp);
        assert_ok(tu_case_make(&fwd, ctx3, &tp, 1));
        tu_case_fill(&fwd, CONV_OP_FORWARD, &r, 1);
        make_dy(&dy, &tp, &r);
        run_ok(&fwd, ctx3, CONV_OP_FORWARD, what);
        gradients(&fwd, &dy, ctx3, &bd, &bf, what);

        double scale = 0;
        for (int64_t i = 0; i < fwd.y.elems; i++) {
            double mag;
            ref_forward_at(&tp.p, REF_FLOAT64, fwd.x.data, fwd.w.data, NULL, i, &mag);
            scale += fabs(tu_get(&dy, i)) * mag;
        }
        double a = dot(&dy, &fwd.y), b = dot(&bd.x, &fwd.x), c = dot(&bf.w, &fwd.w);
        double tol = 1e-9 * scale + 1e-300;
        if (fabs(a - b) > tol || fabs(a - c) > tol || isnan(a + b + c))
            fail_msg("%s: <dy,Fx> %.17g, <Bd dy,x> %.17g, <Bf dy,w> %.17g, scale %g", what, a, b,
                     c, scale);
        tu_tensor_free(&dy);
        tu_case_free(&fwd);
        tu_case_free(&bd);
        tu_case_free(&bf);
    }
}

/* -------------------------------------------------------- finite differences */

/* L = <r, F(x, w) + b>, computed by the library's forward. */
static double loss(tu_case *c, conv_desc_t d, const tu_tensor *r)
{
    tu_fill_nan(&c->y);
    assert_ok(tu_case_run(c, ctx1, d, CONV_OP_FORWARD, NULL));
    return dot(r, &c->y);
}

/* Central differences of L over every element of `t` (one of c's inputs)
 * against the analytic gradient `grad` (same shape). */
static void check_fd(tu_case *c, conv_desc_t d, const tu_tensor *r, tu_tensor *t,
                     const tu_tensor *grad, const char *name, const char *what)
{
    const double h = 1e-3;
    for (int64_t i = 0; i < t->elems; i++) {
        double keep = tu_get(t, i);
        tu_set(t, i, keep + h);
        double up = loss(c, d, r);
        tu_set(t, i, keep - h);
        double down = loss(c, d, r);
        tu_set(t, i, keep);
        double fd = (up - down) / (2 * h), g = tu_get(grad, i);
        if (!(fabs(fd - g) <= 1e-6 * (1.0 + fabs(g))))
            fail_msg("%s: d%s[%" PRId64 "]: finite difference %.12g, gradient %.12g", what, name,
                     i, fd, g);
    }
}

static void test_finite_differences(void **state)
{
    (void)state;
    int done = 0;
    for (uint64_t seed = 5000; done < 30; seed++) {
        tu_rng r;
        tu_problem tp;
        tu_seed(&r, seed);
        draw(&r, &tp);
        if (tp.p.n == 0 || ref_x_elements(&tp.p) > 150 || ref_w_elements(&tp.p) > 60)
            continue;
        done++;
        tp.dtype = CONV_DTYPE_FLOAT64;
        tp.bias = 1;
        tp.p.relu = 0; /* L is then linear in each input */
        char what[1024];
        describe_seed(what, sizeof what, "finite differences", seed, &tp);
        tu_case f, bd, bf;
        tu_tensor dy;
        assert_ok(tu_case_make(&f, ctx1, &tp, 1));
        tu_case_fill(&f, CONV_OP_FORWARD, &r, 1);
        make_dy(&dy, &tp, &r);
        gradients(&f, &dy, ctx1, &bd, &bf, what);
        conv_desc_t d;
        assert_ok(tu_make_desc(&tp, CONV_OP_FORWARD, &d));
        check_fd(&f, d, &dy, &f.x, &bd.x, "x", what);
        check_fd(&f, d, &dy, &f.w, &bf.w, "w", what);
        check_fd(&f, d, &dy, &f.b, &bf.b, "b", what);
        conv_desc_destroy(d);
        tu_tensor_free(&dy);
        tu_case_free(&f);
        tu_case_free(&bd);
        tu_case_free(&bf);
    }
}

/* ------------------------------------------------------------- db == sum dy */

static void test_db_is_sum_of_dy(void **state)
{
    (void)state;
    for (uint64_t seed = 6000; seed < 6200; seed++) {
        tu_rng r;
        tu_problem tp;
        tu_case c;
        char what[1024];
        tu_seed(&r, seed);
        draw(&r, &tp);
        tp.bias = 1;
        describe_seed(what, sizeof what, "db", seed, &tp);
        assert_ok(tu_case_make(&c, ctx3, &tp, 0));
        tu_case_fill(&c, CONV_OP_BACKWARD_FILTER, &r, 0);
        run_ok(&c, ctx3, CONV_OP_BACKWARD_FILTER, what);
        double sums[64] = {0};
        for (int64_t i = 0; i < c.y.elems; i++)
            sums[tu_y_channel(&tp, i)] += tu_get(&c.y, i);
        for (int64_t k = 0; k < tp.p.k; k++)
            if (tu_get(&c.b, k) != sums[k])
                fail_msg("%s: db[%" PRId64 "] = %g, sum of dy %g", what, k, tu_get(&c.b, k),
                         sums[k]);
        tu_case_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts_agree),      cmocka_unit_test(test_groups_concatenate),
        cmocka_unit_test(test_repeatable),         cmocka_unit_test(test_adjoints),
        cmocka_unit_test(test_finite_differences), cmocka_unit_test(test_db_is_sum_of_dy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
