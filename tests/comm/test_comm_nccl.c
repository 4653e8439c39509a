/*
 * test_comm_nccl.c -- the NCCL communicator on a GPU. Exits 77 (skipped)
 * where the NCCL backend is not built or no GPU is usable, which is the
 * case in CI. With one GPU: a 1-rank NCCL communicator (from a unique id,
 * and from conv_comm_create_nccl_all) agrees bit for bit with the in-process
 * backend on all-reduce (sum, average) and broadcast in the four dtypes; a
 * 1-rank reducer runs a step on device memory; its fused SGD step agrees bit
 * for bit with the host's (first step; fp32/fp64 every step) and keeps
 * fp16/bf16 weights in an fp32 master copy that follows writes to w (checked
 * against a model of it); abort and the error query.
 * With two GPUs or more: a 2-rank all-reduce from two threads.
 *
 * Device memory comes from the CUDA runtime, opened with dlopen like
 * libconv does, so this program links nothing of CUDA.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_test_util.h"
#include "conv.h"

static int g_passed, g_failed;
#define CHECK(cond, ...)                                            \
    do {                                                            \
        if (cond) {                                                 \
            ++g_passed;                                             \
        } else {                                                    \
            ++g_failed;                                             \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                           \
            fputc('\n', stderr);                                    \
        }                                                           \
    } while (0)
#define OK(expr) CHECK((expr) == CONV_STATUS_SUCCESS, "%s: %s", #expr, conv_last_error())

/* the few CUDA runtime functions used, by dlopen */
static int (*cuda_malloc)(void **, size_t);
static int (*cuda_free)(void *);
static int (*cuda_memcpy)(void *, const void *, size_t, int);
static int (*cuda_sync)(void);
static int (*cuda_count)(int *);
static int (*cuda_set_device)(int);
enum { H2D = 1, D2H = 2 };

static int load_cuda(void)
{
    const char *names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < 3 && !h; ++i) h = dlopen(names[i], RTLD_NOW);
    if (!h) return 0;
    *(void **)&cuda_malloc = dlsym(h, "cudaMalloc");
    *(void **)&cuda_free = dlsym(h, "cudaFree");
    *(void **)&cuda_memcpy = dlsym(h, "cudaMemcpy");
    *(void **)&cuda_sync = dlsym(h, "cudaDeviceSynchronize");
    *(void **)&cuda_count = dlsym(h, "cudaGetDeviceCount");
    *(void **)&cuda_set_device = dlsym(h, "cudaSetDevice");
    return cuda_malloc && cuda_free && cuda_memcpy && cuda_sync && cuda_count && cuda_set_device;
}

/* One collective on the GPU communicator and on a 1-rank in-process one. */
static void compare(conv_comm_t gpu, conv_comm_t local, conv_dtype_t dt, int64_t count, int what)
{
    size_t bytes = (size_t)count * ct_size(dt);
    unsigned char *host = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    void *dev = NULL;
    if (!host || !want || !got || cuda_malloc(&dev, bytes ? bytes : 1)) {
        CHECK(0, "out of memory");
        goto out;
    }
    ct_fill(dt, host, count, 0, what + 3);
    memcpy(want, host, bytes);
    cuda_memcpy(dev, host, bytes, H2D);
    if (what < 2) {
        conv_reduce_op_t op = what ? CONV_REDUCE_AVERAGE : CONV_REDUCE_SUM;
        OK(conv_comm_all_reduce(local, want, want, count, dt, op));
        OK(conv_comm_all_reduce(gpu, dev, dev, count, dt, op));
    } else {
        OK(conv_comm_broadcast(local, want, count, dt, 0));
        OK(conv_comm_broadcast(gpu, dev, count, dt, 0));
    }
    OK(conv_comm_synchronize(gpu));
    cuda_memcpy(got, dev, bytes, D2H);
    CHECK(memcmp(got, want, bytes) == 0, "%s %s of %lld elements differs from the in-process one",
          ct_dtype_name(dt), what == 0 ? "sum" : what == 1 ? "average" : "broadcast",
          (long long)count);
out:
    if (dev) cuda_free(dev);
    free(host);
    free(want);
    free(got);
}

