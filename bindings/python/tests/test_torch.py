"""libconv.torch: torch.nn.functional's convolutions and torch.nn's modules by libconv.

Values and gradients against torch's own convolutions (float64, where both
are exact to rounding), torch.autograd.gradcheck in float64 for every module
and option, state_dict round trips, convert(), memory formats, batchless
input, math modes, errors, and CUDA where there is a GPU. Skipped where torch
is not installed; ctest's python_torch runs them with an interpreter that has
it and fails if it has not (CONV_REQUIRE_TORCH=1).
"""

import itertools

import pytest

from conftest import import_torch

torch = import_torch()
import torch.nn.functional as F  # noqa: E402

import libconv  # noqa: E402
import libconv.torch as lt  # noqa: E402
from libconv import _libconv  # noqa: E402
from libconv import _torch_bridge as bridge  # noqa: E402

pytestmark = pytest.mark.torch
f64 = torch.float64

try:
    from torch.func import functional_call
except ImportError:  # torch < 2.0
    from torch.nn.utils.stateless import functional_call

MODULES = {
    (1, False): (lt.Conv1d, torch.nn.Conv1d), (2, False): (lt.Conv2d, torch.nn.Conv2d),
    (3, False): (lt.Conv3d, torch.nn.Conv3d), (1, True): (lt.ConvTranspose1d, torch.nn.ConvTranspose1d),
    (2, True): (lt.ConvTranspose2d, torch.nn.ConvTranspose2d),
    (3, True): (lt.ConvTranspose3d, torch.nn.ConvTranspose3d),
}

# (name, constructor arguments beyond in/out channels and kernel) per kind.
CONV_OPTIONS = [
    ("plain", {}),
    ("stride_pad", dict(stride=2, padding=1)),
    ("asym_stride_pad", dict(stride=(2, 1, 1), padding=(1, 0, 2))),
    ("dilation", dict(dilation=2, padding=2)),
    ("groups", dict(groups=2)),
    ("no_bias", dict(bias=False, padding=1)),
    ("same", dict(padding="same")),
    ("same_even_kernel_dilated", dict(padding="same", kernel_size=4, dilation=2)),
    ("valid", dict(padding="valid")),
    ("reflect", dict(padding=1, padding_mode="reflect")),
    ("replicate", dict(padding=(2, 1, 1), padding_mode="replicate")),
    ("circular", dict(padding=1, padding_mode="circular", stride=2)),
    ("same_circular", dict(padding="same", padding_mode="circular")),
]
TRANSPOSED_OPTIONS = [
    ("plain", {}),
    ("stride_out_pad", dict(stride=2, padding=1, output_padding=1)),
    ("dilation", dict(dilation=2, stride=3, output_padding=2)),
    ("groups", dict(groups=2, stride=2)),
    ("no_bias", dict(bias=False, padding=1)),
]


def _per_dim(value, nd):
    return value[:nd] if isinstance(value, tuple) else value


def _make(nd, transposed, options, dtype=f64):
    """(libconv module, torch module with the same weights), 4 -> 6 channels."""
    kw = {k: _per_dim(v, nd) for k, v in options.items()}
    kw.setdefault("kernel_size", 3)
    ours_cls, theirs_cls = MODULES[(nd, transposed)]
    theirs = theirs_cls(4, 6, dtype=dtype, **kw)
    ours = ours_cls(4, 6, dtype=dtype, **kw)
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def _input(nd, batch=2, size=None, dtype=f64, seed=0):
    g = torch.Generator().manual_seed(seed)
    size = size or {1: 9, 2: 7, 3: 5}[nd]
    shape = ((batch,) if batch else ()) + (4,) + (size,) * nd
    return torch.randn(shape, generator=g, dtype=dtype)


def _small(nd, transposed):
    """A spatial size for gradcheck, whose Jacobian grows with input x output elements."""
    return {1: 5, 2: 4, 3: 2 if transposed else 3}[nd]


def _options():
    for nd, (name, opts) in itertools.product((1, 2, 3), CONV_OPTIONS):
        yield pytest.param(nd, False, opts, id="conv%dd-%s" % (nd, name))
    for nd, (name, opts) in itertools.product((1, 2, 3), TRANSPOSED_OPTIONS):
        yield pytest.param(nd, True, opts, id="conv_transpose%dd-%s" % (nd, name))


# ------------------------------------------------------------- modules


