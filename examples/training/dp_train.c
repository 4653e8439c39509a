/*
 * dp_train.c -- data-parallel training with libconv, from the public API
 * alone: a small convolutional network learns to imitate a "teacher"
 * network of the same shape (a synthetic task with a known answer: the
 * teacher's outputs are the labels, so a perfect student reaches loss 0).
 *
 *   input 1x8x8 -> conv 3x3 pad 1, 8 channels, ReLU
 *               -> conv 3x3 stride 2 pad 1, 8 channels, ReLU   (8x4x4)
 *               -> "fully connected": conv 4x4 over the whole 4x4 map, 1 output
 *   loss = mean squared error against the teacher's output
 *
 * Each rank (a thread with the in-process communicator, or an MPI process
 * with --mpi) runs forward and backward on its shard of every batch;
 * backward writes each gradient straight into the reducer's bucket buffer
 * and marks it ready, so buckets are averaged while backward goes on; then
 * conv_reducer_finish and the fused SGD step. Rank 0's initial weights are
 * broadcast to all at the start.
 *
 * The program trains twice -- one rank on the whole batch, then N ranks on
 * N shards of it -- and shows that both end with the same weights (within
 * the stated tolerance: only the order of the realing-point sums differs)
 * and that the loss falls. Exit status 0 when both hold.
 *
 *   dp_train [--ranks N] [--steps S] [--batch B] [--lr X] [--mpi]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <conv.h>

#ifdef CONV_EXAMPLE_WITH_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

/* The element type: double by default (the two runs then agree to about
 * 1e-12: only the order of the sums differs); -DDP_TRAIN_FP32 builds the
 * float version, whose 1-ulp differences training amplifies (README). */
#ifdef DP_TRAIN_FP32
typedef float real;
#define REAL_DTYPE CONV_DTYPE_FLOAT32
#define REAL_NAME "fp32"
#define TOLERANCE 1e-5
#define STEPS 60   /* past ~80 steps a ReLU flips on one side only (README.md) */
#define FALLS 3.0
#else
typedef double real;
#define REAL_DTYPE CONV_DTYPE_FLOAT64
#define REAL_NAME "fp64"
#define TOLERANCE 1e-9
#define STEPS 600
#define FALLS 10.0
#endif

#define NPARAM 6 /* W1 b1 W2 b2 W3 b3, in forward order */
#define SIDE 8
#define DATASET 512

typedef struct options {
    int ranks, steps, batch, threads, mpi;
    double lr, momentum, decay, tolerance;
} options;

/* Parameter shapes: filters (K, C, kh, kw) and biases (1, K, 1, 1). */
static const int64_t kDims[NPARAM][4] = {
    {8, 1, 3, 3}, {1, 8, 1, 1}, {8, 8, 3, 3}, {1, 8, 1, 1}, {1, 8, 4, 4}, {1, 1, 1, 1}};

static int64_t elems(const int64_t *d) { return d[0] * d[1] * d[2] * d[3]; }

static uint64_t g_seed;
static double uniform(uint64_t *s) /* [-1, 1) */
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* Random weights, scaled by 1/sqrt(fan in); biases small. */
static void init_weights(real *w[NPARAM], uint64_t seed)
{
    uint64_t s = seed;
    for (int p = 0; p < NPARAM; ++p) {
        int64_t n = elems(kDims[p]);
        double fan_in = p % 2 ? 8.0 : (double)(kDims[p][1] * kDims[p][2] * kDims[p][3]);
        double scale = (p % 2 ? 0.1 : 1.7) / sqrt(fan_in);
        for (int64_t i = 0; i < n; ++i) w[p][i] = (real)(scale * uniform(&s));
    }
}

/* ----------------------------------------------------------- the network */

typedef struct net {
    conv_context_t ctx;
    conv_desc_t desc[3];
    int b; /* batch on this rank */
    conv_tensor_t x, y1, y2, out, dy1, dy2, dout;
    conv_tensor_t w[NPARAM], g[NPARAM];
    real *xd, *y1d, *y2d, *outd, *dy1d, *dy2d, *doutd;
} net;

