"""libconv.torch's functions: torch.nn.functional's conv*d and conv_transpose*d,
computed by libconv and differentiable (all three passes and the bias gradient
run in libconv). Imported only by :mod:`libconv.torch` (it imports torch).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import torch
from torch.autograd.function import once_differentiable

from . import _torch_bridge as bridge
from ._conv import Conv, IntOrSeq, _int_arg, _per_axis
from ._enums import Math
from ._errors import ShapeMismatchError, TypeMismatchError, describe

PaddingArg = Union[str, IntOrSeq]


class _ConvFunction(torch.autograd.Function):
    """y = conv(x, w) + b with libconv's forward, backward-data and backward-filter."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
                desc: Conv, math: Math) -> torch.Tensor:  # type: ignore[override]
        layout = bridge.layout_of(x)
        ctx.desc, ctx.math, ctx.layout, ctx.has_bias = desc, math, layout, b is not None
        ctx.save_for_backward(x, w)
        return bridge.forward(desc, x, w, b, layout, math)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:  # type: ignore[override]
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        need_b = need_b and ctx.has_bias
        dx = dw = db = None
        if need_x:
            dx = bridge.backward_data(ctx.desc, w, dy, tuple(x.shape), ctx.layout, ctx.math)
        if need_w or need_b:
            dw, db = bridge.backward_filter(ctx.desc, x, dy, tuple(w.shape), need_b, ctx.layout,
                                            ctx.math)
        return dx, (dw if need_w else None), db, None, None


def _padding(name: str, nd: int, transposed: bool, padding: PaddingArg,
             stride: Tuple[int, ...]) -> Union[str, Tuple[int, ...]]:
    if not isinstance(padding, str):
        return _per_axis(padding, nd, "padding")
    if transposed:
        raise TypeMismatchError("%s: padding must be an int or %d ints, not %s (torch's "
                                "transposed convolutions take no padding strings)"
                                % (name, nd, describe(padding)))
    if padding not in ("same", "valid"):
        raise ValueError("%s: invalid padding string %r, should be one of ('valid', 'same')"
                         % (name, padding))
    if padding == "same" and any(s != 1 for s in stride):
        raise ValueError("%s: padding='same' is not supported for strided convolutions" % name)
    return padding


def conv_nd(name: str, nd: int, transposed: bool, input: torch.Tensor, weight: torch.Tensor,
            bias: Optional[torch.Tensor], stride: IntOrSeq, padding: PaddingArg,
            dilation: IntOrSeq, groups: int, output_padding: IntOrSeq,
            math: Optional[bridge.MathLike]) -> torch.Tensor:
    """What every libconv.torch function and module runs: checks, batchless input, the call."""
    for what, t in (("input", input), ("weight", weight), ("bias", bias)):
        if not isinstance(t, torch.Tensor) and not (what == "bias" and t is None):
            raise TypeMismatchError("%s: %s must be a torch.Tensor, not %s"
                                    % (name, what, describe(t)))
    batchless = input.dim() == nd + 1
    if not (batchless or input.dim() == nd + 2):
        raise ShapeMismatchError("%s: expected %dD (batchless) or %dD (batched) input, got input "
                                 "of shape %s" % (name, nd + 1, nd + 2, tuple(input.shape)))
    s = _per_axis(stride, nd, "stride")
    desc = bridge.descriptor(nd, transposed, s, _padding(name, nd, transposed, padding, s),
                             _per_axis(dilation, nd, "dilation"), _int_arg(groups, "groups"),
                             _per_axis(output_padding, nd, "output_padding"))
    x = input.unsqueeze(0) if batchless else input
    y = _ConvFunction.apply(x, weight, bias, desc, bridge.resolve_math(math))
    return y.squeeze(0) if batchless else y


def reversed_padding(nd: int, padding: Union[str, Sequence[int]], kernel_size: Sequence[int],
                     dilation: Sequence[int]) -> Tuple[int, ...]:
    """torch.nn.functional.pad's argument for a module's padding: (last axis begin, end, ...).

    'same' puts the odd element at the end, as torch does.
    """
    if padding == "valid":
        pairs = [(0, 0)] * nd
    elif padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel_size)]
        pairs = [(t // 2, t - t // 2) for t in totals]
    else:
        pairs = [(int(p), int(p)) for p in padding]
    return tuple(v for pair in reversed(pairs) for v in pair)

