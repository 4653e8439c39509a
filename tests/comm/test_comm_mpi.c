/*
 * test_comm_mpi.c -- the MPI communicator, run by ctest under
 *   mpirun [--allow-run-as-root] --oversubscribe -np 2 (and -np 4)
 * (tests/comm/mpirun.sh). Every rank checks: the world and a wrapped
 * communicator, all-reduce (sum, average) and broadcast bit-exact on
 * integer-valued data in the four dtypes (the same expectations as the
 * in-process test), barriers, the reducer (mark orders, averaged gradients,
 * a never-marked parameter failing every rank, SGD leaving every rank with
 * the same weights, the parameter broadcast), and a timeout and an abort
 * ending the waiting ranks with an error. CONV_TEST_MPI_THREAD=single runs
 * it with MPI_THREAD_SINGLE (the reducer then communicates inline).
 * Prints "N passed, M failed" on rank 0; exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_test_util.h"
#include "conv.h"

static int g_rank, g_size, g_passed, g_failed;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            ++g_passed;                                                         \
        } else {                                                                \
            ++g_failed;                                                         \
            fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)
#define OK(expr) CHECK((expr) == CONV_STATUS_SUCCESS, "%s: %s", #expr, conv_last_error())
#define STATUS(expr, want)                                                       \
    do {                                                                         \
        conv_status_t s_ = (expr);                                               \
        CHECK(s_ == (want), "%s: %s, want %s: %s", #expr, conv_status_string(s_), \
              conv_status_string(want), conv_last_error());                      \
    } while (0)

static void test_basics(conv_comm_t c)
{
    int v = -1;
    conv_comm_backend_t be;
    conv_device_t dev;
    OK(conv_comm_get_rank(c, &v));
    CHECK(v == g_rank, "rank %d, MPI says %d", v, g_rank);
    OK(conv_comm_get_size(c, &v));
    CHECK(v == g_size, "size %d, MPI says %d", v, g_size);
    OK(conv_comm_get_backend(c, &be));
    CHECK(be == CONV_COMM_BACKEND_MPI, "backend %d", (int)be);
    OK(conv_comm_get_device(c, &dev, &v));
    CHECK(dev == CONV_DEVICE_CPU && v == 0, "device %d:%d", (int)dev, v);
    STATUS(conv_comm_set_stream(c, NULL), CONV_STATUS_UNSUPPORTED);
    OK(conv_comm_synchronize(c));
    OK(conv_comm_get_error(c, NULL));
}

static void test_collectives(conv_comm_t c)
{
    static const int64_t counts[] = {0, 1, 17, 1000, 262147};
    const int64_t maxc = 262147;
    void *send = malloc((size_t)maxc * 8), *recv = malloc((size_t)maxc * 8);
    if (!send || !recv) abort();
    int salt = 0;
    for (int d = 0; d < 4; ++d) {
        conv_dtype_t dt = ct_dtypes[d];
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k)
            for (int avg = 0; avg < 2; ++avg)
                for (int inplace = 0; inplace < 2; ++inplace) {
                    int64_t count = counts[k];
                    ++salt;
                    ct_fill(dt, send, count, g_rank, salt);
                    memset(recv, 0xA5, (size_t)maxc * 8);
                    void *out = inplace ? send : recv;
                    OK(conv_comm_all_reduce(c, send, out, count, dt,
                                            avg ? CONV_REDUCE_AVERAGE : CONV_REDUCE_SUM));
                    int64_t bad = ct_check(dt, out, count, g_size, salt, avg);
                    CHECK(!bad, "%s count %lld %s %s: element %lld is %g, want %g",
                          ct_dtype_name(dt), (long long)count, avg ? "average" : "sum",
                          inplace ? "in place" : "out of place", (long long)(bad - 1),
                          bad ? ct_get(dt, out, bad - 1) : 0.0,
                          bad ? ct_expected(dt, g_size, bad - 1, salt, avg) : 0.0);
                }
        for (int root = 0; root < g_size; ++root) {
            int64_t count = 4099;
            size_t bytes = (size_t)count * ct_size(dt);
            unsigned char *b = (unsigned char *)recv;
            for (size_t i = 0; i < bytes; ++i)
                b[i] = g_rank == root ? (unsigned char)(i * 31 + (size_t)root * 7) : 0xEE;
            OK(conv_comm_broadcast(c, recv, count, dt, root));
            size_t i = 0;
            while (i < bytes && b[i] == (unsigned char)(i * 31 + (size_t)root * 7)) ++i;
            CHECK(i == bytes, "broadcast %s root %d: byte %zu differs", ct_dtype_name(dt), root, i);
        }
    }
    for (int it = 0; it < 10; ++it) OK(conv_comm_barrier(c));
    free(send);
    free(recv);
}

/* ------------------------------------------------------------- reducer */

