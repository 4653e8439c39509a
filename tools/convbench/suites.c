/*
 * suites.c -- the convolutions of real networks, each distinct shape once
 * with the number of times it occurs, so totals can be weighted.
 */
#include <string.h>

#include "convbench.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* 2-D, square input H x H, square kernel R, stride S, symmetric padding P,
 * groups G, occurring N times. */
#define CONV2D(nm, C, K, H, R, S, P, G, N)                                              \
    { .name = nm, .spatial = 2, .c = C, .k = K, .groups = G, .in = {H, H},             \
      .kernel = {R, R}, .stride = {S, S}, .pad_begin = {P, P}, .pad_end = {P, P},      \
      .dilation = {1, 1}, .count = N }

/* 3-D with a cubic kernel R, stride S and padding P, input D x H x H. */
#define CONV3D(nm, C, K, D, H, R, S, P, N)                                              \
    { .name = nm, .spatial = 3, .c = C, .k = K, .groups = 1, .in = {D, H, H},          \
      .kernel = {R, R, R}, .stride = {S, S, S}, .pad_begin = {P, P, P},                \
      .pad_end = {P, P, P}, .dilation = {1, 1, 1}, .count = N }

/* 1-D, length L, kernel R, dilation DIL, padding PB before and PE after. */
#define CONV1D(nm, C, K, L, R, DIL, PB, PE, N)                                          \
    { .name = nm, .spatial = 1, .c = C, .k = K, .groups = 1, .in = {L}, .kernel = {R}, \
      .stride = {1}, .pad_begin = {PB}, .pad_end = {PE}, .dilation = {DIL}, .count = N }

/* torchvision ResNet-50 (v1.5: the stride sits on the bottleneck's 3x3), at
 * 224x224. Names follow Caffe's resNX_branchY: 2a/2b/2c are the bottleneck's
 * 1x1 reduce / 3x3 / 1x1 expand, 1 the projection shortcut. Where two convs
 * have the same shape they are one row (res2's projection is a 2c).
 * 23 rows, 53 convolutions. */
static const cb_layer resnet50[] = {
    CONV2D("conv1", 3, 64, 224, 7, 2, 3, 1, 1),
    /* res2: 3 blocks at 56x56, 64 -> 256 */
    CONV2D("res2a_2a", 64, 64, 56, 1, 1, 0, 1, 1),
    CONV2D("res2_2b", 64, 64, 56, 3, 1, 1, 1, 3),
    CONV2D("res2_2c+1", 64, 256, 56, 1, 1, 0, 1, 4),
    CONV2D("res2bc_2a", 256, 64, 56, 1, 1, 0, 1, 2),
    /* res3: 4 blocks, 56x56 -> 28x28, 128 -> 512 */
    CONV2D("res3a_2a", 256, 128, 56, 1, 1, 0, 1, 1),
    CONV2D("res3a_2b", 128, 128, 56, 3, 2, 1, 1, 1),
    CONV2D("res3_2c", 128, 512, 28, 1, 1, 0, 1, 4),
    CONV2D("res3a_1", 256, 512, 56, 1, 2, 0, 1, 1),
    CONV2D("res3b-d_2a", 512, 128, 28, 1, 1, 0, 1, 3),
    CONV2D("res3b-d_2b", 128, 128, 28, 3, 1, 1, 1, 3),
    /* res4: 6 blocks, 28x28 -> 14x14, 256 -> 1024 */
    CONV2D("res4a_2a", 512, 256, 28, 1, 1, 0, 1, 1),
    CONV2D("res4a_2b", 256, 256, 28, 3, 2, 1, 1, 1),
    CONV2D("res4_2c", 256, 1024, 14, 1, 1, 0, 1, 6),
    CONV2D("res4a_1", 512, 1024, 28, 1, 2, 0, 1, 1),
    CONV2D("res4b-f_2a", 1024, 256, 14, 1, 1, 0, 1, 5),
    CONV2D("res4b-f_2b", 256, 256, 14, 3, 1, 1, 1, 5),
    /* res5: 3 blocks, 14x14 -> 7x7, 512 -> 2048 */
    CONV2D("res5a_2a", 1024, 512, 14, 1, 1, 0, 1, 1),
    CONV2D("res5a_2b", 512, 512, 14, 3, 2, 1, 1, 1),
    CONV2D("res5_2c", 512, 2048, 7, 1, 1, 0, 1, 3),
    CONV2D("res5a_1", 1024, 2048, 14, 1, 2, 0, 1, 1),
    CONV2D("res5bc_2a", 2048, 512, 7, 1, 1, 0, 1, 2),
    CONV2D("res5bc_2b", 512, 512, 7, 3, 1, 1, 1, 2),
};

