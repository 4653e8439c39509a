"""libconv.torch's plumbing: torch tensors into libconv's passes, zero-copy.

Inputs, and the outputs allocated here, are torch tensors that libconv
reads and writes in place: each is described to libconv by its address,
dims and strides, read off torch (``data_ptr``, ``stride``), through the
context's cache of wrapped-memory handles (``_core._ViewCache``), and the C
calls are made directly -- a training step hands over the same few buffers
again and again, and going through DLPack and :class:`libconv.Conv`'s
checks cost about 20 us a tensor on small layers. Tensors of another dtype
or device take the DLPack path, which words the error. On a GPU the work is
enqueued on torch's current stream. Imported only by :mod:`libconv.torch`
(it imports torch).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from . import _libconv as _C
from ._conv import Conv, PaddingLike
from ._core import (Context, _Handle, _from_dlpack, _layout_candidates, _physical_order,
                    _view_handle)
from ._enums import DType, Layout, Math, to_enum

MathLike = Union[Math, int, str]

# ------------------------------------------------------------ math mode

_local = threading.local()


def current_math() -> Math:
    """The math mode calls use when given none: the innermost :func:`math_mode`, else STRICT."""
    stack: List[Math] = getattr(_local, "math", [])
    return stack[-1] if stack else Math.STRICT


@contextlib.contextmanager
def math_mode(mode: MathLike) -> Iterator[None]:
    """Within the block (on this thread) libconv.torch calls use ``mode``."""
    m = Math(to_enum(Math, mode, "math"))
    stack = getattr(_local, "math", None)
    if stack is None:
        stack = _local.math = []
    stack.append(m)
    try:
        yield
    finally:
        stack.pop()


def resolve_math(mode: Optional[MathLike]) -> Math:
    return current_math() if mode is None else Math(to_enum(Math, mode, "math"))


# ------------------------------------------------------------ contexts

_lock = threading.Lock()
_contexts: Dict[Tuple[str, int, Math], Context] = {}
_descs: Dict[tuple, Conv] = {}


def context(device: torch.device, math: Math) -> Context:
    """libconv's context for a torch device and math mode (one each, made on first use).

    A CPU context computes with ``torch.get_num_threads()`` threads (read
    when it is made). A CUDA context is pointed at torch's current stream
    on every call, so libconv's work is ordered with torch's.
    """
    index = 0 if device.type == "cpu" else (device.index if device.index is not None
                                            else torch.cuda.current_device())
    key = (device.type, index, math)
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None or ctx.closed:
            if device.type == "cpu":
                ctx = Context("cpu", threads=torch.get_num_threads(), math=math)
            elif device.type == "cuda":
                ctx = Context("cuda", index, math=math)
            else:
                raise TypeError("libconv.torch computes on CPU and CUDA tensors, not on %s"
                                % device.type)
            _contexts[key] = ctx
    if device.type == "cuda":
        ctx.stream = torch.cuda.current_stream(index).cuda_stream
    return ctx


def descriptor(nd: int, transposed: bool, stride: Sequence[int], padding: PaddingLike,
               dilation: Sequence[int], groups: int, output_padding: Sequence[int]) -> Conv:
    """A shared descriptor per geometry (descriptors may be used by several threads at once)."""
    key = (nd, transposed, tuple(stride), padding, tuple(dilation), groups, tuple(output_padding))
    with _lock:
        d = _descs.get(key)
        if d is None:
            d = _descs[key] = Conv(nd, stride=stride, padding=padding, dilation=dilation,
                                   groups=groups, transposed=transposed,
                                   output_padding=output_padding)
    return d


# ------------------------------------------------------------ layouts

# torch's memory formats for channels-last (3-D tensors have none: their
# channels-last is checked from the strides).
_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def _is_dense(t: torch.Tensor, layout: Layout) -> bool:
    if layout == Layout.CHANNELS_FIRST:
        return t.is_contiguous()
    fmt = _CHANNELS_LAST.get(t.dim())
    if fmt is not None:
        return t.is_contiguous(memory_format=fmt)
    return layout in _layout_candidates(tuple(t.shape), t.stride())


def layout_of(t: torch.Tensor) -> Layout:
    """The layout to compute ``t`` in: channels-last when its strides are (and not also
    channels-first, as with 1x1 spatial sizes), else channels-first."""
    if t.is_contiguous():
        return Layout.CHANNELS_FIRST
    return Layout.CHANNELS_LAST if _is_dense(t, Layout.CHANNELS_LAST) else Layout.CHANNELS_FIRST


def in_layout(t: torch.Tensor, layout: Layout) -> torch.Tensor:
    """``t`` dense in ``layout``: itself when it is, else a copy."""
    if _is_dense(t, layout):
        return t
    order = _physical_order(t.dim(), layout)
    return t.permute(order).contiguous().permute(_inverse(order))


def empty(shape: Sequence[int], like: torch.Tensor, layout: Layout) -> torch.Tensor:
    """A new tensor of ``shape`` dense in ``layout``, of ``like``'s dtype and device."""
    order = _physical_order(len(shape), layout)
    t = torch.empty([shape[i] for i in order], dtype=like.dtype, device=like.device)
    return t.permute(_inverse(order))


