"""The convolution descriptor (:class:`Conv`) and the functional API.

Arrays passed in are wrapped, never copied (see :class:`libconv.Tensor`);
results are NumPy arrays viewing memory libconv allocated, a
:class:`libconv.Tensor` when the input was one or is in GPU memory, or the
caller's ``out=``.
The GIL is released while the library computes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from . import _libconv as _C
from ._core import (
    Context,
    DTypeLike,
    LayoutLike,
    Shape,
    Tensor,
    Workspace,
    _array_layouts,
    _as_tensor,
    _check_device,
    _dense,
    _dtype,
    _Handle,
    _is_capsule,
    _layout,
    _Resource,
    _take_dlpack,
    _wrap_memory,
    default_context,
)
from ._enums import Activation, Algo, AutoPad, Device, Layout, Mode, Op, from_c, to_enum
from ._errors import InvalidArgumentError, ShapeMismatchError, TypeMismatchError, describe

__all__ = [
    "Conv",
    "Cost",
    "AlgoResult",
    "conv",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "conv_backward_data",
    "conv_backward_filter",
    "output_shape",
]

IntOrSeq = Union[int, Sequence[int]]
PaddingLike = Union[int, str, AutoPad, Sequence[int], Sequence[Tuple[int, int]]]
OpLike = Union[Op, int, str]
AlgoLike = Union[Algo, int, str]
AlgorithmArg = Union[None, AlgoLike, Dict[OpLike, AlgoLike]]
Array = Any  # a NumPy array, a Tensor, or an object with __dlpack__ / the buffer protocol


class Cost(NamedTuple):
    """The cost of one pass: ``flops`` (a multiply-add counts 2) and minimum ``bytes`` moved."""

    flops: float
    bytes: float


class AlgoResult(NamedTuple):
    """One entry of :meth:`Conv.find_algorithms`, fastest first."""

    algo: Union[Algo, int]
    milliseconds: float
    workspace_bytes: int


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _int_arg(value: Any, what: str) -> int:
    if not _is_int(value):
        raise TypeMismatchError("%s must be an int, not %s" % (what, describe(value)))
    return int(value)


def _ints(value: Any) -> Optional[Tuple[int, ...]]:
    """``value`` as a tuple of ints when it is a sequence of ints, else None."""
    if isinstance(value, (str, bytes)) or getattr(value, "ndim", 1) != 1:
        return None
    try:
        items = tuple(value)
    except TypeError:
        return None
    return tuple(int(v) for v in items) if all(_is_int(v) for v in items) else None


def _per_axis(value: IntOrSeq, n: int, what: str) -> Tuple[int, ...]:
    if _is_int(value):
        return (int(value),) * n
    seq = _ints(value)
    if seq is None:
        raise TypeMismatchError("%s must be an int or %d ints, not %s" % (what, n, describe(value)))
    if len(seq) == 1:
        return seq * n
    if len(seq) != n:
        raise InvalidArgumentError("%s has %d values for %d spatial dims" % (what, len(seq), n))
    return seq


_PAD_MODES = {
    "same": AutoPad.SAME_UPPER,  # PyTorch's "same": the odd element at the end
    "valid": AutoPad.VALID,
    "same_upper": AutoPad.SAME_UPPER,
    "same_lower": AutoPad.SAME_LOWER,
    "notset": AutoPad.NOTSET,
}
_PADDING_FORMS = ("an int, one int per spatial dim, one (begin, end) pair per spatial dim, or one "
                  "of %s" % ", ".join(repr(k) for k in _PAD_MODES))


def _parse_padding(value: PaddingLike, n: int):
    """(auto_pad, begin, end) from int | per-axis ints | per-axis (begin, end) | mode."""
    zeros = (0,) * n
    if isinstance(value, AutoPad):
        return value, None, None
    if isinstance(value, str):
        mode = _PAD_MODES.get(value.strip().lower().replace("-", "_"))
        if mode is None:
            raise InvalidArgumentError("padding %s is not %s" % (describe(value), _PADDING_FORMS))
        return (mode, zeros, zeros) if mode == AutoPad.NOTSET else (mode, None, None)
    if _is_int(value):
        p = (int(value),) * n
        return AutoPad.NOTSET, p, p
    if _ints(value) is not None:
        p = _per_axis(value, n, "padding")  # type: ignore[arg-type]
        return AutoPad.NOTSET, p, p
    pairs = None
    if not isinstance(value, (str, bytes)) and getattr(value, "ndim", 1) == 1:
        try:
            pairs = [_ints(v) for v in value]  # type: ignore[union-attr]
        except TypeError:
            pass
    if not pairs or any(p is None for p in pairs):
        raise TypeMismatchError("padding must be %s, not %s" % (_PADDING_FORMS, describe(value)))
    if len(pairs) != n or any(len(p) != 2 for p in pairs):  # type: ignore[arg-type]
        raise InvalidArgumentError("padding must give one (begin, end) pair per spatial dim (%d), "
                                   "got %s" % (n, describe(value)))
    return AutoPad.NOTSET, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)  # type: ignore[index]


def _op(value: OpLike) -> Op:
    return to_enum(Op, value, "op")  # type: ignore[return-value]


class Conv(_Resource):
    """A convolution descriptor (``conv_desc_t``): the geometry of a layer.

    Keyword arguments follow ``torch.nn.functional.conv2d``:

    Args:
        spatial_dims: 1, 2 or 3.
        stride: an int or one per spatial dim (>= 1).
        padding: an int, one int per spatial dim, one ``(begin, end)`` pair
            per spatial dim (asymmetric), or ``"same"`` (PyTorch's: the odd
            element at the end, = ``"same_upper"``), ``"same_lower"`` or
            ``"valid"`` (ONNX auto_pad; overrides explicit padding).
        dilation: an int or one per spatial dim (>= 1).
        groups: input and output channels must both be divisible by it.
        activation: ``None``/``"none"`` or ``"relu"``, fused after the bias.
        transposed: a transposed convolution (ConvTranspose): filters are
            (C_in, C_out/groups, kernel...).
        output_padding: extra rows at the end of a transposed convolution's
            output axes (each smaller than the stride or the dilation).
        algorithm: force an algorithm, for every pass or as ``{op: algo}``.

    A descriptor belongs to no context. It may be shared by threads that
    compute with it, but not modified while in use.
    """

    _kind = "descriptor"

    def __init__(self, spatial_dims: int = 2, *, stride: IntOrSeq = 1, padding: PaddingLike = 0,
                 dilation: IntOrSeq = 1, groups: int = 1, activation: Union[None, str, Activation] = None,
                 transposed: bool = False, output_padding: IntOrSeq = 0,
                 algorithm: AlgorithmArg = None) -> None:
        self._h = _Handle(_C.conv_desc_create(_int_arg(spatial_dims, "spatial_dims")),
                          _C.conv_desc_destroy)
        self.stride = stride
        self.dilation = dilation
        self.padding = padding
        self.groups = groups
        if activation is not None:
            self.activation = activation
        if transposed:
            self.mode = Mode.TRANSPOSED
        self.output_padding = output_padding
        if algorithm is not None:
            items = algorithm.items() if isinstance(algorithm, dict) else ((op, algorithm) for op in Op)
            for op, algo in items:
                self.set_algorithm(op, algo)

    # ---------------------------------------------------------- geometry

    @property
    def spatial_dims(self) -> int:
        """1, 2 or 3 (``conv_desc_get_spatial_dims``)."""
        return _C.conv_desc_get_spatial_dims(self._handle().ptr)

    @property
    def stride(self) -> Tuple[int, ...]:
        """Strides, one per spatial dim."""
        return _C.conv_desc_get_strides(self._handle().ptr)

    @stride.setter
    def stride(self, value: IntOrSeq) -> None:
        p = self._handle().ptr
        _C.conv_desc_set_strides(p, _per_axis(value, self.spatial_dims, "stride"))

    @property
    def dilation(self) -> Tuple[int, ...]:
        """Dilations, one per spatial dim."""
        return _C.conv_desc_get_dilations(self._handle().ptr)

    @dilation.setter
    def dilation(self, value: IntOrSeq) -> None:
        p = self._handle().ptr
        _C.conv_desc_set_dilations(p, _per_axis(value, self.spatial_dims, "dilation"))

    @property
    def padding(self) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """The explicit padding as ``(begin, end)``, each one value per spatial dim.

        Set it to any form the constructor takes; a mode string sets
        :attr:`auto_pad`, explicit values reset it to NOTSET.
        """
        begin, end = _C.conv_desc_get_padding(self._handle().ptr)
        return begin, end

    @padding.setter
    def padding(self, value: PaddingLike) -> None:
        p = self._handle().ptr
        mode, begin, end = _parse_padding(value, self.spatial_dims)
        if begin is not None:
            _C.conv_desc_set_padding(p, begin, end)
        _C.conv_desc_set_auto_pad(p, int(mode))

    @property
    def auto_pad(self) -> AutoPad:
        """The auto-pad mode; when not NOTSET it overrides the explicit padding."""
        return from_c(AutoPad, _C.conv_desc_get_auto_pad(self._handle().ptr))  # type: ignore[return-value]

    @auto_pad.setter
    def auto_pad(self, value: Union[AutoPad, int, str]) -> None:
        _C.conv_desc_set_auto_pad(self._handle().ptr, int(to_enum(AutoPad, value, "auto_pad")))

    @property
    def groups(self) -> int:
        """Groups (>= 1); groups == C is a depthwise convolution."""
        return _C.conv_desc_get_groups(self._handle().ptr)

    @groups.setter
    def groups(self, value: int) -> None:
        _C.conv_desc_set_groups(self._handle().ptr, _int_arg(value, "groups"))

    @property
    def activation(self) -> Activation:
        """The activation fused into the forward pass (after the bias)."""
        return from_c(Activation, _C.conv_desc_get_activation(self._handle().ptr))  # type: ignore[return-value]

    @activation.setter
    def activation(self, value: Union[None, str, int, Activation]) -> None:
        act = Activation.NONE if value is None else to_enum(Activation, value, "activation")
        _C.conv_desc_set_activation(self._handle().ptr, int(act))

    @property
    def mode(self) -> Mode:
        """CONVOLUTION or TRANSPOSED."""
        return from_c(Mode, _C.conv_desc_get_mode(self._handle().ptr))  # type: ignore[return-value]

    @mode.setter
    def mode(self, value: Union[Mode, int, str]) -> None:
        _C.conv_desc_set_mode(self._handle().ptr, int(to_enum(Mode, value, "mode")))

    @property
    def transposed(self) -> bool:
        """Whether :attr:`mode` is TRANSPOSED."""
        return self.mode == Mode.TRANSPOSED

    @property
    def output_padding(self) -> Tuple[int, ...]:
        """Output padding of a transposed convolution, one per spatial dim."""
        return _C.conv_desc_get_output_padding(self._handle().ptr)

    @output_padding.setter
    def output_padding(self, value: IntOrSeq) -> None:
        p = self._handle().ptr
        _C.conv_desc_set_output_padding(p, _per_axis(value, self.spatial_dims, "output_padding"))

    def get_algorithm(self, op: OpLike = "forward") -> Union[Algo, int]:
        """The algorithm forced for a pass (AUTO: the library chooses)."""
        return from_c(Algo, _C.conv_desc_get_algorithm(self._handle().ptr, int(_op(op))))

    def set_algorithm(self, op: OpLike, algo: AlgoLike) -> None:
        """Forces an algorithm for a pass (``"auto"`` restores the choice).

        A forced algorithm that does not apply to a problem makes the call
        raise :class:`UnsupportedError`.
        """
        _C.conv_desc_set_algorithm(self._handle().ptr, int(_op(op)), int(to_enum(Algo, algo, "algorithm")))

    # --------------------------------------------------- shape and cost

    def output_shape(self, x_shape: Shape, w_shape: Shape) -> Tuple[int, ...]:
        """The forward output's shape (N, K, out...) for input and filter shapes."""
        x_shape, w_shape = tuple(x_shape), tuple(w_shape)
        if len(x_shape) != len(w_shape):
            raise ShapeMismatchError("input has %d dims but the filter %d" % (len(x_shape), len(w_shape)))
        return _C.conv_output_dims(self._handle().ptr, len(x_shape), x_shape, w_shape)

    def cost(self, x_shape: Shape, w_shape: Shape, op: OpLike = "forward",
             dtype: DTypeLike = "float32") -> Cost:
        """FLOPs (a multiply-add counts 2) and minimum bytes moved by one pass."""
        x_shape, w_shape = tuple(x_shape), tuple(w_shape)
        if len(x_shape) != len(w_shape):
            raise ShapeMismatchError("input has %d dims but the filter %d" % (len(x_shape), len(w_shape)))
        flops, nbytes = _C.conv_cost(self._handle().ptr, int(_op(op)), int(_dtype(dtype)),
                                     len(x_shape), x_shape, w_shape)
        return Cost(flops, nbytes)

    # ------------------------------------------------------ computation

    def forward(self, x: Array, w: Array, bias: Optional[Array] = None, *, out: Optional[Array] = None,
                ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                layout: Optional[LayoutLike] = None) -> Any:
        """y = activation(conv(x, w) + bias).

        Args:
            x: (N, C, in...); w: (K, C/groups, kernel...) -- for a transposed
                descriptor (C_in, C_out/groups, kernel...); bias: K elements.
            out: where to write y (exactly :meth:`output_shape`); else it is
                allocated.
            ctx: the context (default: the tensors' or :func:`default_context`).
            workspace: scratch memory (default: the context's pool).
            layout: require this layout of every array.

        Returns:
            ``out`` if given; a :class:`Tensor` if ``x`` is one or the memory
            is a GPU's; else a NumPy array viewing libconv's memory.
        """
        c = _Call(ctx, layout, x, w, out)
        xt = c.wrap(x, "x")
        wt = c.wrap(w, "w")
        bt = c.bias(bias, xt, "bias") if bias is not None else None
        if out is not None:
            yt = c.wrap(out, "out", writable=True)
        else:
            yt = c.new(self.output_shape(xt.shape, wt.shape), xt)
        h = c.handles(self, xt, wt, bt, yt, workspace)
        _C.conv_forward(*h)
        return c.result(out, yt, x)

    def backward_data(self, w: Array, dy: Array, x_shape: Optional[Shape] = None, *,
                      out: Optional[Array] = None, ctx: Optional[Context] = None,
                      workspace: Optional[Workspace] = None,
                      layout: Optional[LayoutLike] = None) -> Any:
        """dx: the gradient of the input, given the filter and the output gradient.

        Give the input's shape (``x_shape``) or an ``out`` array to write into.
        Returns like :meth:`forward` (a Tensor when ``dy`` is one).
        """
        c = _Call(ctx, layout, dy, w, out)
        wt = c.wrap(w, "w")
        dyt = c.wrap(dy, "dy")
        if out is not None:
            dxt = c.wrap(out, "out", writable=True)
        elif x_shape is None:
            raise InvalidArgumentError("backward_data needs x_shape (the input's shape) or out")
        else:
            dxt = c.new(tuple(x_shape), dyt)
        h = c.handles(self, wt, dyt, dxt, workspace)
        _C.conv_backward_data(*h)
        return c.result(out, dxt, dy)

    def backward_filter(self, x: Array, dy: Array, w_shape: Optional[Shape] = None, *,
                        bias: bool = False, out: Optional[Array] = None,
                        bias_out: Optional[Array] = None, ctx: Optional[Context] = None,
                        workspace: Optional[Workspace] = None,
                        layout: Optional[LayoutLike] = None) -> Any:
        """dw (summed over the batch), and with ``bias=True`` also db (sums of dy).

        Give the filter's shape (``w_shape``) or an ``out`` array; ``bias_out``
        (K elements) receives db and implies ``bias=True``.
        Returns dw, or ``(dw, db)`` -- db as a 1-D array of K elements (or a
        (1, K, 1...) Tensor when ``x`` is a Tensor).
        """
        c = _Call(ctx, layout, x, dy, out)
        xt = c.wrap(x, "x")
        dyt = c.wrap(dy, "dy")
        if out is not None:
            dwt = c.wrap(out, "out", writable=True)
        elif w_shape is None:
            raise InvalidArgumentError("backward_filter needs w_shape (the filter's shape) or out")
        else:
            dwt = c.new(tuple(w_shape), xt)
        want_db = bias or bias_out is not None
        dbt = None
        if bias_out is not None:
            dbt = c.bias(bias_out, xt, "bias_out", writable=True)
        elif want_db:
            dbt = c.new((1, dyt.shape[1]) + (1,) * (len(dyt.shape) - 2), xt)
        h = c.handles(self, xt, dyt, dwt, dbt, workspace)
        _C.conv_backward_filter(*h)
        dw = c.result(out, dwt, x)
        if not want_db:
            return dw
        if bias_out is not None:
            return dw, c.result(bias_out, dbt, x)
        db = c.result(None, dbt, x)
        return dw, (db.reshape(-1) if isinstance(db, np.ndarray) else db)

    # ------------------------------------------------- algorithms

    def _roles(self, op: OpLike, x: Array, w: Array, y: Array, ctx: Optional[Context],
               layout: Optional[LayoutLike]):
        op = _op(op)
        c = _Call(ctx, layout, x, w, y)
        # The pass's output is written (find_algorithms runs it).
        ts = (c.wrap(x, "x", writable=op == Op.BACKWARD_DATA),
              c.wrap(w, "w", writable=op == Op.BACKWARD_FILTER),
              c.wrap(y, "y", writable=op == Op.FORWARD))
        return op, c, ts

    def workspace_size(self, x: Array, w: Array, y: Array, op: OpLike = "forward", *,
                       ctx: Optional[Context] = None, layout: Optional[LayoutLike] = None) -> int:
        """Workspace bytes a pass needs with this context and the algorithm it would choose.

        The tensors play the roles of input, filter and output whatever the
        pass: for backward_data pass (dx, w, dy), for backward_filter (x, dw, dy).
        """
        op, c, (xt, wt, yt) = self._roles(op, x, w, y, ctx, layout)
        h = c.handles(self, xt, wt, yt)
        return _C.conv_workspace_size(h[0], h[1], int(op), *h[2:])

    def chosen_algorithm(self, x: Array, w: Array, y: Array, op: OpLike = "forward", *,
                         ctx: Optional[Context] = None,
                         layout: Optional[LayoutLike] = None) -> Union[Algo, int]:
        """The algorithm a pass would run: forced, else tuned, else the heuristic's.

        Tensors in the roles of :meth:`workspace_size`.
        """
        op, c, (xt, wt, yt) = self._roles(op, x, w, y, ctx, layout)
        h = c.handles(self, xt, wt, yt)
        return from_c(Algo, _C.conv_chosen_algorithm(h[0], h[1], int(op), *h[2:]))

    def find_algorithms(self, x: Array, w: Array, y: Array, op: OpLike = "forward", *,
                        ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                        capacity: Optional[int] = None,
                        layout: Optional[LayoutLike] = None) -> List[AlgoResult]:
        """Benchmarks every algorithm that applies to a pass, fastest first.

        The context remembers the fastest for this problem (later calls with
        the pass on AUTO use it; see :meth:`Context.save_tuning`). Tensors in
        the roles of :meth:`workspace_size`; the pass's output tensor is
        written by the trial runs, the inputs are unchanged.
        """
        op, c, ts = self._roles(op, x, w, y, ctx, layout)
        if capacity is None:
            capacity = sum(1 for n in dir(_C) if n.startswith("CONV_ALGO_"))
        xt, wt, yt = ts
        h = c.handles(self, xt, wt, yt, workspace)
        rows = _C.conv_find_algorithms(h[0], h[1], int(op), *h[2:], int(capacity))
        return [AlgoResult(from_c(Algo, a), ms, nbytes) for a, ms, nbytes in rows]

    def plan(self, x_shape: Shape, w_shape: Shape, op: OpLike = "forward", *,
             dtype: DTypeLike = "float32", layout: LayoutLike = "channels_first", bias: bool = False,
             ctx: Optional[Context] = None) -> Any:
        """A :class:`Plan` of one pass for these shapes (``conv_plan_create``): made once,
        called many times.

        ``x_shape`` is the input's (dx's for backward_data), ``w_shape`` the
        filter's (dw's for backward_filter); ``bias``: the forward calls will
        pass a bias, or backward_filter will compute db. No data is read; the
        descriptor's settings are copied, later changes do not reach the plan.
        """
        from ._plan import Plan

        return Plan(self, x_shape, w_shape, op, dtype=dtype, layout=layout, bias=bias, ctx=ctx)

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Conv closed>"
        pad = self.padding if self.auto_pad == AutoPad.NOTSET else self.auto_pad.name.lower()
        return ("<libconv.Conv%s %dd stride=%s padding=%s dilation=%s groups=%d%s>" % (
            " transposed" if self.transposed else "", self.spatial_dims, self.stride, pad,
            self.dilation, self.groups,
            "" if self.activation == Activation.NONE else " activation=" + self.activation.name.lower()))


