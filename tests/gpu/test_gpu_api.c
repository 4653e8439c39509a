/*
 * test_gpu_api.c -- the CUDA context's contract: devices, streams and
 * waiting, device tensors (create, wrap, copies), device/context mismatches
 * refused with a message and nothing written, math modes (DEFAULT may use
 * FFT/Winograd, FAST TF32) within their bounds, deterministic mode,
 * algorithm search and tuning files, workspaces, out of memory, the
 * numerical guard. Exits 77 without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"

#define OK(expr)                                                                       \
    do {                                                                               \
        conv_status_t s_ = (expr);                                                     \
        if (s_ != CONV_STATUS_SUCCESS)                                                 \
            fail_msg("%s: %s: %s", #expr, conv_status_string(s_), conv_last_error()); \
    } while (0)
#define STATUS(expr, want)                                                                   \
    do {                                                                                     \
        conv_status_t s_ = (expr);                                                           \
        if (s_ != (want))                                                                    \
            fail_msg("%s: got %s, want %s (%s)", #expr, conv_status_string(s_),              \
                     conv_status_string(want), conv_last_error());                           \
    } while (0)

static conv_context_t g_gpu, g_cpu;

static conv_tensor_t make(conv_context_t ctx, conv_dtype_t dt, int ndim, const int64_t *dims)
{
    conv_tensor_t t = NULL;
    OK(conv_tensor_create(ctx, dt, CONV_LAYOUT_CHANNELS_FIRST, ndim, dims, &t));
    return t;
}

static void fill(conv_tensor_t t, float seed)
{
    size_t bytes;
    int64_t n;
    OK(conv_tensor_get_bytes(t, &bytes));
    OK(conv_tensor_get_elements(t, &n));
    float *h = malloc(bytes ? bytes : 4);
    for (int64_t i = 0; i < n; i++)
        h[i] = (float)((i * 7 + (int64_t)(seed * 13)) % 11 - 5);
    OK(conv_tensor_copy_from(t, h, bytes));
    free(h);
}

static float *read_back(conv_tensor_t t)
{
    size_t bytes;
    OK(conv_tensor_get_bytes(t, &bytes));
    float *h = malloc(bytes ? bytes : 4);
    OK(conv_tensor_copy_to(t, h, bytes));
    return h;
}

/* --------------------------------------------------------------- devices */

static void devices(void **state)
{
    (void)state;
    int n = 0;
    OK(conv_device_count(CONV_DEVICE_CUDA, &n));
    assert_true(n >= 1);
    conv_context_t c = NULL;
    STATUS(conv_context_create(CONV_DEVICE_CUDA, n, &c), CONV_STATUS_NOT_AVAILABLE);
    assert_null(c);
    char name[256];
    OK(conv_context_get_device_name(g_gpu, name, sizeof name));
    assert_true(strncmp(name, "cuda ", 5) == 0);
    printf("device: %s\n", name);
    conv_device_t d;
    int idx;
    OK(conv_context_get_device(g_gpu, &d, &idx));
    assert_int_equal(d, CONV_DEVICE_CUDA);
    /* CPU: no stream, synchronize is a no-op */
    void *s = (void *)1;
    OK(conv_context_get_stream(g_cpu, &s));
    assert_null(s);
    OK(conv_context_synchronize(g_cpu));
    STATUS(conv_context_set_stream(g_cpu, NULL), CONV_STATUS_UNSUPPORTED);
    STATUS(conv_context_set_allocator(g_gpu, NULL, NULL, NULL), CONV_STATUS_UNSUPPORTED);
}

/* ------------------------------------------------- streams and tensors */

