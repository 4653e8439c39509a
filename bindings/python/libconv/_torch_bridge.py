"""libconv.torch's plumbing: torch tensors into libconv's passes, zero-copy.

Inputs are wrapped through DLPack (``Tensor.from_dlpack``), and outputs are
torch tensors allocated here and wrapped the same way, so libconv reads and
writes torch's memory directly. On a GPU the work is enqueued on torch's
current stream. Imported only by :mod:`libconv.torch` (it imports torch).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from ._conv import Conv, PaddingLike
from ._core import Context, Tensor, _from_dlpack, _layout_candidates, _physical_order
from ._enums import Layout, Math, to_enum

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


def layout_of(t: torch.Tensor) -> Layout:
    """The layout to compute ``t`` in: channels-last when its strides are (and not also
    channels-first, as with 1x1 spatial sizes), else channels-first."""
    fits = _layout_candidates(tuple(t.shape), t.stride())
    return fits[0] if fits else Layout.CHANNELS_FIRST


def in_layout(t: torch.Tensor, layout: Layout) -> torch.Tensor:
    """``t`` dense in ``layout``: itself when it is, else a copy."""
    if layout in _layout_candidates(tuple(t.shape), t.stride()):
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


class Pass:
    """One call's context, layout and wrapped tensors."""

    def __init__(self, like: torch.Tensor, math: Math, layout: Layout) -> None:
        self.ctx = context(like.device, math)
        self.layout = layout

    def wrap(self, t: torch.Tensor, what: str) -> Tensor:
        """A zero-copy libconv view of ``t`` (dense in the pass's layout); ``what`` names
        it in error messages."""
        return _from_dlpack(t.detach(), self.ctx, self.layout, what, writable=False)


def forward(desc: Conv, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
            layout: Layout, math: Math) -> torch.Tensor:
    """y = conv(x, w) + b on torch tensors; y in ``layout``."""
    x, w = in_layout(x, layout), in_layout(w, layout)
    p = Pass(x, math, layout)
    y = empty(desc.output_shape(tuple(x.shape), tuple(w.shape)), x, layout)
    bias = b.detach().contiguous() if b is not None else None
    desc.forward(p.wrap(x, "input"), p.wrap(w, "weight"), bias, out=p.wrap(y, "output"),
                 ctx=p.ctx)
    return y


def backward_data(desc: Conv, w: torch.Tensor, dy: torch.Tensor, x_shape: Sequence[int],
                  layout: Layout, math: Math) -> torch.Tensor:
    """dx from the filter and the output gradient."""
    w, dy = in_layout(w, layout), in_layout(dy, layout)
    p = Pass(dy, math, layout)
    dx = empty(x_shape, dy, layout)
    desc.backward_data(p.wrap(w, "weight"), p.wrap(dy, "grad_output"),
                       out=p.wrap(dx, "grad_input"), ctx=p.ctx)
    return dx


def backward_filter(desc: Conv, x: torch.Tensor, dy: torch.Tensor, w_shape: Sequence[int],
                    bias: bool, layout: Layout,
                    math: Math) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """dw (summed over the batch) and, with ``bias``, db (dy summed per channel)."""
    x, dy = in_layout(x, layout), in_layout(dy, layout)
    p = Pass(x, math, layout)
    dw = empty(w_shape, x, layout)
    db = torch.empty(dy.shape[1], dtype=dy.dtype, device=dy.device) if bias else None
    # db as a (1, K, 1...) Tensor: libconv's own type, so nothing waits for the GPU.
    db_view = (p.wrap(db.view((1, -1) + (1,) * (dy.dim() - 2)), "grad_bias")
               if db is not None else None)
    desc.backward_filter(p.wrap(x, "input"), p.wrap(dy, "grad_output"),
                         out=p.wrap(dw, "grad_weight"), bias_out=db_view, ctx=p.ctx)
    return dw, db
