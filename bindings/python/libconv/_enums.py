"""The enums of ``conv.h`` as :class:`enum.IntEnum` classes.

Their values are the header's, which are explicit and never renumbered; a
test checks that every ``CONV_<ENUM>_*`` value of conv.h has its member here
(so a new value fails it until added). Wherever the API takes one of these it also takes
the member's name as a string, case-insensitively (``"channels_last"``,
``"relu"``), and for algorithms any solver name the library knows
(``conv_algo_from_name``), also of solvers that have no member here.
"""

from __future__ import annotations

import enum
from typing import Type, TypeVar, Union

from . import _libconv as _C
from ._errors import InvalidArgumentError, TypeMismatchError, describe

__all__ = ["Status", "Device", "DType", "Layout", "AutoPad", "Activation", "Mode", "Math", "Op",
           "Algo", "CommBackend", "ReduceOp", "CommState"]


class Status(enum.IntEnum):
    """``conv_status_t``: what a call returned (see :mod:`libconv._errors` for the exceptions)."""

    SUCCESS = 0
    INVALID_ARGUMENT = 1
    INVALID_HANDLE = 2
    SHAPE_MISMATCH = 3
    TYPE_MISMATCH = 4
    UNSUPPORTED = 5
    OUT_OF_MEMORY = 6
    WORKSPACE_TOO_SMALL = 7
    OVERFLOW = 8
    NOT_AVAILABLE = 9
    BACKEND_ERROR = 10
    IO_ERROR = 11
    BAD_FILE = 12
    INTERNAL_ERROR = 13
    NUMERICAL_ERROR = 14


class Device(enum.IntEnum):
    """``conv_device_t``: the kind of device a context computes on."""

    CPU = 0
    CUDA = 1


class DType(enum.IntEnum):
    """``conv_dtype_t``: element types. The CPU engine computes FLOAT32 and FLOAT64."""

    FLOAT32 = 0
    FLOAT64 = 1
    FLOAT16 = 2
    BFLOAT16 = 3


class Layout(enum.IntEnum):
    """``conv_layout_t``: memory order. Shapes are always listed N, C, spatial...

    CHANNELS_FIRST is NCW/NCHW/NCDHW (filters OIHW), CHANNELS_LAST is
    NWC/NHWC/NDHWC (filters OHWI). Strings "nchw", "nhwc" and the like are
    accepted too.
    """

    CHANNELS_FIRST = 0
    CHANNELS_LAST = 1


class AutoPad(enum.IntEnum):
    """``conv_auto_pad_t``: how padding is derived (ONNX auto_pad)."""

    NOTSET = 0
    VALID = 1
    SAME_UPPER = 2
    SAME_LOWER = 3


class Activation(enum.IntEnum):
    """``conv_activation_t``: the activation fused into the forward pass."""

    NONE = 0
    RELU = 1


class Mode(enum.IntEnum):
    """``conv_mode_t``: convolution or transposed convolution."""

    CONVOLUTION = 0
    TRANSPOSED = 1


class Math(enum.IntEnum):
    """``conv_math_t``: how much accuracy the algorithm choice may trade for speed.

    DEFAULT allows algorithms with a documented error bound (Winograd on the
    CPU); STRICT only those that sum products directly; FAST also
    reduced-precision internal math where a device has it (TF32).
    """

    DEFAULT = 0
    STRICT = 1
    FAST = 2


class CommBackend(enum.IntEnum):
    """``conv_comm_backend_t``: how a communicator's ranks talk.

    LOCAL: threads of one process (shared memory); MPI: processes, host
    memory; NCCL: one GPU per rank, device memory.
    """

    LOCAL = 0
    MPI = 1
    NCCL = 2


class ReduceOp(enum.IntEnum):
    """``conv_reduce_op_t``: SUM, or AVERAGE (the sum divided by the number of ranks)."""

    SUM = 0
    AVERAGE = 1


class CommState(enum.IntEnum):
    """``conv_comm_state_t``: the health of a communicator."""

    OK = 0
    ABORTED = 1
    TIMED_OUT = 2
    FAILED = 3


class Op(enum.IntEnum):
    """``conv_op_t``: the three passes of a convolution layer."""

    FORWARD = 0
    BACKWARD_DATA = 1
    BACKWARD_FILTER = 2