static void test_one_rank(conv_comm_t gpu)
{
    conv_comm_t local;
    conv_device_t dev;
    conv_comm_backend_t be;
    int v;
    OK(conv_comm_create_local(1, &local));
    OK(conv_comm_get_backend(gpu, &be));
    CHECK(be == CONV_COMM_BACKEND_NCCL, "backend %d", (int)be);
    OK(conv_comm_get_device(gpu, &dev, &v));
    CHECK(dev == CONV_DEVICE_CUDA && v == 0, "device %d:%d", (int)dev, v);
    for (int d = 0; d < 4; ++d)
        for (int what = 0; what < 3; ++what) {
            compare(gpu, local, ct_dtypes[d], 1, what);
            compare(gpu, local, ct_dtypes[d], 1000003, what);
        }
    OK(conv_comm_barrier(gpu));
    OK(conv_comm_get_error(gpu, NULL));
    conv_comm_destroy(local);
}

static void test_reducer(conv_comm_t gpu)
{
    conv_reducer_t r;
    const int64_t sizes[3] = {1000, 300000, 17};
    void *w[3] = {NULL, NULL, NULL};
    OK(conv_reducer_create(gpu, CONV_DTYPE_FLOAT32, &r));
    OK(conv_reducer_set_bucket_bytes(r, 4096, 65536));
    for (int p = 0; p < 3; ++p) {
        cuda_malloc(&w[p], (size_t)sizes[p] * 4);
        OK(conv_reducer_add_param(r, w[p], sizes[p], NULL));
    }
    OK(conv_reducer_setup(r));
    OK(conv_reducer_broadcast_params(r, 0));
    for (int p = 0; p < 3; ++p) {
        float *h = malloc((size_t)sizes[p] * 4);
        void *g;
        ct_fill(CONV_DTYPE_FLOAT32, h, sizes[p], 0, p);
        OK(conv_reducer_get_grad(r, p, &g));
        cuda_memcpy(g, h, (size_t)sizes[p] * 4, H2D);
        free(h);
    }
    for (int p = 2; p >= 0; --p) OK(conv_reducer_mark_ready(r, p));
    OK(conv_reducer_finish(r));
    cuda_sync();
    for (int p = 0; p < 3; ++p) {
        float *h = malloc((size_t)sizes[p] * 4);
        void *g;
        OK(conv_reducer_get_grad(r, p, &g));
        cuda_memcpy(h, g, (size_t)sizes[p] * 4, D2H);
        CHECK(!ct_check(CONV_DTYPE_FLOAT32, h, sizes[p], 1, p, 1), "reducer parameter %d", p);
        free(h);
    }
    conv_reducer_destroy(r);
    for (int p = 0; p < 3; ++p) cuda_free(w[p]);
}

/* One SGD step of a 1-parameter reducer whose gradient slot gets g. */
static void sgd_step(conv_reducer_t r, const void *g, size_t bytes, int device)
{
    void *slot;
    OK(conv_reducer_get_grad(r, 0, &slot));
    if (device)
        cuda_memcpy(slot, g, bytes, H2D);
    else
        memcpy(slot, g, bytes);
    OK(conv_reducer_mark_ready(r, 0));
    OK(conv_reducer_finish(r));
    OK(conv_reducer_apply_sgd(r, 0.05, 0.9, 1e-3));
}

/* The device step's fp32 master copy, modelled: w and h in the dtype, m the
 * master (float), one element. */
static void master_model(conv_dtype_t dt, void *w, void *h, float *m, const void *g, int64_t i)
{
    unsigned char r[2];
    ct_set(dt, r, 0, *m);
    float wi = memcmp(r, (unsigned char *)w + 2 * i, 2) == 0 ? *m : (float)ct_get(dt, w, i);
    float hi = 0.9f * (float)ct_get(dt, h, i) + 0.05f * ((float)ct_get(dt, g, i) + 1e-3f * wi);
    float wn = wi - hi;
    ct_set(dt, h, i, hi);
    ct_set(dt, w, i, wn);
    *m = wn;
}