#define NP 5
static const int64_t kSizes[NP] = {1000, 70000, 3, 30000, 17};

static void test_reducer(conv_comm_t c)
{
    conv_reducer_t r;
    float *w[NP];
    OK(conv_reducer_create(c, CONV_DTYPE_FLOAT32, &r));
    OK(conv_reducer_set_bucket_bytes(r, 4096, 65536));
    for (int p = 0; p < NP; ++p) {
        w[p] = calloc((size_t)kSizes[p], sizeof(float));
        for (int64_t i = 0; i < kSizes[p]; ++i) w[p][i] = (float)((i + p + g_rank) % 7);
        OK(conv_reducer_add_param(r, w[p], kSizes[p], NULL));
    }
    OK(conv_reducer_setup(r));
    OK(conv_reducer_broadcast_params(r, g_size - 1));
    for (int p = 0; p < NP; ++p) {
        int64_t i = 0;
        while (i < kSizes[p] && w[p][i] == (float)((i + p + g_size - 1) % 7)) ++i;
        CHECK(i == kSizes[p], "parameter %d element %lld: not rank %d's weight", p, (long long)i,
              g_size - 1);
    }
    for (int step = 0; step < 4; ++step) {
        for (int p = 0; p < NP; ++p) {
            void *g;
            OK(conv_reducer_get_grad(r, p, &g));
            ct_fill(CONV_DTYPE_FLOAT32, g, kSizes[p], g_rank, step * 16 + p);
        }
        /* reverse, forward, and an order of each rank's own */
        for (int k = 0; k < NP; ++k) {
            int p = step == 0 ? NP - 1 - k : step == 1 ? k : (k * 3 + g_rank + step) % NP;
            OK(conv_reducer_mark_ready(r, p));
        }
        OK(conv_reducer_finish(r));
        for (int p = 0; p < NP; ++p) {
            void *g;
            OK(conv_reducer_get_grad(r, p, &g));
            int64_t bad = ct_check(CONV_DTYPE_FLOAT32, g, kSizes[p], g_size, step * 16 + p, 1);
            CHECK(!bad, "reducer step %d parameter %d element %lld", step, p, (long long)(bad - 1));
        }
        OK(conv_reducer_apply_sgd(r, 0.01, 0.9, 0.001));
    }
    /* every rank holds the same weights after the steps */
    double sum = 0, lo, hi;
    for (int p = 0; p < NP; ++p)
        for (int64_t i = 0; i < kSizes[p]; ++i) sum += (double)w[p][i] * (double)((i % 13) + 1);
    MPI_Allreduce(&sum, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "weights differ between ranks after SGD (checksums %.17g .. %.17g)", lo, hi);

    /* a parameter rank 1 never marks: every rank fails, nobody hangs */
    double t0 = MPI_Wtime();
    for (int p = NP - 1; p >= 0; --p)
        if (!(g_rank == 1 && p == 2)) OK(conv_reducer_mark_ready(r, p));
    STATUS(conv_reducer_finish(r), CONV_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(conv_last_error(), g_rank == 1 ? "parameter 2 (of 5)" : "1 of") != NULL,
          "message: %s", conv_last_error());
    CHECK(MPI_Wtime() - t0 < 10.0, "the failed step took %.2f s", MPI_Wtime() - t0);
    for (int p = NP - 1; p >= 0; --p) OK(conv_reducer_mark_ready(r, p));
    OK(conv_reducer_finish(r));

    double comm_s = -1, exposed = -1;
    OK(conv_reducer_get_step_times(r, &comm_s, &exposed));
    CHECK(comm_s >= 0 && exposed >= 0, "step times %g %g", comm_s, exposed);
    conv_reducer_destroy(r);
    for (int p = 0; p < NP; ++p) free(w[p]);
}