#define TRY(expr)                                                                        \
    do {                                                                                 \
        conv_status_t s_ = (expr);                                                       \
        if (s_ != CONV_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "dp_train: %s failed: %s: %s\n", #expr, conv_status_string(s_), \
                    conv_last_error());                                                  \
            return s_;                                                                   \
        }                                                                                \
    } while (0)

static conv_status_t tensor(net *n, int64_t c, int64_t h, conv_tensor_t *t, real **data)
{
    int64_t dims[4] = {n->b, c, h, h};
    TRY(conv_tensor_create(n->ctx, REAL_DTYPE, CONV_LAYOUT_CHANNELS_FIRST, 4, dims, t));
    TRY(conv_tensor_get_data(*t, (void **)data));
    return CONV_STATUS_SUCCESS;
}

static conv_status_t wrap(net *n, int p, void *data, conv_tensor_t *t)
{
    return conv_tensor_wrap(n->ctx, REAL_DTYPE, CONV_LAYOUT_CHANNELS_FIRST, 4, kDims[p],
                            data, t);
}

/* weights: this rank's parameter memory; grads: the reducer's slots (or
 * NULL for a forward-only net). */
static conv_status_t net_make(net *n, int b, int threads, real *weights[NPARAM],
                              void *grads[NPARAM])
{
    int64_t pad[2] = {1, 1}, stride[2] = {2, 2};
    memset(n, 0, sizeof *n);
    n->b = b;
    TRY(conv_context_create(CONV_DEVICE_CPU, 0, &n->ctx));
    TRY(conv_context_set_threads(n->ctx, threads));
    for (int k = 0; k < 3; ++k) TRY(conv_desc_create(2, &n->desc[k]));
    TRY(conv_desc_set_padding(n->desc[0], pad, pad));
    TRY(conv_desc_set_activation(n->desc[0], CONV_ACTIVATION_RELU));
    TRY(conv_desc_set_padding(n->desc[1], pad, pad));
    TRY(conv_desc_set_strides(n->desc[1], stride));
    TRY(conv_desc_set_activation(n->desc[1], CONV_ACTIVATION_RELU));
    TRY(tensor(n, 1, SIDE, &n->x, &n->xd));
    TRY(tensor(n, 8, SIDE, &n->y1, &n->y1d));
    TRY(tensor(n, 8, SIDE / 2, &n->y2, &n->y2d));
    TRY(tensor(n, 1, 1, &n->out, &n->outd));
    TRY(tensor(n, 8, SIDE, &n->dy1, &n->dy1d));
    TRY(tensor(n, 8, SIDE / 2, &n->dy2, &n->dy2d));
    TRY(tensor(n, 1, 1, &n->dout, &n->doutd));
    for (int p = 0; p < NPARAM; ++p) {
        TRY(wrap(n, p, weights[p], &n->w[p]));
        if (grads) TRY(wrap(n, p, grads[p], &n->g[p]));
    }
    return CONV_STATUS_SUCCESS;
}

static void net_free(net *n)
{
    conv_tensor_t *all[] = {&n->x, &n->y1, &n->y2, &n->out, &n->dy1, &n->dy2, &n->dout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) conv_tensor_destroy(*all[i]);
    for (int p = 0; p < NPARAM; ++p) {
        conv_tensor_destroy(n->w[p]);
        conv_tensor_destroy(n->g[p]);
    }
    for (int k = 0; k < 3; ++k) conv_desc_destroy(n->desc[k]);
    conv_context_destroy(n->ctx);
}

static conv_status_t forward(net *n)
{
    TRY(conv_forward(n->ctx, n->desc[0], n->x, n->w[0], n->w[1], n->y1, NULL));
    TRY(conv_forward(n->ctx, n->desc[1], n->y1, n->w[2], n->w[3], n->y2, NULL));
    TRY(conv_forward(n->ctx, n->desc[2], n->y2, n->w[4], n->w[5], n->out, NULL));
    return CONV_STATUS_SUCCESS;
}

static void relu_mask(real *d, const real *y, int64_t count)
{
    for (int64_t i = 0; i < count; ++i)
        if (y[i] <= 0) d[i] = 0;
}

/* Backward, layer by layer from the last: each parameter's gradient is
 * written into its reducer slot and marked ready at once. */
