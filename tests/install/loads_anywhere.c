/* A C program on a machine without cuDNN, CUDA and MPI (run under
 * without_gpu_mpi.sh, test loads_anywhere_c): libconv loads, its CPU engine
 * computes a convolution and its gradients correctly, there is no GPU and
 * conv_last_error() names the cuDNN library looked for, and an MPI
 * communicator fails with NOT_AVAILABLE naming the MPI library.
 *
 *   loads_anywhere CUDNN_SONAME|- MPI_SONAME|- [--named]
 * "-" for a backend this build lacks (its messages then say so instead).
 * --named (test loads_anywhere_env): the libraries are not hidden but
 * CONV_CUDNN_LIBRARY and CONV_MPI_LIBRARY name files that do not exist,
 * given as the first two arguments: libconv must take the user's choice,
 * without falling back to the libraries it would find itself, and say so. */
#include <conv.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            ++failures;                                    \
        }                                                  \
    } while (0)

/* The library really is absent here (or the test proves nothing). */
static void check_hidden(const char *soname) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    CHECK(h == NULL, "%s can be loaded: the environment does not hide it", soname);
}

/* `message` names `expected`: the library looked for, or "without". */
static void check_names(const char *what, const char *message, const char *expected) {
    CHECK(strstr(message, expected) != NULL, "%s: \"%s\" does not name %s", what, message,
          expected);
    printf("%s: %s\n", what, message);
}

/* N=2, C=3, 6x5 input, K=4 filters 3x3, padding 1: forward against a direct
 * sum, then both gradients through <conv(x, w), dy> = <x, dx> = <w, dw>. */
enum { N = 2, C = 3, H = 6, W = 5, K = 4, R = 3 };
static float x[N][C][H][W], w[K][C][R][R], y[N][K][H][W], dy[N][K][H][W];
static float dx[N][C][H][W], dw[K][C][R][R];

static void check_cpu(void) {
    for (int i = 0; i < N * C * H * W; ++i) (&x[0][0][0][0])[i] = (float)((i * 7 % 13) - 6) / 8;
    for (int i = 0; i < K * C * R * R; ++i) (&w[0][0][0][0])[i] = (float)((i * 5 % 11) - 5) / 8;
    for (int i = 0; i < N * K * H * W; ++i) (&dy[0][0][0][0])[i] = (float)((i * 3 % 7) - 3) / 4;

    conv_context_t ctx = NULL;
    conv_desc_t desc = NULL;
    conv_tensor_t tx = NULL, tw = NULL, ty = NULL, tdy = NULL, tdx = NULL, tdw = NULL;
    int64_t xd[] = {N, C, H, W}, wd[] = {K, C, R, R}, yd[] = {N, K, H, W}, pad[] = {1, 1};
    const conv_layout_t L = CONV_LAYOUT_CHANNELS_FIRST;
    const conv_dtype_t F = CONV_DTYPE_FLOAT32;
    int ok = conv_context_create(CONV_DEVICE_CPU, 0, &ctx) == CONV_STATUS_SUCCESS &&
             conv_desc_create(2, &desc) == CONV_STATUS_SUCCESS &&
             conv_desc_set_padding(desc, pad, pad) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, xd, x, &tx) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, wd, w, &tw) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, yd, y, &ty) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, yd, dy, &tdy) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, xd, dx, &tdx) == CONV_STATUS_SUCCESS &&
             conv_tensor_wrap(ctx, F, L, 4, wd, dw, &tdw) == CONV_STATUS_SUCCESS &&
             conv_forward(ctx, desc, tx, tw, NULL, ty, NULL) == CONV_STATUS_SUCCESS &&
             conv_backward_data(ctx, desc, tw, tdy, tdx, NULL) == CONV_STATUS_SUCCESS &&
             conv_backward_filter(ctx, desc, tx, tdy, tdw, NULL, NULL) == CONV_STATUS_SUCCESS;
    CHECK(ok, "the CPU passes failed: %s", conv_last_error());
    if (ok) {
        double worst = 0, y_dy = 0, x_dx = 0, w_dw = 0;
        for (int n = 0; n < N; ++n)
            for (int k = 0; k < K; ++k)
                for (int i = 0; i < H; ++i)
                    for (int j = 0; j < W; ++j) {
                        double s = 0;
                        for (int c = 0; c < C; ++c)
                            for (int a = 0; a < R; ++a)
                                for (int b = 0; b < R; ++b) {
                                    int ii = i + a - 1, jj = j + b - 1;
                                    if (ii >= 0 && ii < H && jj >= 0 && jj < W)
                                        s += (double)x[n][c][ii][jj] * w[k][c][a][b];
                                }
                        worst = fmax(worst, fabs(s - y[n][k][i][j]));
                        y_dy += s * dy[n][k][i][j];
                    }
        for (int i = 0; i < N * C * H * W; ++i)
            x_dx += (double)(&x[0][0][0][0])[i] * (&dx[0][0][0][0])[i];
        for (int i = 0; i < K * C * R * R; ++i)
            w_dw += (double)(&w[0][0][0][0])[i] * (&dw[0][0][0][0])[i];
        CHECK(worst < 1e-4, "forward: max |error| %g", worst);
        CHECK(fabs(x_dx - y_dy) < 1e-3 * (1 + fabs(y_dy)), "backward-data: <x,dx> %g != %g",
              x_dx, y_dy);
        CHECK(fabs(w_dw - y_dy) < 1e-3 * (1 + fabs(y_dy)), "backward-filter: <w,dw> %g != %g",
              w_dw, y_dy);
        printf("CPU: forward max |error| %.1e, <x,dx> %.6f <w,dw> %.6f <y,dy> %.6f\n", worst,
               x_dx, w_dw, y_dy);
    }
    conv_tensor_destroy(tdw);
    conv_tensor_destroy(tdx);
    conv_tensor_destroy(tdy);
    conv_tensor_destroy(ty);
    conv_tensor_destroy(tw);
    conv_tensor_destroy(tx);
    conv_desc_destroy(desc);
    conv_context_destroy(ctx);
}