class _Call:
    """One computation's context and layout, and its arrays wrapped as tensors.

    The context is the one given, else the first Tensor argument's, else the
    default context of the arrays' device. The layout is the one given, else
    the first Tensor argument's, else the first array's that is dense in only
    one layout; arrays dense in both (a 1x1 spatial size, say) follow it.
    """

    def __init__(self, ctx: Optional[Context], layout: Optional[LayoutLike], *objs: Any) -> None:
        self.strict = _layout(layout)
        self.layout = self.strict
        self.ctx = ctx
        for o in objs:
            if isinstance(o, Tensor):
                self.ctx = self.ctx or o.context
                self.layout = self.layout or o.layout
        if self.layout is None:
            for o in objs:
                if isinstance(o, np.ndarray):
                    fits = _array_layouts(o)
                    if len(fits) == 1:
                        self.layout = fits[0]
                        break
        self.tensors: List[Tensor] = []

    def _want(self, obj: Any) -> Optional[Layout]:
        if self.strict is not None or not isinstance(obj, np.ndarray) or not obj.itemsize:
            return self.strict
        return self.layout if self.layout in _array_layouts(obj) else None

    def wrap(self, obj: Any, what: str, writable: bool = False) -> Tensor:
        t = _as_tensor(obj, self.ctx, self._want(obj), what, writable)
        self.ctx = self.ctx or t.context
        self.layout = self.layout or t.layout
        self.tensors.append(t)
        return t

    def bias(self, obj: Any, like: Tensor, what: str, writable: bool = False) -> Tensor:
        """A bias of K elements (any shape) as a (1, K, 1...) tensor like ``like``."""
        if isinstance(obj, Tensor):
            return self.wrap(obj, what, writable)
        ones = (1,) * (len(like.shape) - 2)
        if not isinstance(obj, np.ndarray) and (hasattr(obj, "__dlpack__") or _is_capsule(obj)):
            # Any device: the DLPack memory itself, seen as (1, K, 1...).
            ctx = self.ctx or like.context

            def expect(device: Tuple[Device, int]) -> Optional[int]:
                _check_device(ctx, device[0], device[1], what)
                return None if device[0] == Device.CPU else (ctx.stream or 1)

            holder, address, shape, strides, dtype, readonly, _ = _take_dlpack(obj, what, expect)
            if strides is not None and not _dense(shape, strides):
                raise InvalidArgumentError("%s is not contiguous" % what)
            if writable and readonly:
                raise InvalidArgumentError("%s is read-only (DLPack flag) but is written" % what)
            n = int(np.prod(shape, dtype=np.int64))
            t = _wrap_memory(ctx, address, (1, n) + ones, None, dtype, like.layout, holder,
                             readonly, what)
        else:
            if not isinstance(obj, np.ndarray):
                try:
                    obj = np.asarray(memoryview(obj))
                except TypeError:
                    raise TypeMismatchError(
                        "%s must be an array of K elements (NumPy, DLPack, buffer) or a Tensor, "
                        "not %s" % (what, type(obj).__name__)) from None
            if not obj.flags.c_contiguous:
                raise InvalidArgumentError("%s is not contiguous" % what)
            view = obj.reshape((1, obj.size) + ones)
            t = _as_tensor(view, self.ctx, like.layout, what, writable)
        self.tensors.append(t)
        return t

    def new(self, shape: Tuple[int, ...], like: Tensor) -> Tensor:
        t = Tensor.zeros(shape, like.dtype, like.layout, ctx=like.context)
        self.tensors.append(t)
        return t

    def handles(self, desc: Conv, *objs: Any) -> "_Pointers":
        """(ctx, desc, objs...) as C pointers (None stays None) for one call.

        The result also holds their handles, so that a close() on another
        thread cannot destroy them while the call runs.
        """
        hs = [(self.ctx or default_context())._handle(), desc._handle()]
        hs += [o._handle() if o is not None else None for o in objs]
        return _Pointers(hs)

    def result(self, out: Any, t: Tensor, first: Any) -> Any:
        """What a call returns: ``out``; a Tensor for a Tensor input or device
        memory (NumPy cannot view it); else a NumPy view of ``t``."""
        if out is not None:
            if t.device[0] != Device.CPU and not isinstance(out, Tensor):
                # Memory of another library (PyTorch, CuPy...): its users'
                # streams know nothing of the context's; finish the work.
                (self.ctx or t.context).synchronize()
            return out
        if isinstance(first, Tensor) or t.device[0] != Device.CPU:
            return t
        return t.numpy()


