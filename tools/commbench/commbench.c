/*
 * commbench -- libconv's communication benchmark (public conv.h only).
 *
 * 1. An nccl-tests-style table per backend: for each message size the time
 *    of one collective (the slowest rank's average over the iterations),
 *    the algorithm bandwidth algbw = bytes / time and the bus bandwidth
 *    busbw = algbw * 2(n-1)/n for all-reduce (algbw for broadcast), the
 *    number comparable with the hardware's link speed whatever n is.
 * 2. The reducer's overlap in a timed training step of a small
 *    convolutional network: backward alone, the bucketed reduction alone,
 *    and the step with both, where buckets are reduced while backward goes
 *    on; how much of the reduction was hidden behind backward.
 *
 *   commbench [--backend local|mpi|nccl] [--ranks N] [--min-bytes B]
 *             [--max-bytes B] [--factor F] [--iters I] [--warmup W]
 *             [--op sum|avg] [--dtype fp32|fp64|fp16|bf16] [--no-table]
 *             [--no-overlap] [--threads T] [--batch B]
 *   mpirun -np 2 commbench --backend mpi
 *
 * The in-process backend runs N ranks as N threads (default 2); MPI runs
 * one rank per process (start it with mpirun); NCCL one rank per GPU of
 * this process. Timings on a machine shared with other work vary.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <conv.h>

#ifdef COMMBENCH_WITH_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

typedef struct options {
    const char *backend;
    int ranks, iters, warmup, table, overlap, threads, batch;
    double factor;
    int64_t min_bytes, max_bytes;
    conv_reduce_op_t op;
    conv_dtype_t dtype;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t dsize(conv_dtype_t d) { return d == CONV_DTYPE_FLOAT64 ? 8 : d == CONV_DTYPE_FLOAT32 ? 4 : 2; }
static const char *dname(conv_dtype_t d)
{
    return d == CONV_DTYPE_FLOAT64 ? "double" : d == CONV_DTYPE_FLOAT32 ? "float"
         : d == CONV_DTYPE_FLOAT16 ? "half" : "bfloat16";
}

#define CHECK(expr)                                                                        \
    do {                                                                                   \
        conv_status_t s_ = (expr);                                                         \
        if (s_ != CONV_STATUS_SUCCESS) {                                                   \
            fprintf(stderr, "commbench: %s: %s: %s\n", #expr, conv_status_string(s_),       \
                    conv_last_error());                                                    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* ------------------------------------------------------- device memory */

/* Host memory for LOCAL/MPI; for NCCL, the CUDA runtime opened by dlopen. */
static int (*cuda_malloc)(void **, size_t);
static int (*cuda_memset)(void *, int, size_t);
static int (*cuda_set_device)(int);
static int (*cuda_free)(void *);

static void *buffer(int gpu, int device, size_t bytes)
{
    void *p = NULL;
    if (!gpu) {
        if (posix_memalign(&p, 64, bytes ? bytes : 64)) return NULL;
        memset(p, 0, bytes);
        return p;
    }
    cuda_set_device(device);
    if (cuda_malloc(&p, bytes ? bytes : 64)) return NULL;
    cuda_memset(p, 0, bytes);
    return p;
}

static void release(int gpu, void *p)
{
    if (gpu) cuda_free(p); else free(p);
}

static int load_cuda(void)
{
    const char *names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < 3 && !h; ++i) h = dlopen(names[i], RTLD_NOW);
    if (!h) return 0;
    *(void **)&cuda_malloc = dlsym(h, "cudaMalloc");
    *(void **)&cuda_memset = dlsym(h, "cudaMemset");
    *(void **)&cuda_set_device = dlsym(h, "cudaSetDevice");
    *(void **)&cuda_free = dlsym(h, "cudaFree");
    return cuda_malloc && cuda_memset && cuda_set_device && cuda_free;
}

/* ------------------------------------------------------------ the ranks */

