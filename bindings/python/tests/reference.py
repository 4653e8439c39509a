"""A direct N-d convolution in NumPy float64: the reference the tests compare with.

Shares nothing with libconv. Shapes are (N, C, spatial...) and filters
(K, C/groups, kernel...) as in conv.h; padding is given per axis as begin and
end lists. Every pass loops over the kernel offsets and does one einsum per
offset and group.
"""

from __future__ import annotations

import itertools
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np


def dilated(k: int, d: int) -> int:
    return (k - 1) * d + 1


def out_size(n: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    return (n + pb + pe - dilated(k, d)) // s + 1


def auto_pads(mode: str, in_sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
              dilation: Sequence[int]) -> Tuple[List[int], List[int]]:
    """conv.h's auto-pad rule for a convolution: VALID, SAME_UPPER, SAME_LOWER."""
    begin, end = [], []
    for n, k, s, d in zip(in_sizes, kernel, stride, dilation):
        if mode == "valid":
            total = 0
        else:
            out = math.ceil(n / s)
            total = max(0, (out - 1) * s + dilated(k, d) - n)
        small, big = total // 2, total - total // 2
        b, e = (small, big) if mode in ("valid", "same_upper") else (big, small)
        begin.append(b)
        end.append(e)
    return begin, end


def _windows(nd: int, kidx: Sequence[int], out: Sequence[int], stride: Sequence[int],
             dilation: Sequence[int]) -> tuple:
    return (slice(None), slice(None)) + tuple(
        slice(kidx[i] * dilation[i], kidx[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
        for i in range(nd))


def forward(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray], stride, dilation, pad_begin,
            pad_end, groups: int, relu: bool = False) -> np.ndarray:
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    k = w.shape[0]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pad_begin, pad_end)))
    out = [out_size(x.shape[2 + i], w.shape[2 + i], stride[i], dilation[i], pad_begin[i], pad_end[i])
           for i in range(nd)]
    y = np.zeros((n, k) + tuple(out))
    cg, kg = c // groups, k // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * kg:(g + 1) * kg]
        for kidx in itertools.product(*[range(s) for s in w.shape[2:]]):
            patch = xg[_windows(nd, kidx, out, stride, dilation)]
            y[:, g * kg:(g + 1) * kg] += np.einsum("nc...,kc->nk...", patch,
                                                   wg[(slice(None), slice(None)) + kidx])
    if b is not None:
        y += b.astype(np.float64).reshape((1, k) + (1,) * nd)
    return np.maximum(y, 0) if relu else y


def backward_data(w: np.ndarray, dy: np.ndarray, x_shape, stride, dilation, pad_begin, pad_end,
                  groups: int) -> np.ndarray:
    w = w.astype(np.float64)
    dy = dy.astype(np.float64)
    nd = dy.ndim - 2
    n, c = x_shape[:2]
    k = w.shape[0]
    padded = [x_shape[2 + i] + pad_begin[i] + pad_end[i] for i in range(nd)]
    dxp = np.zeros((n, c) + tuple(padded))
    out = dy.shape[2:]
    cg, kg = c // groups, k // groups
    for g in range(groups):
        wg = w[g * kg:(g + 1) * kg]
        dyg = dy[:, g * kg:(g + 1) * kg]
        for kidx in itertools.product(*[range(s) for s in w.shape[2:]]):
            view = dxp[:, g * cg:(g + 1) * cg][_windows(nd, kidx, out, stride, dilation)]
            view += np.einsum("nk...,kc->nc...", dyg, wg[(slice(None), slice(None)) + kidx])
    crop = (slice(None), slice(None)) + tuple(
        slice(pad_begin[i], pad_begin[i] + x_shape[2 + i]) for i in range(nd))
    return dxp[crop]


def backward_filter(x: np.ndarray, dy: np.ndarray, w_shape, stride, dilation, pad_begin, pad_end,
                    groups: int) -> Tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    dy = dy.astype(np.float64)
    nd = x.ndim - 2
    c = x.shape[1]
    k = w_shape[0]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pad_begin, pad_end)))
    out = dy.shape[2:]
    dw = np.zeros(tuple(w_shape))
    cg, kg = c // groups, k // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        dyg = dy[:, g * kg:(g + 1) * kg]
        for kidx in itertools.product(*[range(s) for s in w_shape[2:]]):
            patch = xg[_windows(nd, kidx, out, stride, dilation)]
            axes = [0] + list(range(2, patch.ndim))
            dw[(slice(g * kg, (g + 1) * kg), slice(None)) + kidx] = np.tensordot(
                dyg, patch, axes=(axes, axes))
    db = dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))
    return dw, db


# ------------------------------------------------------------- transposed


def transposed_out_sizes(in_sizes, kernel, stride, dilation, pad_begin, pad_end, output_padding):
    return [(n - 1) * s - pb - pe + dilated(k, d) + op for n, k, s, d, pb, pe, op in
            zip(in_sizes, kernel, stride, dilation, pad_begin, pad_end, output_padding)]


def transposed_forward(x, w, b, stride, dilation, pad_begin, pad_end, output_padding, groups,
                       relu=False):
    """x (N, Cin, in...), w (Cin, Cout/groups, k...): the adjoint of a convolution."""
    nd = x.ndim - 2
    out = transposed_out_sizes(x.shape[2:], w.shape[2:], stride, dilation, pad_begin, pad_end,
                               output_padding)
    y_shape = (x.shape[0], w.shape[1] * groups) + tuple(out)
    y = backward_data(w, x, y_shape, stride, dilation, pad_begin, pad_end, groups)
    if b is not None:
        y = y + b.astype(np.float64).reshape((1, -1) + (1,) * nd)
    return np.maximum(y, 0) if relu else y


def transposed_backward_data(w, dy, x_shape, stride, dilation, pad_begin, pad_end, groups):
    # A convolution of dy; with an output padding of a stride or more (allowed
    # when below the dilation) it has positions past the input: cropped.
    dx = forward(dy, w, None, stride, dilation, pad_begin, pad_end, groups)
    return dx[(slice(None), slice(None)) + tuple(slice(0, n) for n in x_shape[2:])]


def transposed_backward_filter(x, dy, w_shape, stride, dilation, pad_begin, pad_end, groups):
    return backward_filter(dy, x, w_shape, stride, dilation, pad_begin, pad_end, groups)


# ------------------------------------------------------------- helpers


def as_layout(a: np.ndarray, layout: str) -> np.ndarray:
    """The same values in channels-first or channels-last memory order."""
    if layout == "channels_first":
        return np.ascontiguousarray(a)
    perm = (0,) + tuple(range(2, a.ndim)) + (1,)
    inv = np.argsort(perm)
    return np.ascontiguousarray(a.transpose(perm)).transpose(inv)


def integers(rng: np.random.Generator, shape, dtype, low: int = -2, high: int = 2) -> np.ndarray:
    """Small integer values: float32 sums of them are exact."""
    return rng.integers(low, high + 1, size=shape).astype(dtype)