static conv_status_t backward(net *n, conv_reducer_t r)
{
    TRY(conv_backward_filter(n->ctx, n->desc[2], n->y2, n->dout, n->g[4], n->g[5], NULL));
    TRY(conv_reducer_mark_ready(r, 5));
    TRY(conv_reducer_mark_ready(r, 4));
    TRY(conv_backward_data(n->ctx, n->desc[2], n->w[4], n->dout, n->dy2, NULL));
    relu_mask(n->dy2d, n->y2d, (int64_t)n->b * 8 * 16);
    TRY(conv_backward_filter(n->ctx, n->desc[1], n->y1, n->dy2, n->g[2], n->g[3], NULL));
    TRY(conv_reducer_mark_ready(r, 3));
    TRY(conv_reducer_mark_ready(r, 2));
    TRY(conv_backward_data(n->ctx, n->desc[1], n->w[2], n->dy2, n->dy1, NULL));
    relu_mask(n->dy1d, n->y1d, (int64_t)n->b * 8 * 64);
    TRY(conv_backward_filter(n->ctx, n->desc[0], n->x, n->dy1, n->g[0], n->g[1], NULL));
    TRY(conv_reducer_mark_ready(r, 1));
    TRY(conv_reducer_mark_ready(r, 0));
    return CONV_STATUS_SUCCESS;
}

/* ------------------------------------------------------------- the data */

static real g_inputs[DATASET * SIDE * SIDE];
static real g_labels[DATASET];

/* Random images, labelled by the teacher network. */
static conv_status_t make_dataset(void)
{
    uint64_t s = 12345;
    for (size_t i = 0; i < sizeof g_inputs / sizeof g_inputs[0]; ++i)
        g_inputs[i] = (real)uniform(&s);
    real store[NPARAM][8 * 8 * 9], *teacher[NPARAM];
    for (int p = 0; p < NPARAM; ++p) teacher[p] = store[p];
    init_weights(teacher, 777);
    net n;
    TRY(net_make(&n, DATASET, 1, teacher, NULL));
    memcpy(n.xd, g_inputs, sizeof g_inputs);
    TRY(forward(&n));
    memcpy(g_labels, n.outd, sizeof g_labels);
    net_free(&n);
    return CONV_STATUS_SUCCESS;
}

/* ------------------------------------------------------------- a rank */

typedef struct rank_job {
    const options *o;
    conv_comm_t comm;
    int rank, nranks;
    real *weights[NPARAM]; /* this rank's parameters */
    double *losses;         /* per step, the loss over the whole batch (rank 0) */
    conv_status_t status;
} rank_job;

static conv_status_t train(rank_job *j)
{
    const options *o = j->o;
    const int b = o->batch / j->nranks;
    conv_reducer_t r = NULL;
    net n;
    void *grads[NPARAM];
    conv_status_t s;

    /* this rank's starting weights differ: the broadcast makes them rank 0's */
    init_weights(j->weights, 1000 + (uint64_t)j->rank);
    TRY(conv_reducer_create(j->comm, REAL_DTYPE, &r));
    for (int p = 0; p < NPARAM; ++p)
        TRY(conv_reducer_add_param(r, j->weights[p], elems(kDims[p]), NULL));
    TRY(conv_reducer_set_bucket_bytes(r, 256, 2048)); /* a tiny net: a few small buckets */
    TRY(conv_reducer_setup(r));
    TRY(conv_reducer_broadcast_params(r, 0));
    for (int p = 0; p < NPARAM; ++p) TRY(conv_reducer_get_grad(r, p, &grads[p]));
    if ((s = net_make(&n, b, o->threads, j->weights, grads)) != CONV_STATUS_SUCCESS) {
        conv_reducer_destroy(r);
        return s;
    }
    for (int step = 0; step < o->steps; ++step) {
        /* the batch of this step, and this rank's shard of it */
        int first = (step * o->batch) % DATASET;
        if (first + o->batch > DATASET) first = 0;
        first += j->rank * b;
        memcpy(n.xd, g_inputs + (size_t)first * SIDE * SIDE, sizeof(real) * (size_t)b * SIDE * SIDE);
        if ((s = forward(&n)) != CONV_STATUS_SUCCESS) break;
        double loss = 0;
        for (int i = 0; i < b; ++i) {
            double e = (double)n.outd[i] - (double)g_labels[first + i];
            loss += e * e / b;
            n.doutd[i] = (real)(2.0 * e / b);
        }
        if ((s = backward(&n, r)) != CONV_STATUS_SUCCESS) break;
        if ((s = conv_reducer_finish(r)) != CONV_STATUS_SUCCESS) break;
        if ((s = conv_reducer_apply_sgd(r, o->lr, o->momentum, o->decay)) != CONV_STATUS_SUCCESS)
            break;
        /* the loss over the whole batch: the average of the shards' */
        if ((s = conv_comm_all_reduce(j->comm, &loss, &loss, 1, CONV_DTYPE_FLOAT64,
                                      CONV_REDUCE_AVERAGE)) != CONV_STATUS_SUCCESS)
            break;
        if (j->losses) j->losses[step] = loss;
    }
    if (s != CONV_STATUS_SUCCESS)
        fprintf(stderr, "dp_train: rank %d: %s: %s\n", j->rank, conv_status_string(s),
                conv_last_error());
    net_free(&n);
    conv_reducer_destroy(r);
    return s;
}