/* One rank of a run: its communicator and what it measured. */
typedef struct rank_job {
    const options *o;
    conv_comm_t comm;
    int rank, n, gpu, device;
    int (*job)(struct rank_job *);
    double *times;  /* per size: seconds per collective, this rank */
    double over[8]; /* overlap measurements (print_overlap) */
    char info[256];
} rank_job;

/* The slowest rank's value (max over ranks), through the communicator:
 * a sum of one-hot vectors, so that every backend can do it. */
static double max_over_ranks(rank_job *j, double v)
{
    double *all = calloc((size_t)j->n, sizeof(double)), m = v;
    if (!all) exit(1);
    all[j->rank] = v;
    if (j->gpu) { /* device memory needed: the local value is the answer here */
        free(all);
        return v;
    }
    CHECK(conv_comm_all_reduce(j->comm, all, all, j->n, CONV_DTYPE_FLOAT64, CONV_REDUCE_SUM));
    for (int r = 0; r < j->n; ++r) m = fmax(m, all[r]);
    free(all);
    return m;
}

static int nsizes(const options *o)
{
    int k = 0;
    for (double b = (double)o->min_bytes; b <= (double)o->max_bytes; b *= o->factor) ++k;
    return k;
}

static int64_t size_at(const options *o, int k)
{
    double b = (double)o->min_bytes;
    for (int i = 0; i < k; ++i) b *= o->factor;
    int64_t e = (int64_t)dsize(o->dtype);
    return ((int64_t)b + e - 1) / e * e;
}

/* The collectives table: all-reduce then broadcast, per size. */
static int run_table(rank_job *j)
{
    const options *o = j->o;
    const int k = nsizes(o);
    void *buf = buffer(j->gpu, j->device, (size_t)o->max_bytes + 64);
    if (!buf) return 1;
    for (int what = 0; what < 2; ++what)
        for (int s = 0; s < k; ++s) {
            int64_t count = size_at(o, s) / (int64_t)dsize(o->dtype);
            int iters = o->iters;
            if (size_at(o, s) >= (64 << 20)) iters = iters > 5 ? 5 : iters;
            double t0 = 0;
            for (int it = -o->warmup; it < iters; ++it) {
                if (it == 0) {
                    CHECK(conv_comm_synchronize(j->comm));
                    CHECK(conv_comm_barrier(j->comm));
                    t0 = now();
                }
                if (what == 0)
                    CHECK(conv_comm_all_reduce(j->comm, buf, buf, count, o->dtype, o->op));
                else
                    CHECK(conv_comm_broadcast(j->comm, buf, count, o->dtype, 0));
            }
            CHECK(conv_comm_synchronize(j->comm));
            double t = (now() - t0) / iters;
            j->times[what * k + s] = max_over_ranks(j, t);
        }
    release(j->gpu, buf);
    return 0;
}

/* --------------------------------------------------------------- overlap */

/* A small VGG-like network on 32x32 images: forward once, then backward
 * timed alone, the reduction timed alone, and the two overlapped. */
#define NL 5
typedef struct layer {
    int64_t c, k, kernel, stride, pad, in;
} layer;
static const layer kLayers[NL] = {
    {3, 64, 3, 1, 1, 32}, {64, 64, 3, 1, 1, 32}, {64, 128, 3, 2, 1, 32},
    {128, 128, 3, 1, 1, 16}, {128, 10, 16, 1, 0, 16}};

typedef struct model {
    conv_context_t ctx;
    conv_desc_t d[NL];
    conv_tensor_t act[NL + 1], dact[NL + 1], w[NL], b[NL], gw[NL], gb[NL];
    float *wdata[NL], *bdata[NL];
} model;

static int64_t out_side(const layer *l) { return (l->in + 2 * l->pad - l->kernel) / l->stride + 1; }