@pytest.mark.parametrize("nd,transposed,options", list(_options()))
def test_module_equals_torch_nn_and_passes_gradcheck(nd, transposed, options):
    ours, theirs = _make(nd, transposed, options)
    assert isinstance(ours, type(theirs))
    x = _input(nd, size=6 if nd == 3 and "circular" in str(options) else None)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ours(xa), theirs(xb)
    assert ya.shape == yb.shape
    torch.testing.assert_close(ya, yb, rtol=1e-12, atol=1e-12)
    dy = torch.randn_like(yb)
    (ya * dy).sum().backward()
    (yb * dy).sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-12, atol=1e-12)
    for pa, pb in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, rtol=1e-11, atol=1e-11)

    # gradcheck through the module: input, weight and bias all differentiated.
    small = _input(nd, batch=1, size=_small(nd, transposed)).requires_grad_()
    params = {k: v.detach().clone().requires_grad_() for k, v in ours.named_parameters()}
    names = list(params)

    def f(xx, *ps):
        return functional_call(ours, dict(zip(names, ps)), (xx,))

    assert torch.autograd.gradcheck(f, (small, *params.values()), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_batchless_input(nd, transposed):
    opts = dict(stride=2, padding=1, output_padding=1) if transposed else dict(padding=1)
    ours, theirs = _make(nd, transposed, opts)
    x = _input(nd, batch=0).requires_grad_()
    y = ours(x)
    assert y.shape == theirs(x).shape and y.dim() == nd + 1
    torch.testing.assert_close(y, theirs(x), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(ours, (_input(nd, batch=0, size=_small(nd, transposed)).requires_grad_(),))
    if not transposed:
        ours.padding_mode = theirs.padding_mode = "reflect"
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_channels_last_in_channels_last_out(nd, transposed):
    fmt = torch.channels_last if nd == 2 else torch.channels_last_3d
    ours, theirs = _make(nd, transposed, dict(stride=2, padding=1))
    x = _input(nd).contiguous(memory_format=fmt).requires_grad_()
    y = ours(x)
    assert y.is_contiguous(memory_format=fmt)
    torch.testing.assert_close(y, theirs(x.detach()), rtol=1e-12, atol=1e-12)
    y.sum().backward()
    assert x.grad.is_contiguous(memory_format=fmt)
    xb = x.detach().contiguous().requires_grad_()
    theirs(xb).sum().backward()
    torch.testing.assert_close(x.grad, xb.grad, rtol=1e-12, atol=1e-12)
    small = _input(nd, batch=1, size=_small(nd, transposed)).contiguous(memory_format=fmt)
    small.requires_grad_()
    assert torch.autograd.gradcheck(ours, (small,))


def test_output_size_of_a_transposed_module():
    ours, theirs = _make(2, True, dict(stride=3, padding=1))
    x = _input(2)
    for size in ([19, 20], [2, 6, 21, 19]):
        torch.testing.assert_close(ours(x, output_size=size), theirs(x, output_size=size))
    with pytest.raises(ValueError, match="valid sizes range from"):
        ours(x, output_size=[30, 30])


def test_state_dict_keys_and_load_both_ways():
    for (nd, transposed), (ours_cls, theirs_cls) in MODULES.items():
        for bias in (True, False):
            theirs = theirs_cls(4, 6, 3, bias=bias)
            ours = ours_cls(4, 6, 3, bias=bias)
            assert list(ours.state_dict()) == list(theirs.state_dict())
            ours.load_state_dict(theirs.state_dict())
            back = theirs_cls(4, 6, 3, bias=bias)
            back.load_state_dict(ours.state_dict())
            for a, b in zip(back.parameters(), theirs.parameters()):
                assert torch.equal(a, b)


def test_same_initialisation_and_repr_as_torch():
    torch.manual_seed(3)
    theirs = torch.nn.Conv2d(3, 5, 3, padding="same", padding_mode="reflect")
    torch.manual_seed(3)
    ours = lt.Conv2d(3, 5, 3, padding="same", padding_mode="reflect")
    assert torch.equal(ours.weight, theirs.weight) and torch.equal(ours.bias, theirs.bias)
    assert repr(ours) == repr(theirs)
    assert repr(lt.Conv2d(3, 5, 3, math="default")).endswith("math=default)")


def test_constructor_arguments_are_torch_nn_s():
    import inspect

    sig = inspect.signature(lt.ConvTranspose2d)
    assert list(sig.parameters)[:-1] == list(inspect.signature(torch.nn.ConvTranspose2d).parameters)
    assert sig.parameters["math"].kind == inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError):
        lt.Conv2d(3, 5, 3, strde=2)
    with pytest.raises(ValueError):
        lt.ConvTranspose2d(3, 5, 3, padding_mode="reflect")  # torch.nn's own check
    with pytest.raises(ValueError):
        lt.Conv2d(3, 5, 3, padding="sideways")


def test_convert_swaps_every_conv_and_keeps_the_parameters():
    torch.manual_seed(0)

    class Custom(torch.nn.Conv2d):
        pass

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, groups=2, bias=False),
                            torch.nn.ConvTranspose2d(8, 4, 2, stride=2)),
        Custom(4, 2, 1)).double()
    x = torch.randn(2, 3, 10, 10, dtype=f64)
    want = model(x)
    params = [id(p) for p in model.parameters()]
    model.eval()
    converted = lt.convert(model)
    assert converted is model
    assert type(model[0]) is lt.Conv2d and type(model[2][0]) is lt.Conv2d
    assert type(model[2][1]) is lt.ConvTranspose2d and type(model[3]) is Custom
    assert not model[0].training
    assert [id(p) for p in model.parameters()] == params
    torch.testing.assert_close(model(x), want, rtol=1e-12, atol=1e-12)
    single = lt.convert(torch.nn.Conv1d(2, 2, 1), math="default")
    assert type(single) is lt.Conv1d and single.math == libconv.Math.DEFAULT


