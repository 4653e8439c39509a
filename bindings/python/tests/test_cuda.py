"""GPU contexts from Python: device tensors, copies, DLPack of CUDA memory.

Skipped where libconv sees no usable GPU (every CPU-only machine); the
PyTorch part also needs torch with CUDA.
"""

import numpy as np
import pytest

import libconv
import reference as ref

pytestmark = pytest.mark.skipif(libconv.device_count("cuda") == 0, reason="no usable GPU")


@pytest.fixture
def gpu():
    with libconv.Context("cuda", 0) as ctx:
        yield ctx


def test_device_tensors_copies_and_convolution(gpu, rng):
    assert gpu.device == libconv.Device.CUDA and gpu.device_name.startswith("cuda")
    assert gpu.stream  # the context's own stream
    x = ref.integers(rng, (2, 3, 9, 9), np.float32)
    w = ref.integers(rng, (4, 3, 3, 3), np.float32)
    xd = libconv.Tensor.zeros(x.shape, ctx=gpu)
    xd.copy_from(x)  # host to device
    wd = libconv.Tensor.zeros(w.shape, ctx=gpu)
    wd.copy_from(libconv.Tensor(w))  # tensor to tensor, across devices
    assert xd.device == (libconv.Device.CUDA, 0)
    with pytest.raises(libconv.TypeMismatchError, match="host memory"):
        xd.numpy()
    yd = libconv.conv2d(xd, wd, padding=1, ctx=gpu)
    assert isinstance(yd, libconv.Tensor) and yd.device[0] == libconv.Device.CUDA
    want = ref.forward(x, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 1)
    np.testing.assert_allclose(yd.copy_to(), want, rtol=1e-5, atol=1e-4)
    # Host arrays are refused by a GPU context, never copied silently.
    with pytest.raises(libconv.TypeMismatchError, match="cpu:0 memory but the context computes on cuda:0"):
        libconv.conv2d(x, wd, ctx=gpu)


def test_cuda_dlpack_between_libconv_tensors(gpu):
    t = libconv.Tensor.zeros((1, 2, 3, 3), ctx=gpu)
    t.copy_from(np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3))
    assert t.__dlpack_device__() == (2, 0)
    u = libconv.from_dlpack(t)  # CUDA memory in, no copy
    assert u.data_ptr == t.data_ptr and u.device == (libconv.Device.CUDA, 0)
    np.testing.assert_array_equal(u.copy_to(), np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3))
    with libconv.Context() as cpu:
        with pytest.raises(libconv.TypeMismatchError, match="cuda:0 memory but the context computes on cpu:0"):
            libconv.from_dlpack(t, ctx=cpu)


def test_pytorch_cuda_tensors_pass_through():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.randn(2, 3, 16, 16, device="cuda")
    w = torch.randn(8, 3, 3, 3, device="cuda")
    b = torch.randn(8, device="cuda")
    want = torch.nn.functional.conv2d(x, w, padding=1)
    y = libconv.conv2d(x, w, padding=1)  # the default CUDA context
    assert isinstance(y, libconv.Tensor)
    yt = torch.from_dlpack(y)  # back to PyTorch, no copy
    assert yt.data_ptr() == y.data_ptr
    torch.testing.assert_close(yt, want, rtol=1e-3, atol=1e-3)
    out = torch.empty_like(want)
    assert libconv.conv2d(x, w, padding=1, out=out) is out
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)
    xt = libconv.from_dlpack(x)
    assert xt.data_ptr == x.data_ptr()
    dx = libconv.conv_backward_data(x.shape, w, want, padding=1)
    want_dx = torch.nn.grad.conv2d_input(x.shape, w, want, padding=1)
    torch.testing.assert_close(torch.from_dlpack(dx), want_dx, rtol=1e-3, atol=1e-2)
    dw, db = libconv.conv_backward_filter(x, w.shape, want, padding=1, bias=True)
    torch.testing.assert_close(torch.from_dlpack(dw), torch.nn.grad.conv2d_weight(x, w.shape, want, padding=1),
                               rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(torch.from_dlpack(db).reshape(-1), want.sum(dim=(0, 2, 3)), rtol=1e-3, atol=1e-2)
    with_bias = libconv.conv2d(x, w, b, padding=1)
    torch.testing.assert_close(torch.from_dlpack(with_bias), want + b.reshape(1, 8, 1, 1), rtol=1e-3, atol=1e-3)