static void model_make(model *m, const options *o, conv_reducer_t r, int batch)
{
    memset(m, 0, sizeof *m);
    CHECK(conv_context_create(CONV_DEVICE_CPU, 0, &m->ctx));
    CHECK(conv_context_set_threads(m->ctx, o->threads));
    for (int l = 0; l < NL; ++l) {
        const layer *L = &kLayers[l];
        int64_t st[2] = {L->stride, L->stride}, pd[2] = {L->pad, L->pad};
        int64_t wd[4] = {L->k, L->c, L->kernel, L->kernel}, bd[4] = {1, L->k, 1, 1};
        int64_t xd[4] = {batch, L->c, L->in, L->in};
        CHECK(conv_desc_create(2, &m->d[l]));
        CHECK(conv_desc_set_strides(m->d[l], st));
        CHECK(conv_desc_set_padding(m->d[l], pd, pd));
        CHECK(conv_tensor_create(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, xd, &m->act[l]));
        CHECK(conv_tensor_create(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, xd, &m->dact[l]));
        m->wdata[l] = calloc((size_t)(wd[0] * wd[1] * wd[2] * wd[3]), sizeof(float));
        m->bdata[l] = calloc((size_t)L->k, sizeof(float));
        for (int64_t i = 0; i < wd[0] * wd[1] * wd[2] * wd[3]; ++i)
            m->wdata[l][i] = (float)((i % 7) - 3) * 0.01f;
        CHECK(conv_tensor_wrap(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, wd, m->wdata[l], &m->w[l]));
        CHECK(conv_tensor_wrap(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, bd, m->bdata[l], &m->b[l]));
        CHECK(conv_reducer_add_param(r, m->wdata[l], wd[0] * wd[1] * wd[2] * wd[3], NULL));
        CHECK(conv_reducer_add_param(r, m->bdata[l], L->k, NULL));
    }
    const layer *last = &kLayers[NL - 1];
    int64_t yd[4] = {batch, last->k, out_side(last), out_side(last)};
    CHECK(conv_tensor_create(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, yd, &m->act[NL]));
    CHECK(conv_tensor_create(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, yd, &m->dact[NL]));
}

static void model_grads(model *m, conv_reducer_t r)
{
    for (int l = 0; l < NL; ++l) {
        const layer *L = &kLayers[l];
        int64_t wd[4] = {L->k, L->c, L->kernel, L->kernel}, bd[4] = {1, L->k, 1, 1};
        void *g;
        CHECK(conv_reducer_get_grad(r, 2 * l, &g));
        CHECK(conv_tensor_wrap(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, wd, g, &m->gw[l]));
        CHECK(conv_reducer_get_grad(r, 2 * l + 1, &g));
        CHECK(conv_tensor_wrap(m->ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, bd, g, &m->gb[l]));
    }
}

static void model_free(model *m)
{
    for (int l = 0; l <= NL; ++l) {
        conv_tensor_destroy(m->act[l]);
        conv_tensor_destroy(m->dact[l]);
    }
    for (int l = 0; l < NL; ++l) {
        conv_tensor_destroy(m->w[l]);
        conv_tensor_destroy(m->b[l]);
        conv_tensor_destroy(m->gw[l]);
        conv_tensor_destroy(m->gb[l]);
        conv_desc_destroy(m->d[l]);
        free(m->wdata[l]);
        free(m->bdata[l]);
    }
    conv_context_destroy(m->ctx);
}

/* Backward from the last layer; marks each parameter when `r` is given. */
static void backward(model *m, conv_reducer_t r)
{
    for (int l = NL - 1; l >= 0; --l) {
        CHECK(conv_backward_filter(m->ctx, m->d[l], m->act[l], m->dact[l + 1], m->gw[l], m->gb[l], NULL));
        if (r) {
            CHECK(conv_reducer_mark_ready(r, 2 * l + 1));
            CHECK(conv_reducer_mark_ready(r, 2 * l));
        }
        if (l > 0)
            CHECK(conv_backward_data(m->ctx, m->d[l], m->w[l], m->dact[l + 1], m->dact[l], NULL));
    }
}