# ============================================================ functional


def _conv_desc(nd: int, stride: IntOrSeq, padding: PaddingLike, dilation: IntOrSeq, groups: int,
               activation: Any = None, transposed: bool = False, output_padding: IntOrSeq = 0,
               algorithm: AlgorithmArg = None) -> Conv:
    return Conv(nd, stride=stride, padding=padding, dilation=dilation, groups=groups,
                activation=activation, transposed=transposed, output_padding=output_padding,
                algorithm=algorithm)


def _ndim(obj: Any) -> Optional[int]:
    if isinstance(obj, Tensor):
        return len(obj.shape)
    nd = getattr(obj, "ndim", None)
    return nd if isinstance(nd, int) else None


def _rank(obj: Any, ctx: Optional[Context], layout: Optional[LayoutLike], what: str) -> Tuple[Any, int]:
    """The object to pass on (wrapped when its rank is not otherwise known) and its spatial dims."""
    nd = _ndim(obj)
    if nd is None:
        obj = _as_tensor(obj, ctx, _layout(layout), what, False)
        nd = len(obj.shape)
    if not 3 <= nd <= 5:
        raise ShapeMismatchError("%s has %d dims; libconv takes (N, C, spatial...) with 1 to 3 "
                                 "spatial dims" % (what, nd))
    return obj, nd - 2


