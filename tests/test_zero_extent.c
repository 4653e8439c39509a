/*
 * test_zero_extent.c -- every CPU algorithm, forced and chosen (AUTO), on
 * problems with one extent 0: the batch N, the input channels C, the
 * filters K, or one spatial input axis (padded so that the output still has
 * one position, every tap of it in the padding). Every pass -- forward
 * without bias, with bias, with bias and ReLU; backward-data; backward-filter
 * without and with db -- in both layouts, fp32 and fp64, 1-D to 3-D, and in
 * CONVOLUTION and TRANSPOSED mode.
 *
 * The outputs start as NaN and are compared exactly (integer data) with the
 * naive reference, which handles empty reductions by itself: an empty sum
 * is 0, so forward gives act(bias) (or 0) where C = 0 or every tap is
 * padding, backward-data gives 0 where K = 0, backward-filter gives dw = 0
 * and db = 0 where N = 0. An element a solver leaves unwritten stays NaN and
 * fails. A forced algorithm may decline (UNSUPPORTED, counted, outputs
 * untouched); AUTO must run. conv_workspace_size and conv_chosen_algorithm
 * must agree with the pass (the same status; the forced algorithm chosen),
 * and the pass runs on a workspace of exactly the size asked for.
 *
 * In TRANSPOSED mode the problem is kept as the convolution U it undoes
 * (see test_transposed.c): U's input is T's output, U's output T's input,
 * so T's forward is U's backward-data plus bias and ReLU, T's
 * backward-data is U's forward and T's backward-filter U's backward-filter
 * (db: the sums of T's dy). Its zero extents are N, Cout (U's C), Cin (U's
 * K) and T's input axes (U's output axes): for those conv_output_dims is
 * the oracle -- when it refuses the shape, every call must refuse it too.
 *
 * Every case has an index; CONV_TEST_SEED=i CONV_TEST_COUNT=n runs cases
 * i..i+n-1 of each mode alone. Failures are listed, then summed up per
 * algorithm, pass and zero extent.
 */
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Base problems that the algorithms apply to before an extent goes to 0. */
typedef struct shape {
    const char *name;
    int64_t c, k, groups, kernel, stride, dilation, pad_begin, pad_end;
} shape;

static const shape kShapes[] = {
    {"3x3", 3, 4, 1, 3, 1, 1, 1, 1},        /* Winograd, implicit GEMM, im2col */
    {"1x1", 3, 4, 1, 1, 1, 1, 0, 0},        /* gemm_1x1 */
    {"depthwise", 3, 6, 3, 3, 1, 1, 1, 1},  /* depthwise_direct, multiplier 2 */
    {"strided", 3, 4, 1, 2, 2, 2, 1, 2},    /* stride and dilation 2 */
    {"depthwise s2", 3, 3, 3, 3, 2, 1, 1, 1}, /* depthwise_direct's stride-2 kernels */
};
enum { SHAPES = sizeof kShapes / sizeof kShapes[0] };
static const int64_t kIn = 4;    /* every spatial input axis */
static const int64_t kBatch = 2;

/* AUTO and every CPU solver (conv_algo_list), filled by main. */
static conv_algo_t kAlgos[TU_MAX_ALGOS];
static int ALGOS;

typedef struct variant {
    const char *name;
    conv_op_t op;
    int bias; /* forward: a bias; backward-filter: db */
    int relu;
} variant;

static const variant kVariants[] = {
    {"forward", CONV_OP_FORWARD, 0, 0},
    {"forward+bias", CONV_OP_FORWARD, 1, 0},
    {"forward+bias+relu", CONV_OP_FORWARD, 1, 1},
    {"backward_data", CONV_OP_BACKWARD_DATA, 0, 0},
    {"backward_filter", CONV_OP_BACKWARD_FILTER, 0, 0},
    {"backward_filter+db", CONV_OP_BACKWARD_FILTER, 1, 0},
};
enum { VARIANTS = sizeof kVariants / sizeof kVariants[0] };

/* Which extent is 0: N, C, K, or spatial input axis (ZERO_IN + a). */
enum { ZERO_N, ZERO_C, ZERO_K, ZERO_IN, ZEROS = ZERO_IN + 3 };