static int run_overlap(rank_job *j)
{
    const options *o = j->o;
    conv_reducer_t r;
    model m;
    const int batch = o->batch, reps = 5;
    CHECK(conv_reducer_create(j->comm, CONV_DTYPE_FLOAT32, &r));
    CHECK(conv_reducer_set_bucket_bytes(r, 256 << 10, 1 << 20));
    model_make(&m, o, r, batch);
    CHECK(conv_reducer_setup(r));
    model_grads(&m, r);
    for (int l = 0; l < NL; ++l) CHECK(conv_forward(m.ctx, m.d[l], m.act[l], m.w[l], m.b[l], m.act[l + 1], NULL));
    double best[4] = {1e30, 1e30, 1e30, 1e30}, comm_in_step = 0, exposed = 0;
    for (int rep = 0; rep < reps + 1; ++rep) {
        /* backward alone */
        CHECK(conv_comm_barrier(j->comm));
        double t0 = now();
        backward(&m, NULL);
        double t_bwd = now() - t0;
        /* the reduction alone: every parameter marked at once */
        CHECK(conv_comm_barrier(j->comm));
        t0 = now();
        for (int p = 2 * NL - 1; p >= 0; --p) CHECK(conv_reducer_mark_ready(r, p));
        CHECK(conv_reducer_finish(r));
        double t_red = now() - t0;
        /* the step: backward marking as it goes, then finish */
        CHECK(conv_comm_barrier(j->comm));
        t0 = now();
        backward(&m, r);
        CHECK(conv_reducer_finish(r));
        double t_step = now() - t0, c = 0, e = 0;
        CHECK(conv_reducer_get_step_times(r, &c, &e));
        if (rep == 0) continue; /* warm-up */
        if (t_step < best[2]) {
            best[2] = t_step;
            comm_in_step = c;
            exposed = e;
        }
        best[0] = fmin(best[0], t_bwd);
        best[1] = fmin(best[1], t_red);
    }
    int64_t total = 0;
    void *buf;
    int nb = 0;
    CHECK(conv_reducer_get_buffer(r, &buf, &total));
    CHECK(conv_reducer_get_bucket_count(r, &nb));
    j->over[0] = best[0];
    j->over[1] = best[1];
    j->over[2] = best[2];
    j->over[3] = comm_in_step;
    j->over[4] = exposed;
    j->over[5] = (double)total * 4;
    j->over[6] = nb;
    j->over[7] = batch;
    model_free(&m);
    conv_reducer_destroy(r);
    return 0;
}

static void print_table(const options *o, const char *backend, int n, const double *times)
{
    const int k = nsizes(o);
    for (int what = 0; what < 2; ++what) {
        printf("#\n# %s, %s backend, %d rank%s, %s, %s\n", what ? "broadcast (root 0)" : "all_reduce (in place)",
               backend, n, n == 1 ? "" : "s", dname(o->dtype),
               what ? "copy" : o->op == CONV_REDUCE_SUM ? "sum" : "avg");
        printf("#%12s %12s %9s %7s %11s %9s %9s\n", "size", "count", "type", "redop", "time", "algbw", "busbw");
        printf("#%12s %12s %9s %7s %11s %9s %9s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)");
        for (int s = 0; s < k; ++s) {
            int64_t bytes = size_at(o, s);
            double t = times[what * k + s];
            double algbw = (double)bytes / t / 1e9;
            double busbw = what ? algbw : algbw * 2.0 * (n - 1) / n;
            printf(" %12lld %12lld %9s %7s %11.2f %9.3f %9.3f\n", (long long)bytes,
                   (long long)(bytes / (int64_t)dsize(o->dtype)), dname(o->dtype),
                   what ? "-" : o->op == CONV_REDUCE_SUM ? "sum" : "avg", t * 1e6, algbw, busbw);
        }
    }
}