def _call_forward(name: str, nd: Optional[int], transposed: bool, x: Array, w: Array,
                  bias: Optional[Array], stride: IntOrSeq, padding: PaddingLike,
                  dilation: IntOrSeq, groups: int, output_padding: IntOrSeq,
                  activation: Union[None, str, Activation], algorithm: AlgorithmArg,
                  out: Optional[Array], ctx: Optional[Context], workspace: Optional[Workspace],
                  layout: Optional[LayoutLike]) -> Any:
    """What conv*, conv_transpose* share: the rank checks, batchless input, the call.

    ``nd`` is the spatial dims the function is for (None: the filter's rank
    says). A batchless input (C, spatial...) gets a batch axis of 1 (a view)
    and so does ``out``; a NumPy result loses it again.
    """
    if nd is None:
        w_rank = _ndim(w)
        if w_rank is None:
            x, nd = _rank(x, ctx, layout, "x")
        else:
            nd = w_rank - 2
    x_rank = _ndim(x)
    if x_rank is None:
        x = _as_tensor(x, ctx, _layout(layout), "x", False)
        x_rank = len(x.shape)
    batchless = x_rank == nd + 1 and not isinstance(x, Tensor)
    if not 1 <= nd <= 3 or not (x_rank == nd + 2 or batchless):
        raise ShapeMismatchError(
            "%s takes x as (N, C, spatial...) or batchless (C, spatial...) with %s spatial dims, "
            "not %s" % (name, nd if 1 <= nd <= 3 else "1 to 3",
                        describe(x) if not isinstance(x, Tensor) else "a Tensor of shape %s" % (x.shape,)))
    given_out = out
    if batchless:
        x = x[None]
        if out is not None:
            if isinstance(out, Tensor):
                raise ShapeMismatchError("%s: out is a Tensor (N, C, spatial...) but x is batchless; "
                                         "pass out as an array without the batch axis" % name)
            out = out[None]
    with _conv_desc(nd, stride, padding, dilation, groups, activation, transposed, output_padding,
                    algorithm) as d:
        y = d.forward(x, w, bias, out=out, ctx=ctx, workspace=workspace, layout=layout)
    if given_out is not None:
        return given_out
    return y[0] if batchless and isinstance(y, np.ndarray) else y