static const char *zero_name(int transposed, int zero)
{
    static const char *const conv[ZEROS] = {"N", "C", "K", "in[0]", "in[1]", "in[2]"};
    static const char *const trans[ZEROS] = {"N", "Cout", "Cin", "in[0]", "in[1]", "in[2]"};
    return transposed ? trans[zero] : conv[zero];
}

#define CASES ((int64_t)3 * SHAPES * ZEROS * 2 * 2 * ALGOS * VARIANTS) /* per mode */

typedef struct zcase {
    int transposed, spatial, shape, zero, channels_last, variant;
    conv_dtype_t dtype;
    conv_algo_t algo;
} zcase;

/* The case running now (for messages, and a debugger should one crash). */
static char current[1024];

/* Case `index` of a mode; 0 where the zero axis is beyond the rank. */
static int decode(int transposed, int64_t index, zcase *z)
{
    z->transposed = transposed;
    z->variant = (int)(index % VARIANTS), index /= VARIANTS;
    z->algo = kAlgos[index % ALGOS], index /= ALGOS;
    z->dtype = index % 2 ? CONV_DTYPE_FLOAT64 : CONV_DTYPE_FLOAT32, index /= 2;
    z->channels_last = (int)(index % 2), index /= 2;
    z->zero = (int)(index % ZEROS), index /= ZEROS;
    z->shape = (int)(index % SHAPES), index /= SHAPES;
    z->spatial = 1 + (int)index;
    return z->zero < ZERO_IN + z->spatial;
}

/* The output padding that makes the transposed convolution's output the
 * size of U's input on axis a (where the stride drops a remainder). */
static int64_t output_padding(const tu_problem *tp, int a)
{
    const ref_problem *p = &tp->p;
    const int64_t dilated = (p->kernel[a] - 1) * p->dilation[a] + 1;
    return p->in[a] - ((p->out[a] - 1) * p->stride[a] + dilated - p->pad_begin[a] - tp->pad_end[a]);
}

/* The problem of a case as the reference sees it (for TRANSPOSED: the
 * convolution it undoes, without bias or ReLU, which T applies itself);
 * without `zero`, the base problem before its extent goes to 0. Returns 0
 * when the zero extent cannot be given a valid shape. */
static int build(const zcase *z, int zero, tu_problem *tp)
{
    const shape *s = &kShapes[z->shape];
    const variant *v = &kVariants[z->variant];
    const int64_t in[3] = {kIn, kIn, kIn}, kernel[3] = {s->kernel, s->kernel, s->kernel};
    tu_problem_init(tp, z->spatial, kBatch, s->c, s->k, in, kernel);
    ref_problem *p = &tp->p;
    p->groups = s->groups;
    p->channels_last = z->channels_last;
    tp->dtype = z->dtype;
    tp->algo = z->algo;
    for (int a = 0; a < z->spatial; a++) {
        p->stride[a] = s->stride;
        p->dilation[a] = s->dilation;
        tp->desc_pad_begin[a] = s->pad_begin;
        tp->desc_pad_end[a] = s->pad_end;
    }
    const int axis = z->zero - ZERO_IN;
    const int64_t dilated = (s->kernel - 1) * s->dilation + 1;
    if (zero) {
        switch (z->zero) {
        case ZERO_N: p->n = 0; break;
        case ZERO_C: p->c = 0; break;
        case ZERO_K: p->k = 0; break;
        default:
            if (z->transposed) /* below, once the convolution is resolved */
                break;
            /* pad to one output position of padding only */
            p->in[axis] = 0;
            if (tp->desc_pad_begin[axis] + tp->desc_pad_end[axis] < dilated)
                tp->desc_pad_end[axis] = dilated - tp->desc_pad_begin[axis];
        }
    }
    if (!tu_resolve(tp))
        return 0;
    if (zero && z->transposed && z->zero >= ZERO_IN) {
        /* T's input axis 0 is U's output axis: unpadded, T's output then
         * spans (0 - 1) * stride + dilated. */
        p->in[axis] = dilated - s->stride;
        p->out[axis] = 0;
        p->pad_begin[axis] = tp->pad_end[axis] = 0;
        tp->desc_pad_begin[axis] = tp->desc_pad_end[axis] = 0;
        if (p->in[axis] < 1)
            return 0;
    }
    for (int a = 0; z->transposed && a < z->spatial; a++) {
        int64_t out_pad = output_padding(tp, a); /* must be < stride or dilation */
        if (out_pad >= p->stride[a] && out_pad >= p->dilation[a])
            return 0;
    }
    tp->bias = !z->transposed && v->bias;
    p->relu = !z->transposed && v->relu;
    return 1;
}