static void streams(void **state)
{
    (void)state;
    conv_context_t other = NULL;
    OK(conv_context_create(CONV_DEVICE_CUDA, 0, &other));
    void *own = NULL, *theirs = NULL, *now = NULL;
    OK(conv_context_get_stream(g_gpu, &own));
    OK(conv_context_get_stream(other, &theirs));
    assert_non_null(own);
    assert_true(own != theirs);
    OK(conv_context_set_stream(g_gpu, theirs)); /* the caller's stream (here: another's) */
    OK(conv_context_get_stream(g_gpu, &now));
    assert_ptr_equal(now, theirs);
    /* a pass on the borrowed stream, waited for through either context */
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 3, 3};
    conv_tensor_t x = make(g_gpu, CONV_DTYPE_FLOAT32, 4, xd), w = make(g_gpu, CONV_DTYPE_FLOAT32, 4, wd);
    conv_tensor_t y = make(g_gpu, CONV_DTYPE_FLOAT32, 4, yd);
    fill(x, 1);
    fill(w, 2);
    conv_desc_t d;
    OK(conv_desc_create(2, &d));
    OK(conv_forward(g_gpu, d, x, w, NULL, y, NULL));
    OK(conv_context_synchronize(other));
    float *got = read_back(y);
    float *hx = read_back(x), *hw = read_back(w);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double r = 0;
                for (int c = 0; c < 2; c++)
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++)
                            r += (double)hx[(c * 5 + i + a) * 5 + j + b] * hw[((k * 2 + c) * 3 + a) * 3 + b];
                assert_true(fabs(got[(k * 3 + i) * 3 + j] - r) <= 1e-4 * (1 + fabs(r)));
            }
    free(got);
    free(hx);
    free(hw);
    OK(conv_context_set_stream(g_gpu, NULL)); /* back to its own */
    OK(conv_context_get_stream(g_gpu, &now));
    assert_ptr_equal(now, own);
    conv_desc_destroy(d);
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(y);
    conv_context_destroy(other);
}

static void tensors(void **state)
{
    (void)state;
    int64_t dims[4] = {2, 3, 4, 5};
    for (int dt = 0; dt < 4; dt++) {
        size_t es = gu_size((conv_dtype_t)dt), bytes = 120 * es;
        unsigned char *src = malloc(bytes), *dst = malloc(bytes);
        for (size_t i = 0; i < bytes; i++)
            src[i] = (unsigned char)(i * 37 + 11);
        if (dt >= 2) /* no NaN bit patterns in the 16-bit types: keep exponents small */
            for (size_t i = 1; i < bytes; i += 2)
                src[i] &= 0x3f;
        conv_tensor_t h = NULL, h2 = NULL, g = make(g_gpu, (conv_dtype_t)dt, 4, dims);
        conv_tensor_t g2 = make(g_gpu, (conv_dtype_t)dt, 4, dims);
        conv_device_t dev;
        int idx;
        OK(conv_tensor_get_device(g, &dev, &idx));
        assert_int_equal(dev, CONV_DEVICE_CUDA);
        OK(conv_tensor_wrap(g_cpu, (conv_dtype_t)dt, CONV_LAYOUT_CHANNELS_FIRST, 4, dims, src, &h));
        OK(conv_tensor_wrap(g_cpu, (conv_dtype_t)dt, CONV_LAYOUT_CHANNELS_FIRST, 4, dims, dst, &h2));
        OK(conv_tensor_copy(g, h));  /* host -> device */
        OK(conv_tensor_copy(g2, g)); /* device -> device (enqueued) */
        OK(conv_tensor_copy(h2, g2)); /* device -> host (waits) */
        assert_memory_equal(src, dst, bytes);
        /* wrapping device memory: the wrapped tensor sees g's elements */
        void *p = NULL;
        OK(conv_tensor_get_data(g, &p));
        conv_tensor_t wrapped = NULL;
        OK(conv_tensor_wrap(g_gpu, (conv_dtype_t)dt, CONV_LAYOUT_CHANNELS_FIRST, 4, dims, p, &wrapped));
        memset(dst, 0, bytes);
        OK(conv_tensor_copy_to(wrapped, dst, bytes));
        assert_memory_equal(src, dst, bytes);
        /* mismatches */
        int64_t other[4] = {2, 3, 4, 6};
        conv_tensor_t g3 = make(g_gpu, (conv_dtype_t)dt, 4, other);
        STATUS(conv_tensor_copy(g3, g), CONV_STATUS_SHAPE_MISMATCH);
        conv_tensor_destroy(g3);
        conv_tensor_destroy(wrapped);
        conv_tensor_destroy(h);
        conv_tensor_destroy(h2);
        conv_tensor_destroy(g);
        conv_tensor_destroy(g2);
        free(src);
        free(dst);
    }
}

