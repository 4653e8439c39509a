"""Every error path raises its ConvError subclass with the library's message;
use after close() raises and never crashes."""

import re
import threading

import numpy as np
import pytest

import libconv
from conftest import requires_c
from libconv import _libconv


def f32(*shape):
    return np.zeros(shape, np.float32)


# -------------------------------------------------------- status -> class

def test_every_status_of_the_header_has_its_class(header_text):
    statuses = {name: int(v) for name, v in re.findall(r"\bCONV_STATUS_(\w+)\s*=\s*(\d+)",
                                                       header_text)}
    assert statuses, "no status parsed from conv.h"
    for name, value in statuses.items():
        if value == 0:
            continue
        cls = libconv.error_class(value)
        assert cls is not libconv.ConvError, "CONV_STATUS_%s has no exception class" % name
        assert issubclass(cls, libconv.ConvError) and cls.STATUS == value
        assert libconv.Status[name] == value
    # Unknown values still raise the base class, named by the library.
    e = libconv.error_class(999)("text", 999)
    assert type(e) is libconv.ConvError and str(e) == "unknown status: text"


def test_exception_carries_status_and_last_error_text(ctx):
    with pytest.raises(libconv.InvalidArgumentError) as info:
        ctx.threads = 0
    e = info.value
    assert e.status == libconv.Status.INVALID_ARGUMENT == 1
    assert e.status_name == "invalid argument" == libconv.status_string(1)
    assert e.message == "threads 0 out of range 1..1024"
    assert str(e) == "invalid argument: threads 0 out of range 1..1024"
    assert isinstance(e, ValueError)  # the built-in meaning as well
    # The message is conv_last_error()'s, read on the failing thread.
    with pytest.raises(libconv.InvalidArgumentError):
        _libconv.conv_context_set_threads(ctx._handle().ptr, 0)
    assert libconv.last_error() == e.message
    ctx.threads = 1
    assert libconv.last_error() == ""


