"""Results equal the NumPy float64 reference (and PyTorch, where importable).

Random problems cover 1-, 2- and 3-d, both layouts, float32 and float64,
groups (depthwise included), strides, dilations and asymmetric padding, for
the forward pass (bias, ReLU), both backward passes and the transposed mode.
Data are small integers, so float32 results are exact.
"""

import numpy as np
import pytest

import libconv
import reference as ref
from conftest import import_torch, requires_c

LAYOUTS = ["channels_first", "channels_last"]
DTYPES = [np.float32, np.float64]


def assert_equal_ref(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-6)


def random_geometry(rng, nd, transposed=False):
    while True:
        g = {
            "groups": int(rng.choice([1, 1, 2, 3])),
            "kernel": [int(v) for v in rng.integers(1, 4, nd)],
            "stride": [int(v) for v in rng.integers(1, 3, nd)],
            "dilation": [int(v) for v in rng.integers(1, 3, nd)],
            "pad_begin": [int(v) for v in rng.integers(0, 3, nd)],
            "pad_end": [int(v) for v in rng.integers(0, 3, nd)],
        }
        cg, kg = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        n = int(rng.integers(1, 3))
        top = {1: 9, 2: 7, 3: 5}[nd]
        sizes = [int(v) for v in rng.integers(1, top, nd)]
        if transposed:
            g["output_padding"] = [int(rng.integers(0, max(s, d))) for s, d in
                                   zip(g["stride"], g["dilation"])]
            out = ref.transposed_out_sizes(sizes, g["kernel"], g["stride"], g["dilation"],
                                           g["pad_begin"], g["pad_end"], g["output_padding"])
        else:
            out = [ref.out_size(s, k, st, d, pb, pe) for s, k, st, d, pb, pe in
                   zip(sizes, g["kernel"], g["stride"], g["dilation"], g["pad_begin"], g["pad_end"])]
        if min(out) >= 1:
            return g, n, cg, kg, sizes


def geometry_kwargs(g):
    return dict(stride=g["stride"], dilation=g["dilation"], groups=g["groups"],
                padding=list(zip(g["pad_begin"], g["pad_end"])))


def ref_args(g):
    return g["stride"], g["dilation"], g["pad_begin"], g["pad_end"]


