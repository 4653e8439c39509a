"""Zero-copy: wrapped memory is shared both ways, kept alive, and DLPack round-trips."""

import gc
import re
import weakref

import numpy as np
import pytest

import libconv
from conftest import requires_c
from libconv import _libconv


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Tracked(np.ndarray):
    """An ndarray subclass, so a weak reference can tell when it is freed."""


def test_wrapping_shares_memory_both_ways(ctx):
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    t = libconv.Tensor(a, ctx=ctx)
    assert t.data_ptr == address(a)
    assert t.shape == a.shape and t.dtype == libconv.DType.FLOAT32
    assert t.layout == libconv.Layout.CHANNELS_FIRST
    assert t.size == a.size and t.nbytes == a.nbytes and t.ndim == 4
    v = t.numpy()
    assert address(v) == address(a) and np.shares_memory(v, a)
    a[1, 2, 3, 4] = -7
    assert v[1, 2, 3, 4] == -7
    v[0, 0, 0, 0] = 42
    assert a[0, 0, 0, 0] == 42


def test_channels_last_view_is_wrapped_as_is(ctx):
    nhwc = np.arange(2 * 4 * 5 * 3, dtype=np.float64).reshape(2, 4, 5, 3)
    x = nhwc.transpose(0, 3, 1, 2)  # logical N, C, H, W over NHWC memory
    t = libconv.Tensor(x, ctx=ctx)
    assert t.layout == libconv.Layout.CHANNELS_LAST
    assert t.shape == (2, 3, 4, 5)
    assert t.data_ptr == address(nhwc)
    assert np.array_equal(t.numpy(), x)
    assert t.numpy().strides == x.strides


def owner_of(a: np.ndarray):
    """What keeps a NumPy view of libconv memory alive: the tensor's handle."""
    base = a.base
    while base is not None and not hasattr(base, "_owner"):
        base = getattr(base, "base", None)
    return None if base is None else base._owner


def test_result_views_libconv_memory_and_keeps_it_alive(rng):
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    y = libconv.conv2d(x, w)
    handle = owner_of(y)  # the result is a view of the tensor libconv allocated
    assert _libconv.conv_tensor_get_data(handle.ptr) == address(y)
    assert address(y) % 64 == 0
    expected = y.copy()
    del handle
    gc.collect()
    np.testing.assert_array_equal(y, expected)  # still valid: the array owns the tensor


def test_source_array_stays_alive_after_caller_drops_it(ctx):
    a = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4).view(Tracked)
    alive = weakref.ref(a)
    t = libconv.Tensor(a, ctx=ctx)
    del a
    gc.collect()
    assert alive() is not None  # the tensor holds it
    assert np.array_equal(t.numpy(), np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4))
    v = t.numpy()
    t.close()
    gc.collect()
    assert alive() is not None  # the view still uses it
    assert v[0, 1, 2, 3] == 23
    del v
    gc.collect()
    assert alive() is None  # and nothing leaks once all are gone


def test_memory_handed_over_again_reuses_the_contexts_handle(ctx):
    # The cache of wrapped-memory handles: the same address, shape, strides
    # and dtype give the same C handle; anything else a handle of its own.
    a = np.zeros((2, 3, 4, 5), np.float32)
    t1, t2 = libconv.Tensor(a, ctx=ctx), libconv.Tensor(a, ctx=ctx)
    assert t1._handle() is t2._handle()
    other = [libconv.Tensor(a.reshape(2, 3, 5, 4), ctx=ctx),                  # shape
             libconv.Tensor(a.reshape(2, 4, 5, 3).transpose(0, 3, 1, 2), ctx=ctx),  # strides
             libconv.Tensor(a[1:], ctx=ctx),                                   # address
             libconv.Tensor(a.view(np.float16), ctx=ctx),                      # dtype
             libconv.Tensor(a, ctx=libconv.Context("cpu"))]                    # context
    assert all(t.data_ptr == a.ctypes.data for i, t in enumerate(other) if i != 2)
    handles = {id(t._handle()) for t in other} | {id(t1._handle())}
    assert len(handles) == len(other) + 1
    # Read-only is the tensor's, not the handle's.
    r = a.copy()
    r.flags.writeable = False
    ro = libconv.Tensor(r, ctx=ctx)
    assert ro.readonly and not libconv.Tensor(a, ctx=ctx).readonly
    with pytest.raises(libconv.InvalidArgumentError, match="read-only"):
        libconv.Conv(2).forward(a, np.zeros((3, 3, 1, 1), np.float32), out=r, ctx=ctx)