def test_messages_are_per_thread(ctx):
    seen = {}

    def fail(n):
        try:
            ctx.threads = -n
        except libconv.InvalidArgumentError as e:
            seen[n] = e.message

    threads = [threading.Thread(target=fail, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {n: "threads -%d out of range 1..1024" % n for n in range(1, 9)}


# ------------------------------------------------------- each C status

def test_invalid_argument(ctx):
    with pytest.raises(libconv.InvalidArgumentError, match=r"strides\[0\] = 0 must be >= 1"):
        libconv.conv2d(f32(1, 1, 3, 3), f32(1, 1, 1, 1), stride=0, ctx=ctx)
    with pytest.raises(libconv.InvalidArgumentError, match="spatial_dims 4 out of range"):
        libconv.Conv(4)
    with pytest.raises(libconv.InvalidArgumentError, match="rank 2 out of range"):
        libconv.Tensor(f32(2, 3), ctx=ctx)


def test_invalid_handle_from_the_library(ctx):
    with pytest.raises(libconv.InvalidHandleError, match="ctx is NULL"):
        _libconv.conv_context_set_threads(None, 1)


def test_shape_mismatch(ctx):
    with pytest.raises(libconv.ShapeMismatchError,
                       match="input channels 4 != filter channels 3 x groups 1"):
        libconv.conv2d(f32(1, 4, 5, 5), f32(2, 3, 3, 3), ctx=ctx)
    with pytest.raises(libconv.ShapeMismatchError):
        libconv.conv2d(f32(1, 4, 5, 5), f32(2, 4, 3, 3), out=f32(1, 2, 4, 4), ctx=ctx)
    with pytest.raises(libconv.ShapeMismatchError, match=r"conv2d takes x as \(N, C, spatial...\) "
                       r"or batchless \(C, spatial...\) with 2 spatial dims, not ndarray of shape "
                       r"\(4, 5\) and dtype float32"):
        libconv.conv2d(f32(4, 5), f32(2, 4, 3, 3))


def test_type_mismatch_dtype_layout_and_unsupported_dtypes(ctx):
    with pytest.raises(libconv.TypeMismatchError, match="w is float64 but x is float32"):
        libconv.conv2d(f32(1, 4, 5, 5), np.zeros((2, 4, 3, 3)), ctx=ctx)
    x_cl = np.zeros((1, 5, 5, 4), np.float32).transpose(0, 3, 1, 2)
    with pytest.raises(libconv.TypeMismatchError, match="layout"):
        libconv.conv2d(x_cl, f32(2, 4, 3, 3), ctx=ctx)
    with pytest.raises(libconv.TypeMismatchError, match="int64; libconv takes float32"):
        libconv.Tensor(np.zeros((1, 2, 3), np.int64), ctx=ctx)
    with pytest.raises(libconv.TypeMismatchError, match="float32"):
        libconv.Tensor(np.zeros((1, 2, 3), ">f4"), ctx=ctx)  # foreign byte order
    with pytest.raises(libconv.TypeMismatchError, match="not list"):
        libconv.conv2d([[[[1.0]]]], f32(1, 1, 1, 1))
    assert isinstance(libconv.TypeMismatchError("m"), TypeError)


def test_non_contiguous_and_read_only_arrays_are_refused(ctx):
    x = np.zeros((1, 2, 6, 6), np.float32)[:, :, ::2, ::2]
    with pytest.raises(libconv.InvalidArgumentError, match="not contiguous"):
        libconv.conv2d(x, f32(1, 2, 1, 1), ctx=ctx)
    out = f32(1, 1, 3, 3)
    out.flags.writeable = False
    with pytest.raises(libconv.InvalidArgumentError, match="read-only"):
        libconv.conv2d(f32(1, 2, 3, 3), f32(1, 2, 1, 1), out=out, ctx=ctx)
    nhwc = np.zeros((1, 3, 3, 2), np.float32).transpose(0, 3, 1, 2)
    with pytest.raises(libconv.InvalidArgumentError, match="channels_first"):
        libconv.Tensor(nhwc, layout="channels_first", ctx=ctx)


def test_an_output_that_is_an_input_is_refused(ctx):
    """The same Tensor (or array) as an input and the output is refused by
    role, with nothing written: shapes are picked so that only the aliasing
    check can refuse each call (before, these returned with wrong results)."""
    def t(shape, salt=0):
        n = int(np.prod(shape))
        return libconv.Tensor(((np.arange(n) * 3 + salt) % 7 - 3).astype(np.float32)
                              .reshape(shape), ctx=ctx)

    def refused(call, shared, roles):
        before = shared.copy_to().copy()
        with pytest.raises(libconv.InvalidArgumentError,
                           match="output %s and input %s are the same tensor" % roles):
            call()
        assert np.array_equal(shared.copy_to(), before)

    plain, padded = libconv.Conv(2), libconv.Conv(2, padding=1)
    x, w = t((2, 2, 3, 3)), t((2, 2, 2, 2), 1)  # y has w's shape (2, 2, 2, 2)
    refused(lambda: plain.forward(x, w, out=w), w, ("y", "w"))
    sq, k3 = t((2, 3, 5, 5)), t((3, 3, 3, 3), 2)  # padding 1: dy and dx of one shape
    refused(lambda: padded.backward_data(k3, sq, out=sq), sq, ("dx", "dy"))
    refused(lambda: padded.find_algorithms(sq, k3, sq), sq, ("y", "x"))
    xw = t((2, 2, 3, 3))  # dw = x: a 3x3 filter over a 3x3 input, dy (2, 2, 1, 1)
    refused(lambda: plain.backward_filter(xw, t((2, 2, 1, 1)), out=xw), xw, ("dw", "x"))
    dy = t((1, 2, 1, 1))  # db = dy: K = 2 elements either way
    refused(lambda: plain.backward_filter(t((1, 2, 3, 3)), dy, (2, 2, 3, 3), bias_out=dy), dy,
            ("db", "dy"))
    # One NumPy array passed twice: the context's cached handle over its
    # memory, so the same tensor twice.
    a = np.ones((2, 2, 2, 2), np.float32)
    with pytest.raises(libconv.InvalidArgumentError, match="output y and input w are the same"):
        plain.forward(np.ones((2, 2, 3, 3), np.float32), a, out=a, ctx=ctx)
    assert np.array_equal(a, np.ones_like(a))


def test_unsupported(ctx):
    with pytest.raises(libconv.UnsupportedError, match="float16 tensors are storage only"):
        libconv.conv2d(np.zeros((1, 1, 3, 3), np.float16), np.zeros((1, 1, 1, 1), np.float16),
                       ctx=ctx)
    with pytest.raises(libconv.UnsupportedError, match="gemm_1x1 does not apply"):
        libconv.conv2d(f32(1, 4, 5, 5), f32(2, 4, 3, 3), algorithm="gemm_1x1", ctx=ctx)


def test_out_of_memory_and_overflow(ctx):
    with pytest.raises(libconv.OutOfMemoryError, match="cannot allocate"):
        libconv.Tensor.zeros((2 ** 20, 2 ** 20, 2 ** 10, 1), "float32", ctx=ctx)
    with pytest.raises(libconv.SizeOverflowError, match="overflows int64"):
        libconv.Tensor.zeros((2 ** 40, 2 ** 40, 2 ** 20, 1), "float32", ctx=ctx)
    assert issubclass(libconv.SizeOverflowError, OverflowError)


def test_workspace_too_small(ctx):
    with pytest.raises(libconv.WorkspaceTooSmallError, match="workspace of 16 bytes is too small"):
        libconv.conv2d(f32(1, 4, 5, 5), f32(2, 4, 3, 3), workspace=libconv.Workspace(16, ctx=ctx),
                       ctx=ctx)


def test_not_available():
    if libconv.device_count("cuda") > 0:
        pytest.skip("this machine has a GPU that libconv can use")
    with pytest.raises(libconv.NotAvailableError, match="CUDA"):
        libconv.Context("cuda", 0)
    assert libconv.device_count("cpu") == 1


def test_device_indices():
    """Past the devices there are: NOT_AVAILABLE; negative: INVALID_ARGUMENT."""
    with pytest.raises(libconv.NotAvailableError, match="CPU device 1 requested"):
        libconv.Context("cpu", 1)
    with pytest.raises(libconv.InvalidArgumentError, match="device index -1 is negative"):
        libconv.Context("cpu", -1)


def test_file_errors(ctx, tmp_path):
    with pytest.raises(libconv.FileIOError, match="cannot open the tuning file") as info:
        ctx.load_tuning(tmp_path / "missing.txt")
    assert isinstance(info.value, OSError)
    bad = tmp_path / "bad.txt"
    bad.write_text("not a tuning file\n")
    with pytest.raises(libconv.BadFileError, match="not a libconv tuning file"):
        ctx.load_tuning(bad)
    with pytest.raises(libconv.FileIOError):
        ctx.save_tuning(tmp_path / "no" / "such" / "dir" / "t.txt")


def test_python_layer_argument_errors():
    with pytest.raises(libconv.InvalidArgumentError, match="'sideways' is not one of"):
        libconv.Conv(2).get_algorithm("sideways")
    with pytest.raises(libconv.InvalidArgumentError, match="stride has 3 values for 2"):
        libconv.Conv(2, stride=(1, 2, 3))
    with pytest.raises(libconv.InvalidArgumentError, match="padding"):
        libconv.Conv(2, padding="sometimes")
    with pytest.raises(libconv.InvalidArgumentError, match="x_shape"):
        libconv.Conv(2).backward_data(f32(1, 1, 1, 1), f32(1, 1, 3, 3))


def test_errors_pickle():
    import pickle

    e = pickle.loads(pickle.dumps(libconv.ShapeMismatchError("m", 3)))
    assert type(e) is libconv.ShapeMismatchError and e.status == 3 and e.message == "m"


# ------------------------------------------------------------ after close

def test_use_after_close_raises_never_crashes():
    ctx = libconv.Context()
    t = libconv.Tensor.zeros((1, 1, 3, 3), ctx=ctx)
    w = libconv.Tensor(f32(1, 1, 1, 1), ctx=ctx)
    conv = libconv.Conv(2)
    ws = libconv.Workspace(ctx=ctx)
    for obj in (t, conv, ws, ctx):
        obj.close()
        obj.close()  # twice is fine
        assert obj.closed
        assert "closed" in repr(obj)
    with pytest.raises(libconv.InvalidHandleError, match="tensor is closed"):
        t.numpy()
    with pytest.raises(libconv.InvalidHandleError):
        t.shape
    with pytest.raises(libconv.InvalidHandleError):
        t.__dlpack__()
    with pytest.raises(libconv.InvalidHandleError, match="descriptor is closed"):
        conv.stride
    with pytest.raises(libconv.InvalidHandleError, match="workspace is closed"):
        ws.size
    with pytest.raises(libconv.InvalidHandleError, match="context is closed"):
        ctx.threads
    with pytest.raises(libconv.InvalidHandleError, match="context is closed"):
        libconv.Tensor.zeros((1, 1, 1), ctx=ctx)
    with pytest.raises(libconv.InvalidHandleError):
        libconv.conv2d(t, w)
    with pytest.raises(libconv.InvalidHandleError):
        libconv.Conv(2).forward(f32(1, 1, 3, 3), f32(1, 1, 1, 1), ctx=ctx)
    # w outlives its closed context: its handle keeps the C context alive.
    assert w.shape == (1, 1, 1, 1) and w.numpy().shape == (1, 1, 1, 1)
    with pytest.raises(libconv.TypeMismatchError, match="bias must be an array"):
        libconv.conv2d(f32(1, 1, 3, 3), f32(1, 1, 1, 1), [1.0])


def test_context_manager_closes():
    with libconv.Context(threads=1) as ctx, libconv.Conv(1) as conv:
        assert ctx.threads == 1 and conv.spatial_dims == 1
    assert ctx.closed and conv.closed


def test_wrong_kind_of_handle_is_a_type_error():
    conv = libconv.Conv(2)
    with pytest.raises(TypeError):
        _libconv.conv_context_set_threads(conv._handle().ptr, 1)


@requires_c("conv_context_set_check_numerics")
def test_numerical_guard(ctx):
    assert not ctx.check_numerics
    ctx.check_numerics = True
    assert ctx.check_numerics
    x = f32(1, 1, 3, 3)
    x[0, 0, 1, 1] = np.nan
    y = np.zeros((1, 1, 3, 3), np.float32)
    with pytest.raises(libconv.NumericalError, match="NaN|nan") as info:
        libconv.conv2d(x, f32(1, 1, 1, 1), out=y, ctx=ctx)
    assert isinstance(info.value, ArithmeticError) and info.value.status == 14
    assert np.isnan(y[0, 0, 1, 1])  # the one error after which outputs were written
    ctx.check_numerics = False
    libconv.conv2d(x, f32(1, 1, 1, 1), out=y, ctx=ctx)
