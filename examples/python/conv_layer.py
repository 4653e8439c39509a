#!/usr/bin/env python3
"""A convolution layer trained for a few steps with libconv from Python.

Forward (bias + fused ReLU), both backward passes and an SGD update, on
NumPy arrays that libconv wraps without copying; the functional API once,
then the object API (Context, Conv, Tensor, Workspace) for a steady state
that allocates nothing per step. Checked against a direct NumPy reference.

Run from the build tree:
    PYTHONPATH=build/bindings/python python3 examples/python/conv_layer.py
or after `pip install ./bindings/python`:
    python3 examples/python/conv_layer.py
"""

import numpy as np

import libconv


def reference_conv2d(x, w, b, pad):
    """y[n,k] = sum_c,i,j x_pad[n,c,i+.,j+.] * w[k,c,i,j] + b[k], stride 1, in float64."""
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    ho, wo = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, k, ho, wo))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + ho, j:j + wo], w[:, :, i, j])
    return y + b.reshape(1, k, 1, 1)


def main():
    rng = np.random.default_rng(0)
    print("libconv", libconv.version())

    # ---- the functional API: NumPy in, NumPy out (PyTorch-style arguments)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)      # N, C, H, W
    w = (0.1 * rng.standard_normal((16, 3, 3, 3))).astype(np.float32)  # K, C, kH, kW
    b = np.zeros(16, np.float32)
    y = libconv.conv2d(x, w, b, padding="same")
    err = np.abs(y - reference_conv2d(x, w, b, 1)).max()
    print("conv2d:", x.shape, "*", w.shape, "->", y.shape, "max |error| %.2e" % err)
    assert err < 1e-4

    # ---- the object API: one descriptor, wrapped arrays, fixed workspace
    ctx = libconv.Context(threads=2)
    conv = libconv.Conv(2, padding=1, activation="relu")
    target = rng.standard_normal(y.shape).astype(np.float32)
    xt = libconv.Tensor(x, ctx=ctx)                  # zero-copy views of the arrays
    wt = libconv.Tensor(w, ctx=ctx)
    yt = libconv.Tensor.zeros(conv.output_shape(xt.shape, wt.shape), ctx=ctx)
    dw = np.empty_like(w)
    db = np.empty_like(b)
    # one workspace for both passes used below: the larger of their needs
    ws_bytes = max(conv.workspace_size(xt, wt, yt, op) for op in ("forward", "backward_filter"))
    ws = libconv.Workspace(ws_bytes, ctx=ctx)
    y_np = yt.numpy()                                # a view of libconv's memory
    lr = 0.05
    for step in range(5):
        conv.forward(xt, wt, b, out=yt, workspace=ws)          # y = relu(conv(x, w) + b)
        loss = 0.5 * float(((y_np - target) ** 2).mean())
        dy = ((y_np - target) * (y_np > 0) / y_np.size).astype(np.float32)  # through the ReLU
        conv.backward_filter(xt, dy, out=dw, bias_out=db, workspace=ws)
        w -= lr * dw * y_np.shape[0]                           # in place: wt sees it
        b -= lr * db * y_np.shape[0]
        print("step %d  loss %.5f" % (step, loss))
    dx = conv.backward_data(wt, dy, xt.shape)                  # the input gradient
    print("dx:", dx.shape, type(dx).__name__)

    # ---- DLPack: hand the result to any DLPack consumer without a copy
    shared = np.from_dlpack(yt)
    assert shared.__array_interface__["data"][0] == yt.data_ptr
    print("DLPack: NumPy views the same memory at %#x" % yt.data_ptr)

    # ---- errors are exceptions carrying the library's message
    try:
        libconv.conv2d(x, w[:, :2].copy())
    except libconv.ShapeMismatchError as e:
        print("ShapeMismatchError:", e)


if __name__ == "__main__":
    main()