static void describe(const zcase *z, int64_t index, const tu_problem *tp, char *buf,
                     size_t size)
{
    int len = snprintf(buf, size, "case %" PRId64 " %s %s, %s = 0, shape %s%s: ", index,
                       z->transposed ? "transposed" : "convolution", kVariants[z->variant].name,
                       zero_name(z->transposed, z->zero), kShapes[z->shape].name,
                       z->transposed ? " (as the convolution it undoes)" : "");
    tu_describe(tp, buf + len, size - (size_t)len);
}

/* The tensors of a case in T's roles: input, output and bias (for
 * CONVOLUTION simply the case's x, y and b). */
typedef struct roles {
    tu_tensor *in, *w, *out, *bias;
} roles;

/* The outputs of the pass (1 or 2). */
static int outputs(const roles *r, conv_op_t op, tu_tensor **outs)
{
    switch (op) {
    case CONV_OP_FORWARD: outs[0] = r->out; return 1;
    case CONV_OP_BACKWARD_DATA: outs[0] = r->in; return 1;
    default:
        outs[0] = r->w;
        outs[1] = r->bias;
        return r->bias->t ? 2 : 1;
    }
}

static conv_status_t run_pass(const roles *r, conv_context_t ctx, conv_desc_t d, conv_op_t op,
                              conv_workspace_t ws)
{
    switch (op) {
    case CONV_OP_FORWARD:
        return conv_forward(ctx, d, r->in->t, r->w->t, r->bias->t, r->out->t, ws);
    case CONV_OP_BACKWARD_DATA: return conv_backward_data(ctx, d, r->w->t, r->out->t, r->in->t, ws);
    default: return conv_backward_filter(ctx, d, r->in->t, r->out->t, r->w->t, r->bias->t, ws);
    }
}

static int all_nan(const tu_tensor *t)
{
    for (int64_t i = 0; i < t->elems; i++)
        if (!isnan(tu_get(t, i)))
            return 0;
    return 1;
}

/* Channel (axis 1) of element i of U's x, T's output. */
static int64_t x_channel(const tu_problem *tp, int64_t i)
{
    if (tp->p.channels_last)
        return i % tp->p.c;
    return (i / (tp->p.in[0] * tp->p.in[1] * tp->p.in[2])) % tp->p.c;
}

/* T's forward: U's backward-data of T's input, plus the bias, then ReLU. */
static int check_transposed_forward(const tu_case *c, const tu_tensor *b, int relu, char *msg,
                                    size_t size)
{
    ref_dtype t = tu_ref_dtype(c->tp.dtype);
    for (int64_t i = 0; i < c->x.elems; i++) {
        double want = ref_backward_data_at(&c->tp.p, t, c->w.data, c->y.data, i, NULL);
        if (b->t)
            want += tu_get(b, x_channel(&c->tp, i));
        if (relu && want < 0)
            want = 0;
        if (!(tu_get(&c->x, i) == want)) {
            snprintf(msg, size, "y: element %" PRId64 " of %" PRId64 ": got %.17g want %.17g", i,
                     c->x.elems, tu_get(&c->x, i), want);
            return 1;
        }
    }
    return 0;
}

/* T's db: the sums of T's dy (U's x) per channel. */
static int check_transposed_db(const tu_case *c, const tu_tensor *db, char *msg, size_t size)
{
    for (int64_t k = 0; k < db->elems; k++) {
        double want = 0;
        for (int64_t i = 0; i < c->x.elems; i++)
            if (x_channel(&c->tp, i) == k)
                want += tu_get(&c->x, i);
        if (!(tu_get(db, k) == want)) {
            snprintf(msg, size, "db[%" PRId64 "]: got %.17g want %.17g", k, tu_get(db, k), want);
            return 1;
        }
    }
    return 0;
}

/* The outputs of a pass that succeeded, against the reference. */
static int check_values(tu_case *c, const roles *r, const zcase *z, char *msg, size_t size)
{
    const variant *v = &kVariants[z->variant];
    if (!z->transposed)
        return tu_case_check(c, v->op, 1, msg, size);
    switch (v->op) {
    case CONV_OP_FORWARD: return check_transposed_forward(c, r->bias, v->relu, msg, size);
    case CONV_OP_BACKWARD_DATA: return tu_case_check(c, CONV_OP_FORWARD, 1, msg, size);
    default:
        return tu_case_check(c, CONV_OP_BACKWARD_FILTER, 1, msg, size) ||
               (r->bias->t && check_transposed_db(c, r->bias, msg, size));
    }
}