def test_a_cached_wrap_is_the_full_tensor(ctx):
    # The second wrap of an array takes Tensor()'s short path: the same
    # handle, and still this array's read-only flag, owner and context.
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    t1, t2 = libconv.Tensor(a, ctx=ctx), libconv.Tensor(a, ctx=ctx)
    assert t2._handle() is t1._handle() and t2.context is ctx and not t2.readonly
    assert t2.shape == (2, 3, 4, 5) and t2.layout == libconv.Layout.CHANNELS_FIRST
    v = a.view()
    v.flags.writeable = False
    ro = libconv.Tensor(v, ctx=ctx)
    assert ro._handle() is t1._handle() and ro.readonly
    with pytest.raises(libconv.InvalidArgumentError, match="read-only"):
        libconv.Conv(2).forward(a, np.zeros((3, 3, 1, 1), np.float32), out=v, ctx=ctx)
    del a
    gc.collect()
    assert np.array_equal(t2.numpy().ravel()[:3], [0, 1, 2])  # t2 keeps the array alive
    c = libconv.Context("cpu")
    b = np.ones((1, 2, 3, 3), np.float32)
    libconv.Tensor(b, ctx=c)
    c.close()
    with pytest.raises(libconv.ConvError, match="closed"):
        libconv.Tensor(b, ctx=c)


def test_the_handle_cache_keeps_no_memory_alive(ctx):
    a = np.ones((1, 2, 3, 3), np.float32).view(Tracked)
    alive = weakref.ref(a)
    y = libconv.Conv(2).forward(a, np.ones((2, 2, 3, 3), np.float32), ctx=ctx)
    assert y.shape == (1, 2, 1, 1) and np.all(y == 18)
    t = libconv.Tensor(a, ctx=ctx)
    del a, t
    gc.collect()
    assert alive() is None  # the cached handle does not hold the array


def test_closing_a_context_drops_its_cached_handles():
    c = libconv.Context("cpu")
    a = np.ones((1, 2, 3, 3), np.float32)
    h = libconv.Tensor(a, ctx=c)._handle()
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is not None  # cached
    c.close()
    gc.collect()
    assert ref() is None


def test_owned_tensor_memory_outlives_close_through_views(ctx):
    t = libconv.Tensor.zeros((1, 2, 3, 3), "float64", ctx=ctx)
    v = t.numpy()
    v[...] = 5
    t.close()
    gc.collect()
    assert v.sum() == 5 * 18
    with pytest.raises(libconv.InvalidHandleError):
        t.numpy()


def test_out_array_is_written_in_place(rng):
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    out = np.empty((2, 4, 4, 4), np.float32)
    ptr = address(out)
    assert libconv.conv2d(x, w, out=out) is out
    assert address(out) == ptr
    np.testing.assert_allclose(out, libconv.conv2d(x, w), rtol=1e-6)


def test_buffer_protocol_objects_are_wrapped(ctx):
    raw = bytearray(1 * 2 * 2 * 3 * 4)
    mv = memoryview(raw).cast("B").cast("f", shape=[1, 2, 2, 3])
    t = libconv.Tensor(mv, ctx=ctx)
    assert t.shape == (1, 2, 2, 3) and t.dtype == libconv.DType.FLOAT32
    t.numpy()[0, 1, 1, 2] = 1.5
    assert np.frombuffer(raw, np.float32)[-1] == 1.5


def test_copy_is_only_made_when_asked(ctx):
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)[:, :, ::2]  # strided
    with pytest.raises(libconv.InvalidArgumentError, match="not contiguous"):
        libconv.Tensor(a, ctx=ctx)
    t = libconv.Tensor(a, ctx=ctx, copy=True)
    assert not np.shares_memory(t.numpy(), a) and np.array_equal(t.numpy(), a)
    t32 = libconv.Tensor(a, ctx=ctx, copy=True, dtype="float32")
    assert t32.dtype == libconv.DType.FLOAT32 and np.array_equal(t32.numpy(), a)
    assert libconv.Tensor([[[1.0, 2.0]]], copy=True, dtype=np.float32).shape == (1, 1, 2)


def test_copy_from_and_copy_to(ctx, rng):
    t = libconv.Tensor.zeros((2, 3, 4, 5), "float32", "channels_last", ctx=ctx)
    src = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    t.copy_from(src)
    assert np.array_equal(t.numpy(), src)
    out = t.copy_to()
    assert np.array_equal(out, src) and not np.shares_memory(out, t.numpy())
    assert out.strides == t.numpy().strides  # same layout
    dest = np.empty((2, 4, 5, 3), np.float32).transpose(0, 3, 1, 2)
    assert t.copy_to(dest) is dest and np.array_equal(dest, src)


# ------------------------------------------------------------------ DLPack