# ----------------------------------------------------------- functions


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_functions_match_torch_functional(nd):
    x = _input(nd)
    w = torch.randn((6, 2) + (3,) * nd, dtype=f64)
    b = torch.randn(6, dtype=f64)
    for kw in (dict(), dict(stride=2, padding=1, groups=2), dict(padding="same", dilation=2),
               dict(padding="valid", groups=2)):
        kw.setdefault("groups", 2)
        torch.testing.assert_close(getattr(lt, "conv%dd" % nd)(x, w, b, **kw),
                                   getattr(F, "conv%dd" % nd)(x, w, b, **kw))
    wt = torch.randn((4, 3) + (3,) * nd, dtype=f64)
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    torch.testing.assert_close(getattr(lt, "conv_transpose%dd" % nd)(x, wt, b, **kw),
                               getattr(F, "conv_transpose%dd" % nd)(x, wt, b, **kw))


def test_functions_gradcheck_and_bias_gradient():
    x = _input(2, batch=1, size=5).requires_grad_()
    w = torch.randn(6, 4, 3, 3, dtype=f64, requires_grad=True)
    b = torch.randn(6, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *a: lt.conv2d(*a, stride=2, padding=1), (x, w, b))
    wt = torch.randn(4, 3, 3, 3, dtype=f64, requires_grad=True)
    bt = torch.randn(3, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda *a: lt.conv_transpose2d(*a, stride=2, padding=1, output_padding=1), (x, wt, bt))
    # Only the bias trainable: its gradient alone, still through libconv.
    y = lt.conv2d(x.detach(), w.detach(), b)
    dy = torch.randn_like(y)
    (y * dy).sum().backward()
    torch.testing.assert_close(b.grad, dy.sum(dim=(0, 2, 3)))


def test_zero_copy_both_ways():
    x = _input(2).contiguous(memory_format=torch.channels_last)
    layout = bridge.layout_of(x)
    assert layout == libconv.Layout.CHANNELS_LAST
    assert bridge.in_layout(x, layout) is x  # no copy of a tensor already in its layout
    p = bridge.Pass(x, libconv.Math.STRICT, layout)
    h = p.handle(x, "x")
    assert _libconv.conv_tensor_get_data(h.ptr) == x.data_ptr()  # torch -> libconv: same memory
    assert p.handle(x, "x") is h  # handed over again: the context's cached handle
    y = bridge.empty((2, 6, 5, 5), x, layout)
    assert _libconv.conv_tensor_get_data(p.handle(y, "y").ptr) == y.data_ptr()  # written in place
    t = libconv.Tensor.from_dlpack(y, ctx=p.ctx)
    back = torch.from_dlpack(t)                   # libconv -> torch: the same memory
    assert back.data_ptr() == y.data_ptr()


def test_results_are_torch_tensors_and_inputs_untouched():
    x = _input(2, dtype=torch.float32)
    w = torch.randn(6, 4, 3, 3)
    x0, w0 = x.clone(), w.clone()
    y = lt.conv2d(x, w, padding=1)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    assert torch.equal(x, x0) and torch.equal(w, w0)
    with torch.no_grad():
        assert lt.conv2d(x, w.requires_grad_()).grad_fn is None