/* conv_reducer_apply_sgd on device memory against the host's step. */
static void test_sgd(conv_comm_t gpu, conv_dtype_t dt)
{
    const int64_t n = 100003;
    const size_t bytes = (size_t)n * ct_size(dt);
    const int half = dt == CONV_DTYPE_FLOAT16 || dt == CONV_DTYPE_BFLOAT16;
    unsigned char *w0 = malloc(bytes), *g = malloc(bytes), *wc = malloc(bytes), *got = malloc(bytes);
    unsigned char *mw = malloc(bytes), *mh = calloc(1, bytes);
    float *mm = calloc((size_t)n, sizeof(float));
    void *dw = NULL;
    conv_comm_t local = NULL;
    conv_reducer_t rc = NULL, rg = NULL;
    if (!w0 || !g || !wc || !got || !mw || !mh || !mm || cuda_malloc(&dw, bytes)) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n; ++i) {
        ct_set(dt, w0, i, ct_value(0, i, 5) * 0.37 + 0.013 * (double)(i % 11));
        ct_set(dt, g, i, ct_value(0, i, 6) * 0.21 - 0.007 * (double)(i % 5));
    }
    memcpy(wc, w0, bytes);
    memcpy(mw, w0, bytes);
    cuda_memcpy(dw, w0, bytes, H2D);
    OK(conv_comm_create_local(1, &local));
    OK(conv_reducer_create(local, dt, &rc));
    OK(conv_reducer_add_param(rc, wc, n, NULL));
    OK(conv_reducer_setup(rc));
    OK(conv_reducer_create(gpu, dt, &rg));
    OK(conv_reducer_add_param(rg, dw, n, NULL));
    OK(conv_reducer_setup(rg));
    if (g_failed) goto out;
    for (int step = 0; step < 3; ++step) {
        if (step == 2) { /* the application writes w: the master follows */
            cuda_memcpy(dw, w0, bytes, H2D);
            memcpy(mw, w0, bytes);
            memcpy(wc, w0, bytes);
        }
        sgd_step(rc, g, bytes, 0);
        sgd_step(rg, g, bytes, 1);
        OK(conv_comm_synchronize(gpu));
        cuda_memcpy(got, dw, bytes, D2H);
        if (half)
            for (int64_t i = 0; i < n; ++i) master_model(dt, mw, mh, &mm[i], g, i);
        const unsigned char *want = half && step > 0 ? mw : wc;
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; ++i)
            if (memcmp(got + (size_t)i * ct_size(dt), want + (size_t)i * ct_size(dt), ct_size(dt)))
                bad = i;
        CHECK(bad < 0, "%s SGD step %d: w[%lld] = %.9g on the GPU, %.9g %s", ct_dtype_name(dt),
              step, (long long)bad, bad < 0 ? 0.0 : ct_get(dt, got, bad),
              bad < 0 ? 0.0 : ct_get(dt, want, bad),
              half && step > 0 ? "by the master-copy model" : "by the host's step");
        if (half && step == 0)  /* the model agrees with the host on the first step */
            CHECK(memcmp(mw, wc, bytes) == 0, "%s: the master-copy model's first step is not the host's",
                  ct_dtype_name(dt));
    }
out:
    if (rg) conv_reducer_destroy(rg);
    if (rc) conv_reducer_destroy(rc);
    if (local) conv_comm_destroy(local);
    if (dw) cuda_free(dw);
    free(w0);
    free(g);
    free(wc);
    free(got);
    free(mw);
    free(mh);
    free(mm);
}

typedef struct pair {
    conv_comm_t c[2];
} pair;

