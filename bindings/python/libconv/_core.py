"""Contexts, workspaces and tensors: the handles of ``conv.h`` as Python objects.

Every object owns one C handle through a private :class:`_Handle`, which
destroys it when the last reference goes. ``close()`` drops the object's own
reference: the object refuses further use (with :class:`InvalidHandleError`),
while memory that NumPy arrays or DLPack consumers still view stays valid
until they are gone too. A tensor keeps its context's handle alive, and a
tensor that wraps caller memory keeps that memory's owner alive.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _libconv as _C
from ._enums import DType, Device, Layout, Math, from_c, to_enum
from ._errors import (InvalidArgumentError, InvalidHandleError, TypeMismatchError,
                      _note_callback_error, describe)

__all__ = [
    "Context",
    "Workspace",
    "Tensor",
    "default_context",
    "from_dlpack",
    "device_count",
]

DeviceLike = Union[Device, int, str]
DTypeLike = Union[DType, int, str, np.dtype, type]
LayoutLike = Union[Layout, int, str]
Shape = Sequence[int]


# ================================================================ handles


class _Handle:
    """Owns one C handle: ``destroy(ptr)`` runs when the last reference goes.

    ``deps`` are kept alive as long as the handle: the context of a tensor,
    the memory a tensor or workspace borrows.
    """

    __slots__ = ("ptr", "_destroy", "deps", "__weakref__")

    def __init__(self, ptr: Any, destroy: Any, deps: Tuple[Any, ...] = ()) -> None:
        self.ptr = ptr
        self._destroy = destroy
        self.deps = deps

    def __del__(self) -> None:
        ptr, self.ptr = self.ptr, None
        if ptr is not None:
            try:
                self._destroy(ptr)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


class _Resource:
    """What Context, Workspace, Tensor and Conv share: a handle, close(), ``with``."""

    _kind = "object"
    _h: Optional[_Handle] = None

    def _handle(self) -> _Handle:
        h = self._h
        if h is None:
            raise InvalidHandleError(
                "this %s is closed (close() was called); create a new one" % self._kind
            )
        return h

    def close(self) -> None:
        """Releases the C handle. Further use raises :class:`InvalidHandleError`.

        Safe to call twice and from any thread; a call running on another
        thread keeps the handle until it returns, and memory that NumPy or
        DLPack consumers still view stays valid until they are gone.
        """
        self._h = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _ViewCache:
    """A context's handles over caller memory, by what they describe.

    A ``conv_tensor_wrap`` handle is an address, dims, dtype and layout; it
    does not own the memory. So the handle made for an earlier array at the
    same address, of the same shape, strides and dtype, describes a later
    one exactly, and is used again: the C call, the layout checks and the
    getters were most of the host cost of a call on small problems, where a
    training loop hands libconv the same buffers step after step. What keeps
    the memory alive is the Tensor made from it (its ``_owner``), as before.
    Oldest entries go first past ``LIMIT``.
    """

    __slots__ = ("_map", "_lock")
    LIMIT = 512

    def __init__(self) -> None:
        self._map: Dict[tuple, Tuple[_Handle, Tuple[Tuple[int, ...], DType, Layout],
                                     Tuple[Device, int]]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        return self._map.get(key)

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            m = self._map
            while len(m) >= self.LIMIT:
                m.pop(next(iter(m)), None)
            m[key] = value

    def clear(self) -> None:
        with self._lock:
            self._map.clear()


def _device_name(device: int, index: int) -> str:
    """"cpu:0", "cuda:1" (or the number of a device kind this version does not know)."""
    kind = from_c(Device, device)
    return "%s:%d" % (kind.name.lower() if isinstance(kind, Device) else kind, index)


# ================================================================ context


class Context(_Resource):
    """A device to compute on (``conv_context_t``).

    A context owns a thread pool, a pool of workspaces for calls that pass
    none, and the tuning cache of algorithm choices. It may be used from
    several threads at once.

    Args:
        device: ``"cpu"`` (or :attr:`Device.CPU`) or ``"cuda"``.
        index: the device index (0 for the CPU).
        threads: the number of threads a CPU context computes with
            (default: as many as the process may run on, at most 64).
        math: the accuracy/speed trade-off of algorithm choices
            (:class:`Math`; default DEFAULT).

    Raises:
        NotAvailableError: the device does not exist in this build or machine.
    """

    _kind = "context"

    def __init__(self, device: DeviceLike = "cpu", index: int = 0, *,
                 threads: Optional[int] = None, math: Union[None, Math, int, str] = None) -> None:
        dev = to_enum(Device, device, "device")
        self._h = _Handle(_C.conv_context_create(int(dev), int(index)), _C.conv_context_destroy)
        self._views = _ViewCache()
        if threads is not None:
            self.threads = threads
        if math is not None:
            self.math = math

    _views: _ViewCache
    _device_key: Optional[Tuple[Device, int]] = None

    def _where(self) -> Tuple[Device, int]:
        """(device, index), asked of C once: a context never moves."""
        key = self._device_key
        if key is None:
            device, index = _C.conv_context_get_device(self._handle().ptr)
            key = self._device_key = (from_c(Device, device), index)
        else:
            self._handle()  # a closed context still refuses
        return key

    def close(self) -> None:
        """Releases the C handle (see :meth:`_Resource.close`) and the handles the
        context keeps over caller memory."""
        views = getattr(self, "_views", None)
        if views is not None:
            views.clear()
        super().close()

    @property
    def device(self) -> Device:
        """The kind of device (:class:`Device`)."""
        device, _ = _C.conv_context_get_device(self._handle().ptr)
        return from_c(Device, device)  # type: ignore[return-value]

    @property
    def device_index(self) -> int:
        """The device index the context was created for."""
        _, index = _C.conv_context_get_device(self._handle().ptr)
        return index

    @property
    def threads(self) -> int:
        """The number of threads a CPU context computes with (settable, 1..1024)."""
        return _C.conv_context_get_threads(self._handle().ptr)

    @threads.setter
    def threads(self, n: int) -> None:
        _C.conv_context_set_threads(self._handle().ptr, int(n))

    @property
    def math(self) -> Math:
        """How much accuracy algorithm choices may trade for speed (settable, :class:`Math`).

        A forced algorithm is used whatever the mode.
        """
        return from_c(Math, _C.conv_context_get_math(self._handle().ptr))  # type: ignore[return-value]

    @math.setter
    def math(self, value: Union[Math, int, str]) -> None:
        _C.conv_context_set_math(self._handle().ptr, int(to_enum(Math, value, "math")))

    @property
    def device_name(self) -> str:
        """What the context runs on, as tuning files record it ("cpu <model>", "cuda <GPU> ...")."""
        return _C.conv_context_get_device_name(self._handle().ptr)

    @property
    def stream(self) -> Optional[int]:
        """The CUDA stream (address) calls are enqueued on; None for a CPU context.

        Settable on a GPU context to a ``cudaStream_t`` address (e.g.
        ``torch.cuda.current_stream().cuda_stream``), kept alive by the
        caller; None goes back to the context's own. A CPU context raises
        :class:`UnsupportedError`.
        """
        return _C.conv_context_get_stream(self._handle().ptr) or None

    @stream.setter
    def stream(self, cuda_stream: Optional[int]) -> None:
        _C.conv_context_set_stream(self._handle().ptr, cuda_stream)

    def synchronize(self) -> None:
        """Waits until every call enqueued on the context's stream has finished (GPU);
        raises the first asynchronous error the GPU reported. At once on the CPU."""
        _C.conv_context_synchronize(self._handle().ptr)

    @property
    def deterministic(self) -> bool:
        """Deterministic mode (settable; off by default): algorithm choices are only
        those that give bit-identical results from run to run."""
        return bool(_C.conv_context_get_deterministic(self._handle().ptr))

    @deterministic.setter
    def deterministic(self, on: bool) -> None:
        _C.conv_context_set_deterministic(self._handle().ptr, 1 if on else 0)

    @property
    def workspace_limit(self) -> int:
        """Upper bound in bytes on the workspace of a chosen algorithm (settable; 0: none)."""
        return _C.conv_context_get_workspace_limit(self._handle().ptr)

    @workspace_limit.setter
    def workspace_limit(self, nbytes: int) -> None:
        _C.conv_context_set_workspace_limit(self._handle().ptr, int(nbytes))

    @property
    def check_numerics(self) -> bool:
        """The numerical guard (settable; off by default).

        When on, every pass reads its outputs after computing them and the
        first NaN or infinity raises :class:`NumericalError` naming the pass,
        the tensor and the element; the outputs have been written then. The
        environment variable ``CONV_CHECK_NUMERICS`` turns it on for every
        context created afterwards.
        """
        return bool(_C.conv_context_get_check_numerics(self._handle().ptr))

    @check_numerics.setter
    def check_numerics(self, on: bool) -> None:
        _C.conv_context_set_check_numerics(self._handle().ptr, 1 if on else 0)

    @property
    def verbose(self) -> int:
        """The trace level (settable), like oneDNN's ``ONEDNN_VERBOSE``.

        0 (the default) prints nothing; 1 prints one line per executed pass
        to stderr (``conv_verbose,exec,cpu,fwd,...,solver=<name>,plan=hit,<ms>``);
        2 also, when a plan is made, each solver passed over and why
        (``conv_verbose,skip,...``). A new context starts at the level in the
        environment variable ``CONV_VERBOSE``.
        """
        return _C.conv_context_get_verbose(self._handle().ptr)

    @verbose.setter
    def verbose(self, level: int) -> None:
        _C.conv_context_set_verbose(self._handle().ptr, int(level))

    def set_allocator(self, alloc: Any, free: Any, user: Any = None) -> None:
        """Sets the host allocator of a CPU context (``conv_context_set_allocator``).

        It serves tensors from :meth:`Tensor.zeros` and library-owned
        workspaces created afterwards, and the context's workspace pool.

        Args:
            alloc: a Python callable ``alloc(nbytes, alignment) -> address``
                (an int, or 0/None when it cannot; an exception, or a result
                that is no address, counts as "cannot" and becomes the
                ``__cause__`` of the :class:`OutOfMemoryError`), or a C function
                ``void *(void *user, size_t bytes, size_t alignment)`` as a
                ctypes function pointer or an int address.
            free: ``free(address)``, or a C function
                ``void (void *user, void *memory)`` likewise.
            user: the ``user`` pointer C functions receive (an int address or
                a buffer); ignored for Python callables.

        ``set_allocator(None, None)`` restores the default. Callables may run
        on the library's threads, concurrently; they and ``user`` are kept
        alive as long as the context, so that every block goes back to the
        allocator it came from. Python callables are slow: meant for tracking
        and tests, not for hot paths.
        """
        import ctypes

        def c_function(f: Any, proto: Any, adapt: Any) -> Tuple[Any, Any]:
            if f is None or isinstance(f, (int, np.integer)):
                return (int(f) if f is not None else None), None
            if isinstance(f, ctypes._CFuncPtr):  # type: ignore[attr-defined]
                return ctypes.cast(f, ctypes.c_void_p).value, f
            if not callable(f):
                raise InvalidArgumentError("allocator functions must be callables, ctypes "
                                           "functions, addresses or None, not %r" % (f,))
            wrapped = proto(adapt(f))
            return ctypes.cast(wrapped, ctypes.c_void_p).value, wrapped

        alloc_addr, alloc_keep = c_function(alloc, _ALLOC_FN(), _alloc_adapter)
        free_addr, free_keep = c_function(free, _FREE_FN(), lambda f: lambda user, p: f(p))
        h = self._handle()
        _C.conv_context_set_allocator(h.ptr, alloc_addr, free_addr, user)
        h.deps = h.deps + ((alloc, free, user, alloc_keep, free_keep),)

    def tensor(self, data: Any, *, layout: Optional[LayoutLike] = None,
               copy: bool = False, dtype: Optional[DTypeLike] = None) -> "Tensor":
        """``Tensor(data, ctx=self, ...)``: wraps (or, with ``copy=True``, copies) an array."""
        return Tensor(data, ctx=self, layout=layout, copy=copy, dtype=dtype)

    def zeros(self, shape: Shape, dtype: DTypeLike = "float32",
              layout: LayoutLike = "channels_first") -> "Tensor":
        """``Tensor.zeros(shape, dtype, layout, ctx=self)``."""
        return Tensor.zeros(shape, dtype, layout, ctx=self)

    def workspace(self, memory: Union[None, int, Any] = None) -> "Workspace":
        """``Workspace(memory, ctx=self)``."""
        return Workspace(memory, ctx=self)

    def save_tuning(self, path: Any) -> None:
        """Writes the context's tuned algorithm choices to a file (``conv_context_save_tuning``).

        The file is written under a temporary name and renamed. Raises
        :class:`FileIOError` when it cannot be written.
        """
        _C.conv_context_save_tuning(self._handle().ptr, _fspath(path))

    def load_tuning(self, path: Any) -> None:
        """Adds choices saved by :meth:`save_tuning` (``conv_context_load_tuning``).

        Raises :class:`BadFileError` for a truncated or corrupt file, or one
        from another libconv version or device (nothing is applied then), and
        :class:`FileIOError` for an unreadable one.
        """
        _C.conv_context_load_tuning(self._handle().ptr, _fspath(path))

    def clear_tuning(self) -> None:
        """Forgets every tuned choice (``conv_context_clear_tuning``)."""
        _C.conv_context_clear_tuning(self._handle().ptr)

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Context closed>"
        return "<libconv.Context %s threads=%d>" % (
            _device_name(self.device, self.device_index), self.threads)


def _alloc_adapter(f: Any) -> Any:
    """A Python ``alloc(nbytes, alignment)`` as the C allocator's body.

    Nothing may escape into ctypes, which would hand libconv an undefined
    pointer: an exception, or a result that is neither None/0 nor an address
    (a positive int below 2**64), becomes NULL -- libconv's OUT_OF_MEMORY --
    and the exception the cause of the OutOfMemoryError raised for it.
    """
    def alloc(user: Any, nbytes: int, alignment: int) -> Optional[int]:
        try:
            p = f(nbytes, alignment)
            if p is None or (isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p == 0):
                return None
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                raise TypeError("the allocator returned %r (%s), not an address (an int) or None"
                                % (p, type(p).__name__))
            if not 0 < int(p) < 2 ** 64:
                raise ValueError("the allocator returned %d, not an address" % int(p))
            _note_callback_error(None)
            return int(p)
        except BaseException as exc:  # noqa: B902 -- KeyboardInterrupt too: never into ctypes
            _note_callback_error(exc)
            return None
    return alloc


def _ALLOC_FN() -> Any:
    import ctypes

    return ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


def _FREE_FN() -> Any:
    import ctypes

    return ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def _fspath(path: Any) -> str:
    import os

    p = os.fspath(path)
    return p.decode() if isinstance(p, bytes) else p


_default_lock = threading.Lock()
_defaults: Dict[Tuple[int, int], Context] = {}
_CPU_KEY = (int(Device.CPU), 0)


def default_context(device: DeviceLike = "cpu", index: int = 0) -> Context:
    """The context used where none is given: one per device, created on first use.

    Raises :class:`NotAvailableError` for a device this build or machine lacks.
    """
    if device == "cpu" and index == 0:  # the usual case, without the lock: a dict read is atomic
        ctx = _defaults.get(_CPU_KEY)
        if ctx is not None and ctx._h is not None:
            return ctx
    key = (int(to_enum(Device, device, "device")), int(index))
    with _default_lock:
        ctx = _defaults.get(key)
        if ctx is None or ctx.closed:
            ctx = _defaults[key] = Context(key[0], key[1])
        return ctx


def device_count(device: DeviceLike = "cpu") -> int:
    """The number of usable devices of a kind: 1 for the CPU; GPUs for CUDA (0 without).

    With 0, :func:`libconv.last_error` says why: the library looked for and
    not found (cuDNN), no driver, or no GPU.
    """
    return _C.conv_device_count(int(to_enum(Device, device, "device")))


# ============================================================== workspace


class Workspace(_Resource):
    """Scratch memory for one call at a time (``conv_workspace_t``).

    Args:
        memory: ``None`` for a library-owned workspace that grows to what a
            call needs and keeps that size; an ``int`` for a fixed workspace
            of that many bytes (allocated here, 64-byte aligned); or a
            writable contiguous buffer (NumPy array, bytearray...) to use as
            is, kept alive as long as the workspace. A fixed workspace never
            grows: a call that needs more raises :class:`WorkspaceTooSmallError`.
        ctx: the context (default: :func:`default_context`).
    """

    _kind = "workspace"

    def __init__(self, memory: Union[None, int, Any] = None, *,
                 ctx: Optional[Context] = None) -> None:
        ctx = ctx or default_context()
        hc = ctx._handle()
        if memory is None:
            self._h = _Handle(_C.conv_workspace_create(hc.ptr), _C.conv_workspace_destroy, (hc,))
            return
        if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool):
            n = int(memory)
            if n < 0:
                raise InvalidArgumentError("workspace size %d < 0" % n)
            raw = np.empty(n + 64, np.uint8)
            skip = (-raw.ctypes.data) % 64
            memory = raw[skip:skip + n]
        try:
            view = memoryview(memory)
        except TypeError:
            raise InvalidArgumentError(
                "workspace memory must be None, a size in bytes or a writable buffer, not %s"
                % type(memory).__name__) from None
        if view.readonly:
            raise InvalidArgumentError("workspace memory is read-only")
        if not view.c_contiguous:
            raise InvalidArgumentError("workspace memory is not contiguous")
        nbytes = view.nbytes
        ptr = _C.conv_workspace_wrap(hc.ptr, view if nbytes else None, nbytes)
        self._h = _Handle(ptr, _C.conv_workspace_destroy, (hc, view, memory))

    @property
    def size(self) -> int:
        """The current size in bytes (for a library-owned one, what it grew to)."""
        return _C.conv_workspace_get_size(self._handle().ptr)

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Workspace closed>"
        return "<libconv.Workspace %d bytes>" % self.size


# ================================================================ dtypes

_ITEMSIZE = {DType.FLOAT32: 4, DType.FLOAT64: 8, DType.FLOAT16: 2, DType.BFLOAT16: 2}
# Native NumPy dtypes straight to DType (dtype.name builds a string per call).
_NUMPY_DTYPES = {np.dtype(np.float32): DType.FLOAT32, np.dtype(np.float64): DType.FLOAT64,
                 np.dtype(np.float16): DType.FLOAT16}
_FROM_NUMPY = {"float32": DType.FLOAT32, "float64": DType.FLOAT64, "float16": DType.FLOAT16,
               "bfloat16": DType.BFLOAT16}
# DLPack type codes: kDLFloat = 2, kDLBfloat = 4.
_DL_CODE = {DType.FLOAT32: (2, 32), DType.FLOAT64: (2, 64), DType.FLOAT16: (2, 16),
            DType.BFLOAT16: (4, 16)}
_FROM_DL = {v: k for k, v in _DL_CODE.items()}
_DL_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex",
                  6: "bool"}
# DLPack device types: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3 (pinned), kDLCUDAManaged 13.
_DL_DEVICE = {1: Device.CPU, 3: Device.CPU, 2: Device.CUDA, 13: Device.CUDA}
_DL_OF_DEVICE = {Device.CPU: 1, Device.CUDA: 2}


def _dtype(value: DTypeLike, what: str = "dtype") -> DType:
    """A DType from a DType, its name, an int, or a NumPy dtype."""
    if isinstance(value, (DType, str)) or (isinstance(value, int) and not isinstance(value, bool)):
        if isinstance(value, str) and value.lower() in _FROM_NUMPY:
            return _FROM_NUMPY[value.lower()]
        return to_enum(DType, value, what)  # type: ignore[return-value]
    try:
        dt = np.dtype(value)
    except TypeError:
        raise TypeMismatchError("%s %s is not a dtype" % (what, describe(value))) from None
    return _dtype_from_numpy(dt, what)


def _dtype_from_numpy(dt: np.dtype, what: str) -> DType:
    d = _NUMPY_DTYPES.get(dt)
    if d is not None:
        return d
    d = _FROM_NUMPY.get(dt.name)
    if d is None or not dt.isnative:
        raise TypeMismatchError(
            "%s has dtype %s; libconv takes float32, float64, float16 or bfloat16 "
            "(native byte order): convert it first, e.g. with .astype(numpy.float32)"
            % (what, dt.str if d is not None else dt.name))
    return d


def _numpy_dtype(d: DType) -> np.dtype:
    if d == DType.BFLOAT16:
        try:
            import ml_dtypes  # type: ignore[import-not-found]
        except ImportError:
            raise TypeMismatchError(
                "bfloat16 tensors are viewed from NumPy through the ml_dtypes package, "
                "which is not installed") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({DType.FLOAT32: np.float32, DType.FLOAT64: np.float64,
                     DType.FLOAT16: np.float16}[d])


# ============================================================ layouts

CF = Layout.CHANNELS_FIRST
CL = Layout.CHANNELS_LAST


def _physical_order(ndim: int, layout: Layout) -> List[int]:
    """Logical axes from outermost to innermost in memory."""
    if layout == CL and ndim >= 3:
        return [0] + list(range(2, ndim)) + [1]
    return list(range(ndim))


def _compact_strides(shape: Sequence[int], layout: Layout) -> Tuple[int, ...]:
    """Element strides of a dense tensor of logical ``shape`` in ``layout``."""
    strides = [0] * len(shape)
    acc = 1
    for axis in reversed(_physical_order(len(shape), layout)):
        strides[axis] = acc
        acc *= int(shape[axis])
    return tuple(strides)


def _fits(shape: Sequence[int], strides: Optional[Sequence[int]], layout: Layout) -> bool:
    """Whether memory with these element strides is dense in ``layout``."""
    if layout == CL and len(shape) < 3:
        return False
    if 0 in shape:
        return True
    if strides is None:  # DLPack's "compact row-major"
        strides = _compact_strides(shape, CF)
    want = _compact_strides(shape, layout)
    return all(d == 1 or s == w for d, s, w in zip(shape, strides, want))


def _dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether element strides cover one block without gaps, in any axis order."""
    if 0 in shape:
        return True
    expected = 1
    for stride, dim in sorted((s, d) for d, s in zip(shape, strides) if d != 1):
        if stride != expected:
            return False
        expected *= dim
    return True