def test_argument_errors():
    x, w = _input(2), torch.randn(6, 4, 3, 3, dtype=f64)
    with pytest.raises(ValueError, match=r"expected 3D \(batchless\) or 4D \(batched\) input, got "
                                         r"input of shape \(7, 7\)"):
        lt.conv2d(x[0, 0], w)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        lt.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="invalid padding string 'smae'"):
        lt.conv2d(x, w, padding="smae")
    with pytest.raises(TypeError, match="take no padding strings"):
        lt.conv_transpose2d(x, torch.randn(4, 6, 3, 3, dtype=f64), padding="same")
    with pytest.raises(TypeError, match="input must be a torch.Tensor, not ndarray of shape"):
        lt.conv2d(x.numpy(), w)
    with pytest.raises(TypeError, match="unexpected keyword argument 'strde'"):
        lt.conv2d(x, w, strde=2)
    with pytest.raises(libconv.ShapeMismatchError, match="input channels 4 != filter channels 3"):
        lt.conv2d(x, torch.randn(6, 3, 3, 3, dtype=f64))
    with pytest.raises(TypeError, match="input has DLPack dtype int32"):
        lt.conv2d(x.int(), w)


def test_a_requires_grad_tensor_in_libconv_conv_gets_a_clear_message():
    x = _input(2, dtype=torch.float32).requires_grad_()
    with pytest.raises(TypeError, match=r"x requires grad.*x.detach\(\).*libconv.torch"):
        libconv.conv2d(x, torch.randn(6, 4, 3, 3))


# ------------------------------------------------------------- accuracy


def _layer_256(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 256, 28, 28, generator=g)
    w = torch.randn(256, 256, 3, 3, generator=g)
    return x, w, F.conv2d(x.double(), w.double(), padding=1)


def test_math_modes_default_strict_and_opt_in():
    assert lt.current_math() == libconv.Math.STRICT
    with lt.math_mode("default"):
        assert lt.current_math() == libconv.Math.DEFAULT
        with lt.math_mode(libconv.Math.FAST):
            assert lt.current_math() == libconv.Math.FAST
        assert lt.current_math() == libconv.Math.DEFAULT
    assert lt.current_math() == libconv.Math.STRICT
    with pytest.raises(ValueError, match="'strict'"):
        with lt.math_mode("exact"):
            pass

    x, w, ref = _layer_256()
    errors = {}
    for mode in ("strict", "default"):
        errors[mode] = (lt.conv2d(x, w, padding=1, math=mode).double() - ref).abs().max().item()
    with lt.math_mode("default"):
        assert (lt.conv2d(x, w, padding=1).double() - ref).abs().max().item() == errors["default"]
    # Winograd (allowed by "default") is measurably less accurate on this layer; strict
    # stays within a small multiple of torch's own float32 error.
    torch_error = (F.conv2d(x, w, padding=1).double() - ref).abs().max().item()
    assert errors["default"] > 3 * errors["strict"], errors
    assert errors["strict"] < 12 * torch_error, (errors, torch_error)
    m = lt.Conv2d(256, 256, 3, padding=1, bias=False, math="default")
    with torch.no_grad():
        m.weight.copy_(w)
        assert (m(x).double() - ref).abs().max().item() == errors["default"]


# STRICT picks implicit GEMM for this layer; its channel blocks are summed
# separately and then added (two-level summation), which keeps it within 2x
# torch's own error (one running sum over all 2304 products erred 8x).
def test_strict_is_as_accurate_as_torch_on_a_256_channel_layer():
    x, w, ref = _layer_256()
    torch_error = (F.conv2d(x, w, padding=1).double() - ref).abs().max().item()
    strict_error = (lt.conv2d(x, w, padding=1).double() - ref).abs().max().item()
    assert strict_error < 2 * torch_error


# ------------------------------------------------------------------ CUDA


def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device here")
    if libconv.device_count("cuda") == 0:
        pytest.skip("this libconv build has no CUDA engine or sees no GPU")


@pytest.mark.parametrize("transposed", [False, True])
def test_cuda_module_matches_torch_on_a_side_stream(transposed):
    _cuda()
    ours, theirs = _make(2, transposed, dict(stride=2, padding=1), dtype=torch.float32)
    ours, theirs = ours.cuda(), theirs.cuda()
    x = _input(2, dtype=torch.float32).cuda()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = ours(xa), theirs(xb)
        ya.sum().backward()
        yb.sum().backward()
    stream.synchronize()
    assert ya.device == x.device
    torch.testing.assert_close(ya, yb, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ours.bias.grad, theirs.bias.grad, rtol=1e-3, atol=1e-3)


def test_cuda_gradcheck_float64():
    _cuda()
    ours, _ = _make(2, False, dict(padding=1, groups=2))
    ours = ours.cuda()
    assert torch.autograd.gradcheck(ours, (_input(2, batch=1, size=4).cuda().requires_grad_(),))
