"""Gradient communication: communicators (``conv_comm_t``) and gradient
reducers (``conv_reducer_t``) for data-parallel training.

Buffers are any dense array -- NumPy, a buffer, a :class:`Tensor`, a DLPack
tensor -- used in place, never copied; their dtype is the collective's. The
GIL is released during every collective, so the ranks of a LOCAL group run
as Python threads::

    comms = libconv.Communicator.local(4)
    def rank(comm, grad):
        comm.all_reduce(grad, op="average")       # in place
    threads = [threading.Thread(target=rank, args=(c, g)) for c, g in zip(comms, grads)]
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _libconv as _C
from ._core import (
    DTypeLike,
    Tensor,
    _device_name,
    _dtype,
    _dtype_from_numpy,
    _Handle,
    _is_capsule,
    _numpy_dtype,
    _dense,
    _Resource,
    _take_dlpack,
)
from ._enums import CommBackend, CommState, Device, ReduceOp, from_c, to_enum
from ._errors import ConvError, InvalidArgumentError, TypeMismatchError, error_class

__all__ = ["Communicator", "Reducer", "Bucket"]

#: Bytes of the id that joins NCCL ranks (CONV_COMM_UNIQUE_ID_BYTES).
UNIQUE_ID_BYTES = int(getattr(_C, "CONV_COMM_UNIQUE_ID_BYTES", 128))


def _flat_memory(obj: Any, device: Tuple[Device, int], what: str,
                 writable: bool) -> Tuple[int, int, "DTypeLike", Any]:
    """(address, elements, dtype, keep-alive) of dense memory on ``device``."""
    def expect(dev: Tuple[Device, int]) -> Optional[int]:
        if tuple(dev) != tuple(device):
            raise TypeMismatchError("%s is in %s memory but the communicator's buffers are in %s "
                                    "memory" % (what, _device_name(*dev), _device_name(*device)))
        return None if dev[0] == Device.CPU else 1  # NCCL: the producer's work must be done

    if isinstance(obj, Tensor):
        h = obj._handle()
        expect(obj.device)
        if writable and obj.readonly:
            raise InvalidArgumentError("%s wraps read-only memory but is written" % what)
        return _C.conv_tensor_get_data(h.ptr), obj.size, obj.dtype, h
    if not isinstance(obj, np.ndarray) and (hasattr(obj, "__dlpack__") or _is_capsule(obj)):
        holder, address, shape, strides, dtype, readonly, _ = _take_dlpack(obj, what, expect)
        if strides is not None and not _dense(shape, strides):
            raise InvalidArgumentError("%s is not dense (shape %s, strides %s)" % (what, shape, strides))
        if writable and readonly:
            raise InvalidArgumentError("%s is read-only (DLPack flag) but is written" % what)
        return address, int(np.prod(shape, dtype=np.int64)), dtype, holder
    if not isinstance(obj, np.ndarray):
        try:
            obj = np.asarray(memoryview(obj))
        except TypeError:
            raise TypeMismatchError("%s must be an array (NumPy, DLPack, buffer, Tensor), not %s"
                                    % (what, type(obj).__name__)) from None
    expect((Device.CPU, 0))
    dtype = _dtype_from_numpy(obj.dtype, what)
    item = obj.itemsize
    if any(s % item for s in obj.strides) or not _dense(obj.shape, [s // item for s in obj.strides]):
        raise InvalidArgumentError("%s is not dense (shape %s, strides %s bytes): use "
                                   "numpy.ascontiguousarray" % (what, obj.shape, obj.strides))
    if writable and not obj.flags.writeable:
        raise InvalidArgumentError("%s is a read-only array but is written" % what)
    return obj.__array_interface__["data"][0], obj.size, dtype, obj


class Communicator(_Resource):
    """One rank of a group that runs collectives (``conv_comm_t``).

    Create one with :meth:`local` (N ranks that are N threads of this
    process), :meth:`mpi` / :meth:`mpi_world` (MPI processes) or
    :meth:`nccl` / :meth:`nccl_all` (one GPU per rank). Every rank calls the
    same collectives in the same order with the same counts, dtypes, ops and
    roots. A communicator serves one call at a time; :meth:`abort`,
    :meth:`error` and the getters may be called from any thread.

    Failures raise, never hang: a collective waits at most :attr:`timeout`
    seconds, after which (or after :meth:`abort`, or a backend error) the
    communicator is aborted for good and every collective raises
    :class:`BackendError`.
    """

    _kind = "communicator"

    def __init__(self) -> None:
        raise TypeError("use Communicator.local(), .mpi(), .mpi_world(), .nccl() or .nccl_all()")

    @classmethod
    def _wrap(cls, ptr: Any, deps: Tuple[Any, ...] = ()) -> "Communicator":
        c = cls.__new__(cls)
        c._h = _Handle(ptr, _C.conv_comm_destroy, deps)
        return c

    # ------------------------------------------------------------ creation

    @staticmethod
    def backend_available(backend: Union[CommBackend, int, str]) -> bool:
        """Whether a backend is built in and usable on this machine."""
        return bool(_C.conv_comm_backend_available(int(to_enum(CommBackend, backend, "backend"))))

    @classmethod
    def local(cls, nranks: int) -> List["Communicator"]:
        """The ``nranks`` communicators (1..1024) of one in-process group: rank r is item r.

        Each is meant for its own thread; all must take part in every
        collective. Closing one while others run collectives makes those
        fail (state ABORTED) instead of waiting.
        """
        return [cls._wrap(p) for p in _C.conv_comm_create_local(int(nranks))]

    @classmethod
    def mpi(cls, comm: Any) -> "Communicator":
        """Wraps an MPI communicator: an ``mpi4py.MPI.Comm``, or the address of an ``MPI_Comm``.

        Collective over that communicator; MPI must be initialised (with
        MPI_THREAD_MULTIPLE for a reducer to overlap communication). libconv
        works on its own duplicate. Raises :class:`NotAvailableError` in a
        build without MPI.
        """
        address = comm
        if not isinstance(comm, (int, np.integer)):
            from mpi4py import MPI  # type: ignore[import-not-found]

            address = MPI._addressof(comm)
        return cls._wrap(_C.conv_comm_create_mpi(int(address)), (comm,))

    @classmethod
    def mpi_world(cls) -> "Communicator":
        """A communicator over MPI_COMM_WORLD (see :meth:`mpi`)."""
        return cls._wrap(_C.conv_comm_create_mpi_world())

    @staticmethod
    def unique_id() -> bytes:
        """A new id joining NCCL ranks: one rank makes it, sends it to the others."""
        buf = bytearray(UNIQUE_ID_BYTES)
        _C.conv_comm_unique_id(buf, len(buf))
        return bytes(buf)

    @classmethod
    def nccl(cls, unique_id: bytes, nranks: int, rank: int, device: int) -> "Communicator":
        """Rank ``rank`` of an NCCL group of ``nranks`` on GPU ``device``, joined by ``unique_id``."""
        uid = bytes(unique_id)
        return cls._wrap(_C.conv_comm_create_nccl(uid, len(uid), int(nranks), int(rank), int(device)))

    @classmethod
    def nccl_all(cls, devices: Union[int, Sequence[int]]) -> List["Communicator"]:
        """One process driving several GPUs: ``devices`` is a count (GPUs 0..n-1) or a list."""
        arg = int(devices) if isinstance(devices, (int, np.integer)) else [int(d) for d in devices]
        return [cls._wrap(p) for p in _C.conv_comm_create_nccl_all(arg)]

    # ------------------------------------------------------------- queries

    @property
    def rank(self) -> int:
        """This communicator's rank, 0..size-1."""
        return _C.conv_comm_get_rank(self._handle().ptr)

    @property
    def size(self) -> int:
        """The number of ranks."""
        return _C.conv_comm_get_size(self._handle().ptr)

    @property
    def backend(self) -> CommBackend:
        """LOCAL, MPI or NCCL."""
        return from_c(CommBackend, _C.conv_comm_get_backend(self._handle().ptr))  # type: ignore[return-value]

    @property
    def device(self) -> Tuple[Device, int]:
        """Where the buffers live: (CPU, 0) for LOCAL and MPI, (CUDA, gpu) for NCCL."""
        device, index = _C.conv_comm_get_device(self._handle().ptr)
        return from_c(Device, device), index  # type: ignore[return-value]

    @property
    def timeout(self) -> float:
        """Seconds one collective may wait for the other ranks (settable; ``math.inf`` waits forever)."""
        return _C.conv_comm_get_timeout(self._handle().ptr)

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        _C.conv_comm_set_timeout(self._handle().ptr, float(seconds))

    def set_stream(self, cuda_stream: Optional[int]) -> None:
        """NCCL: the CUDA stream (an address; None: the communicator's own) collectives use."""
        _C.conv_comm_set_stream(self._handle().ptr, cuda_stream)

    # --------------------------------------------------------- collectives

    def all_reduce(self, send: Any, recv: Any = None, op: Union[ReduceOp, int, str] = "sum") -> Any:
        """``recv`` = ``op`` over the ranks of ``send`` (in place when ``recv`` is None).

        Returns the array holding the result (``recv``, or ``send``).
        """
        h = self._handle()
        dev = self.device
        out = send if recv is None else recv
        s_addr, count, dtype, s_keep = _flat_memory(send, dev, "send", writable=recv is None)
        r_addr, r_count, r_dtype, r_keep = (s_addr, count, dtype, s_keep) if recv is None else \
            _flat_memory(recv, dev, "recv", writable=True)
        if (r_count, r_dtype) != (count, dtype):
            raise InvalidArgumentError("recv has %d %s elements, send %d %s" % (
                r_count, r_dtype.name.lower(), count, dtype.name.lower()))
        _C.conv_comm_all_reduce(h.ptr, s_addr, r_addr, count, int(dtype),
                                int(to_enum(ReduceOp, op, "op")))
        del s_keep, r_keep
        return out

    def broadcast(self, buffer: Any, root: int = 0) -> Any:
        """Copies rank ``root``'s ``buffer`` into every other rank's, bit for bit. Returns it."""
        h = self._handle()
        addr, count, dtype, keep = _flat_memory(buffer, self.device, "buffer", writable=True)
        _C.conv_comm_broadcast(h.ptr, addr, count, int(dtype), int(root))
        del keep
        return buffer

    def barrier(self) -> None:
        """Returns when every rank has entered it."""
        _C.conv_comm_barrier(self._handle().ptr)

    def synchronize(self) -> None:
        """Waits until this rank's enqueued collectives are complete (NCCL; at once otherwise)."""
        _C.conv_comm_synchronize(self._handle().ptr)

    # ------------------------------------------------------------- failure

    def abort(self) -> None:
        """Aborts the communicator, from any thread: calls in progress and later ones raise.

        For LOCAL every rank of the group is aborted. It must still be closed.
        """
        _C.conv_comm_abort(self._handle().ptr)

    def error(self) -> Optional[ConvError]:
        """None while healthy; once failed, the error (not raised) with its reason.

        Never waits. See :attr:`state` for why it failed.
        """
        (status, message), _ = _C.conv_comm_get_error(self._handle().ptr)
        return None if status == 0 else error_class(status)(message, status)

    @property
    def state(self) -> CommState:
        """OK, ABORTED, TIMED_OUT or FAILED."""
        _, state = _C.conv_comm_get_error(self._handle().ptr)
        return from_c(CommState, state)  # type: ignore[return-value]

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Communicator closed>"
        return "<libconv.Communicator %s rank %d of %d>" % (
            self.backend.name.lower(), self.rank, self.size)