/* The pass of U that fills the same tensors as T's pass. */
static conv_op_t lowered_op(const zcase *z)
{
    conv_op_t op = kVariants[z->variant].op;
    if (!z->transposed || op == CONV_OP_BACKWARD_FILTER)
        return op;
    return op == CONV_OP_FORWARD ? CONV_OP_BACKWARD_DATA : CONV_OP_FORWARD;
}

enum { RAN, DECLINED, REFUSED, FAILED, SKIPPED };

/* Whether conv_output_dims accepts the shape of T's (or the convolution's)
 * input and filter. */
static int shape_accepted(conv_desc_t d, const roles *r)
{
    int64_t xd[5], wd[5], yd[5];
    int nd = 0;
    conv_tensor_get_ndim(r->in->t, &nd);
    for (int i = 0; i < nd; i++) {
        conv_tensor_get_dim(r->in->t, i, &xd[i]);
        conv_tensor_get_dim(r->w->t, i, &wd[i]);
    }
    return conv_output_dims(d, nd, xd, wd, yd) == CONV_STATUS_SUCCESS;
}

/* What the case's calls returned, for the status checks. */
typedef struct statuses {
    conv_status_t size, chosen, run;
    conv_algo_t algo;
    char error[512]; /* conv_last_error() of the pass */
} statuses;

/* Checks the three statuses against each other and the case; on a refusal,
 * that nothing was written. Returns RAN, DECLINED (UNSUPPORTED), REFUSED
 * (the shape) or FAILED (msg). */

static int judge(const zcase *z, const statuses *s, int accepted, const roles *r, char *msg,
                 size_t size)
{
    const conv_op_t op = kVariants[z->variant].op;
    if (s->size != s->run || s->chosen != s->run) {
        snprintf(msg, size,
                 "statuses disagree: conv_workspace_size %d, conv_chosen_algorithm %d, pass %d "
                 "(%s)",
                 (int)s->size, (int)s->chosen, (int)s->run, s->error);
        return FAILED;
    }
    if (!accepted && !z->transposed) {
        snprintf(msg, size, "conv_output_dims refuses the shape");
        return FAILED;
    }
    /* refused shape: SHAPE_MISMATCH; AUTO: runs; forced: runs or declines */
    int ok = !accepted                  ? s->run == CONV_STATUS_SHAPE_MISMATCH
             : z->algo == CONV_ALGO_AUTO ? s->run == CONV_STATUS_SUCCESS
                                         : s->run == CONV_STATUS_SUCCESS ||
                                               s->run == CONV_STATUS_UNSUPPORTED;
    if (!ok) {
        snprintf(msg, size, "status %d (%s): %s", (int)s->run, conv_status_string(s->run),
                 s->error);
        return FAILED;
    }
    if (s->run == CONV_STATUS_UNSUPPORTED && !strstr(s->error, conv_algo_name(z->algo))) {
        snprintf(msg, size, "the refusal \"%s\" does not name %s", s->error,
                 conv_algo_name(z->algo));
        return FAILED;
    }
    if (s->run == CONV_STATUS_SUCCESS) {
        if (z->algo != CONV_ALGO_AUTO ? s->algo != z->algo : !tu_is_cpu_solver(s->algo)) {
            snprintf(msg, size, "conv_chosen_algorithm says %s", conv_algo_name(s->algo));
            return FAILED;
        }
        return RAN;
    }
    tu_tensor *outs[2];
    int nout = outputs(r, op, outs);
    for (int i = 0; i < nout; i++)
        if (!all_nan(outs[i])) {
            snprintf(msg, size, "the refused call (status %d) wrote an output", (int)s->run);
            return FAILED;
        }
    return s->run == CONV_STATUS_UNSUPPORTED ? DECLINED : REFUSED;
}

/* Runs the case's algorithm and (lowered) pass on its base problem first,
 * on the same context, so that what a solver leaves unwritten on the zero
 * extent -- an accumulator on a worker's stack, the pool's workspace --
 * holds that call's values rather than zeros by luck. A forced algorithm
 * may decline the base problem; then there is nothing to dirty. */