_CANDIDATES: Dict[tuple, List[Layout]] = {}


def _layout_candidates(shape: Sequence[int], strides: Optional[Sequence[int]]) -> List[Layout]:
    """The layouts memory of these dims and element strides is dense in (remembered:
    a program passes few distinct shapes, and this ran per array per call)."""
    key = (tuple(shape), tuple(strides) if strides is not None else None)
    fits = _CANDIDATES.get(key)
    if fits is None:
        fits = [lay for lay in (CF, CL) if _fits(shape, strides, lay)]
        if len(_CANDIDATES) >= 4096:
            _CANDIDATES.clear()
        _CANDIDATES[key] = fits
    return list(fits)


def _array_layouts(a: np.ndarray) -> Tuple[Layout, ...]:
    """The layouts a NumPy array is dense in, remembered by its shape and byte
    strides (what _Call asks of every array of every call)."""
    key = (a.shape, a.strides, a.itemsize)
    fits = _ARRAY_LAYOUTS.get(key)
    if fits is None:
        item = a.itemsize
        fits = tuple(_layout_candidates(a.shape, [s // item for s in a.strides])) if item else ()
        if len(_ARRAY_LAYOUTS) >= 4096:
            _ARRAY_LAYOUTS.clear()
        _ARRAY_LAYOUTS[key] = fits
    return fits


_ARRAY_LAYOUTS: Dict[tuple, Tuple[Layout, ...]] = {}


def _pick_layout(shape: Sequence[int], strides: Optional[Sequence[int]],
                 want: Optional[Layout], what: str) -> Layout:
    fits = _layout_candidates(shape, strides)
    if want is None:
        if fits:
            return fits[0]
        raise InvalidArgumentError(
            "%s (shape %s, strides %s in elements) is not contiguous in channels-first or "
            "channels-last order; libconv wraps memory without copying, so pass "
            "numpy.ascontiguousarray(...) or copy=True" % (what, tuple(shape), tuple(strides or ())))
    if want not in fits:
        raise InvalidArgumentError(
            "%s (shape %s, strides %s in elements) is not dense in %s order%s" % (
                what, tuple(shape), tuple(strides or ()), want.name.lower(),
                "; a channels-last array is a view like nhwc.transpose(0, 3, 1, 2), whose "
                "shape is listed N, C, H, W" if want == CL else ""))
    return want


def _layout(value: Optional[LayoutLike]) -> Optional[Layout]:
    return None if value is None else to_enum(Layout, value, "layout")  # type: ignore[return-value]


# ================================================================ tensor


class _ArrayInterface:
    """What NumPy views libconv memory through; keeps the memory's owner alive."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, interface: Dict[str, Any], owner: Any) -> None:
        self.__array_interface__ = interface
        self._owner = owner


class Tensor(_Resource):
    """An N-d tensor (``conv_tensor_t``): N, C and 1 to 3 spatial dims.

    ``Tensor(data)`` wraps existing memory without copying it: a NumPy array
    (or anything with the buffer protocol), or any object with
    ``__dlpack__`` (PyTorch, CuPy, JAX...). The tensor keeps that memory
    alive as long as it exists. The shape is always listed N, C, spatial...
    whatever the memory layout; a C-contiguous array is channels-first, and
    an array whose strides are channels-last (``nhwc.transpose(0, 3, 1, 2)``,
    or a PyTorch ``channels_last`` tensor) is channels-last.

    Args:
        data: the array to wrap (or copy).
        ctx: the context (default: the tensor's device's :func:`default_context`).
        layout: require this layout (default: the one the strides show).
        copy: copy into memory libconv owns instead of wrapping; this also
            converts dtype (``dtype=``), order and non-contiguous arrays.
        dtype: with ``copy=True`` the dtype to convert to; without, the dtype
            the data must have.

    Raises:
        TypeMismatchError: an unsupported dtype, or memory on another device
            than the context's.
        InvalidArgumentError: memory that is not dense in either layout.
    """

    _kind = "tensor"
    _ctx: Context
    _readonly: bool
    _meta: Tuple[Tuple[int, ...], DType, Layout]
    _device: Tuple[Device, int]
    _owner: Any = None  # what keeps wrapped memory alive (its handle may be shared)

    def __init__(self, data: Any, *, ctx: Optional[Context] = None,
                 layout: Optional[LayoutLike] = None, copy: bool = False,
                 dtype: Optional[DTypeLike] = None) -> None:
        if type(data) is np.ndarray and not copy and layout is None and dtype is None:
            # The usual call, a NumPy array whose handle this context made
            # before, in a few steps instead of _as_tensor's (what a training
            # loop pays per tensor); anything else takes the general path.
            ctx = ctx or default_context()
            hit = _numpy_view_hit(data, ctx)
            if hit is not None:
                self._h, self._meta, self._device, self._readonly = hit
                self._ctx, self._owner = ctx, data
                return
        if copy:
            src = _copy_source(data, dtype)
            lay = _layout(layout)
            if lay is None:
                fits = _layout_candidates(src.shape, [s // src.itemsize for s in src.strides])
                lay = fits[0] if fits else CF
            t = Tensor.zeros(src.shape, _dtype_from_numpy(src.dtype, "data"), lay, ctx=ctx)
            t.copy_from(src)
        else:
            t = _as_tensor(data, ctx, _layout(layout), "data", writable=False)
            if dtype is not None and t.dtype != _dtype(dtype):
                raise TypeMismatchError("data has dtype %s, not %s (pass copy=True to convert)"
                                        % (t.dtype.name.lower(), _dtype(dtype).name.lower()))
        self._adopt(t)

    def _adopt(self, other: "Tensor") -> None:
        self._h, self._ctx, self._readonly = other._h, other._ctx, other._readonly
        self._meta, self._device, self._owner = other._meta, other._device, other._owner

    @classmethod
    def _from_handle(cls, h: _Handle, ctx: Context, readonly: bool) -> "Tensor":
        t = cls.__new__(cls)
        t._h, t._ctx, t._readonly = h, ctx, readonly
        p = h.ptr
        ndim = _C.conv_tensor_get_ndim(p)
        t._meta = (
            tuple(_C.conv_tensor_get_dim(p, i) for i in range(ndim)),
            from_c(DType, _C.conv_tensor_get_dtype(p)),
            from_c(Layout, _C.conv_tensor_get_layout(p)),
        )
        if hasattr(_C, "conv_tensor_get_device"):
            device, index = _C.conv_tensor_get_device(p)
            t._device = (from_c(Device, device), index)
        else:  # a conv.h from before device tensors
            t._device = (ctx.device, ctx.device_index)
        return t

    @classmethod
    def _view(cls, h: _Handle, ctx: Context, readonly: bool,
              meta: Tuple[Tuple[int, ...], DType, Layout], device: Tuple[Device, int],
              owner: Any) -> "Tensor":
        t = cls.__new__(cls)
        t._h, t._ctx, t._readonly, t._meta, t._device, t._owner = h, ctx, readonly, meta, device, owner
        return t

    def close(self) -> None:
        """Releases the tensor (see :meth:`_Resource.close`) and its hold on wrapped memory;
        views made by :meth:`numpy` or DLPack keep that memory alive themselves."""
        self._owner = None
        super().close()

    def _keepalive(self, h: _Handle) -> Any:
        """What a view of the memory must hold: the handle, and the memory's owner."""
        return h if self._owner is None else (h, self._owner)

    @classmethod
    def zeros(cls, shape: Shape, dtype: DTypeLike = "float32",
              layout: LayoutLike = "channels_first", *, ctx: Optional[Context] = None) -> "Tensor":
        """A new zero-filled tensor in memory libconv owns (64-byte aligned).

        ``shape`` is (N, C, spatial...) whatever the layout.
        """
        ctx = ctx or default_context()
        hc = ctx._handle()
        shape = tuple(int(d) for d in shape)
        ptr = _C.conv_tensor_create(hc.ptr, int(_dtype(dtype)), int(to_enum(Layout, layout, "layout")),
                                    len(shape), shape)
        return cls._from_handle(_Handle(ptr, _C.conv_tensor_destroy, (hc,)), ctx, False)

    @classmethod
    def from_dlpack(cls, obj: Any, *, ctx: Optional[Context] = None,
                    layout: Optional[LayoutLike] = None) -> "Tensor":
        """Wraps an object with ``__dlpack__`` (or a DLPack capsule) without copying.

        Memory on a device other than the context's is refused with
        :class:`TypeMismatchError` before anything is taken from ``obj``.
        """
        return _from_dlpack(obj, ctx, _layout(layout), "data", writable=False)

    # ---------------------------------------------------------- properties

    @property
    def context(self) -> Context:
        """The context the tensor was created with."""
        return self._ctx

    @property
    def shape(self) -> Tuple[int, ...]:
        """The dims (N, C, spatial...) whatever the layout (``conv_tensor_get_dim``)."""
        self._handle()
        return self._meta[0]

    @property
    def ndim(self) -> int:
        """The rank, 3 to 5 (``conv_tensor_get_ndim``)."""
        return _C.conv_tensor_get_ndim(self._handle().ptr)

    @property
    def dtype(self) -> DType:
        """The element type (``conv_tensor_get_dtype``)."""
        self._handle()
        return self._meta[1]

    @property
    def layout(self) -> Layout:
        """The memory layout (``conv_tensor_get_layout``)."""
        self._handle()
        return self._meta[2]

    @property
    def size(self) -> int:
        """The number of elements (``conv_tensor_get_elements``)."""
        return _C.conv_tensor_get_elements(self._handle().ptr)

    @property
    def nbytes(self) -> int:
        """The size in bytes (``conv_tensor_get_bytes``)."""
        return _C.conv_tensor_get_bytes(self._handle().ptr)

    @property
    def data_ptr(self) -> int:
        """The address of the first element (``conv_tensor_get_data``)."""
        return _C.conv_tensor_get_data(self._handle().ptr)

    @property
    def device(self) -> Tuple[Device, int]:
        """(device kind, index) of the memory: the context's device."""
        return self._device

    @property
    def readonly(self) -> bool:
        """True when the wrapped memory may not be written (a read-only array)."""
        return self._readonly

    @property
    def strides(self) -> Tuple[int, ...]:
        """Element strides of the logical dims in this layout."""
        return _compact_strides(self.shape, self.layout)

    # --------------------------------------------------------------- NumPy

    def numpy(self) -> np.ndarray:
        """A NumPy array viewing the tensor's memory (no copy).

        Its shape is the logical (N, C, spatial...) and its strides follow
        the layout. The array keeps the memory alive, also after
        :meth:`close`. Only for tensors in host memory.
        """
        h = self._handle()
        self._require_host("numpy()")
        shape, dtype, layout = self._meta
        ndt = _numpy_dtype(dtype)
        if 0 in shape:
            return np.zeros(shape, ndt)
        item = ndt.itemsize
        interface = {
            "version": 3,
            "shape": shape,
            "strides": tuple(s * item for s in _compact_strides(shape, layout)),
            "typestr": "|u%d" % item,
            "data": (_C.conv_tensor_get_data(h.ptr), self._readonly),
        }
        return np.asarray(_ArrayInterface(interface, self._keepalive(h))).view(ndt)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        a = self.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise TypeMismatchError("converting %s to %s needs a copy" % (a.dtype, np.dtype(dtype)))
            return a.astype(dtype)
        return a.copy() if copy else a

    def copy_from(self, src: Any) -> None:
        """Copies ``src`` into the tensor.

        ``src`` is another :class:`Tensor` of the same dtype, layout and dims,
        on any device (``conv_tensor_copy``), or a host array of the tensor's
        shape and dtype with any strides, brought to the tensor's layout first
        (``conv_tensor_copy_from``; also into device memory).
        """
        h = self._handle()
        if self._readonly:
            raise InvalidArgumentError("the tensor wraps read-only memory")
        if isinstance(src, Tensor):
            hs = src._handle()
            _C.conv_tensor_copy(h.ptr, hs.ptr)
            return
        shape, dtype, layout = self._meta
        a = np.asarray(src)
        if a.shape != shape:
            raise InvalidArgumentError("copy_from: source shape %s != tensor shape %s" % (a.shape, shape))
        if a.dtype != _numpy_dtype(dtype):
            raise TypeMismatchError("copy_from: source dtype %s != tensor dtype %s"
                                    % (a.dtype, _numpy_dtype(dtype)))
        order = _physical_order(len(shape), layout)
        dense = np.ascontiguousarray(a.transpose(order))
        _C.conv_tensor_copy_from(h.ptr, dense.reshape(-1).view(np.uint8), dense.nbytes)

    def copy_to(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """A copy of the tensor in a new NumPy array, or in ``out`` (``conv_tensor_copy_to``).

        The copy has the tensor's shape, dtype and layout; ``out`` must be a
        writable array dense in the tensor's layout. From device memory too.
        """
        h = self._handle()
        shape, dtype, layout = self._meta
        ndt = _numpy_dtype(dtype)
        if out is None:
            order = _physical_order(len(shape), layout)
            out = np.empty([shape[i] for i in order], ndt).transpose(np.argsort(order))
        elif (out.shape != shape or out.dtype != ndt or not out.flags.writeable
              or not _fits(shape, [s // ndt.itemsize for s in out.strides], layout)):
            raise InvalidArgumentError(
                "copy_to: out must be a writable %s array of shape %s dense in %s order"
                % (ndt, shape, layout.name.lower()))
        # The memory of `out` as one flat buffer, whatever its (dense) strides.
        flat = np.asarray(_ArrayInterface(
            {"version": 3, "shape": (out.nbytes,), "typestr": "|u1",
             "data": (out.__array_interface__["data"][0], False)}, out))
        _C.conv_tensor_copy_to(h.ptr, flat, out.nbytes)
        return out

    def _require_host(self, what: str) -> None:
        dev, idx = self.device
        if dev != Device.CPU:
            raise TypeMismatchError("%s: the tensor is on %s; NumPy arrays live in host memory "
                                    "(pass it on through DLPack instead)" % (what, _device_name(dev, idx)))

    # -------------------------------------------------------------- DLPack

    def __dlpack_device__(self) -> Tuple[int, int]:
        """(DLPack device type, index): (1, 0) for the CPU, (2, i) for CUDA GPU i."""
        dev, idx = self.device
        return _DL_OF_DEVICE[Device(dev)], idx

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """Exports the tensor as a DLPack capsule (versioned when ``max_version >= (1, 0)``).

        No copy unless ``copy=True``; the consumer keeps the memory alive.
        """
        h = self._handle()
        shape, dtype, layout = self._meta
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("libconv tensors export only to their own device %s, not %s"
                              % (self.__dlpack_device__(), tuple(dl_device)))
        owner: Any = self._keepalive(h)
        address = _C.conv_tensor_get_data(h.ptr)
        readonly = self._readonly
        if self._device[0] != Device.CPU:
            # The consumer's stream must see the tensor's values: wait for
            # the work enqueued on the context's stream.
            self._ctx.synchronize()
        if copy:
            owner = self.copy_to()
            address, readonly = owner.__array_interface__["data"][0], False
        code, bits = _DL_CODE[dtype]
        dev_type, dev_id = self.__dlpack_device__()
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _C.py_dlpack_export(owner, address, shape, _compact_strides(shape, layout),
                                   code, bits, dev_type, dev_id, readonly, versioned)

    # ---------------------------------------------------------------- misc

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Tensor closed>"
        shape, dtype, layout = self._meta
        return "<libconv.Tensor shape=%s dtype=%s layout=%s device=%s>" % (
            shape, dtype.name.lower(), layout.name.lower(), _device_name(*self.device))


# ========================================================= wrapping memory


def _view_handle(ctx: Context, address: int, shape: Tuple[int, ...],
                 strides: Optional[Tuple[int, ...]], dtype: DType, layout: Optional[Layout],
                 what: str) -> Tuple[_Handle, Tuple[Tuple[int, ...], DType, Layout],
                                     Tuple[Device, int]]:
    """(handle, meta, device) of a tensor over ``address``: the context's cached
    one (:class:`_ViewCache`), else made and checked now."""
    key = (address, shape, strides, dtype, layout)
    views = ctx._views
    hit = views.get(key)
    if hit is not None:
        return hit
    lay = _pick_layout(shape, strides, layout, what)
    item = _ITEMSIZE[dtype]
    if address % item:
        raise InvalidArgumentError("%s: address %#x is not aligned to its %d-byte elements"
                                   % (what, address, item))
    hc = ctx._handle()
    ptr = _C.conv_tensor_wrap(hc.ptr, int(dtype), int(lay), len(shape), shape, address or None)
    t = Tensor._from_handle(_Handle(ptr, _C.conv_tensor_destroy, (hc,)), ctx, False)
    hit = (t._h, t._meta, t._device)
    views.put(key, hit)
    return hit


def _wrap_memory(ctx: Context, address: int, shape: Sequence[int], strides: Optional[Sequence[int]],
                 dtype: DType, layout: Optional[Layout], owner: Any, readonly: bool,
                 what: str) -> Tensor:
    """A tensor over memory that ``owner`` keeps alive."""
    shape = tuple(int(d) for d in shape)
    strides = tuple(int(s) for s in strides) if strides is not None else None
    h, meta, device = _view_handle(ctx, address, shape, strides, dtype, layout, what)
    return Tensor._view(h, ctx, readonly, meta, device, owner)


def _check_device(ctx: Context, device: Device, index: int, what: str) -> None:
    if ctx._where() != (device, index):
        raise TypeMismatchError(
            "%s is in %s memory but the context computes on %s; use a context of that "
            "device (libconv.Context(%r, %d)) or move the data first"
            % (what, _device_name(device, index), _device_name(ctx.device, ctx.device_index),
               device.name.lower(), index))


_HOST = (Device.CPU, 0)

# Buffer-protocol formats of the dtypes libconv takes (native byte order).
_BUFFER_FORMATS = {"f": DType.FLOAT32, "d": DType.FLOAT64, "e": DType.FLOAT16}


def _numpy_view_hit(a: np.ndarray, ctx: Context, layout: Optional[Layout] = None) -> Any:
    """(handle, meta, device, readonly) of a host array the context has a
    cached handle for (:class:`_ViewCache`, asked for ``layout``), else None."""
    try:
        address, shape, strides, fmt, _, readonly = _C.py_buffer_info(a)
    except (BufferError, TypeError, ValueError):
        return None
    dtype = _BUFFER_FORMATS.get(fmt)
    if dtype is None or ctx._h is None or ctx._device_key != _HOST:
        return None
    hit = ctx._views.get((address, shape, strides, dtype, layout))
    return None if hit is None else (hit[0], hit[1], hit[2], readonly)


def _from_numpy(a: np.ndarray, ctx: Optional[Context], layout: Optional[Layout], what: str,
                writable: bool) -> Tensor:
    ctx = ctx or default_context()
    hit = _numpy_view_hit(a, ctx, layout)
    if hit is not None and not (writable and hit[3]):
        return Tensor._view(hit[0], ctx, hit[3], hit[1], hit[2], a)
    # The usual array in one C call (py_buffer_info); anything else -- other
    # dtypes, byte orders, strides that are not whole elements, bfloat16 --
    # read from NumPy's attributes, whose checks word the errors.
    try:
        address, shape, strides, fmt, _, readonly = _C.py_buffer_info(a)
    except (BufferError, TypeError, ValueError):
        fmt = strides = None
    dtype = _BUFFER_FORMATS.get(fmt) if strides is not None else None
    if dtype is None:
        dtype = _dtype_from_numpy(a.dtype, what)
        address, shape = a.__array_interface__["data"][0], tuple(int(d) for d in a.shape)
        readonly, strides = not a.flags.writeable, None
    if writable and readonly:
        raise InvalidArgumentError("%s is a read-only array but is written" % what)
    _check_device(ctx, Device.CPU, 0, what)
    if strides is None:
        item = a.itemsize
        if any(s % item for s in a.strides):
            raise InvalidArgumentError("%s: strides %s are not multiples of the element size %d"
                                       % (what, a.strides, item))
        strides = tuple(s // item for s in a.strides)
    h, meta, device = _view_handle(ctx, address, shape, strides, dtype, layout, what)
    return Tensor._view(h, ctx, readonly, meta, device, a)


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _dl_device(dev_type: int, dev_id: int, what: str) -> Tuple[Device, int]:
    device = _DL_DEVICE.get(int(dev_type))
    if device is None:
        raise TypeMismatchError("%s is on DLPack device type %d, which libconv does not support "
                                "(CPU 1, CUDA 2, CUDA host 3, CUDA managed 13)" % (what, dev_type))
    return device, (0 if device == Device.CPU else int(dev_id))


def _take_dlpack(obj: Any, what: str, expect: Any) -> Tuple[Any, int, Tuple[int, ...],
                                                             Optional[Tuple[int, ...]], DType,
                                                             bool, Tuple[Device, int]]:
    """Consumes a DLPack export of ``obj`` (or a capsule).

    Returns (holder, address, shape, strides, dtype, readonly, device);
    ``holder`` keeps the memory alive. ``expect(device)`` raises for a device
    the caller cannot use; it runs before anything is taken from ``obj``
    when ``obj`` tells its device (``__dlpack_device__``), and returns the
    CUDA stream the consumer will use (None on the host), which the producer
    makes its data ready on.
    """
    if _is_capsule(obj):
        capsule = obj
    else:
        try:
            device = obj.__dlpack_device__()
        except AttributeError:
            raise TypeMismatchError("%s (%s) does not support DLPack" % (what, type(obj).__name__)) from None
        if getattr(obj, "requires_grad", False) is True:  # torch refuses to export these
            raise TypeMismatchError(
                "%s requires grad, which DLPack cannot carry: pass %s.detach(), or use "
                "libconv.torch, whose functions and modules are autograd-aware" % (what, what))
        device = _dl_device(device[0], device[1], what)
        stream = expect(device)
        kwargs = {} if stream is None else {"stream": stream}
        try:
            capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:  # a producer older than DLPack 1.0
            capsule = obj.__dlpack__(**kwargs)
    (holder, address, shape, strides, code, bits, lanes, dev_type, dev_id,
     readonly) = _C.py_dlpack_import(capsule)
    device = _dl_device(dev_type, dev_id, what)
    expect(device)
    dtype = _FROM_DL.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise TypeMismatchError(
            "%s has DLPack dtype %s%d%s; libconv takes float32, float64, float16 or bfloat16"
            % (what, _DL_CODE_NAMES.get(code, "code %d " % code), bits,
               "x%d" % lanes if lanes != 1 else ""))
    return holder, address, shape, strides, dtype, readonly, device


def _from_dlpack(obj: Any, ctx: Optional[Context], layout: Optional[Layout], what: str,
                 writable: bool) -> Tensor:
    def expect(device: Tuple[Device, int]) -> Optional[int]:
        nonlocal ctx
        if ctx is None:
            ctx = default_context(*device)
        _check_device(ctx, device[0], device[1], what)
        if device[0] == Device.CPU:
            return None
        return ctx.stream or 1  # DLPack: 1 is CUDA's legacy default stream

    holder, address, shape, strides, dtype, readonly, _ = _take_dlpack(obj, what, expect)
    if writable and readonly:
        raise InvalidArgumentError("%s is read-only (DLPack flag) but is written" % what)
    assert ctx is not None
    return _wrap_memory(ctx, address, shape, strides, dtype, layout, holder, readonly, what)


def _as_tensor(obj: Any, ctx: Optional[Context], layout: Optional[Layout], what: str,
               writable: bool) -> Tensor:
    """``obj`` as a Tensor without copying: a Tensor itself, or wrapped memory."""
    if isinstance(obj, Tensor):
        obj._handle()
        if writable and obj.readonly:
            raise InvalidArgumentError("%s wraps read-only memory but is written" % what)
        if layout is not None and obj.layout != layout:
            raise TypeMismatchError("%s is %s but %s is required"
                                    % (what, obj.layout.name.lower(), layout.name.lower()))
        return obj
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, ctx, layout, what, writable)
    if hasattr(obj, "__dlpack__") or _is_capsule(obj):
        return _from_dlpack(obj, ctx, layout, what, writable)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeMismatchError(
            "%s must be a NumPy array, a libconv.Tensor, or an object with __dlpack__ or the "
            "buffer protocol, not %s (libconv does not copy silently: use numpy.asarray(...) "
            "or Tensor(..., copy=True))" % (what, type(obj).__name__)) from None
    return _from_numpy(np.asarray(view), ctx, layout, what, writable)


def _copy_source(data: Any, dtype: Optional[DTypeLike]) -> np.ndarray:
    """What Tensor(..., copy=True) copies from, as a host NumPy array."""
    if isinstance(data, Tensor):
        a = data.numpy()
    elif isinstance(data, np.ndarray):
        a = data
    elif hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple)):
        a = np.from_dlpack(data)
    else:
        a = np.asarray(data)
    if dtype is not None:
        a = a.astype(_numpy_dtype(_dtype(dtype)), copy=False)
    else:
        _dtype_from_numpy(a.dtype, "data")
    return a


def from_dlpack(obj: Any, *, ctx: Optional[Context] = None,
                layout: Optional[LayoutLike] = None) -> Tensor:
    """Wraps a DLPack producer (PyTorch, CuPy, JAX, NumPy...) as a :class:`Tensor`, zero-copy.

    The tensor keeps the producer's memory alive. Memory on a device other
    than the context's raises :class:`TypeMismatchError`; with no ``ctx`` the
    default context of the memory's device is used (for CUDA memory this
    raises :class:`NotAvailableError` in a build without CUDA).
    """
    return Tensor.from_dlpack(obj, ctx=ctx, layout=layout)