static void *rank_thread(void *p)
{
    rank_job *j = (rank_job *)p;
    j->status = train(j);
    return NULL;
}

static real *alloc_weights(real *w[NPARAM])
{
    int64_t total = 0;
    for (int p = 0; p < NPARAM; ++p) total += elems(kDims[p]);
    real *block = calloc((size_t)total, sizeof(real));
    if (!block) return NULL;
    for (int p = 0, off = 0; p < NPARAM; off += (int)elems(kDims[p]), ++p) w[p] = block + off;
    return block;
}

/* Trains with `ranks` threads of one process; rank 0's weights and losses
 * come back. */
static int train_local(const options *o, int ranks, real *weights[NPARAM], double *losses)
{
    conv_comm_t comms[64];
    rank_job jobs[64];
    pthread_t threads[64];
    real *blocks[64] = {0};
    int ok = 1;
    if (conv_comm_create_local(ranks, comms) != CONV_STATUS_SUCCESS) {
        fprintf(stderr, "dp_train: %s\n", conv_last_error());
        return 0;
    }
    for (int r = 0; r < ranks; ++r) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].o = o;
        jobs[r].comm = comms[r];
        jobs[r].rank = r;
        jobs[r].nranks = ranks;
        jobs[r].losses = r == 0 ? losses : NULL;
        if (r == 0)
            memcpy(jobs[r].weights, weights, sizeof jobs[r].weights);
        else if (!(blocks[r] = alloc_weights(jobs[r].weights)))
            return 0;
    }
    for (int r = 0; r < ranks; ++r) pthread_create(&threads[r], NULL, rank_thread, &jobs[r]);
    for (int r = 0; r < ranks; ++r) {
        pthread_join(threads[r], NULL);
        ok &= jobs[r].status == CONV_STATUS_SUCCESS;
        conv_comm_destroy(comms[r]);
        free(blocks[r]);
    }
    return ok;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: dp_train [--ranks N] [--steps S] [--batch B] [--lr X] [--threads T] [--mpi]\n"
            "  N ranks (threads; or the MPI processes with --mpi) train on N shards of each\n"
            "  batch of B samples; the result is compared with one rank on the whole batch.\n");
}

int main(int argc, char **argv)
{
    options o = {.ranks = 4, .steps = STEPS, .batch = 64, .threads = 1, .lr = 0.1,
                 .momentum = 0.9, .decay = 1e-4, .tolerance = TOLERANCE};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--ranks") && v) o.ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--steps") && v) o.steps = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && v) o.batch = atoi(argv[++i]);
        else if (!strcmp(a, "--lr") && v) o.lr = atof(argv[++i]);
        else if (!strcmp(a, "--threads") && v) o.threads = atoi(argv[++i]);
        else if (!strcmp(a, "--mpi")) o.mpi = 1;
        else { usage(); return 2; }
    }
    int rank = 0;