/* A CPU tensor on a GPU context (and the reverse): TYPE_MISMATCH with a
 * message, never a crash, and the output untouched. */
static void mismatches(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 3, 3};
    conv_tensor_t gx = make(g_gpu, CONV_DTYPE_FLOAT32, 4, xd), gw = make(g_gpu, CONV_DTYPE_FLOAT32, 4, wd);
    conv_tensor_t gy = make(g_gpu, CONV_DTYPE_FLOAT32, 4, yd);
    conv_tensor_t cx = make(g_cpu, CONV_DTYPE_FLOAT32, 4, xd), cy = make(g_cpu, CONV_DTYPE_FLOAT32, 4, yd);
    conv_desc_t d;
    OK(conv_desc_create(2, &d));
    float nan27[27];
    for (int i = 0; i < 27; i++)
        nan27[i] = NAN;
    OK(conv_tensor_copy_from(gy, nan27, sizeof nan27));
    STATUS(conv_forward(g_gpu, d, cx, gw, NULL, gy, NULL), CONV_STATUS_TYPE_MISMATCH);
    assert_non_null(strstr(conv_last_error(), "cpu"));
    STATUS(conv_forward(g_cpu, d, gx, gw, NULL, cy, NULL), CONV_STATUS_TYPE_MISMATCH);
    assert_non_null(strstr(conv_last_error(), "cuda"));
    conv_workspace_t cws = NULL;
    OK(conv_workspace_create(g_cpu, &cws));
    STATUS(conv_forward(g_gpu, d, gx, gw, NULL, gy, cws), CONV_STATUS_TYPE_MISMATCH);
    conv_workspace_t gws = NULL;
    OK(conv_workspace_create(g_gpu, &gws));
    conv_tensor_t cw0 = make(g_cpu, CONV_DTYPE_FLOAT32, 4, wd);
    STATUS(conv_forward(g_cpu, d, cx, cw0, NULL, cy, gws), CONV_STATUS_TYPE_MISMATCH);
    conv_tensor_destroy(cw0);
    float *after = read_back(gy);
    for (int i = 0; i < 27; i++)
        assert_true(isnan(after[i]));
    free(after);
    /* algorithms of the other engine */
    OK(conv_desc_set_algorithm(d, CONV_OP_FORWARD, CONV_ALGO_IM2COL_GEMM));
    STATUS(conv_forward(g_gpu, d, gx, gw, NULL, gy, NULL), CONV_STATUS_UNSUPPORTED);
    OK(conv_desc_set_algorithm(d, CONV_OP_FORWARD, CONV_ALGO_CUDNN_IMPLICIT_GEMM));
    conv_tensor_t cw = make(g_cpu, CONV_DTYPE_FLOAT32, 4, wd);
    STATUS(conv_forward(g_cpu, d, cx, cw, NULL, cy, NULL), CONV_STATUS_UNSUPPORTED);
    OK(conv_forward(g_gpu, d, gx, gw, NULL, gy, NULL));
    conv_algo_t a;
    OK(conv_chosen_algorithm(g_gpu, d, CONV_OP_FORWARD, gx, gw, gy, &a));
    assert_int_equal(a, CONV_ALGO_CUDNN_IMPLICIT_GEMM);
    conv_workspace_destroy(cws);
    conv_workspace_destroy(gws);
    conv_tensor_destroy(cw);
    conv_desc_destroy(d);
    conv_tensor_destroy(gx);
    conv_tensor_destroy(gw);
    conv_tensor_destroy(gy);
    conv_tensor_destroy(cx);
    conv_tensor_destroy(cy);
}

/* ------------------------------------------------------------ math modes */

