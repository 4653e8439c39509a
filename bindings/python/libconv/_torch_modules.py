"""libconv.torch's modules: torch.nn's Conv*d and ConvTranspose*d computed by libconv,
and :func:`convert`, which swaps them into a model. Imported only by
:mod:`libconv.torch` (it imports torch).

Each module *is* its torch.nn class (a subclass): same constructor, same
parameters and initialisation, same state_dict keys, so ``load_state_dict``
works both ways and code that looks for ``nn.Conv2d`` still finds it. Only
``forward`` differs: it runs libconv.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

import torch
import torch.nn.functional as F

from . import _torch_bridge as bridge
from ._enums import Math, to_enum
from ._torch_functional import conv_nd, reversed_padding


class _LibconvConv:
    """What the six modules share: the ``math`` argument and ``forward``."""

    _nd: int
    _transposed = False
    # torch.nn's attributes, set by its constructor.
    weight: torch.Tensor
    bias: Optional[torch.Tensor]
    stride: Tuple[int, ...]
    padding: Any
    dilation: Tuple[int, ...]
    groups: int
    kernel_size: Tuple[int, ...]
    output_padding: Tuple[int, ...]
    padding_mode: str

    def __init__(self, *args: Any, math: Optional[bridge.MathLike] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]  # torch.nn's own checks
        self.math: Optional[Math] = None if math is None else Math(to_enum(Math, math, "math"))

    def _name(self) -> str:
        return type(self).__name__

    def forward(self, input: torch.Tensor, output_size: Optional[Sequence[int]] = None) -> torch.Tensor:
        nd = self._nd
        if self._transposed:
            return conv_nd(self._name(), nd, True, input, self.weight, self.bias, self.stride,
                           self.padding, self.dilation, self.groups,
                           self._output_padding_for(input, output_size), self.math)
        if output_size is not None:
            raise TypeError("%s.forward() takes no output_size" % self._name())
        if self.padding_mode == "zeros":
            return conv_nd(self._name(), nd, False, input, self.weight, self.bias, self.stride,
                           self.padding, self.dilation, self.groups, 0, self.math)
        # reflect / replicate / circular: pad in torch (differentiable), then no padding.
        batchless = input.dim() == nd + 1
        x = input.unsqueeze(0) if batchless else input
        x = F.pad(x, reversed_padding(nd, self.padding, self.kernel_size, self.dilation),
                  mode=self.padding_mode)
        y = conv_nd(self._name(), nd, False, x, self.weight, self.bias, self.stride, 0,
                    self.dilation, self.groups, 0, self.math)
        return y.squeeze(0) if batchless else y

    def _output_padding_for(self, input: torch.Tensor,
                            output_size: Optional[Sequence[int]]) -> Tuple[int, ...]:
        """torch.nn.ConvTranspose's output_padding, or the one an ``output_size`` asks for."""
        if output_size is None:
            return tuple(self.output_padding)
        nd = self._nd
        lead = 1 if input.dim() == nd + 1 else 2
        size = [int(s) for s in output_size]
        if len(size) == nd + lead:
            size = size[lead:]
        if len(size) != nd:
            raise ValueError("%s: output_size must have %d or %d elements for a %dD input, got %d"
                             % (self._name(), nd, nd + lead, input.dim(), len(output_size)))
        lows = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        highs = [low + self.stride[d] - 1 for d, low in enumerate(lows)]
        if any(not lo <= s <= hi for s, lo, hi in zip(size, lows, highs)):
            raise ValueError("%s: requested an output size of %s, but valid sizes range from %s "
                             "to %s (for an input of %s)" % (self._name(), size, lows, highs,
                                                              list(input.shape[lead:])))
        return tuple(s - lo for s, lo in zip(size, lows))

    def extra_repr(self) -> str:
        text: str = super().extra_repr()  # type: ignore[misc]
        return text if self.math is None else text + ", math=%s" % self.math.name.lower()


def _module(torch_class: Type[torch.nn.Module], nd: int, transposed: bool) -> Any:
    """A libconv module class over ``torch_class``, with its signature plus ``math``."""
    name = torch_class.__name__
    cls = type(name, (_LibconvConv, torch_class), {
        "_nd": nd, "_transposed": transposed, "__module__": "libconv.torch",
        "__doc__": "torch.nn.%s computed by libconv (a subclass: same arguments, parameters, "
                   "state_dict keys).\n\n    ``math`` (keyword-only): the accuracy mode of its "
                   "passes, ``None`` (default) for the\n    current :func:`libconv.torch.math_mode` "
                   "(STRICT unless set).\n    " % name})
    params = list(inspect.signature(torch_class.__init__).parameters.values())
    params.append(inspect.Parameter("math", inspect.Parameter.KEYWORD_ONLY, default=None))
    cls.__signature__ = inspect.Signature(params[1:])
    return cls


Conv1d = _module(torch.nn.Conv1d, 1, False)
Conv2d = _module(torch.nn.Conv2d, 2, False)
Conv3d = _module(torch.nn.Conv3d, 3, False)
ConvTranspose1d = _module(torch.nn.ConvTranspose1d, 1, True)
ConvTranspose2d = _module(torch.nn.ConvTranspose2d, 2, True)
ConvTranspose3d = _module(torch.nn.ConvTranspose3d, 3, True)

_SWAP: Dict[type, Any] = {
    torch.nn.Conv1d: Conv1d, torch.nn.Conv2d: Conv2d, torch.nn.Conv3d: Conv3d,
    torch.nn.ConvTranspose1d: ConvTranspose1d, torch.nn.ConvTranspose2d: ConvTranspose2d,
    torch.nn.ConvTranspose3d: ConvTranspose3d,
}


def _swapped(m: torch.nn.Module, math: Optional[bridge.MathLike]) -> Optional[torch.nn.Module]:
    cls = _SWAP.get(type(m))
    if cls is None:
        return None
    args: Dict[str, Any] = dict(
        in_channels=m.in_channels, out_channels=m.out_channels, kernel_size=m.kernel_size,
        stride=m.stride, padding=m.padding, dilation=m.dilation, groups=m.groups,
        bias=m.bias is not None, padding_mode=m.padding_mode, device=m.weight.device,
        dtype=m.weight.dtype)
    if cls._transposed:
        args["output_padding"] = m.output_padding
    new = cls(**args, math=math)
    new.weight = m.weight  # the same Parameter objects: an optimizer over the old ones still works
    if m.bias is not None:
        new.bias = m.bias
    new.train(m.training)
    return new


def convert(model: torch.nn.Module, *, math: Optional[bridge.MathLike] = None) -> torch.nn.Module:
    """Swaps every torch.nn.Conv*d / ConvTranspose*d in ``model`` for libconv's, in place.

    The new modules share the old ones' parameters (the same ``Parameter``
    objects, so an optimizer made before still updates them) and training
    mode; hooks registered on the old modules are not carried over. Subclasses
    of the torch.nn classes are left alone. Returns ``model``, or the new
    module when ``model`` is itself a convolution.
    """
    new = _swapped(model, math)
    if new is not None:
        return new
    children: List[Tuple[str, torch.nn.Module]] = list(model.named_children())
    for name, child in children:
        setattr(model, name, convert(child, math=math))
    return model