static void print_overlap(const char *backend, int n, const double *v)
{
    /* v: backward alone, reduction alone, step, reducer's communication in
     * the step, finish's wait, gradient bytes, buckets */
    double hidden = v[1] > 0 ? 1.0 - v[4] / v[1] : 0.0;
    hidden = fmin(1.0, fmax(0.0, hidden));
    printf("#\n# reducer overlap, %s backend, %d rank%s: %d parameters (%.2f MB of gradients), %d "
           "buckets, batch %d of 3x32x32 per rank (best of 5 steps)\n",
           backend, n, n == 1 ? "" : "s", 2 * NL, v[5] / 1e6, (int)v[6], (int)v[7]);
    printf("#   backward alone                  %9.3f ms\n", v[0] * 1e3);
    printf("#   reduction alone (all buckets)   %9.3f ms  (all gradients ready at once)\n",
           v[1] * 1e3);
    printf("#   step: backward + reduction      %9.3f ms  (back to back: %.3f ms)\n", v[2] * 1e3,
           (v[0] + v[1]) * 1e3);
    printf("#   exposed: finish() waited        %9.3f ms  -> %.0f %% of the reduction hidden behind "
           "backward\n", v[4] * 1e3, 100.0 * hidden);
    printf("#   (in collectives during the step: %.3f ms, waiting for slower ranks included)\n",
           v[3] * 1e3);
}

static void *rank_thread(void *p)
{
    rank_job *j = (rank_job *)p;
    j->job(j);
    return NULL;
}

/* Runs `job` on n threads (LOCAL, NCCL), rank 0's results in jobs[0]. */
static void run_threads(const options *o, conv_comm_t *comms, int n, int gpu, rank_job *jobs,
                        double *times, int (*job)(rank_job *))
{
    pthread_t t[64];
    for (int r = 0; r < n; ++r) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].o = o;
        jobs[r].comm = comms[r];
        jobs[r].rank = r;
        jobs[r].n = n;
        jobs[r].gpu = gpu;
        jobs[r].device = r;
        jobs[r].job = job;
        jobs[r].times = r == 0 ? times : calloc((size_t)nsizes(o) * 2, sizeof(double));
        pthread_create(&t[r], NULL, rank_thread, &jobs[r]);
    }
    for (int r = 0; r < n; ++r) {
        pthread_join(t[r], NULL);
        if (r) free(jobs[r].times);
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: commbench [--backend local|mpi|nccl] [--ranks N] [--min-bytes B] [--max-bytes B]\n"
            "                 [--factor F] [--iters I] [--warmup W] [--op sum|avg]\n"
            "                 [--dtype fp32|fp64|fp16|bf16] [--threads T] [--batch B] [--no-table]\n"
            "                 [--no-overlap]\n"
            "  MPI: mpirun -np N commbench --backend mpi\n");
    exit(2);
}

static int64_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
    if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
    return (int64_t)v;
}

