"""Exceptions: one class per ``conv_status_t``, all under :class:`ConvError`.

The C library reports a failure as a status plus a per-thread message
(``conv_last_error()``); the low-level module turns every failed call into
the exception class of its status carrying both. The Python layer raises the
same classes for what it refuses itself (a wrong dtype, a non-contiguous
array, a closed handle, a device mismatch), so one ``except libconv.ConvError``
catches everything libconv raises. Where a built-in exception means the same
thing the class derives from it too (``ShapeMismatchError`` is a
``ValueError``, ``TypeMismatchError`` a ``TypeError``...).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Type

__all__ = [
    "ConvError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "ShapeMismatchError",
    "TypeMismatchError",
    "UnsupportedError",
    "OutOfMemoryError",
    "WorkspaceTooSmallError",
    "SizeOverflowError",
    "NotAvailableError",
    "BackendError",
    "FileIOError",
    "BadFileError",
    "InternalError",
    "NumericalError",
    "error_class",
]


class ConvError(Exception):
    """Base class of every libconv error.

    Attributes:
        status: the ``conv_status_t`` value (an ``int``; see :class:`libconv.Status`).
        message: the library's message (``conv_last_error()``), naming the
            argument and the numbers involved, or the Python layer's own text.
    """

    #: The status this class stands for (``None`` for the base class).
    STATUS: Optional[int] = None

    def __init__(self, message: str = "", status: Optional[int] = None) -> None:
        self.status: int = int(status if status is not None else (self.STATUS or 0))
        self.message: str = message
        super().__init__(message)

    @property
    def status_name(self) -> str:
        """The library's name of the status (``conv_status_string``), e.g. ``"shape mismatch"``."""
        from . import _libconv

        return _libconv.conv_status_string(self.status)

    def __str__(self) -> str:
        try:
            name = self.status_name
        except Exception:  # pragma: no cover - the extension failed to load
            name = "status %d" % self.status
        return "%s: %s" % (name, self.message) if self.message else name

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.message, self.status))


class InvalidArgumentError(ConvError, ValueError):
    """CONV_STATUS_INVALID_ARGUMENT: an argument is NULL, out of range or an unknown value."""

    STATUS = 1


class InvalidHandleError(ConvError):
    """CONV_STATUS_INVALID_HANDLE: a handle is missing, of the wrong kind, or closed."""

    STATUS = 2


class ShapeMismatchError(ConvError, ValueError):
    """CONV_STATUS_SHAPE_MISMATCH: dimensions disagree with each other or the descriptor."""

    STATUS = 3


class TypeMismatchError(ConvError, TypeError):
    """CONV_STATUS_TYPE_MISMATCH: dtype, layout or device disagree (or are not supported)."""

    STATUS = 4


class UnsupportedError(ConvError, NotImplementedError):
    """CONV_STATUS_UNSUPPORTED: a valid request this build or device does not implement."""

    STATUS = 5


class OutOfMemoryError(ConvError, MemoryError):
    """CONV_STATUS_OUT_OF_MEMORY: host or device memory could not be allocated."""

    STATUS = 6


class WorkspaceTooSmallError(ConvError):
    """CONV_STATUS_WORKSPACE_TOO_SMALL: a caller-supplied workspace is too small."""

    STATUS = 7


class SizeOverflowError(ConvError, OverflowError):
    """CONV_STATUS_OVERFLOW: a size or index computation would overflow."""

    STATUS = 8


class NotAvailableError(ConvError):
    """CONV_STATUS_NOT_AVAILABLE: the device or backend is not compiled in or not present."""

    STATUS = 9


class BackendError(ConvError):
    """CONV_STATUS_BACKEND_ERROR: BLAS, CUDA, cuDNN... reported an error."""

    STATUS = 10


class FileIOError(ConvError, OSError):
    """CONV_STATUS_IO_ERROR: a file could not be read or written."""

    STATUS = 11


class BadFileError(ConvError):
    """CONV_STATUS_BAD_FILE: a file is truncated, corrupt, or from another version or device."""

    STATUS = 12


class InternalError(ConvError):
    """CONV_STATUS_INTERNAL_ERROR: a bug in libconv; please report it with the message."""

    STATUS = 13


class NumericalError(ConvError, ArithmeticError):
    """CONV_STATUS_NUMERICAL_ERROR: the numerical guard found a NaN or infinity in an output.

    Raised only when :attr:`Context.check_numerics` is on; unlike every other
    error, the outputs have been written (the check runs after the fact).
    """

    STATUS = 14


_BY_STATUS: Dict[int, Type[ConvError]] = {
    cls.STATUS: cls  # type: ignore[misc]
    for cls in (
        InvalidArgumentError,
        InvalidHandleError,
        ShapeMismatchError,
        TypeMismatchError,
        UnsupportedError,
        OutOfMemoryError,
        WorkspaceTooSmallError,
        SizeOverflowError,
        NotAvailableError,
        BackendError,
        FileIOError,
        BadFileError,
        InternalError,
        NumericalError,
    )
}


def describe(value: Any) -> str:
    """``value`` for an error message: an array by its type, shape and dtype (never
    its contents), anything else by a repr cut to 60 characters."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return "%s of shape %s and dtype %s" % (type(value).__name__, tuple(shape), dtype)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def error_class(status: int) -> Type[ConvError]:
    """The exception class of a ``conv_status_t`` (``ConvError`` for values this version does not know)."""
    return _BY_STATUS.get(int(status), ConvError)


# An exception a Python callback of the C library could not raise (ctypes
# would have turned it into an undefined return value), per thread: the
# allocator adapter (Context.set_allocator) keeps it here and returns NULL.
_callback_errors = threading.local()


def _note_callback_error(exc: Optional[BaseException]) -> None:
    """Keeps ``exc`` as the cause of this thread's next OUT_OF_MEMORY (None: forgets it)."""
    _callback_errors.exc = exc


def _from_status(status: int, message: str) -> ConvError:
    """Called by the low-level module for every failed C call.

    An OUT_OF_MEMORY that follows a Python allocator's exception on this
    thread carries it as ``__cause__`` (as ``raise ... from exc`` would);
    any failure forgets it, so it never attaches to a later, unrelated one.
    """
    e = error_class(status)(message, status)
    cause = getattr(_callback_errors, "exc", None)
    if cause is not None:
        _callback_errors.exc = None
        if isinstance(e, OutOfMemoryError):
            e.__cause__ = cause
    return e