class Algo(enum.IntEnum):
    """``conv_algo_t``: algorithms (AUTO lets the library choose).

    ``str(algo)`` is the library's name of it (``conv_algo_name``).
    """

    AUTO = 0
    IM2COL_GEMM = 1
    GEMM_1X1 = 2
    DEPTHWISE_DIRECT = 3
    WINOGRAD_4X4_3X3 = 4
    IMPLICIT_GEMM = 5
    CUDNN_IMPLICIT_GEMM = 100
    CUDNN_IMPLICIT_PRECOMP_GEMM = 101
    CUDNN_GEMM = 102
    CUDNN_DIRECT = 103
    CUDNN_FFT = 104
    CUDNN_FFT_TILING = 105
    CUDNN_WINOGRAD = 106
    CUDNN_WINOGRAD_NONFUSED = 107

    def __str__(self) -> str:
        return _C.conv_algo_name(int(self))


E = TypeVar("E", bound=enum.IntEnum)

_ALIASES = {
    Layout: {
        "NCW": "CHANNELS_FIRST",
        "NCHW": "CHANNELS_FIRST",
        "NCDHW": "CHANNELS_FIRST",
        "OIW": "CHANNELS_FIRST",
        "OIHW": "CHANNELS_FIRST",
        "OIDHW": "CHANNELS_FIRST",
        "NWC": "CHANNELS_LAST",
        "NHWC": "CHANNELS_LAST",
        "NDHWC": "CHANNELS_LAST",
        "OWI": "CHANNELS_LAST",
        "OHWI": "CHANNELS_LAST",
        "ODHWI": "CHANNELS_LAST",
    },
    Device: {"GPU": "CUDA"},
    Op: {"BACKWARD_INPUT": "BACKWARD_DATA", "BACKWARD_WEIGHT": "BACKWARD_FILTER"},
}


def to_enum(cls: Type[E], value: Union[E, int, str], what: str) -> Union[E, int]:
    """``value`` (a member, an int or a name) as a member of ``cls``.

    An int the Python enum does not know yet but the header does (a newer
    algorithm, say) is passed through as an int; another name or number raises
    :class:`InvalidArgumentError`, another type :class:`TypeMismatchError`,
    both naming ``what`` and every accepted name (aliases included).
    """
    if isinstance(value, cls):
        return value
    if cls is Algo and isinstance(value, str):
        return _algo_from_name(value)  # type: ignore[return-value]
    if isinstance(value, str):
        key = value.strip().upper().replace("-", "_")
        key = _ALIASES.get(cls, {}).get(key, key)
        if key in cls.__members__:
            return cls.__members__[key]
        prefix = _C_PREFIX.get(cls)
        if prefix and isinstance(getattr(_C, prefix + key, None), int):
            return getattr(_C, prefix + key)
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            prefix = _C_PREFIX.get(cls)
            if prefix and any(getattr(_C, n) == value for n in dir(_C) if n.startswith(prefix)):
                return int(value)
            if cls is Algo and _C.conv_algo_name(int(value)) != "unknown":
                return int(value)  # a solver with no enum value, by its id
    names = ", ".join(repr(n.lower()) for n in list(cls.__members__) + list(_ALIASES.get(cls, {})))
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise TypeMismatchError("%s must be one of %s, not %s" % (what, names, describe(value)))
    raise InvalidArgumentError("%s %s is not one of %s" % (what, describe(value), names))


def _algo_from_name(name: str) -> Union[Algo, int]:
    """An algorithm by the library's name of its solver (``conv_algo_from_name``),
    or by its member's name in any case. Unknown names raise
    :class:`InvalidArgumentError` with the library's list of the known ones."""
    try:
        return from_c(Algo, _C.conv_algo_from_name(name.strip()))
    except InvalidArgumentError:
        key = name.strip().upper().replace("-", "_")
        if key in Algo.__members__:
            return Algo.__members__[key]
        raise


def from_c(cls: Type[E], value: int) -> Union[E, int]:
    """A value the library returned, as a member when the Python enum knows it."""
    try:
        return cls(value)
    except ValueError:
        return int(value)


_C_PREFIX = {
    Status: "CONV_STATUS_",
    Device: "CONV_DEVICE_",
    DType: "CONV_DTYPE_",
    Layout: "CONV_LAYOUT_",
    AutoPad: "CONV_AUTO_PAD_",
    Activation: "CONV_ACTIVATION_",
    Mode: "CONV_MODE_",
    Math: "CONV_MATH_",
    Op: "CONV_OP_",
    Algo: "CONV_ALGO_",
    CommBackend: "CONV_COMM_BACKEND_",
    ReduceOp: "CONV_REDUCE_",
    CommState: "CONV_COMM_STATE_",
}