static void dirty(const zcase *z, conv_context_t ctx, tu_rng *rng)
{
    tu_problem base;
    tu_case c;
    conv_desc_t d = NULL;
    assert_true(build(z, 0, &base));
    const conv_op_t op = lowered_op(z);
    if (op == CONV_OP_BACKWARD_DATA)
        base.bias = 0;
    assert_ok(tu_case_make(&c, ctx, &base, 0));
    assert_ok(tu_make_desc(&base, op, &d));
    tu_case_fill(&c, op, rng, 1);
    conv_status_t s = tu_case_run(&c, ctx, d, op, NULL);
    if (s != CONV_STATUS_SUCCESS && s != CONV_STATUS_UNSUPPORTED)
        fail_msg("%s: the base problem failed with status %d: %s", current, (int)s,
                 conv_last_error());
    conv_desc_destroy(d);
    tu_case_free(&c);
}

/* Makes the tensors, runs the case's size query, choice and pass (on a
 * workspace of exactly the size asked for, or the context's pool), checks
 * them. Returns a verdict of judge(). */
static int run_case(const zcase *z, conv_context_t ctx, int wrap, int exact, tu_rng *rng,
                    const tu_problem *tp, char *msg, size_t size)
{
    const variant *v = &kVariants[z->variant];
    tu_case c;
    tu_tensor tbias; /* T's bias, Cout elements */
    memset(&tbias, 0, sizeof tbias);
    assert_ok(tu_case_make(&c, ctx, tp, wrap));
    if (z->transposed && v->bias) {
        int64_t dims[5] = {1, tp->p.c, 1, 1, 1};
        assert_ok(tu_tensor_make(&tbias, ctx, tp->dtype,
                                 tp->p.channels_last ? CONV_LAYOUT_CHANNELS_LAST
                                                     : CONV_LAYOUT_CHANNELS_FIRST,
                                 tp->p.spatial + 2, dims, wrap));
    }
    roles r = z->transposed ? (roles){&c.y, &c.w, &c.x, &tbias} : (roles){&c.x, &c.w, &c.y, &c.b};

    tu_problem with_act = *tp;
    with_act.p.relu = v->relu;
    conv_desc_t d = NULL;
    assert_ok(tu_make_desc(&with_act, v->op, &d));
    if (z->transposed) {
        int64_t out_pad[3];
        for (int a = 0; a < tp->p.spatial; a++)
            out_pad[a] = output_padding(tp, a);
        assert_ok(conv_desc_set_mode(d, CONV_MODE_TRANSPOSED));
        assert_ok(conv_desc_set_output_padding(d, out_pad));
    }

    tu_case_fill(&c, lowered_op(z), rng, 0);
    if (tbias.t) /* the case's own bias is filled with the case */
        v->op == CONV_OP_FORWARD ? tu_fill_int(&tbias, rng, -3, 3) : tu_fill_nan(&tbias);

    statuses s = {CONV_STATUS_SUCCESS, CONV_STATUS_SUCCESS, CONV_STATUS_SUCCESS, CONV_ALGO_AUTO,
                  ""};
    size_t bytes = 0;
    void *memory = NULL;
    conv_workspace_t ws = NULL;
    s.size = conv_workspace_size(ctx, d, v->op, r.in->t, r.w->t, r.out->t, &bytes);
    s.chosen = conv_chosen_algorithm(ctx, d, v->op, r.in->t, r.w->t, r.out->t, &s.algo);
    if (exact && s.size == CONV_STATUS_SUCCESS) { /* exactly what it asked for */
        memory = malloc(bytes + 1);
        assert_non_null(memory);
        assert_ok(conv_workspace_wrap(ctx, memory, bytes, &ws));
    }
    s.run = run_pass(&r, ctx, d, v->op, ws);
    tu_copy_last_error(s.error, sizeof s.error);

    int verdict = judge(z, &s, shape_accepted(d, &r), &r, msg, size);
    if (verdict == RAN && s.run == CONV_STATUS_SUCCESS && check_values(&c, &r, z, msg, size))
        verdict = FAILED;
    conv_workspace_destroy(ws);
    free(memory);
    conv_desc_destroy(d);
    tu_tensor_free(&tbias);
    tu_case_free(&c);
    return verdict;
}

/* Failures summed up per algorithm, pass and zero extent, with the ranks,
 * layouts and dtypes they were seen in and the first message. */