def _inverse(order: Sequence[int]) -> List[int]:
    inv = [0] * len(order)
    for i, axis in enumerate(order):
        inv[axis] = i
    return inv


# ------------------------------------------------------------ the passes

_DTYPES = {torch.float32: DType.FLOAT32, torch.float64: DType.FLOAT64,
           torch.float16: DType.FLOAT16, torch.bfloat16: DType.BFLOAT16}
_shapes: Dict[tuple, Tuple[int, ...]] = {}


def output_shape(desc: Conv, x: torch.Tensor, w: torch.Tensor) -> Tuple[int, ...]:
    """desc.output_shape, remembered per descriptor and shapes."""
    key = (desc, tuple(x.shape), tuple(w.shape))
    shape = _shapes.get(key)
    if shape is None:
        shape = desc.output_shape(key[1], key[2])
        if len(_shapes) >= 4096:
            _shapes.clear()
        _shapes[key] = shape
    return shape


class Pass:
    """One call's context and layout, and the handles of its tensors."""

    def __init__(self, like: torch.Tensor, math: Math, layout: Layout) -> None:
        self.ctx = context(like.device, math)
        self.device = like.device
        self.layout = layout

    def handle(self, t: torch.Tensor, what: str) -> _Handle:
        """A libconv handle over ``t``'s memory (dense in the pass's layout); ``what``
        names it in error messages. The caller keeps ``t`` alive during the call."""
        dtype = _DTYPES.get(t.dtype)
        if dtype is None or t.device != self.device:
            # Refused below, in DLPack's words (dtype, device).
            return _from_dlpack(t.detach(), self.ctx, self.layout, what, writable=False)._h
        h, _, _ = _view_handle(self.ctx, t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype,
                               self.layout, what)
        return h

    def run(self, fn: Any, desc: Conv, *handles: Optional[_Handle]) -> None:
        """fn(context, descriptor, tensors..., workspace=None): a conv.h pass, with the
        context's workspace pool."""
        hc, hd = self.ctx._handle(), desc._handle()
        fn(hc.ptr, hd.ptr, *[h.ptr if h is not None else None for h in handles], None)


def forward(desc: Conv, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
            layout: Layout, math: Math) -> torch.Tensor:
    """y = conv(x, w) + b on torch tensors; y in ``layout``."""
    x, w = in_layout(x, layout), in_layout(w, layout)
    p = Pass(x, math, layout)
    y = empty(output_shape(desc, x, w), x, layout)
    # The bias as a (1, K, 1...) tensor, dense in either layout.
    bias = (b.detach().contiguous().view((1, -1) + (1,) * (x.dim() - 2))
            if b is not None else None)
    p.run(_C.conv_forward, desc, p.handle(x, "input"), p.handle(w, "weight"),
          p.handle(bias, "bias") if bias is not None else None, p.handle(y, "output"))
    return y


def backward_data(desc: Conv, w: torch.Tensor, dy: torch.Tensor, x_shape: Sequence[int],
                  layout: Layout, math: Math) -> torch.Tensor:
    """dx from the filter and the output gradient."""
    w, dy = in_layout(w, layout), in_layout(dy, layout)
    p = Pass(dy, math, layout)
    dx = empty(x_shape, dy, layout)
    p.run(_C.conv_backward_data, desc, p.handle(w, "weight"), p.handle(dy, "grad_output"),
          p.handle(dx, "grad_input"))
    return dx


def backward_filter(desc: Conv, x: torch.Tensor, dy: torch.Tensor, w_shape: Sequence[int],
                    bias: bool, layout: Layout,
                    math: Math) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """dw (summed over the batch) and, with ``bias``, db (dy summed per channel)."""
    x, dy = in_layout(x, layout), in_layout(dy, layout)
    p = Pass(x, math, layout)
    dw = empty(w_shape, x, layout)
    db = torch.empty(dy.shape[1], dtype=dy.dtype, device=dy.device) if bias else None
    db_view = db.view((1, -1) + (1,) * (dy.dim() - 2)) if db is not None else None
    p.run(_C.conv_backward_filter, desc, p.handle(x, "input"), p.handle(dy, "grad_output"),
          p.handle(dw, "grad_weight"), p.handle(db_view, "grad_bias") if db is not None else None)
    return dw, db