static int named = 0;  /* --named */

static void check_cuda(const char *cudnn) {
    const char *expected = strcmp(cudnn, "-") ? cudnn : "without the CUDA engine";
    if (strcmp(cudnn, "-") && !named) check_hidden(cudnn);
    int count = -1;
    CHECK(conv_device_count(CONV_DEVICE_CUDA, &count) == CONV_STATUS_SUCCESS && count == 0,
          "conv_device_count(CUDA): %d GPUs, %s", count, conv_last_error());
    check_names("conv_device_count(CUDA) = 0", conv_last_error(), expected);
    conv_context_t ctx = NULL;
    conv_status_t s = conv_context_create(CONV_DEVICE_CUDA, 0, &ctx);
    CHECK(s == CONV_STATUS_NOT_AVAILABLE && ctx == NULL, "conv_context_create(CUDA): %s",
          conv_status_string(s));
    check_names("conv_context_create(CUDA)", conv_last_error(), expected);
}

static void check_mpi(const char *mpi) {
    const char *expected = strcmp(mpi, "-") ? mpi : "without MPI";
    if (strcmp(mpi, "-") && !named) check_hidden(mpi);
    int available = -1;
    CHECK(conv_comm_backend_available(CONV_COMM_BACKEND_MPI, &available) == CONV_STATUS_SUCCESS &&
              available == 0,
          "conv_comm_backend_available(MPI): %d", available);
    conv_comm_t comm = NULL;
    conv_status_t s = conv_comm_create_mpi_world(&comm);
    CHECK(s == CONV_STATUS_NOT_AVAILABLE && comm == NULL, "conv_comm_create_mpi_world: %s",
          conv_status_string(s));
    check_names("conv_comm_create_mpi_world", conv_last_error(), expected);
}

int main(int argc, char **argv) {
    named = argc == 4 && strcmp(argv[3], "--named") == 0;
    if (argc != 3 && !named) {
        fprintf(stderr, "usage: %s CUDNN_SONAME|- MPI_SONAME|- [--named]\n", argv[0]);
        return 2;
    }
    printf("libconv %s\n", conv_version_string());
    check_cpu();
    check_cuda(argv[1]);
    check_mpi(argv[2]);
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
