"""libconv: N-d convolution (forward, backward-data, backward-filter, transposed)
on the CPU, from Python, without copies.

Quick start::

    import numpy as np
    import libconv

    x = np.random.rand(8, 3, 32, 32).astype(np.float32)      # N, C, H, W
    w = np.random.rand(16, 3, 3, 3).astype(np.float32)       # K, C/groups, kH, kW
    y = libconv.conv2d(x, w, stride=1, padding="same")      # a NumPy array

The objects under the functional API:

- :class:`Context`: a device with its threads, workspace pool and tuning cache
  (:func:`default_context` is used where none is given).
- :class:`Tensor`: wraps a NumPy array, a buffer or a DLPack tensor without
  copying (or owns memory: :meth:`Tensor.zeros`); :meth:`Tensor.numpy` and
  ``__dlpack__`` give it back, again without copies.
- :class:`Conv`: a convolution descriptor (stride, padding, dilation, groups,
  activation, transposed mode, forced algorithms) with ``forward``,
  ``backward_data``, ``backward_filter``, shape and cost inference,
  workspace sizes and algorithm search.
- :class:`Plan` (``Conv.plan(x_shape, w_shape, op)``): one pass of one
  problem made once and called many times; tells its solver, keeps prepared
  weights for inference.
- :class:`Workspace`: scratch memory, library-owned or the caller's.
- :class:`Communicator` and :class:`Reducer`: collectives and bucketed
  gradient averaging for data-parallel training (threads, MPI, NCCL).

Every failure raises a subclass of :class:`ConvError` carrying the C status
and the library's message. The GIL is released while the library computes.
Shapes are always (N, C, spatial...), whatever the memory layout.
"""

from typing import List, Union

try:
    from . import _libconv
except ImportError as _e:  # the source tree, or a broken install
    raise ImportError(
        "libconv's compiled module is missing or cannot be loaded (%s). In a source checkout, "
        "build with CMake and use PYTHONPATH=<build>/bindings/python, or run "
        "`pip install ./bindings/python`." % _e) from _e
from ._conv import (
    AlgoResult,
    Conv,
    Cost,
    conv,
    conv1d,
    conv2d,
    conv3d,
    conv_backward_data,
    conv_backward_filter,
    conv_transpose,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    output_shape,
)
from ._comm import Bucket, Communicator, Reducer
from ._core import Context, Tensor, Workspace, default_context, device_count, from_dlpack
from ._plan import Plan
from . import _enums
from ._enums import (
    Activation,
    Algo,
    AutoPad,
    CommBackend,
    CommState,
    Device,
    DType,
    Layout,
    Math,
    Mode,
    Op,
    ReduceOp,
    Status,
)
from ._errors import (
    BackendError,
    BadFileError,
    ConvError,
    FileIOError,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    NotAvailableError,
    NumericalError,
    OutOfMemoryError,
    ShapeMismatchError,
    SizeOverflowError,
    TypeMismatchError,
    UnsupportedError,
    WorkspaceTooSmallError,
    error_class,
)


def version() -> str:
    """The loaded library's version, "MAJOR.MINOR.PATCH" (``conv_version_string``)."""
    return _libconv.conv_version_string()


def version_info() -> tuple:
    """The loaded library's version as (major, minor, patch) (from ``conv_version``)."""
    n = _libconv.conv_version()
    return (n // 10000, n // 100 % 100, n % 100)


def status_string(status: int) -> str:
    """The library's English name of a status (``conv_status_string``)."""
    return _libconv.conv_status_string(int(status))


def algo_name(algo: int) -> str:
    """The library's name of an algorithm (``conv_algo_name``); "unknown" for others."""
    return _libconv.conv_algo_name(int(algo))


def algo_from_name(name: str) -> Union[Algo, int]:
    """The algorithm of a solver name (``conv_algo_from_name``): an :class:`Algo`, or an int id
    for a solver that has no member. Raises :class:`InvalidArgumentError` (a ``ValueError``)
    listing the known names for an unknown one. Ids are stable within a library version only:
    store names."""
    return _enums.to_enum(Algo, name, "algorithm")


def algorithms(device: Union[Device, str, int] = Device.CPU) -> List[Union[Algo, int]]:
    """Every algorithm (solver) of a device kind's engine, in its order of preference
    (``conv_algo_list``): what :meth:`Conv.set_algorithm` may force there, as :class:`Algo`
    members, or int ids for solvers that have no member (see :func:`algo_name`)."""
    dev = _enums.to_enum(Device, device, "device")
    return [_enums.from_c(Algo, a) for a in _libconv.conv_algo_list(int(dev))]


def last_error() -> str:
    """``conv_last_error()``: the message of the calling thread's last failed C call.

    Rarely needed: every failure already raises a :class:`ConvError` that
    carries this message, and any later successful call clears it.
    """
    return _libconv.conv_last_error()


def __getattr__(name: str) -> object:
    # libconv.torch imports torch, so it is loaded on first use only.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'libconv' has no attribute %r" % name)


__version__ = version()

__all__ = [
    # objects
    "Context", "Tensor", "Workspace", "Conv", "Plan", "Cost", "AlgoResult",
    "default_context", "device_count", "from_dlpack",
    # functional API
    "conv", "conv1d", "conv2d", "conv3d",
    "conv_transpose", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_backward_data", "conv_backward_filter", "output_shape",
    # data-parallel training
    "Communicator", "Reducer", "Bucket",
    # enums
    "Activation", "Algo", "AutoPad", "Device", "DType", "Layout", "Math", "Mode", "Op", "Status",
    "CommBackend", "ReduceOp", "CommState",
    # errors
    "ConvError", "InvalidArgumentError", "InvalidHandleError", "ShapeMismatchError",
    "TypeMismatchError", "UnsupportedError", "OutOfMemoryError", "WorkspaceTooSmallError",
    "SizeOverflowError", "NotAvailableError", "BackendError", "FileIOError", "BadFileError",
    "InternalError", "NumericalError", "error_class",
    # library information
    "version", "version_info", "status_string", "algo_name", "algo_from_name", "algorithms",
    "last_error",
]