class Bucket(NamedTuple):
    """A bucket of a :class:`Reducer`'s gradient buffer (in elements)."""

    offset: int
    elements: int
    params: int


class Reducer(_Resource):
    """Averages a network's gradients across the ranks of a communicator
    (``conv_reducer_t``), bucket by bucket while backward goes on.

    ::

        r = libconv.Reducer(comm, "float32")
        for w in weights:                # in FORWARD order
            r.add_param(w)               # w: the parameter's array, kept alive
        r.setup()                        # collective
        r.broadcast_params(0)            # rank 0's weights everywhere
        each step:
            backward, writing gradient i into r.grad(i) (e.g. as the out= of
            conv_backward_filter) and calling r.mark_ready(i) as soon as it is there
            r.finish()                   # gradients now averaged over the ranks
            r.apply_sgd(lr, momentum, weight_decay)

    Args:
        comm: the communicator (kept alive by the reducer).
        dtype: of every parameter's weights and gradients.
    """

    _kind = "reducer"

    def __init__(self, comm: Communicator, dtype: DTypeLike = "float32") -> None:
        hc = comm._handle()
        self._comm = comm
        self._dtype = _dtype(dtype)
        self._shapes: List[Tuple[int, ...]] = []
        self._h = _Handle(_C.conv_reducer_create(hc.ptr, int(self._dtype)), _C.conv_reducer_destroy,
                          (hc,))

    @property
    def communicator(self) -> Communicator:
        """The communicator the reducer averages over."""
        return self._comm

    def add_param(self, weights: Any, count: Optional[int] = None) -> int:
        """Registers a parameter, in forward order; returns its index.

        ``weights`` is the parameter's dense array (its dtype the reducer's),
        used by :meth:`broadcast_params` and :meth:`apply_sgd` and kept alive
        by the reducer; or None with ``count`` elements when neither is used
        (then on every rank). Before :meth:`setup` only.
        """
        h = self._handle()
        if weights is None:
            if count is None:
                raise InvalidArgumentError("add_param(None) needs count")
            addr, n, keep, shape = None, int(count), None, (int(count),)
        else:
            addr, n, dtype, keep = _flat_memory(weights, self._comm.device, "weights", writable=True)
            if dtype != self._dtype:
                raise TypeMismatchError("weights are %s but the reducer is %s"
                                        % (dtype.name.lower(), self._dtype.name.lower()))
            shape = tuple(getattr(weights, "shape", (n,)))
        index = _C.conv_reducer_add_param(h.ptr, addr, n)
        h.deps = h.deps + (keep,)
        self._shapes.append(shape)
        return index

    def set_bucket_bytes(self, first_bucket_bytes: int, bucket_bytes: int) -> None:
        """PyTorch DDP's rule: the first bucket closes at ``first_bucket_bytes``, the others at
        ``bucket_bytes`` (default 1 MiB and 25 MiB). Before setup."""
        _C.conv_reducer_set_bucket_bytes(self._handle().ptr, int(first_bucket_bytes), int(bucket_bytes))

    def set_bucket_count(self, buckets: int) -> None:
        """NVCaffe's rule: every bucket closes at ceil(total / buckets) bytes. Before setup."""
        _C.conv_reducer_set_bucket_count(self._handle().ptr, int(buckets))

    def set_stream(self, cuda_stream: Optional[int]) -> None:
        """NCCL: the CUDA stream backward runs on (an address; None: the default stream)."""
        _C.conv_reducer_set_stream(self._handle().ptr, cuda_stream)

    def setup(self) -> None:
        """Lays out the buckets and allocates the gradient buffer. Collective: every rank must
        have registered the same parameters (else :class:`ShapeMismatchError` everywhere)."""
        _C.conv_reducer_setup(self._handle().ptr)

    # --------------------------------------------------------------- layout

    @property
    def param_count(self) -> int:
        """The number of registered parameters."""
        return _C.conv_reducer_get_param_count(self._handle().ptr)

    @property
    def bucket_count(self) -> int:
        """The number of buckets (after setup)."""
        return _C.conv_reducer_get_bucket_count(self._handle().ptr)

    def bucket(self, index: int) -> Bucket:
        """Bucket ``index`` (0 is reduced first): its range of the buffer and parameter count."""
        offset, elements, params = _C.conv_reducer_get_bucket(self._handle().ptr, int(index))
        return Bucket(offset, elements, params)

    def param_slot(self, param: int) -> Tuple[int, int]:
        """(bucket, offset in elements) of parameter ``param``'s gradient slot."""
        bucket, offset = _C.conv_reducer_get_param_slot(self._handle().ptr, int(param))
        return bucket, offset

    def _view(self, h: _Handle, address: int, shape: Tuple[int, ...]) -> np.ndarray:
        from ._core import _ArrayInterface

        if self._comm.device[0] != Device.CPU:
            raise TypeMismatchError("the gradients are in GPU memory; use grad_address()")
        dt = _numpy_dtype(self._dtype)
        interface = {"version": 3, "shape": shape, "typestr": "|u%d" % dt.itemsize,
                     "data": (address, False)}
        return np.asarray(_ArrayInterface(interface, h)).view(dt)

    def grad(self, param: int) -> np.ndarray:
        """A NumPy view of parameter ``param``'s gradient slot, shaped like its weights.

        Backward writes the gradient straight into it (e.g. ``out=`` of
        :func:`conv_backward_filter`); after :meth:`finish` it holds the
        average over the ranks. The view keeps the reducer's memory alive.
        """
        h = self._handle()
        return self._view(h, self.grad_address(param), self._shapes[param])

    def grad_address(self, param: int) -> int:
        """The address of parameter ``param``'s gradient slot (device memory for NCCL)."""
        return _C.conv_reducer_get_grad(self._handle().ptr, int(param))

    def buffer(self) -> np.ndarray:
        """A NumPy view of the whole flat gradient buffer (slots, padding, the reducer's own)."""
        h = self._handle()
        address, elements = _C.conv_reducer_get_buffer(h.ptr)
        return self._view(h, address, (elements,))

    # ---------------------------------------------------------------- steps

    def broadcast_params(self, root: int = 0) -> None:
        """Copies rank ``root``'s weights of every parameter to every rank. Collective."""
        _C.conv_reducer_broadcast_params(self._handle().ptr, int(root))

    def mark_ready(self, param: int) -> None:
        """Parameter ``param``'s gradient is in its slot; a full bucket starts reducing."""
        _C.conv_reducer_mark_ready(self._handle().ptr, int(param))

    def mark_unused(self, param: int) -> None:
        """Parameter ``param`` has no gradient this step (its slot is zero-filled)."""
        _C.conv_reducer_mark_unused(self._handle().ptr, int(param))

    def finish(self) -> None:
        """Ends the step: waits until every gradient slot holds the average over the ranks."""
        _C.conv_reducer_finish(self._handle().ptr)

    def apply_sgd(self, learning_rate: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        """NVCaffe's fused update of every parameter's weights, after :meth:`finish`:
        ``h = momentum * h + lr * (g + weight_decay * w); w -= h``."""
        _C.conv_reducer_apply_sgd(self._handle().ptr, float(learning_rate), float(momentum),
                                  float(weight_decay))

    @property
    def step_times(self) -> Tuple[float, float]:
        """(communication, exposed) times of the last step, as conv_reducer_get_step_times
        reports them: the reductions' time, and the part :meth:`finish` waited for (not
        hidden behind backward). Both 0 before any step and on NCCL."""
        communication, exposed = _C.conv_reducer_get_step_times(self._handle().ptr)
        return communication, exposed

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Reducer closed>"
        return "<libconv.Reducer %s, %d params>" % (self._dtype.name.lower(), len(self._shapes))