static void math_modes_run(conv_math_t math, conv_dtype_t dt, int n)
{
    conv_context_set_math(g_gpu, math);
    gu_tolerance tol = gu_tol(dt, math);
    int failures = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        uint64_t seed = 0xabcdefull + (uint64_t)i * 31 + (uint64_t)math * 1000003u;
        uint64_t s = seed;
        gu_problem p;
        gu_random_problem(&s, dt, 1, &p);
        for (int op = 0; op < 3; op++) {
            gu_check c;
            gu_compare(g_gpu, g_cpu, &p, (conv_op_t)op, seed + (uint64_t)op, tol, &c);
            worst = c.worst > worst ? c.worst : worst;
            if (!c.ok && failures++ < 5) {
                char d[512];
                gu_describe(&p, d, sizeof d);
                print_error("math %d op %d seed %llu: %s\n  %s\n", (int)math, op,
                            (unsigned long long)seed, c.msg, d);
            }
        }
    }
    conv_context_set_math(g_gpu, CONV_MATH_DEFAULT);
    printf("[ math %s ] %d problems x 3 passes, %d failed, worst error/bound %.3g\n",
           math == CONV_MATH_FAST ? "FAST" : "DEFAULT", n, failures, worst);
    assert_int_equal(failures, 0);
}

static void math_default(void **state) { (void)state; math_modes_run(CONV_MATH_DEFAULT, CONV_DTYPE_FLOAT32, 150); }
static void math_fast(void **state) { (void)state; math_modes_run(CONV_MATH_FAST, CONV_DTYPE_FLOAT32, 150); }

/* Bigger problems, so that cuDNN's heuristics pick its fast algorithms. */
static void big_problem(conv_context_t ctx, int64_t n, conv_tensor_t *x, conv_tensor_t *w,
                        conv_tensor_t *dy, conv_tensor_t *dw)
{
    int64_t xd[4] = {n, 32, 28, 28}, wd[4] = {64, 32, 3, 3}, yd[4] = {n, 64, 28, 28};
    *x = make(ctx, CONV_DTYPE_FLOAT32, 4, xd);
    *w = make(ctx, CONV_DTYPE_FLOAT32, 4, wd);
    *dy = make(ctx, CONV_DTYPE_FLOAT32, 4, yd);
    *dw = make(ctx, CONV_DTYPE_FLOAT32, 4, wd);
    fill(*x, 3);
    fill(*w, 4);
    fill(*dy, 5);
}

static void deterministic(void **state)
{
    (void)state;
    conv_context_t ctx;
    OK(conv_context_create(CONV_DEVICE_CUDA, 0, &ctx));
    OK(conv_context_set_deterministic(ctx, 1));
    int on = 0;
    OK(conv_context_get_deterministic(ctx, &on));
    assert_int_equal(on, 1);
    conv_tensor_t x, w, dy, dw;
    big_problem(ctx, 16, &x, &w, &dy, &dw);
    conv_desc_t d;
    OK(conv_desc_create(2, &d));
    int64_t one[2] = {1, 1};
    OK(conv_desc_set_padding(d, one, one));
    conv_algo_t a;
    OK(conv_chosen_algorithm(ctx, d, CONV_OP_BACKWARD_FILTER, x, dw, dy, &a));
    assert_true(a != CONV_ALGO_CUDNN_IMPLICIT_GEMM && a != CONV_ALGO_CUDNN_GEMM);
    OK(conv_chosen_algorithm(ctx, d, CONV_OP_BACKWARD_DATA, x, w, dy, &a));
    assert_true(a != CONV_ALGO_CUDNN_IMPLICIT_GEMM);
    /* real-valued data: bit-identical twice */
    size_t bytes;
    OK(conv_tensor_get_bytes(x, &bytes));
    float *h = malloc(bytes);
    uint64_t s = 42;
    for (size_t i = 0; i < bytes / 4; i++)
        h[i] = (float)((double)(gu_rand(&s) >> 11) * 0x1.0p-53);
    OK(conv_tensor_copy_from(x, h, bytes));
    free(h);
    OK(conv_backward_filter(ctx, d, x, dy, dw, NULL, NULL));
    float *r1 = read_back(dw);
    OK(conv_backward_filter(ctx, d, x, dy, dw, NULL, NULL));
    float *r2 = read_back(dw);
    assert_memory_equal(r1, r2, 64 * 32 * 9 * 4);
    OK(conv_find_algorithms(ctx, d, CONV_OP_BACKWARD_FILTER, x, dw, dy, NULL, 8, NULL, NULL, NULL,
                            (int[]){0}));
    OK(conv_chosen_algorithm(ctx, d, CONV_OP_BACKWARD_FILTER, x, dw, dy, &a));
    assert_true(a != CONV_ALGO_CUDNN_IMPLICIT_GEMM && a != CONV_ALGO_CUDNN_GEMM);
    free(r1);
    free(r2);
    conv_desc_destroy(d);
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(dy);
    conv_tensor_destroy(dw);
    conv_context_destroy(ctx);
}