_CONV_DOC = """{nd}{name}: x (N, C_in, {spatial}) or batchless (C_in, {spatial}){ws}.

    Like ``torch.nn.functional.{torch}`` (same positional arguments), on
    NumPy arrays and anything with DLPack or the buffer protocol, without
    copying.

    Args:
        x: the input, float32, float64 or bfloat16 (float16 is storage-only
            on the CPU; bfloat16 there needs AVX-512), channels-first or
            channels-last (what its strides show). Batchless input gives a
            batchless result.
        w: {w}, in the same layout and dtype.
        bias: None or C_out elements.
        stride, padding, dilation, groups{op}: as :class:`Conv` (padding
            also ``"same"``/``"valid"`` and per-axis ``(begin, end)`` pairs).
        activation: ``"relu"`` fuses a ReLU after the bias.
        algorithm: force an algorithm, or ``{{op: algo}}`` (default: the
            library chooses, under the context's :attr:`Context.math`: the
            default context allows Winograd, see docs/python.md for its error).
        out: write the result here instead of allocating it.
        ctx, workspace: the context and scratch memory (defaults: the
            default context and its pool).
        layout: require this layout (default: what the arrays' strides show).

    Returns:
        ``out`` if given; a :class:`Tensor` if ``x`` is one or lives on a GPU
        (pass it on with DLPack: ``torch.from_dlpack(y)``; it keeps a batch
        axis of 1 for batchless input); else a NumPy array viewing the memory
        libconv allocated for the result. (``libconv.torch`` returns torch
        tensors for torch tensors.)
    """