static void pair_rank(int rank, int n, void *user)
{
    pair *p = (pair *)user;
    (void)n;
    const int64_t count = 1 << 20;
    float *h = malloc((size_t)count * 4);
    void *d = NULL;
    CT_TRUE(h != NULL, "out of memory");
    cuda_set_device(rank); /* this rank's GPU for its memory */
    cuda_malloc(&d, (size_t)count * 4);
    ct_fill(CONV_DTYPE_FLOAT32, h, count, rank, 1);
    cuda_memcpy(d, h, (size_t)count * 4, H2D);
    CT_OK(conv_comm_all_reduce(p->c[rank], d, d, count, CONV_DTYPE_FLOAT32, CONV_REDUCE_SUM));
    CT_OK(conv_comm_synchronize(p->c[rank]));
    cuda_memcpy(h, d, (size_t)count * 4, D2H);
    CT_TRUE(!ct_check(CONV_DTYPE_FLOAT32, h, count, 2, 1, 0), "rank %d: 2-GPU sum differs", rank);
    cuda_free(d);
    free(h);
}

int main(void)
{
    int avail = 0, gpus = 0;
    if (conv_comm_backend_available(CONV_COMM_BACKEND_NCCL, &avail) != CONV_STATUS_SUCCESS ||
        !avail) {
        char id[CONV_COMM_UNIQUE_ID_BYTES];
        conv_comm_unique_id(id, sizeof id);
        printf("test_comm_nccl: skipped: %s\n", conv_last_error());
        return 77;
    }
    if (!load_cuda() || cuda_count(&gpus) != 0 || gpus < 1) {
        printf("test_comm_nccl: skipped: the CUDA runtime could not be loaded here\n");
        return 77;
    }
    printf("test_comm_nccl: %d GPU(s)\n", gpus);

    char id[CONV_COMM_UNIQUE_ID_BYTES];
    conv_comm_t gpu, all;
    OK(conv_comm_unique_id(id, sizeof id));
    OK(conv_comm_create_nccl(id, sizeof id, 1, 0, 0, &gpu));
    if (!g_failed) {
        test_one_rank(gpu);
        test_reducer(gpu);
        for (int d = 0; d < 4; ++d) test_sgd(gpu, ct_dtypes[d]);
    }
    conv_comm_state_t st;
    OK(conv_comm_abort(gpu));
    CHECK(conv_comm_get_error(gpu, &st) == CONV_STATUS_BACKEND_ERROR &&
              st == CONV_COMM_STATE_ABORTED,
          "after abort: state %d", (int)st);
    CHECK(conv_comm_barrier(gpu) == CONV_STATUS_BACKEND_ERROR, "barrier after abort");
    conv_comm_destroy(gpu);

    /* a rank whose peer never comes: creation fails by the timeout */
    {
        conv_comm_t lonely = NULL;
        setenv("CONV_COMM_TIMEOUT", "2", 1);
        OK(conv_comm_unique_id(id, sizeof id));
        double t0 = ct_now();
        conv_status_t s = conv_comm_create_nccl(id, sizeof id, 2, 0, 0, &lonely);
        double dt = ct_now() - t0;
        unsetenv("CONV_COMM_TIMEOUT");
        CHECK(s == CONV_STATUS_BACKEND_ERROR && strstr(conv_last_error(), "timed out"),
              "creation without the peer: %s: %s", conv_status_string(s), conv_last_error());
        CHECK(dt > 1.5 && dt < 10.0, "creation without the peer failed after %.2f s", dt);
        if (s == CONV_STATUS_SUCCESS) conv_comm_destroy(lonely);
    }

    int dev0 = 0;
    OK(conv_comm_create_nccl_all(1, &dev0, &all));
    OK(conv_comm_set_stream(all, NULL));
    if (!g_failed) test_one_rank(all);
    conv_comm_destroy(all);

    if (gpus >= 2) {
        pair p;
        OK(conv_comm_create_nccl_all(2, NULL, p.c));
        ct_reset();
        ct_run_ranks(2, pair_rank, &p);
        CHECK(ct_failure() == NULL, "%s", ct_failure() ? ct_failure() : "");
        conv_comm_destroy(p.c[0]);
        conv_comm_destroy(p.c[1]);
    }
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