int main(int argc, char **argv)
{
    options o = {.backend = "local", .ranks = 2, .iters = 20, .warmup = 3, .table = 1,
                 .overlap = 1, .threads = 1, .batch = 2, .factor = 4, .min_bytes = 8, .max_bytes = 32 << 20,
                 .op = CONV_REDUCE_SUM, .dtype = CONV_DTYPE_FLOAT32};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--backend") && has) o.backend = argv[++i];
        else if (!strcmp(a, "--ranks") && has) o.ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--min-bytes") && has) o.min_bytes = parse_bytes(argv[++i]);
        else if (!strcmp(a, "--max-bytes") && has) o.max_bytes = parse_bytes(argv[++i]);
        else if (!strcmp(a, "--factor") && has) o.factor = atof(argv[++i]);
        else if (!strcmp(a, "--iters") && has) o.iters = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has) o.warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && has) o.threads = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && has) o.batch = atoi(argv[++i]);
        else if (!strcmp(a, "--op") && has) {
            ++i;
            o.op = !strcmp(argv[i], "avg") ? CONV_REDUCE_AVERAGE : CONV_REDUCE_SUM;
        } else if (!strcmp(a, "--dtype") && has) {
            ++i;
            o.dtype = !strcmp(argv[i], "fp64") ? CONV_DTYPE_FLOAT64 : !strcmp(argv[i], "fp16") ? CONV_DTYPE_FLOAT16
                    : !strcmp(argv[i], "bf16") ? CONV_DTYPE_BFLOAT16 : CONV_DTYPE_FLOAT32;
        } else if (!strcmp(a, "--no-table")) o.table = 0;
        else if (!strcmp(a, "--no-overlap")) o.overlap = 0;
        else usage();
    }
    if (o.min_bytes < 1 || o.max_bytes < o.min_bytes || o.factor <= 1.0 || o.iters < 1 ||
        o.ranks < 1 || o.ranks > 64 || o.threads < 1 || o.batch < 1)
        usage();
    const int k = nsizes(&o);
    double *times = calloc((size_t)k * 2, sizeof(double));
    rank_job jobs[64];

    if (!strcmp(o.backend, "local")) {
        conv_comm_t comms[64];
        CHECK(conv_comm_create_local(o.ranks, comms));
        printf("# commbench: libconv %s, in-process backend: %d ranks as threads\n",
               conv_version_string(), o.ranks);
        if (o.table) {
            run_threads(&o, comms, o.ranks, 0, jobs, times, run_table);
            print_table(&o, "in-process", o.ranks, times);
        }
        if (o.overlap) {
            run_threads(&o, comms, o.ranks, 0, jobs, times, run_overlap);
            print_overlap("in-process", o.ranks, jobs[0].over);
        }
        for (int r = 0; r < o.ranks; ++r) conv_comm_destroy(comms[r]);
    } else if (!strcmp(o.backend, "mpi")) {
#ifdef COMMBENCH_WITH_MPI
        int provided, rank, n;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        rank_job j;
        memset(&j, 0, sizeof j);
        j.o = &o;
        j.rank = rank;
        j.n = n;
        j.times = times;
        CHECK(conv_comm_create_mpi_world(&j.comm));
        if (rank == 0)
            printf("# commbench: libconv %s, MPI backend: %d processes (MPI thread level %d)\n",
                   conv_version_string(), n, provided);
        if (o.table) {
            run_table(&j);
            if (rank == 0) print_table(&o, "MPI", n, times);
        }
        if (o.overlap) {
            run_overlap(&j);
            if (rank == 0) print_overlap("MPI", n, j.over);
        }
        conv_comm_destroy(j.comm);
        MPI_Finalize();
#else
        fprintf(stderr, "commbench: built without MPI\n");
        return 2;
#endif
    } else if (!strcmp(o.backend, "nccl")) {
        int avail = 0;
        CHECK(conv_comm_backend_available(CONV_COMM_BACKEND_NCCL, &avail));
        if (!avail || !load_cuda()) {
            char id[CONV_COMM_UNIQUE_ID_BYTES];
            conv_comm_unique_id(id, sizeof id);
            fprintf(stderr, "commbench: NCCL is not available here: %s\n", conv_last_error());
            return 77;
        }
        conv_comm_t comms[64];
        CHECK(conv_comm_create_nccl_all(o.ranks, NULL, comms));
        printf("# commbench: libconv %s, NCCL backend: %d GPUs of this process\n",
               conv_version_string(), o.ranks);
        run_threads(&o, comms, o.ranks, 1, jobs, times, run_table);
        print_table(&o, "NCCL", o.ranks, times);
        for (int r = 0; r < o.ranks; ++r) conv_comm_destroy(comms[r]);
    } else {
        usage();
    }
    free(times);
    return 0;
}