def test_dlpack_round_trip_with_numpy(ctx):
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4)
    t = libconv.from_dlpack(a, ctx=ctx)  # NumPy -> libconv, via a capsule
    assert t.data_ptr == address(a)
    b = np.from_dlpack(t)  # libconv -> NumPy
    assert address(b) == address(a) and np.array_equal(a, b)
    a[0, 1, 2, 3] = -1
    assert b[0, 1, 2, 3] == -1
    if b.flags.writeable:  # NumPy < 2 imports DLPack read-only
        b[0, 0, 0, 0] = 7
        assert a[0, 0, 0, 0] == 7
    assert t.__dlpack_device__() == (1, 0)
    # Channels-last strides travel through DLPack as they are.
    cl = libconv.Tensor.zeros((1, 3, 2, 2), "float64", "channels_last", ctx=ctx)
    v = np.from_dlpack(cl)
    assert v.strides == cl.numpy().strides and address(v) == cl.data_ptr
    for producer in (cl, cl.numpy()):  # libconv's own export, and NumPy's
        u = libconv.from_dlpack(producer, ctx=ctx)
        assert u.layout == libconv.Layout.CHANNELS_LAST and u.data_ptr == cl.data_ptr


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_capsules_legacy_and_versioned(ctx, versioned):
    t = libconv.Tensor.zeros((1, 1, 2, 2), "float32", ctx=ctx)
    capsule = t.__dlpack__(max_version=(1, 0) if versioned else None)
    name = "dltensor_versioned" if versioned else "dltensor"
    assert ("'%s'" % name) in repr(capsule) or name in repr(capsule)
    u = libconv.from_dlpack(capsule, ctx=ctx)  # consumes it
    assert u.data_ptr == t.data_ptr
    assert "used_" + name in repr(capsule)
    with pytest.raises(TypeError, match="unconsumed DLPack capsule"):
        libconv.from_dlpack(capsule, ctx=ctx)


def test_dlpack_export_keeps_memory_alive_after_close(ctx):
    t = libconv.Tensor.zeros((1, 2, 2, 2), "float64", ctx=ctx)
    t.numpy()[...] = 3
    b = np.from_dlpack(t)
    t.close()
    gc.collect()
    assert b.sum() == 3 * 8


def test_dlpack_unconsumed_capsule_releases_owner(ctx):
    a = np.zeros((1, 1, 2, 2), np.float32).view(Tracked)
    alive = weakref.ref(a)
    t = libconv.Tensor(a, ctx=ctx)
    capsule = t.__dlpack__()
    del a, t
    gc.collect()
    assert alive() is not None
    del capsule
    gc.collect()
    assert alive() is None


def test_dlpack_readonly_flag(ctx):
    a = np.zeros((1, 1, 2, 2), np.float32)
    a.flags.writeable = False
    try:
        a.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):
        pytest.skip("this NumPy cannot export read-only arrays (DLPack 1.0 needs NumPy >= 2.1)")
    t = libconv.from_dlpack(a, ctx=ctx)  # NumPy exports read-only arrays versioned
    assert t.readonly
    assert not np.from_dlpack(t).flags.writeable
    with pytest.raises(libconv.InvalidArgumentError, match="read-only"):
        libconv.conv2d(np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 2, 2), np.float32),
                       out=t)


class FakeDevice:
    """A DLPack producer on another device: a CUDA tensor, structurally."""

    def __init__(self, device_type, device_id=0):
        self.mem = np.zeros((1, 2, 3, 3), np.float32)
        self.device = (device_type, device_id)
        self.exported = 0

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, **kw):
        self.exported += 1
        return _libconv.py_dlpack_export(self.mem, address(self.mem), self.mem.shape, None, 2, 32,
                                         self.device[0], self.device[1], False, False)


def test_cuda_memory_is_refused_by_a_cpu_context_before_export(ctx):
    fake = FakeDevice(2, 1)  # kDLCUDA, GPU 1
    with pytest.raises(libconv.TypeMismatchError, match="cuda:1 memory but the context computes on cpu:0"):
        libconv.from_dlpack(fake, ctx=ctx)
    assert fake.exported == 0  # refused without taking anything
    # No context given: the default context of the memory's device, which
    # this build does not have.
    with pytest.raises((libconv.NotAvailableError, libconv.TypeMismatchError)):
        libconv.from_dlpack(fake)
    # A bare capsule of CUDA memory is read, then refused.
    capsule = FakeDevice.__dlpack__(fake)
    with pytest.raises(libconv.TypeMismatchError, match="cuda:1"):
        libconv.from_dlpack(capsule, ctx=ctx)
    with pytest.raises(libconv.TypeMismatchError, match="cuda"):
        libconv.conv2d(fake, np.zeros((1, 2, 1, 1), np.float32), ctx=ctx)


def test_unknown_dlpack_device_and_dtype_are_refused(ctx):
    with pytest.raises(libconv.TypeMismatchError, match="device type 4"):
        libconv.from_dlpack(FakeDevice(4), ctx=ctx)
    ints = np.zeros((1, 1, 2, 2), np.int32)
    with pytest.raises(libconv.TypeMismatchError, match="int32"):
        libconv.from_dlpack(ints, ctx=ctx)