_F = TypeVar("_F", bound=Callable[..., Any])


def _document(nd: Optional[int], transposed: bool) -> Callable[[_F], _F]:
    spatial = {None: "spatial...", 1: "W", 2: "H, W", 3: "D, H, W"}[nd]
    kernel = {None: "kernel...", 1: "kW", 2: "kH, kW", 3: "kD, kH, kW"}[nd]
    name = "transposed convolution" if transposed else "convolution"
    torch_name = ("conv_transpose%s" if transposed else "conv%s") % ("%dd" % nd if nd else "{1,2,3}d")

    def decorate(f: _F) -> _F:
        f.__doc__ = _CONV_DOC.format(
            nd="%d-d " % nd if nd else "N-d ", name=name, spatial=spatial, torch=torch_name,
            ws="; the filter's rank tells the spatial dims" if nd is None else "",
            w=("(C_in, C_out/groups, %s); the output is (N, C_out, out...) with out = (in - 1) * "
               "stride - pad_begin - pad_end + dilation * (k - 1) + 1 + output_padding" % kernel)
            if transposed else "(C_out, C_in/groups, %s)" % kernel,
            op=", output_padding" if transposed else "")
        return f
    return decorate


@_document(None, False)
def conv(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
         padding: PaddingLike = 0, dilation: IntOrSeq = 1, groups: int = 1, *,
         activation: Union[None, str, Activation] = None, algorithm: AlgorithmArg = None,
         out: Optional[Array] = None, ctx: Optional[Context] = None,
         workspace: Optional[Workspace] = None, layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv", None, False, x, w, bias, stride, padding, dilation, groups, 0,
                         activation, algorithm, out, ctx, workspace, layout)


