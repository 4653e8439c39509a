/* forward.c -- a first libconv program: one 2-D convolution layer, forward.
 *
 * A batch of 1 image with 2 channels of 5x5 pixels, 3 filters of 3x3, padding
 * 1 ("same" size), a bias per filter and a fused ReLU. libconv owns the
 * tensors' memory here (conv_tensor_create); conv_tensor_wrap would borrow
 * the caller's instead. The result is checked against a direct loop.
 *
 * Build against an installed libconv:   make          (see Makefile)
 */
#include <conv.h>
#include <stdio.h>
#include <stdlib.h>

/* Every libconv call returns a status; on failure conv_last_error() says
 * which argument was wrong and why. */
#define CHECK(call)                                                                    \
    do {                                                                               \
        conv_status_t status_ = (call);                                                \
        if (status_ != CONV_STATUS_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,                     \
                    conv_status_string(status_), conv_last_error());                   \
            exit(EXIT_FAILURE);                                                        \
        }                                                                              \
    } while (0)

enum { N = 1, C = 2, H = 5, W = 5, K = 3, R = 3, S = 3 };

int main(void) {
    printf("libconv %s\n", conv_version_string());

    /* Input, filters and bias, in NCHW / KCRS order. */
    float x[N * C * H * W], w[K * C * R * S], b[K];
    for (int i = 0; i < N * C * H * W; ++i) x[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < K * C * R * S; ++i) w[i] = (float)(i % 5) - 2.0f;
    for (int k = 0; k < K; ++k) b[k] = 0.5f * (float)k;

    conv_context_t ctx;
    CHECK(conv_context_create(CONV_DEVICE_CPU, 0, &ctx));

    /* The convolution: 2 spatial dims, padding 1 on every side, ReLU. */
    conv_desc_t desc;
    const int64_t pad[2] = {1, 1};
    CHECK(conv_desc_create(2, &desc));
    CHECK(conv_desc_set_padding(desc, pad, pad));
    CHECK(conv_desc_set_activation(desc, CONV_ACTIVATION_RELU));

    /* Shapes are always listed N, C, spatial... */
    const int64_t x_dims[4] = {N, C, H, W}, w_dims[4] = {K, C, R, S}, b_dims[4] = {1, K, 1, 1};
    int64_t y_dims[4];
    CHECK(conv_output_dims(desc, 4, x_dims, w_dims, y_dims));
    printf("output: %lld x %lld x %lld x %lld\n", (long long)y_dims[0], (long long)y_dims[1],
           (long long)y_dims[2], (long long)y_dims[3]);

    conv_tensor_t tx, tw, tb, ty;
    CHECK(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, x_dims, &tx));
    CHECK(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, w_dims, &tw));
    CHECK(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, b_dims, &tb));
    CHECK(conv_tensor_create(ctx, CONV_DTYPE_FLOAT32, CONV_LAYOUT_CHANNELS_FIRST, 4, y_dims, &ty));
    CHECK(conv_tensor_copy_from(tx, x, sizeof x));
    CHECK(conv_tensor_copy_from(tw, w, sizeof w));
    CHECK(conv_tensor_copy_from(tb, b, sizeof b));

    /* How much scratch memory the call will use (NULL workspace below: the
     * context's own pool provides it). */
    size_t ws_bytes;
    CHECK(conv_workspace_size(ctx, desc, CONV_OP_FORWARD, tx, tw, ty, &ws_bytes));
    printf("workspace: %zu bytes\n", ws_bytes);

    CHECK(conv_forward(ctx, desc, tx, tw, tb, ty, NULL));

    float y[N * K * H * W];
    CHECK(conv_tensor_copy_to(ty, y, sizeof y));

    /* Check against the definition. */
    int wrong = 0;
    for (int k = 0; k < K; ++k) {
        for (int p = 0; p < H; ++p) {
            for (int q = 0; q < W; ++q) {
                float acc = b[k];
                for (int c = 0; c < C; ++c)
                    for (int r = 0; r < R; ++r)
                        for (int s = 0; s < S; ++s) {
                            int ih = p + r - 1, iw = q + s - 1;
                            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                acc += x[(c * H + ih) * W + iw] * w[((k * C + c) * R + r) * S + s];
                        }
                if (acc < 0) acc = 0;
                float got = y[(k * H + p) * W + q];
                if (got != acc) ++wrong;
                printf("%6.1f%s", got, q == W - 1 ? "\n" : " ");
            }
        }
        printf("\n");
    }

    conv_tensor_destroy(ty);
    conv_tensor_destroy(tb);
    conv_tensor_destroy(tw);
    conv_tensor_destroy(tx);
    conv_desc_destroy(desc);
    conv_context_destroy(ctx);

    if (wrong) {
        fprintf(stderr, "%d outputs differ from the direct computation\n", wrong);
        return EXIT_FAILURE;
    }
    printf("all %d outputs match the direct computation\n", N * K * H * W);
    return EXIT_SUCCESS;
}