/* ------------------------------------------------ search and tuning files */

static void find_and_tune(void **state)
{
    (void)state;
    conv_context_t ctx, ctx2;
    OK(conv_context_create(CONV_DEVICE_CUDA, 0, &ctx));
    conv_tensor_t x, w, dy, dw;
    big_problem(ctx, 8, &x, &w, &dy, &dw);
    conv_desc_t d;
    OK(conv_desc_create(2, &d));
    int64_t one[2] = {1, 1};
    OK(conv_desc_set_padding(d, one, one));
    conv_algo_t algos[16];
    double ms[16];
    size_t wsb[16];
    int n = 0;
    OK(conv_find_algorithms(ctx, d, CONV_OP_FORWARD, x, w, dy, NULL, 16, algos, ms, wsb, &n));
    assert_true(n >= 1);
    for (int i = 0; i < n; i++) {
        printf("  find fwd: %-28s %8.4f ms %10zu bytes\n", conv_algo_name(algos[i]), ms[i], wsb[i]);
        assert_true(algos[i] >= CONV_ALGO_CUDNN_IMPLICIT_GEMM);
        if (i)
            assert_true(ms[i] >= ms[i - 1]);
    }
    conv_algo_t a;
    OK(conv_chosen_algorithm(ctx, d, CONV_OP_FORWARD, x, w, dy, &a));
    assert_int_equal(a, algos[0]);
    char path[] = "/tmp/libconv-gpu-tuning-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    OK(conv_context_save_tuning(ctx, path));
    OK(conv_context_create(CONV_DEVICE_CUDA, 0, &ctx2));
    OK(conv_context_load_tuning(ctx2, path));
    conv_tensor_t x2, w2, dy2, dw2;
    big_problem(ctx2, 8, &x2, &w2, &dy2, &dw2);
    OK(conv_chosen_algorithm(ctx2, d, CONV_OP_FORWARD, x2, w2, dy2, &a));
    assert_int_equal(a, algos[0]);
    /* a GPU's file on the CPU: another device, refused */
    STATUS(conv_context_load_tuning(g_cpu, path), CONV_STATUS_BAD_FILE);
    /* the same file with another GPU's name: refused, not misapplied */
    FILE *f = fopen(path, "r");
    char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    char *dev = strstr(text, "device cuda ");
    assert_non_null(dev);
    dev[12] = dev[12] == 'X' ? 'Y' : 'X';
    f = fopen(path, "w");
    fwrite(text, 1, len, f);
    fclose(f);
    STATUS(conv_context_load_tuning(ctx2, path), CONV_STATUS_BAD_FILE);
    remove(path);
    conv_tensor_destroy(x2);
    conv_tensor_destroy(w2);
    conv_tensor_destroy(dy2);
    conv_tensor_destroy(dw2);
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(dy);
    conv_tensor_destroy(dw);
    conv_desc_destroy(d);
    conv_context_destroy(ctx);
    conv_context_destroy(ctx2);
}

/* ------------------------------------------------- workspaces and memory */

