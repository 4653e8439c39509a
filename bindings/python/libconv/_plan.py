"""Plans (``conv_plan_t``): one pass of one problem, made once, executed many times.

``Conv.plan(x_shape, w_shape, op)`` fixes the shapes, dtype and layout, chooses
the solver and sizes its workspace; calling the plan then runs the pass on
arrays of those shapes, validating little more than their dims. Plans are
what the one-shot calls (``Conv.forward`` & co.) use inside, through a
per-context cache; an explicit plan skips that cache's lookup, tells which
solver runs, and can keep prepared weights for inference.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Optional, Tuple, Union

import numpy as np

from . import _libconv as _C
from ._core import Context, DTypeLike, LayoutLike, Shape, Tensor, Workspace, _dtype, _Handle, _Resource, \
    default_context
from ._enums import Algo, DType, Layout, Op, from_c, to_enum
from ._errors import InvalidHandleError, ShapeMismatchError

if TYPE_CHECKING:  # pragma: no cover
    from ._conv import Conv

__all__ = ["Plan"]

Array = Any  # a NumPy array, a Tensor, or an object with __dlpack__ / the buffer protocol


class _SharedExclusive:
    """Executions share a plan; preparing or releasing its weights waits for
    them and keeps them out meanwhile (conv.h forbids running both at once)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._writing = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writing:
                self._cond.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                if not self._running:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._running:
                self._cond.wait()
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class Plan(_Resource):
    """One pass of one problem, prepared once (``conv_plan_t``); make it with :meth:`Conv.plan`.

    The shapes, dtype, layout and context are fixed when the plan is made,
    the solver is chosen (forced by the descriptor, the context's tuned
    choice, or the heuristic) and its workspace sized; the descriptor is
    not read again. Calling the plan runs the pass, with the arguments of
    the :class:`Conv` method of its op::

        y  = plan(x, w[, bias])   # op="forward" (bias when made with bias=True)
        dx = plan(w, dy)          # op="backward_data"
        dw = plan(x, dy)          # op="backward_filter"; (dw, db) when made with bias=True

    Every call also takes ``out=`` (where to write the result, else it is
    allocated), ``workspace=`` and, for backward_filter, ``bias_out=``. The
    arrays must have the plan's shapes, dtype and layout. Results come back
    as from the :class:`Conv` methods: ``out``, a :class:`Tensor` for a
    Tensor input, else a NumPy array.

    A plan may be called from several threads at once. It keeps using the
    context's settings of when it was made (threads, math mode...); once
    the context is closed, calling the plan raises
    :class:`InvalidHandleError`. ``close()`` (or ``with``) destroys it.

    Prepared weights (:meth:`prepare_weights`): for inference, the plan can
    keep a transformed copy of the filter (the Winograd-domain one, say) so
    that calls skip that work. The rule: the copy is made from ``w`` as it
    is at :meth:`prepare_weights`, and calls use it whatever the ``w`` they
    are given holds, so after every change of the weights call
    :meth:`prepare_weights` again (or :meth:`release_weights`).
    """

    _kind = "plan"

    def __init__(self, conv: "Conv", x_shape: Shape, w_shape: Shape, op: Union[Op, int, str] = "forward", *,
                 dtype: DTypeLike = "float32", layout: LayoutLike = "channels_first", bias: bool = False,
                 ctx: Optional[Context] = None) -> None:
        from ._conv import _op

        op = _op(op)
        x_shape = tuple(int(d) for d in x_shape)
        w_shape = tuple(int(d) for d in w_shape)
        if len(x_shape) != len(w_shape):
            raise ShapeMismatchError("input has %d dims but the filter %d" % (len(x_shape), len(w_shape)))
        ctx = ctx or default_context()
        hc = ctx._handle()
        dt = _dtype(dtype)
        lay = to_enum(Layout, layout, "layout")
        with_bias = bool(bias) and op != Op.BACKWARD_DATA  # C ignores it there
        ptr = _C.conv_plan_create(hc.ptr, conv._handle().ptr, int(op), int(dt), int(lay), len(x_shape),
                                  x_shape, w_shape, int(with_bias))
        # The plan keeps its context's handle: its C memory outlives a close()
        # of the Context object, which the plan still refuses (see _begin).
        self._h = _Handle(ptr, _C.conv_plan_destroy, (hc,))
        self._ctx = ctx
        self._op, self._dtype, self._layout, self._bias = op, dt, lay, with_bias
        self._shapes = (x_shape, w_shape, conv.output_shape(x_shape, w_shape))
        self._lock = _SharedExclusive()

    # ---------------------------------------------------------- properties

    @property
    def op(self) -> Op:
        """The pass the plan runs."""
        return self._op

    @property
    def dtype(self) -> DType:
        """The element type of every tensor of the pass."""
        return self._dtype  # type: ignore[return-value]

    @property
    def layout(self) -> Layout:
        """The layout of every tensor of the pass."""
        return self._layout  # type: ignore[return-value]

    @property
    def bias(self) -> bool:
        """Whether the plan was made for a bias (forward) or a bias gradient (backward_filter)."""
        return self._bias

    @property
    def context(self) -> Context:
        """The context the plan was made with."""
        return self._ctx

    @property
    def shapes(self) -> Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]:
        """(input, filter, output) shapes: (x, w, y), (dx, w, dy) or (x, dw, dy) by op."""
        return self._shapes

    @property
    def workspace_size(self) -> int:
        """Workspace bytes a call needs (``conv_plan_get_workspace_size``)."""
        return _C.conv_plan_get_workspace_size(self._handle().ptr)

    @property
    def algorithm(self) -> Union[Algo, int]:
        """The solver's algorithm id (``conv_plan_get_algorithm``): an :class:`Algo`, or an int
        for a solver that has no member (its name: :attr:`solver_name`)."""
        return from_c(Algo, _C.conv_plan_get_algorithm(self._handle().ptr))

    @property
    def solver_name(self) -> str:
        """The name of the solver the plan runs, as the verbose trace prints it
        (``conv_plan_get_solver_name``)."""
        return _C.conv_plan_get_solver_name(self._handle().ptr)

    # --------------------------------------------------------------- calls

    def _begin(self, *objs: Any) -> Any:
        """The call's wrapper of arrays (a ``_Call`` in the plan's context and layout)."""
        from ._conv import _Call

        self._handle()
        if self._ctx.closed:
            raise InvalidHandleError("the plan's context is closed (close() was called); make a new plan "
                                     "with an open context")
        return _Call(self._ctx, self._layout, *objs)

    def _execute(self, x: Tensor, w: Tensor, b: Optional[Tensor], y: Tensor,
                 workspace: Optional[Workspace]) -> None:
        from ._conv import _Pointers

        hs = [self._handle()] + [o._handle() if o is not None else None for o in (x, w, b, y, workspace)]
        with self._lock.shared():
            _C.conv_plan_execute(*_Pointers(hs))

    def __call__(self, *arrays: Array, **kwargs: Any) -> Any:
        """Runs the pass: ``plan(x, w[, bias])``, ``plan(w, dy)`` or ``plan(x, dy)`` by op (see the class)."""
        run = {Op.FORWARD: self._forward, Op.BACKWARD_DATA: self._backward_data,
               Op.BACKWARD_FILTER: self._backward_filter}[self._op]
        return run(*arrays, **kwargs)

    def _forward(self, x: Array, w: Array, bias: Optional[Array] = None, *, out: Optional[Array] = None,
                 workspace: Optional[Workspace] = None) -> Any:
        c = self._begin(x, w, out)
        xt, wt = c.wrap(x, "x"), c.wrap(w, "w")
        bt = c.bias(bias, xt, "bias") if bias is not None else None
        yt = c.wrap(out, "out", writable=True) if out is not None else c.new(self._shapes[2], xt)
        self._execute(xt, wt, bt, yt, workspace)
        return c.result(out, yt, x)

    def _backward_data(self, w: Array, dy: Array, *, out: Optional[Array] = None,
                       workspace: Optional[Workspace] = None) -> Any:
        c = self._begin(dy, w, out)
        wt, dyt = c.wrap(w, "w"), c.wrap(dy, "dy")
        dxt = c.wrap(out, "out", writable=True) if out is not None else c.new(self._shapes[0], dyt)
        self._execute(dxt, wt, None, dyt, workspace)
        return c.result(out, dxt, dy)

    def _backward_filter(self, x: Array, dy: Array, *, out: Optional[Array] = None,
                         bias_out: Optional[Array] = None, workspace: Optional[Workspace] = None) -> Any:
        c = self._begin(x, dy, out)
        xt, dyt = c.wrap(x, "x"), c.wrap(dy, "dy")
        dwt = c.wrap(out, "out", writable=True) if out is not None else c.new(self._shapes[1], xt)
        dbt = None
        if bias_out is not None:
            dbt = c.bias(bias_out, xt, "bias_out", writable=True)
        elif self._bias:
            dbt = c.new((1, self._shapes[2][1]) + (1,) * (len(self._shapes[2]) - 2), xt)
        self._execute(xt, dwt, dbt, dyt, workspace)
        dw = c.result(out, dwt, x)
        if dbt is None:
            return dw
        db = c.result(bias_out, dbt, x)
        return dw, (db.reshape(-1) if bias_out is None and isinstance(db, np.ndarray) else db)

    # ----------------------------------------------------- prepared weights

    def prepare_weights(self, w: Array) -> bool:
        """Makes the plan's prepared copy of the filter ``w`` (``conv_plan_prepare_weights``).

        Returns True when the solver keeps one (then calls use it, whatever
        the ``w`` they are given: call this again after every change of the
        weights), False when it has nothing to prepare (calls keep reading
        ``w``). Forward and backward_data plans. Waits for calls running on
        other threads, and holds new ones back until it is done.
        """
        c = self._begin(w)
        wt = c.wrap(w, "w")
        with self._lock.exclusive():
            return bool(_C.conv_plan_prepare_weights(self._handle().ptr, wt._handle().ptr))

    def release_weights(self) -> None:
        """Drops the prepared copy (``conv_plan_release_weights``): calls read ``w`` again."""
        h = self._handle()
        with self._lock.exclusive():
            _C.conv_plan_release_weights(h.ptr)

    def __repr__(self) -> str:
        if self._h is None:
            return "<libconv.Plan closed>"
        return "<libconv.Plan %s %s %s x=%s w=%s solver=%s>" % (
            self._op.name.lower(), self._dtype.name.lower(), self._layout.name.lower(), self._shapes[0],
            self._shapes[1], self.solver_name)