#ifdef CONV_EXAMPLE_WITH_MPI
    if (o.mpi) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &o.ranks);
    }
#else
    if (o.mpi) {
        fprintf(stderr, "dp_train: built without MPI\n");
        return 2;
    }
#endif
    if (o.ranks < 1 || o.ranks > 64 || o.batch < 1 || o.batch % o.ranks || o.batch > DATASET ||
        o.steps < 1 || o.threads < 1) {
        fprintf(stderr, "dp_train: need 1..64 ranks dividing the batch, a batch of at most %d\n",
                DATASET);
        return 2;
    }
    if (make_dataset() != CONV_STATUS_SUCCESS) return 1;

    real *single[NPARAM], *multi[NPARAM];
    real *b1 = alloc_weights(single), *b2 = alloc_weights(multi);
    double *loss1 = calloc((size_t)o.steps, sizeof(double));
    double *lossn = calloc((size_t)o.steps, sizeof(double));
    if (!b1 || !b2 || !loss1 || !lossn) return 1;

    /* one rank, the whole batch (MPI: rank 0 alone, in-process) */
    if (rank == 0 && !train_local(&o, 1, single, loss1)) return 1;
    /* N ranks, one shard each */
    int ok;
#ifdef CONV_EXAMPLE_WITH_MPI
    if (o.mpi) {
        rank_job j;
        memset(&j, 0, sizeof j);
        j.o = &o;
        j.rank = rank;
        j.nranks = o.ranks;
        j.losses = lossn;
        memcpy(j.weights, multi, sizeof j.weights);
        ok = conv_comm_create_mpi_world(&j.comm) == CONV_STATUS_SUCCESS;
        if (!ok) fprintf(stderr, "dp_train: %s\n", conv_last_error());
        ok = ok && train(&j) == CONV_STATUS_SUCCESS;
        conv_comm_destroy(j.comm);
        int all;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        ok = all;
    } else
#endif
        ok = train_local(&o, o.ranks, multi, lossn);
    if (!ok) return 1;

    int exit_code = 0;
    if (rank == 0) {
        printf("dp_train: %s, %d ranks (%s), batch %d (%d per rank), %d steps, SGD lr %g "
               "momentum %g weight decay %g\n",
               REAL_NAME, o.ranks, o.mpi ? "MPI processes" : "threads, in-process communicator", o.batch,
               o.batch / o.ranks, o.steps, o.lr, o.momentum, o.decay);
        printf("%6s  %14s  %14s\n", "step", "loss, 1 rank", "loss, N ranks");
        for (int s = 0; s < o.steps; ++s)
            if (s % (o.steps / 10 > 0 ? o.steps / 10 : 1) == 0 || s == o.steps - 1)
                printf("%6d  %14.6g  %14.6g\n", s, loss1[s], lossn[s]);
        double maxdiff = 0, maxw = 0;
        for (int p = 0; p < NPARAM; ++p)
            for (int64_t i = 0; i < elems(kDims[p]); ++i) {
                maxdiff = fmax(maxdiff, fabs((double)single[p][i] - (double)multi[p][i]));
                maxw = fmax(maxw, fabs((double)single[p][i]));
            }
        double rel = maxdiff / maxw;
        int same = rel <= o.tolerance;
        int falls = lossn[o.steps - 1] * FALLS < lossn[0];
        printf("loss: %.4g -> %.4g (%.0fx lower): %s\n", lossn[0], lossn[o.steps - 1],
               lossn[0] / lossn[o.steps - 1], falls ? "falls" : "DOES NOT FALL ENOUGH");
        printf("weights, %d ranks vs 1 rank: max |difference| %.3g, max |weight| %.3g, "
               "relative %.3g (tolerance %g): %s\n",
               o.ranks, maxdiff, maxw, rel, o.tolerance, same ? "SAME" : "DIFFERENT");
        exit_code = same && falls ? 0 : 1;
    }
#ifdef CONV_EXAMPLE_WITH_MPI
    if (o.mpi) {
        MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Finalize();
    }
#endif
    free(b1);
    free(b2);
    free(loss1);
    free(lossn);
    return exit_code;
}