static void workspaces_and_memory(void **state)
{
    (void)state;
    /* asymmetric padding needs a padded copy of x in the workspace on the
     * legacy path (forced: AUTO's graph plan takes the padding itself) */
    int64_t xd[4] = {1, 2, 6, 6}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 5, 5};
    int64_t pb[2] = {1, 0}, pe[2] = {0, 1};
    conv_tensor_t x = make(g_gpu, CONV_DTYPE_FLOAT32, 4, xd), w = make(g_gpu, CONV_DTYPE_FLOAT32, 4, wd);
    conv_tensor_t y = make(g_gpu, CONV_DTYPE_FLOAT32, 4, yd);
    conv_desc_t d;
    OK(conv_desc_create(2, &d));
    OK(conv_desc_set_padding(d, pb, pe));
    OK(conv_desc_set_algorithm(d, CONV_OP_FORWARD, CONV_ALGO_CUDNN_IMPLICIT_GEMM));
    size_t need = 0;
    OK(conv_workspace_size(g_gpu, d, CONV_OP_FORWARD, x, w, y, &need));
    assert_true(need > 0);
    float nan75[75];
    for (int i = 0; i < 75; i++)
        nan75[i] = NAN;
    OK(conv_tensor_copy_from(y, nan75, sizeof nan75));
    conv_workspace_t small = NULL;
    OK(conv_workspace_wrap(g_gpu, NULL, 0, &small));
    STATUS(conv_forward(g_gpu, d, x, w, NULL, y, small), CONV_STATUS_WORKSPACE_TOO_SMALL);
    float *after = read_back(y);
    for (int i = 0; i < 75; i++)
        assert_true(isnan(after[i]));
    free(after);
    /* a caller's device memory as the workspace */
    conv_tensor_t mem;
    int64_t md[3] = {1, 1, (int64_t)(need / 4 + 1)};
    OK(conv_tensor_create(g_gpu, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 3, md, &mem));
    void *p;
    OK(conv_tensor_get_data(mem, &p));
    conv_workspace_t big = NULL;
    OK(conv_workspace_wrap(g_gpu, p, need, &big));
    OK(conv_forward(g_gpu, d, x, w, NULL, y, big));
    OK(conv_context_synchronize(g_gpu));
    /* out of device memory: its own status, nothing created */
    int64_t huge[4] = {1 << 16, 1 << 16, 1 << 10, 1 << 4};
    conv_tensor_t t = NULL;
    STATUS(conv_tensor_create(g_gpu, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, huge, &t),
           CONV_STATUS_OUT_OF_MEMORY);
    assert_null(t);
    /* the context still works afterwards */
    OK(conv_forward(g_gpu, d, x, w, NULL, y, NULL));
    OK(conv_context_synchronize(g_gpu));
    conv_workspace_destroy(small);
    conv_workspace_destroy(big);
    conv_tensor_destroy(mem);
    conv_tensor_destroy(x);
    conv_tensor_destroy(w);
    conv_tensor_destroy(y);
    conv_desc_destroy(d);
}

static void numerics_guard(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 3, 3};
    for (int dt = 0; dt < 4; dt++) {
        conv_tensor_t x = make(g_gpu, (conv_dtype_t)dt, 4, xd), w = make(g_gpu, (conv_dtype_t)dt, 4, wd);
        conv_tensor_t y = make(g_gpu, (conv_dtype_t)dt, 4, yd);
        unsigned char nanx[50 * 8];
        memset(nanx, 0xff, sizeof nanx); /* NaN in every dtype */
        OK(conv_tensor_copy_from(x, nanx, 50 * gu_size((conv_dtype_t)dt)));
        conv_desc_t d;
        OK(conv_desc_create(2, &d));
        OK(conv_context_set_check_numerics(g_gpu, 1));
        STATUS(conv_forward(g_gpu, d, x, w, NULL, y, NULL), CONV_STATUS_NUMERICAL_ERROR);
        assert_non_null(strstr(conv_last_error(), "NaN"));
        OK(conv_context_set_check_numerics(g_gpu, 0));
        OK(conv_forward(g_gpu, d, x, w, NULL, y, NULL));
        conv_desc_destroy(d);
        conv_tensor_destroy(x);
        conv_tensor_destroy(w);
        conv_tensor_destroy(y);
    }
}

static int setup(void **state)
{
    (void)state;
    if (conv_context_create(CONV_DEVICE_CUDA, 0, &g_gpu) != CONV_STATUS_SUCCESS ||
        conv_context_create(CONV_DEVICE_CPU, 0, &g_cpu) != CONV_STATUS_SUCCESS) {
        print_error("context: %s\n", conv_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conv_context_destroy(g_gpu);
    conv_context_destroy(g_cpu);
    return 0;
}

int main(void)
{
    gu_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices),      cmocka_unit_test(streams),
        cmocka_unit_test(tensors),      cmocka_unit_test(mismatches),
        cmocka_unit_test(math_default), cmocka_unit_test(math_fast),
        cmocka_unit_test(deterministic), cmocka_unit_test(find_and_tune),
        cmocka_unit_test(workspaces_and_memory), cmocka_unit_test(numerics_guard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