def case(seed):
    nd = 1 + seed % 3
    layout = LAYOUTS[seed // 3 % 2]
    dtype = DTYPES[seed // 6 % 2]
    return nd, layout, dtype


@pytest.mark.parametrize("seed", range(24))
def test_convolution_passes_match_reference(seed):
    nd, layout, dtype = case(seed)
    rng = np.random.default_rng(seed)
    g, n, cg, kg, sizes = random_geometry(rng, nd)
    groups = g["groups"]
    x = ref.as_layout(ref.integers(rng, (n, cg * groups) + tuple(sizes), dtype), layout)
    w = ref.as_layout(ref.integers(rng, (kg * groups, cg) + tuple(g["kernel"]), dtype), layout)
    b = ref.integers(rng, (kg * groups,), dtype)
    kw = geometry_kwargs(g)
    relu = bool(seed % 4 == 1)

    y = libconv.conv(x, w, b, activation="relu" if relu else None, **kw)
    want = ref.forward(x, w, b, *ref_args(g), groups, relu=relu)
    assert y.shape == want.shape and y.dtype == dtype
    assert_equal_ref(y, want)
    # The result comes back in the inputs' layout (when they show one: an
    # array with C == 1 or spatial size 1 is dense in both).
    if min(x.shape[1:]) > 1 and min(y.shape[1:]) > 1:
        assert libconv.Tensor(y).layout.name.lower() == layout

    dy = ref.as_layout(ref.integers(rng, want.shape, dtype), layout)
    dx = libconv.conv_backward_data(x.shape, w, dy, **kw)
    assert_equal_ref(dx, ref.backward_data(w, dy, x.shape, *ref_args(g), groups))

    dw, db = libconv.conv_backward_filter(x, w.shape, dy, bias=True, **kw)
    want_dw, want_db = ref.backward_filter(x, dy, w.shape, *ref_args(g), groups)
    assert_equal_ref(dw, want_dw)
    assert_equal_ref(db, want_db)


@pytest.mark.parametrize("seed", range(12))
def test_transposed_passes_match_reference(seed):
    nd, layout, dtype = case(seed)
    rng = np.random.default_rng(1000 + seed)
    g, n, cg, kg, sizes = random_geometry(rng, nd, transposed=True)
    groups = g["groups"]
    # Transposed: x (N, Cin, ...), w (Cin, Cout/groups, k...), Cin = cg * groups.
    x = ref.as_layout(ref.integers(rng, (n, cg * groups) + tuple(sizes), dtype), layout)
    w = ref.as_layout(ref.integers(rng, (cg * groups, kg) + tuple(g["kernel"]), dtype), layout)
    b = ref.integers(rng, (kg * groups,), dtype)
    kw = geometry_kwargs(g)
    y = libconv.conv_transpose(x, w, b, output_padding=g["output_padding"], **kw)
    want = ref.transposed_forward(x, w, b, *ref_args(g), g["output_padding"], groups)
    assert y.shape == want.shape
    assert_equal_ref(y, want)

    dy = ref.as_layout(ref.integers(rng, want.shape, dtype), layout)
    dx = libconv.conv_backward_data(x.shape, w, dy, transposed=True,
                                    output_padding=g["output_padding"], **kw)
    assert_equal_ref(dx, ref.transposed_backward_data(w, dy, x.shape, *ref_args(g), groups))
    dw, db = libconv.conv_backward_filter(x, w.shape, dy, bias=True, transposed=True,
                                          output_padding=g["output_padding"], **kw)
    assert_equal_ref(dw, ref.transposed_backward_filter(x, dy, w.shape, *ref_args(g), groups)[0])
    assert_equal_ref(db, dy.sum(axis=(0,) + tuple(range(2, dy.ndim))))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("multiplier", [1, 2])
def test_depthwise_matches_reference(layout, multiplier, rng):
    c = 4
    x = ref.as_layout(ref.integers(rng, (2, c, 9, 7), np.float32), layout)
    w = ref.as_layout(ref.integers(rng, (c * multiplier, 1, 3, 3), np.float32), layout)
    y = libconv.conv2d(x, w, stride=(2, 1), padding=1, groups=c)
    assert_equal_ref(y, ref.forward(x, w, None, [2, 1], [1, 1], [1, 1], [1, 1], c))
    dy = ref.as_layout(ref.integers(rng, y.shape, np.float32), layout)
    dx = libconv.conv_backward_data(x.shape, w, dy, stride=(2, 1), padding=1, groups=c)
    assert_equal_ref(dx, ref.backward_data(w, dy, x.shape, [2, 1], [1, 1], [1, 1], [1, 1], c))
    dw = libconv.conv_backward_filter(x, w.shape, dy, stride=(2, 1), padding=1, groups=c)
    assert_equal_ref(dw, ref.backward_filter(x, dy, w.shape, [2, 1], [1, 1], [1, 1], [1, 1], c)[0])


@pytest.mark.parametrize("mode", ["same", "same_upper", "same_lower", "valid"])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_auto_padding_matches_reference(mode, stride, rng):
    x = ref.integers(rng, (1, 2, 10, 7), np.float64)
    w = ref.integers(rng, (3, 2, 4, 3), np.float64)
    y = libconv.conv2d(x, w, stride=stride, padding=mode)
    ref_mode = "same_upper" if mode == "same" else mode
    begin, end = ref.auto_pads(ref_mode, x.shape[2:], w.shape[2:], [stride] * 2, [1, 1])
    assert_equal_ref(y, ref.forward(x, w, None, [stride] * 2, [1, 1], begin, end, 1))
    if mode != "valid":
        assert y.shape[2:] == tuple(-(-s // stride) for s in x.shape[2:])


def test_one_by_one_and_forced_algorithms(rng):
    x = ref.integers(rng, (2, 6, 5, 5), np.float32)
    w = ref.integers(rng, (4, 6, 1, 1), np.float32)
    want = ref.forward(x, w, None, [1, 1], [1, 1], [0, 0], [0, 0], 1)
    for algo in ("auto", "im2col_gemm", "gemm_1x1", libconv.Algo.IM2COL_GEMM):
        assert_equal_ref(libconv.conv2d(x, w, algorithm=algo), want)
    # strided, as ResNet's shortcuts: gemm_1x1 copies the positions it reads
    want = ref.forward(x, w, None, [2, 2], [1, 1], [0, 0], [0, 0], 1)
    for algo in ("auto", "gemm_1x1"):
        assert_equal_ref(libconv.conv2d(x, w, stride=2, algorithm=algo), want)


@requires_c("conv_context_set_math")
def test_context_settings(rng):
    with libconv.Context("cpu", threads=1, math="strict") as ctx:
        assert ctx.threads == 1 and ctx.math == libconv.Math.STRICT
        assert ctx.device == libconv.Device.CPU and ctx.device_index == 0
        ctx.threads, ctx.math = 2, libconv.Math.FAST
        assert (ctx.threads, ctx.math) == (2, libconv.Math.FAST)
        x = ref.integers(rng, (1, 2, 6, 6), np.float32)
        w = ref.integers(rng, (3, 2, 3, 3), np.float32)
        assert_equal_ref(libconv.conv2d(x, w, padding=1, ctx=ctx),
                         ref.forward(x, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 1))
    assert libconv.default_context() is libconv.default_context()


def test_descriptor_and_tensors_round_trip(ctx, rng):
    """The object API: Conv + Tensor + Workspace + out=, results as Tensors."""
    x = libconv.Tensor(ref.integers(rng, (2, 4, 6, 6), np.float32), ctx=ctx)
    w = libconv.Tensor(ref.integers(rng, (8, 2, 3, 3), np.float32), ctx=ctx)
    b = ref.integers(rng, (8,), np.float32)
    conv = libconv.Conv(2, stride=1, padding=1, groups=2)
    y_shape = conv.output_shape(x.shape, w.shape)
    y = libconv.Tensor.zeros(y_shape, "float32", ctx=ctx)
    nbytes = conv.workspace_size(x, w, y)
    ws = libconv.Workspace(nbytes, ctx=ctx)
    assert ws.size == nbytes
    got = conv.forward(x, w, b, out=y, workspace=ws)
    assert got is y
    want = ref.forward(x.numpy(), w.numpy(), b, [1, 1], [1, 1], [1, 1], [1, 1], 2)
    assert_equal_ref(y.numpy(), want)
    # With a Tensor input the result is a Tensor.
    y2 = conv.forward(x, w, b)
    assert isinstance(y2, libconv.Tensor) and y2.shape == y_shape
    assert_equal_ref(y2, want)
    dx = conv.backward_data(w, y, x.shape)
    assert isinstance(dx, libconv.Tensor)
    assert_equal_ref(dx, ref.backward_data(w.numpy(), y.numpy(), x.shape, [1, 1], [1, 1],
                                           [1, 1], [1, 1], 2))
    dw, db = conv.backward_filter(x, y, w.shape, bias=True, workspace=libconv.Workspace(ctx=ctx))
    want_dw, want_db = ref.backward_filter(x.numpy(), y.numpy(), w.shape, [1, 1], [1, 1],
                                           [1, 1], [1, 1], 2)
    assert_equal_ref(dw, want_dw)
    assert_equal_ref(db.numpy().reshape(-1), want_db)


def test_out_arrays_receive_every_pass(rng):
    x = ref.integers(rng, (1, 3, 5, 5), np.float64)
    w = ref.integers(rng, (2, 3, 3, 3), np.float64)
    y = np.full((1, 2, 3, 3), np.nan)
    assert libconv.conv2d(x, w, out=y) is y
    assert_equal_ref(y, ref.forward(x, w, None, [1, 1], [1, 1], [0, 0], [0, 0], 1))
    dx = np.full(x.shape, np.nan)
    assert libconv.conv_backward_data(None, w, y, out=dx) is dx
    assert_equal_ref(dx, ref.backward_data(w, y, x.shape, [1, 1], [1, 1], [0, 0], [0, 0], 1))
    dw = np.full(w.shape, np.nan)
    db = np.full(2, np.nan)
    got_dw, got_db = libconv.conv_backward_filter(x, None, y, out=dw, bias_out=db)
    assert got_dw is dw and got_db is db
    want_dw, want_db = ref.backward_filter(x, y, w.shape, [1, 1], [1, 1], [0, 0], [0, 0], 1)
    assert_equal_ref(dw, want_dw)
    assert_equal_ref(db, want_db)


def test_shape_and_cost_inference():
    assert libconv.output_shape((2, 3, 32, 32), (16, 3, 3, 3), stride=2, padding=1) == (2, 16, 16, 16)
    assert libconv.output_shape((1, 4, 7), (4, 2, 3), stride=2, transposed=True,
                                output_padding=1) == (1, 2, 16)
    conv = libconv.Conv(2, padding=1)
    cost = conv.cost((2, 3, 8, 8), (4, 3, 3, 3))
    assert cost.flops == 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3
    assert cost.bytes > 0
    assert conv.cost((2, 3, 8, 8), (4, 3, 3, 3), op="backward_filter", dtype="float64").flops == cost.flops


def test_find_algorithms_and_tuning_files(ctx, rng, tmp_path):
    x = ref.integers(rng, (1, 8, 6, 6), np.float32)
    w = ref.integers(rng, (8, 8, 1, 1), np.float32)
    y = np.zeros((1, 8, 6, 6), np.float32)
    conv = libconv.Conv(2)
    results = conv.find_algorithms(x, w, y, ctx=ctx)
    assert results and all(isinstance(r, libconv.AlgoResult) for r in results)
    assert [r.milliseconds for r in results] == sorted(r.milliseconds for r in results)
    assert {r.algo for r in results} >= {libconv.Algo.IM2COL_GEMM, libconv.Algo.GEMM_1X1}
    assert_equal_ref(y, ref.forward(x, w, None, [1, 1], [1, 1], [0, 0], [0, 0], 1))
    assert conv.chosen_algorithm(x, w, y, ctx=ctx) == results[0].algo
    path = tmp_path / "tuning.txt"
    ctx.save_tuning(path)
    ctx.clear_tuning()
    ctx.load_tuning(str(path))
    assert conv.chosen_algorithm(x, w, y, ctx=ctx) == results[0].algo
    for op in ("backward_data", "backward_filter"):
        x_ = x.copy() if op == "backward_data" else x
        w_ = w.copy() if op == "backward_filter" else w
        assert conv.find_algorithms(x_, w_, y, op=op, ctx=ctx)


# ------------------------------------------------------------------ PyTorch

def _torch():
    return import_torch()


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_matches_pytorch(nd):
    torch = _torch()
    F = torch.nn.functional
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 4) + (7,) * nd).astype(np.float32)
    w = rng.standard_normal((6, 2) + (3,) * nd).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    f = getattr(F, "conv%dd" % nd)
    want = f(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **kw).numpy()
    np.testing.assert_allclose(libconv.conv(x, w, b, **kw), want, rtol=1e-4, atol=1e-4)
    dy = rng.standard_normal(want.shape).astype(np.float32)
    grad = torch.nn.grad
    gi = getattr(grad, "conv%dd_input" % nd)(x.shape, torch.from_numpy(w), torch.from_numpy(dy), **kw)
    np.testing.assert_allclose(libconv.conv_backward_data(x.shape, w, dy, **kw), gi.numpy(),
                               rtol=1e-4, atol=1e-4)
    gw = getattr(grad, "conv%dd_weight" % nd)(torch.from_numpy(x), w.shape, torch.from_numpy(dy), **kw)
    np.testing.assert_allclose(libconv.conv_backward_filter(x, w.shape, dy, **kw), gw.numpy(),
                               rtol=1e-4, atol=1e-4)
    ft = getattr(F, "conv_transpose%dd" % nd)
    wt = rng.standard_normal((4, 3) + (3,) * nd).astype(np.float32)
    bt = rng.standard_normal(6).astype(np.float32)
    want = ft(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(bt), stride=2, padding=1,
              output_padding=1, groups=2).numpy()
    np.testing.assert_allclose(
        libconv.conv_transpose(x, wt, bt, stride=2, padding=1, output_padding=1, groups=2),
        want, rtol=1e-4, atol=1e-4)


@pytest.mark.torch
def test_pytorch_tensors_pass_through_dlpack():
    torch = _torch()
    x = torch.randn(1, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    want = torch.nn.functional.conv2d(x, w, padding=1)
    out = torch.empty_like(want)
    libconv.conv2d(x, w, padding=1, out=out)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    xt = libconv.from_dlpack(x)
    assert xt.data_ptr == x.data_ptr()
    xcl = x.contiguous(memory_format=torch.channels_last)
    assert libconv.from_dlpack(xcl).layout == libconv.Layout.CHANNELS_LAST


@requires_c("conv_context_set_deterministic", "conv_context_get_device_name",
            "conv_context_set_stream", "conv_tensor_copy", "conv_tensor_get_device")
def test_device_settings_on_a_cpu_context(rng):
    with libconv.Context() as ctx:
        assert ctx.device_name.startswith("cpu")
        assert ctx.stream is None
        with pytest.raises(libconv.UnsupportedError):
            ctx.stream = 12345
        ctx.synchronize()
        assert not ctx.deterministic
        ctx.deterministic = True
        assert ctx.deterministic
        ctx.workspace_limit = 1 << 20
        assert ctx.workspace_limit == 1 << 20
        a = libconv.Tensor(rng.standard_normal((1, 2, 3, 3)).astype(np.float32), ctx=ctx)
        b = libconv.Tensor.zeros(a.shape, ctx=ctx)
        b.copy_from(a)  # tensor to tensor
        np.testing.assert_array_equal(b.numpy(), a.numpy())
        assert b.device == (libconv.Device.CPU, 0)
        with pytest.raises(libconv.ShapeMismatchError):
            libconv.Tensor.zeros((1, 2, 3, 4), ctx=ctx).copy_from(a)