@requires_c("conv_context_set_allocator")
def test_python_allocator_serves_owned_tensors():
    blocks = {}
    freed = []

    def alloc(nbytes, alignment):
        raw = np.empty(nbytes + alignment, np.uint8)
        addr = raw.ctypes.data + (-raw.ctypes.data) % alignment
        blocks[addr] = raw
        return addr

    def free(addr):
        freed.append(addr)
        blocks.pop(addr)

    with libconv.Context(threads=1) as ctx:
        ctx.set_allocator(alloc, free)
        t = libconv.Tensor.zeros((1, 2, 4, 4), "float32", ctx=ctx)
        assert t.data_ptr in blocks
        y = libconv.conv2d(t, np.ones((3, 2, 1, 1), np.float32), ctx=ctx)
        assert y.data_ptr in blocks
        ptr = t.data_ptr
        del t
        gc.collect()
        assert ptr in freed
        ctx.set_allocator(None, None)  # the default again
        u = libconv.Tensor.zeros((1, 1, 2), ctx=ctx)
        assert u.data_ptr not in blocks
        with pytest.raises(libconv.InvalidArgumentError):
            ctx.set_allocator(alloc, None)
        del y, u
    gc.collect()
    assert not blocks  # every block went back


@requires_c("conv_context_set_allocator")
def test_python_allocator_that_raises_or_returns_no_address():
    """An allocator that raises, or returns something that is no address,
    gives libconv NULL -- OUT_OF_MEMORY, nothing created -- and the Python
    exception is the cause of the OutOfMemoryError (before, ctypes turned it
    into an undefined pointer that only the alignment check happened to
    catch)."""
    class Refused(Exception):
        pass

    def raising(nbytes, alignment):
        raise Refused("no %d bytes for you" % nbytes)

    cases = [(raising, Refused, "no 64 bytes for you"),
             (lambda n, a: "0x1000", TypeError, "'0x1000' \\(str\\), not an address"),
             (lambda n, a: 4096.0, TypeError, "4096.0 \\(float\\), not an address"),
             (lambda n, a: True, TypeError, "True \\(bool\\), not an address"),
             (lambda n, a: -4096, ValueError, "-4096, not an address"),
             (lambda n, a: 2 ** 64, ValueError, "not an address")]
    frees = []
    with libconv.Context(threads=1) as ctx:
        for alloc, cause, text in cases:
            ctx.set_allocator(alloc, frees.append)
            with pytest.raises(libconv.OutOfMemoryError, match="allocator returned NULL") as info:
                libconv.Tensor.zeros((1, 1, 16), "float32", ctx=ctx)
            assert isinstance(info.value.__cause__, cause), info.value.__cause__
            assert re.search(text, str(info.value.__cause__)), str(info.value.__cause__)
        # The cause is not left behind for a later, unrelated failure.
        ctx.set_allocator(lambda n, a: None, frees.append)
        with pytest.raises(libconv.OutOfMemoryError) as info:
            libconv.Tensor.zeros((1, 1, 16), "float32", ctx=ctx)
        assert info.value.__cause__ is None
    assert frees == []  # nothing was handed out, nothing given back


@requires_c("conv_context_set_allocator")
def test_c_allocator_from_ctypes():
    """C functions (here ctypes callbacks over libc) and the `user` pointer."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.aligned_alloc.restype = ctypes.c_void_p
    libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    calls = []

    @ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
    def alloc(user, nbytes, alignment):
        calls.append((user, nbytes))
        return libc.aligned_alloc(alignment, -(-nbytes // alignment) * alignment)

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
    def free(user, memory):
        calls.append((user, None))
        libc.free(memory)

    token = bytearray(8)
    with libconv.Context() as ctx:
        ctx.set_allocator(alloc, free, user=token)
        t = libconv.Tensor.zeros((1, 1, 8), "float64", ctx=ctx)
        t.close()
    gc.collect()
    user = ctypes.addressof(ctypes.c_char.from_buffer(token))
    assert calls[0] == (user, 64) and (user, None) in calls


def test_bias_from_any_producer(rng):
    class Producer:  # a DLPack producer that is not NumPy (PyTorch, CuPy...)
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 1, 1)).astype(np.float32)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    want = libconv.conv2d(x, w, b)
    np.testing.assert_array_equal(libconv.conv2d(x, w, Producer(b)), want)
    np.testing.assert_array_equal(libconv.conv2d(x, w, memoryview(b)), want)
    db = np.zeros(3, np.float32)
    libconv.conv_backward_filter(x, w.shape, want, bias_out=Producer(db))
    np.testing.assert_allclose(db, want.sum(axis=(0, 2, 3)), rtol=1e-5)