@_document(1, False)
def conv1d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
           padding: PaddingLike = 0, dilation: IntOrSeq = 1, groups: int = 1, *,
           activation: Union[None, str, Activation] = None, algorithm: AlgorithmArg = None,
           out: Optional[Array] = None, ctx: Optional[Context] = None,
           workspace: Optional[Workspace] = None, layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv1d", 1, False, x, w, bias, stride, padding, dilation, groups, 0,
                         activation, algorithm, out, ctx, workspace, layout)


@_document(2, False)
def conv2d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
           padding: PaddingLike = 0, dilation: IntOrSeq = 1, groups: int = 1, *,
           activation: Union[None, str, Activation] = None, algorithm: AlgorithmArg = None,
           out: Optional[Array] = None, ctx: Optional[Context] = None,
           workspace: Optional[Workspace] = None, layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv2d", 2, False, x, w, bias, stride, padding, dilation, groups, 0,
                         activation, algorithm, out, ctx, workspace, layout)


@_document(3, False)
def conv3d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
           padding: PaddingLike = 0, dilation: IntOrSeq = 1, groups: int = 1, *,
           activation: Union[None, str, Activation] = None, algorithm: AlgorithmArg = None,
           out: Optional[Array] = None, ctx: Optional[Context] = None,
           workspace: Optional[Workspace] = None, layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv3d", 3, False, x, w, bias, stride, padding, dilation, groups, 0,
                         activation, algorithm, out, ctx, workspace, layout)