typedef struct tally {
    int count;
    unsigned ranks, layouts, dtypes; /* bit sets */
    char first[600];
} tally;

static tally tallies[TU_MAX_ALGOS][VARIANTS][ZEROS];

static void print_tallies(int transposed)
{
    for (int a = 0; a < ALGOS; a++)
        for (int v = 0; v < VARIANTS; v++)
            for (int zi = 0; zi < ZEROS; zi++) {
                const tally *t = &tallies[a][v][zi];
                if (!t->count)
                    continue;
                print_message("FAILED %d: %s %s %s, %s = 0; ranks%s%s%s, %s%s, %s%s; first: %s\n",
                              t->count, transposed ? "transposed" : "convolution",
                              conv_algo_name(kAlgos[a]), kVariants[v].name,
                              zero_name(transposed, zi), t->ranks & 1 ? " 1-D" : "",
                              t->ranks & 2 ? " 2-D" : "", t->ranks & 4 ? " 3-D" : "",
                              t->layouts & 1 ? "cf" : "", t->layouts & 2 ? " cl" : "",
                              t->dtypes & 1 ? "f32" : "", t->dtypes & 2 ? " f64" : "",
                              t->first);
            }
}

static int algo_slot(conv_algo_t algo)
{
    for (int a = 0; a < ALGOS; a++)
        if (kAlgos[a] == algo)
            return a;
    return 0;
}

static void run_mode(int transposed)
{
    int64_t first = (int64_t)tu_env_seed(0), count = tu_env_count(CASES);
    int counts[TU_MAX_ALGOS][SKIPPED + 1] = {{0}};
    int failed = 0;
    tu_rng rng;
    memset(tallies, 0, sizeof tallies);
    for (int64_t index = first; index < first + count && index < CASES; index++) {
        zcase z;
        tu_problem tp;
        char msg[600];
        int verdict = SKIPPED;
        int valid = decode(transposed, index, &z);
        if (valid && !build(&z, 1, &tp)) {
            if (!transposed) /* padding always makes a convolution's shape valid */
                fail_msg("case %" PRId64 ": no valid shape", index);
            valid = 0;
        }
        if (valid) {
            describe(&z, index, &tp, current, sizeof current);
            tu_seed(&rng, (uint64_t)index);
            /* 1-3 threads, library-owned or wrapped tensors, an exact or the
             * pool's workspace, drawn per case */
            conv_context_t ctx = tu_contexts[tu_range(&rng, 0, 2)];
            int wrap = tu_chance(&rng, 50), exact = tu_chance(&rng, 50);
            dirty(&z, ctx, &rng);
            verdict = run_case(&z, ctx, wrap, exact, &rng, &tp, msg, sizeof msg);
        }
        counts[algo_slot(z.algo)][verdict]++;
        if (verdict != FAILED)
            continue;
        failed++;
        print_message("%s: %s\n", current, msg);
        tally *t = &tallies[algo_slot(z.algo)][z.variant][z.zero];
        if (!t->count++)
            snprintf(t->first, sizeof t->first, "%s", msg);
        t->ranks |= 1u << (z.spatial - 1);
        t->layouts |= 1u << z.channels_last;
        t->dtypes |= z.dtype == CONV_DTYPE_FLOAT64 ? 2u : 1u;
    }
    for (int a = 0; a < ALGOS; a++)
        print_message("%s %-18s ran %5d, declined %5d, shape refused %4d, failed %5d (%d "
                      "shapes skipped)\n",
                      transposed ? "transposed " : "convolution", conv_algo_name(kAlgos[a]),
                      counts[a][RAN], counts[a][DECLINED], counts[a][REFUSED], counts[a][FAILED],
                      counts[a][SKIPPED]);
    print_tallies(transposed);
    if (failed)
        fail_msg("%d of the %s cases failed (listed above)", failed,
                 transposed ? "transposed" : "convolution");
}

static void test_convolution(void **state)
{
    (void)state;
    run_mode(0);
}

static void test_transposed(void **state)
{
    (void)state;
    run_mode(1);
}

int main(void)
{
    ALGOS = tu_cpu_algos(kAlgos, TU_MAX_ALGOS, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convolution),
        cmocka_unit_test(test_transposed),
    };
    return cmocka_run_group_tests(tests, tu_contexts_setup, tu_contexts_teardown);
}