/* Layouts that differ: every rank fails setup with SHAPE_MISMATCH. */
static void test_reducer_mismatch(conv_comm_t c)
{
    conv_reducer_t r;
    OK(conv_reducer_create(c, CONV_DTYPE_FLOAT64, &r));
    OK(conv_reducer_add_param(r, NULL, 100, NULL));
    if (g_rank == g_size - 1) OK(conv_reducer_add_param(r, NULL, 5, NULL));
    STATUS(conv_reducer_setup(r), CONV_STATUS_SHAPE_MISMATCH);
    conv_reducer_destroy(r);
}

/* ---------------------------------------------------- timeout and abort */

static void test_timeout_and_abort(void)
{
    conv_comm_t c;
    conv_comm_state_t st;
    OK(conv_comm_create_mpi_world(&c));
    OK(conv_comm_set_timeout(c, 0.3));
    if (g_rank == 0) {
        ct_sleep(1.0); /* late: the others time out */
        OK(conv_comm_barrier(c)); /* matches the barrier the others left pending */
    } else {
        double t0 = MPI_Wtime();
        STATUS(conv_comm_barrier(c), CONV_STATUS_BACKEND_ERROR);
        double dt = MPI_Wtime() - t0;
        CHECK(dt >= 0.25 && dt < 2.5, "timed out after %.3f s, want about 0.3 s", dt);
        STATUS(conv_comm_get_error(c, &st), CONV_STATUS_BACKEND_ERROR);
        CHECK(st == CONV_COMM_STATE_TIMED_OUT, "state %d", (int)st);
        CHECK(strstr(conv_last_error(), "timed out") != NULL, "message: %s", conv_last_error());
        STATUS(conv_comm_barrier(c), CONV_STATUS_BACKEND_ERROR); /* sticky */
    }
    conv_comm_destroy(c);
    MPI_Barrier(MPI_COMM_WORLD);

    /* rank 0 aborts: its call fails at once; the others fail by timeout */
    OK(conv_comm_create_mpi_world(&c));
    OK(conv_comm_set_timeout(c, 0.3));
    double t0 = MPI_Wtime();
    if (g_rank == 0) {
        OK(conv_comm_abort(c));
        STATUS(conv_comm_barrier(c), CONV_STATUS_BACKEND_ERROR);
        STATUS(conv_comm_get_error(c, &st), CONV_STATUS_BACKEND_ERROR);
        CHECK(st == CONV_COMM_STATE_ABORTED, "state %d", (int)st);
    } else {
        STATUS(conv_comm_barrier(c), CONV_STATUS_BACKEND_ERROR);
        STATUS(conv_comm_get_error(c, &st), CONV_STATUS_BACKEND_ERROR);
        CHECK(st == CONV_COMM_STATE_TIMED_OUT, "state %d", (int)st);
    }
    CHECK(MPI_Wtime() - t0 < 2.5, "took %.2f s", MPI_Wtime() - t0);
    conv_comm_destroy(c);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    const char *mode = getenv("CONV_TEST_MPI_THREAD");
    int want = mode && !strcmp(mode, "single") ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, got;
    MPI_Init_thread(&argc, &argv, want, &got);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    double t0 = MPI_Wtime();

    int avail = 0;
    OK(conv_comm_backend_available(CONV_COMM_BACKEND_MPI, &avail));
    CHECK(avail == 1, "the MPI backend is not available");
    conv_comm_t world, wrapped;
    OK(conv_comm_create_mpi_world(&world));
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    OK(conv_comm_create_mpi(&dup, &wrapped));
    STATUS(conv_comm_create_mpi(NULL, &wrapped), CONV_STATUS_INVALID_ARGUMENT);
    if (!g_failed) {
        test_basics(world);
        test_basics(wrapped);
        test_collectives(world);
        test_reducer(wrapped);
        test_reducer_mismatch(world);
        test_timeout_and_abort();
    }
    conv_comm_destroy(wrapped);
    conv_comm_destroy(world);
    MPI_Comm_free(&dup);

    int totals[2] = {g_passed, g_failed}, sums[2];
    MPI_Reduce(totals, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("test_comm_mpi: %d ranks, thread level %d, %.2f s\n", g_size, got,
               MPI_Wtime() - t0);
        printf("%d passed, %d failed\n", sums[0], sums[1]);
    }
    int any = g_failed, all;
    MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}