@_document(None, True)
def conv_transpose(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
                   padding: PaddingLike = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                   dilation: IntOrSeq = 1, *, activation: Union[None, str, Activation] = None,
                   algorithm: AlgorithmArg = None, out: Optional[Array] = None,
                   ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                   layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv_transpose", None, True, x, w, bias, stride, padding, dilation,
                         groups, output_padding, activation, algorithm, out, ctx, workspace, layout)


@_document(1, True)
def conv_transpose1d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
                     padding: PaddingLike = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, activation: Union[None, str, Activation] = None,
                     algorithm: AlgorithmArg = None, out: Optional[Array] = None,
                     ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                     layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv_transpose1d", 1, True, x, w, bias, stride, padding, dilation,
                         groups, output_padding, activation, algorithm, out, ctx, workspace, layout)


@_document(2, True)
def conv_transpose2d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
                     padding: PaddingLike = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, activation: Union[None, str, Activation] = None,
                     algorithm: AlgorithmArg = None, out: Optional[Array] = None,
                     ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                     layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv_transpose2d", 2, True, x, w, bias, stride, padding, dilation,
                         groups, output_padding, activation, algorithm, out, ctx, workspace, layout)


@_document(3, True)
def conv_transpose3d(x: Array, w: Array, bias: Optional[Array] = None, stride: IntOrSeq = 1,
                     padding: PaddingLike = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, activation: Union[None, str, Activation] = None,
                     algorithm: AlgorithmArg = None, out: Optional[Array] = None,
                     ctx: Optional[Context] = None, workspace: Optional[Workspace] = None,
                     layout: Optional[LayoutLike] = None) -> Any:
    return _call_forward("conv_transpose3d", 3, True, x, w, bias, stride, padding, dilation,
                         groups, output_padding, activation, algorithm, out, ctx, workspace, layout)


def conv_backward_data(input_shape: Shape, weight: Array, grad_output: Array, stride: IntOrSeq = 1,
                       padding: PaddingLike = 0, dilation: IntOrSeq = 1, groups: int = 1, *,
                       transposed: bool = False, output_padding: IntOrSeq = 0,
                       out: Optional[Array] = None, ctx: Optional[Context] = None,
                       workspace: Optional[Workspace] = None,
                       layout: Optional[LayoutLike] = None) -> Any:
    """The input gradient, like ``torch.nn.grad.conv{1,2,3}d_input`` (same argument order).

    ``input_shape`` may be None when ``out`` is given. With ``transposed``
    the geometry is that of :func:`conv_transpose`. Returns like :func:`conv`
    (a Tensor when ``grad_output`` is one).
    """
    grad_output, nd = _rank(grad_output, ctx, layout, "grad_output")
    with _conv_desc(nd, stride, padding, dilation, groups, None, transposed, output_padding) as d:
        return d.backward_data(weight, grad_output, input_shape, out=out, ctx=ctx,
                               workspace=workspace, layout=layout)


def conv_backward_filter(input: Array, weight_shape: Optional[Shape], grad_output: Array,
                         stride: IntOrSeq = 1, padding: PaddingLike = 0, dilation: IntOrSeq = 1,
                         groups: int = 1, *, bias: bool = False, transposed: bool = False,
                         output_padding: IntOrSeq = 0, out: Optional[Array] = None,
                         bias_out: Optional[Array] = None, ctx: Optional[Context] = None,
                         workspace: Optional[Workspace] = None,
                         layout: Optional[LayoutLike] = None) -> Any:
    """The filter gradient, like ``torch.nn.grad.conv{1,2,3}d_weight`` (same argument order).

    With ``bias=True`` (or ``bias_out``) returns ``(dw, db)``, db the sums of
    ``grad_output`` per output channel. ``weight_shape`` may be None when
    ``out`` is given. Returns like :func:`conv`.
    """
    input, nd = _rank(input, ctx, layout, "input")
    with _conv_desc(nd, stride, padding, dilation, groups, None, transposed, output_padding) as d:
        return d.backward_filter(input, grad_output, weight_shape, bias=bias, out=out,
                                 bias_out=bias_out, ctx=ctx, workspace=workspace, layout=layout)


def output_shape(x_shape: Shape, w_shape: Shape, stride: IntOrSeq = 1, padding: PaddingLike = 0,
                 dilation: IntOrSeq = 1, groups: int = 1, *, transposed: bool = False,
                 output_padding: IntOrSeq = 0) -> Tuple[int, ...]:
    """The output shape of :func:`conv` (or :func:`conv_transpose` with ``transposed=True``)."""
    nd = len(tuple(x_shape)) - 2
    with _conv_desc(max(nd, 1), stride, padding, dilation, groups, None, transposed,
                    output_padding) as d:
        return d.output_shape(x_shape, w_shape)


class _Pointers(list):
    """The C pointers of a call's handles; keeps the handles alive while it exists."""

    def __init__(self, handles: List[Optional[_Handle]]) -> None:
        super().__init__(h.ptr if h is not None else None for h in handles)
        self.handles = handles