/* MobileNet v1 at 224x224: a full 3x3 conv, then 13 depthwise 3x3
 * (groups = channels) + pointwise 1x1 pairs. Padding 1 on every 3x3, as in
 * the PyTorch ports (TensorFlow's SAME pads stride-2 layers 0/1 instead;
 * the output sizes agree). 19 rows, 27 convolutions. */
static const cb_layer mobilenet_v1[] = {
    CONV2D("conv1", 3, 32, 224, 3, 2, 1, 1, 1),
    CONV2D("dw1", 32, 32, 112, 3, 1, 1, 32, 1),
    CONV2D("pw1", 32, 64, 112, 1, 1, 0, 1, 1),
    CONV2D("dw2", 64, 64, 112, 3, 2, 1, 64, 1),
    CONV2D("pw2", 64, 128, 56, 1, 1, 0, 1, 1),
    CONV2D("dw3", 128, 128, 56, 3, 1, 1, 128, 1),
    CONV2D("pw3", 128, 128, 56, 1, 1, 0, 1, 1),
    CONV2D("dw4", 128, 128, 56, 3, 2, 1, 128, 1),
    CONV2D("pw4", 128, 256, 28, 1, 1, 0, 1, 1),
    CONV2D("dw5", 256, 256, 28, 3, 1, 1, 256, 1),
    CONV2D("pw5", 256, 256, 28, 1, 1, 0, 1, 1),
    CONV2D("dw6", 256, 256, 28, 3, 2, 1, 256, 1),
    CONV2D("pw6", 256, 512, 14, 1, 1, 0, 1, 1),
    CONV2D("dw7-11", 512, 512, 14, 3, 1, 1, 512, 5),
    CONV2D("pw7-11", 512, 512, 14, 1, 1, 0, 1, 5),
    CONV2D("dw12", 512, 512, 14, 3, 2, 1, 512, 1),
    CONV2D("pw12", 512, 1024, 7, 1, 1, 0, 1, 1),
    CONV2D("dw13", 1024, 1024, 7, 3, 1, 1, 1024, 1),
    CONV2D("pw13", 1024, 1024, 7, 1, 1, 0, 1, 1),
};

/* VGG-16 at 224x224: 13 3x3 pad-1 convolutions; identical shapes share a
 * row. 9 rows, 13 convolutions. */
static const cb_layer vgg16[] = {
    CONV2D("conv1_1", 3, 64, 224, 3, 1, 1, 1, 1),
    CONV2D("conv1_2", 64, 64, 224, 3, 1, 1, 1, 1),
    CONV2D("conv2_1", 64, 128, 112, 3, 1, 1, 1, 1),
    CONV2D("conv2_2", 128, 128, 112, 3, 1, 1, 1, 1),
    CONV2D("conv3_1", 128, 256, 56, 3, 1, 1, 1, 1),
    CONV2D("conv3_2-3", 256, 256, 56, 3, 1, 1, 1, 2),
    CONV2D("conv4_1", 256, 512, 28, 3, 1, 1, 1, 1),
    CONV2D("conv4_2-3", 512, 512, 28, 3, 1, 1, 1, 2),
    CONV2D("conv5_1-3", 512, 512, 14, 3, 1, 1, 1, 3),
};

/* torchvision's R3D-18 on a 16x112x112 clip: the stem, then 4 stages of two
 * basic blocks (two 3x3x3 convs each); stages 2-4 enter with a stride-2
 * 3x3x3 and a 1x1x1 stride-2 projection. 11 rows, 20 convolutions. */
static const cb_layer resnet3d[] = {
    { .name = "conv1", .spatial = 3, .c = 3, .k = 64, .groups = 1, .in = {16, 112, 112},
      .kernel = {3, 7, 7}, .stride = {1, 2, 2}, .pad_begin = {1, 3, 3},
      .pad_end = {1, 3, 3}, .dilation = {1, 1, 1}, .count = 1 },
    CONV3D("layer1", 64, 64, 16, 56, 3, 1, 1, 4),
    CONV3D("layer2.0a", 64, 128, 16, 56, 3, 2, 1, 1),
    CONV3D("layer2", 128, 128, 8, 28, 3, 1, 1, 3),
    CONV3D("layer2.proj", 64, 128, 16, 56, 1, 2, 0, 1),
    CONV3D("layer3.0a", 128, 256, 8, 28, 3, 2, 1, 1),
    CONV3D("layer3", 256, 256, 4, 14, 3, 1, 1, 3),
    CONV3D("layer3.proj", 128, 256, 8, 28, 1, 2, 0, 1),
    CONV3D("layer4.0a", 256, 512, 4, 14, 3, 2, 1, 1),
    CONV3D("layer4", 512, 512, 2, 7, 3, 1, 1, 3),
    CONV3D("layer4.proj", 256, 512, 4, 14, 1, 2, 0, 1),
};

