/* A program that uses an installed libconv the way an application does: only
 * <conv.h> and the library. It runs one small 2-D convolution (padding,
 * stride, bias) and checks every output element against a direct loop; with
 * integer-valued data the results are exact. Exit 0 when all is right. */
#include <conv.h>
#include <stdio.h>
#include <string.h>

#define N 2
#define C 3
#define H 5
#define W 6
#define K 4
#define R 3
#define S 3
#define STRIDE_H 2
#define STRIDE_W 1
#define PAD 1
#define P ((H + 2 * PAD - R) / STRIDE_H + 1)
#define Q ((W + 2 * PAD - S) / STRIDE_W + 1)

#define CHECK(call)                                                                    \
    do {                                                                               \
        conv_status_t s_ = (call);                                                     \
        if (s_ != CONV_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s failed: %s: %s\n", #call, conv_status_string(s_),      \
                    conv_last_error());                                                \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static float x[N][C][H][W], w[K][C][R][S], b[K], y[N][K][P][Q];

int main(void) {
    int n, c, h, ww, k, r, s, p, q;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c)
            for (h = 0; h < H; ++h)
                for (ww = 0; ww < W; ++ww) x[n][c][h][ww] = (float)((n + 2 * c + 3 * h + ww) % 5 - 2);
    for (k = 0; k < K; ++k) {
        b[k] = (float)(k - 1);
        for (c = 0; c < C; ++c)
            for (r = 0; r < R; ++r)
                for (s = 0; s < S; ++s) w[k][c][r][s] = (float)((k + c + 2 * r + s) % 3 - 1);
    }

    if (conv_version() / 10000 != CONV_VERSION_MAJOR) {
        fprintf(stderr, "loaded libconv %s, compiled against %d.x\n", conv_version_string(),
                CONV_VERSION_MAJOR);
        return 1;
    }

    conv_context_t ctx = NULL;
    conv_desc_t desc = NULL;
    conv_tensor_t tx = NULL, tw = NULL, tb = NULL, ty = NULL;
    const int64_t xd[4] = {N, C, H, W}, wd[4] = {K, C, R, S}, bd[4] = {1, K, 1, 1};
    const int64_t yd[4] = {N, K, P, Q};
    const int64_t strides[2] = {STRIDE_H, STRIDE_W}, pad[2] = {PAD, PAD};
    int64_t got[4];

    CHECK(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));
    CHECK(conv_desc_create(2, &desc));
    CHECK(conv_desc_set_strides(desc, strides));
    CHECK(conv_desc_set_padding(desc, pad, pad));
    CHECK(conv_output_dims(desc, 4, xd, wd, got));
    if (memcmp(got, yd, sizeof yd) != 0) {
        fprintf(stderr, "output dims %lld %lld %lld %lld, expected %d %d %d %d\n",
                (long long)got[0], (long long)got[1], (long long)got[2], (long long)got[3], N,
                K, P, Q);
        return 1;
    }
    CHECK(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, xd, x, &tx));
    CHECK(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, wd, w, &tw));
    CHECK(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, bd, b, &tb));
    CHECK(conv_tensor_wrap(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, yd, y, &ty));
    CHECK(conv_forward(ctx, desc, tx, tw, tb, ty, NULL));

    int bad = 0;
    for (n = 0; n < N; ++n)
        for (k = 0; k < K; ++k)
            for (p = 0; p < P; ++p)
                for (q = 0; q < Q; ++q) {
                    double acc = b[k];
                    for (c = 0; c < C; ++c)
                        for (r = 0; r < R; ++r)
                            for (s = 0; s < S; ++s) {
                                int ih = p * STRIDE_H - PAD + r, iw = q * STRIDE_W - PAD + s;
                                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                    acc += (double)x[n][c][ih][iw] * w[k][c][r][s];
                            }
                    if ((double)y[n][k][p][q] != acc) {
                        if (bad < 5)
                            fprintf(stderr, "y[%d][%d][%d][%d] = %g, expected %g\n", n, k, p, q,
                                    y[n][k][p][q], acc);
                        ++bad;
                    }
                }

    conv_tensor_destroy(ty);
    conv_tensor_destroy(tb);
    conv_tensor_destroy(tw);
    conv_tensor_destroy(tx);
    conv_desc_destroy(desc);
    conv_context_destroy(ctx);
    if (bad) {
        fprintf(stderr, "%d of %d outputs wrong\n", bad, N * K * P * Q);
        return 1;
    }
    printf("libconv %s: %dx%dx%dx%d convolution correct\n", conv_version_string(), N, K, P, Q);
    return 0;
}
