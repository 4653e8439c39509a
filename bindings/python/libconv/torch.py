"""libconv for PyTorch users: torch.nn.functional's convolutions and torch.nn's
convolution modules, computed by libconv, differentiable.

    import libconv.torch as lt

    y = lt.conv2d(x, w, b, stride=1, padding="same")      # torch tensors in and out
    layer = lt.Conv2d(3, 16, 3, padding=1)                 # a torch.nn.Conv2d subclass
    model = lt.convert(model)                              # every nn.Conv* -> libconv's

Torch tensors go in and come out, zero-copy through DLPack (libconv reads
and writes torch's memory), on the CPU and on CUDA (enqueued on torch's
current stream). Forward, backward-data, backward-filter and the bias
gradient all run in libconv. Contiguous and channels_last tensors; batchless
input; every torch.nn argument (padding 'same'/'valid', padding_mode
reflect/replicate/circular (the input is padded by torch first), groups,
dilation, output_padding and output_size for transposed ones).

Accuracy: by default every call computes in STRICT math (products summed
directly, as torch's CPU convolutions do), so results agree with torch
within its own tolerances. ``math="default"`` allows Winograd (faster for
3x3 layers, error bounded but larger) and ``"fast"`` also TF32 on GPUs:
per call (``math=``), per module (``Conv2d(..., math=...)``) or for a block
(``with lt.math_mode("default"):``). docs/python.md gives the measured
errors.

This module imports torch; ``import libconv`` alone does not.
"""

from __future__ import annotations

from typing import Optional

import torch

from ._conv import IntOrSeq
from ._enums import Math
from ._torch_bridge import MathLike, current_math, math_mode
from ._torch_functional import PaddingArg, conv_nd
from ._torch_modules import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    convert,
)

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "convert", "math_mode", "current_math", "Math",
]


def conv1d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           stride: IntOrSeq = 1, padding: PaddingArg = 0, dilation: IntOrSeq = 1, groups: int = 1,
           *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv1d`` by libconv; ``math``: None (the current
    :func:`math_mode`, STRICT unless set), "strict", "default" or "fast"."""
    return conv_nd("conv1d", 1, False, input, weight, bias, stride, padding, dilation, groups, 0,
                   math)


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           stride: IntOrSeq = 1, padding: PaddingArg = 0, dilation: IntOrSeq = 1, groups: int = 1,
           *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv2d`` by libconv; ``math`` as :func:`conv1d`."""
    return conv_nd("conv2d", 2, False, input, weight, bias, stride, padding, dilation, groups, 0,
                   math)


def conv3d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           stride: IntOrSeq = 1, padding: PaddingArg = 0, dilation: IntOrSeq = 1, groups: int = 1,
           *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv3d`` by libconv; ``math`` as :func:`conv1d`."""
    return conv_nd("conv3d", 3, False, input, weight, bias, stride, padding, dilation, groups, 0,
                   math)


def conv_transpose1d(input: torch.Tensor, weight: torch.Tensor,
                     bias: Optional[torch.Tensor] = None, stride: IntOrSeq = 1,
                     padding: IntOrSeq = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose1d`` by libconv; ``math`` as :func:`conv1d`."""
    return conv_nd("conv_transpose1d", 1, True, input, weight, bias, stride, padding, dilation,
                   groups, output_padding, math)


def conv_transpose2d(input: torch.Tensor, weight: torch.Tensor,
                     bias: Optional[torch.Tensor] = None, stride: IntOrSeq = 1,
                     padding: IntOrSeq = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose2d`` by libconv; ``math`` as :func:`conv1d`."""
    return conv_nd("conv_transpose2d", 2, True, input, weight, bias, stride, padding, dilation,
                   groups, output_padding, math)


def conv_transpose3d(input: torch.Tensor, weight: torch.Tensor,
                     bias: Optional[torch.Tensor] = None, stride: IntOrSeq = 1,
                     padding: IntOrSeq = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, math: Optional[MathLike] = None) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose3d`` by libconv; ``math`` as :func:`conv1d`."""
    return conv_nd("conv_transpose3d", 3, True, input, weight, bias, stride, padding, dilation,
                   groups, output_padding, math)