/* WaveNet residual stack on 4096 samples, three stacks of dilations
 * 1, 2, ..., 512 (as in the paper's example). Each layer: a dilated causal
 * kernel-2 conv 64 -> 128 (the tanh and sigmoid halves of the gate; causal:
 * padding = dilation before, none after, so the length stays 4096), then a
 * 1x1 64 -> 64 residual and a 1x1 64 -> 256 skip conv. 12 rows, 90 convs. */
static const cb_layer wavenet[] = {
    CONV1D("dil1", 64, 128, 4096, 2, 1, 1, 0, 3),
    CONV1D("dil2", 64, 128, 4096, 2, 2, 2, 0, 3),
    CONV1D("dil4", 64, 128, 4096, 2, 4, 4, 0, 3),
    CONV1D("dil8", 64, 128, 4096, 2, 8, 8, 0, 3),
    CONV1D("dil16", 64, 128, 4096, 2, 16, 16, 0, 3),
    CONV1D("dil32", 64, 128, 4096, 2, 32, 32, 0, 3),
    CONV1D("dil64", 64, 128, 4096, 2, 64, 64, 0, 3),
    CONV1D("dil128", 64, 128, 4096, 2, 128, 128, 0, 3),
    CONV1D("dil256", 64, 128, 4096, 2, 256, 256, 0, 3),
    CONV1D("dil512", 64, 128, 4096, 2, 512, 512, 0, 3),
    CONV1D("residual", 64, 64, 4096, 1, 1, 0, 0, 30),
    CONV1D("skip", 64, 256, 4096, 1, 1, 0, 0, 30),
};

/* Small networks people train on a laptop, meant for --batch 32 to 128:
 * libconv.torch's digits example (examples/python/train_digits.py, 8x8),
 * PyTorch's MNIST example (28x28, unpadded), LeNet-5 (32x32, 5x5) and the
 * CIFAR-10 ResNet-20 of He et al. (32x32; option-A shortcuts, no projection
 * convolutions). 12 rows, 25 convolutions. */
static const cb_layer small[] = {
    CONV2D("digits1", 1, 16, 8, 3, 1, 1, 1, 1),
    CONV2D("digits2", 16, 32, 8, 3, 1, 1, 1, 1),
    CONV2D("mnist1", 1, 32, 28, 3, 1, 0, 1, 1),
    CONV2D("mnist2", 32, 64, 26, 3, 1, 0, 1, 1),
    CONV2D("lenet1", 1, 6, 32, 5, 1, 0, 1, 1),
    CONV2D("lenet2", 6, 16, 14, 5, 1, 0, 1, 1),
    CONV2D("r20_stem", 3, 16, 32, 3, 1, 1, 1, 1),
    CONV2D("r20_s1", 16, 16, 32, 3, 1, 1, 1, 6),
    CONV2D("r20_s2a", 16, 32, 32, 3, 2, 1, 1, 1),
    CONV2D("r20_s2", 32, 32, 16, 3, 1, 1, 1, 5),
    CONV2D("r20_s3a", 32, 64, 16, 3, 2, 1, 1, 1),
    CONV2D("r20_s3", 64, 64, 8, 3, 1, 1, 1, 5),
};

const cb_suite cb_suites[] = {
    {"resnet50", "ResNet-50 v1.5, 224x224", resnet50, NELEMS(resnet50)},
    {"mobilenet_v1", "MobileNet v1, 224x224, depthwise + pointwise", mobilenet_v1,
     NELEMS(mobilenet_v1)},
    {"vgg16", "VGG-16, 224x224", vgg16, NELEMS(vgg16)},
    {"resnet3d", "R3D-18, 16x112x112 clip", resnet3d, NELEMS(resnet3d)},
    {"wavenet", "WaveNet, 1-D dilated causal, 4096 samples", wavenet, NELEMS(wavenet)},
    {"small", "small CNNs (digits, MNIST, LeNet-5, CIFAR ResNet-20): use --batch 32-128", small,
     NELEMS(small)},
};
const int cb_n_suites = NELEMS(cb_suites);

const cb_suite *cb_find_suite(const char *name)
{
    for (int i = 0; i < cb_n_suites; i++)
        if (strcmp(cb_suites[i].name, name) == 0)
            return &cb_suites[i];
    return NULL;
}
