"""Plans (Conv.plan), solver names and the verbose trace.

A plan gives the one-shot call's results (bit for bit: same solver, same
context), also called from 8 threads at once; prepared weights follow the
header's rule (stale until prepared again); a plan whose context is closed
is refused; the trace names the solver that ran.
"""

import threading

import numpy as np
import pytest

import libconv
import reference as ref
from libconv import _libconv
from test_numerics import LAYOUTS, geometry_kwargs, random_geometry, ref_args


def assert_close_ref(got, want):
    # Loose enough for Winograd (about 10x the rounding error of direct sums).
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-4,
                               atol=1e-4 * max(1.0, float(np.abs(want).max(initial=0))))


def problem(rng, nd, layout, dtype, transposed=False):
    """A random problem: (Conv, x, w, b, dy) in `layout`, small-integer data."""
    g, n, cg, kg, sizes = random_geometry(rng, nd, transposed)
    groups = g["groups"]
    x = ref.as_layout(ref.integers(rng, (n, cg * groups) + tuple(sizes), dtype), layout)
    w_shape = ((cg * groups, kg) if transposed else (kg * groups, cg)) + tuple(g["kernel"])
    w = ref.as_layout(ref.integers(rng, w_shape, dtype), layout)
    b = ref.integers(rng, (kg * groups,), dtype)
    conv = libconv.Conv(nd, transposed=transposed,
                        output_padding=g.get("output_padding", 0), **geometry_kwargs(g))
    dy = ref.as_layout(ref.integers(rng, conv.output_shape(x.shape, w.shape), dtype), layout)
    return conv, g, x, w, b, dy


@pytest.mark.parametrize("seed", range(16))
def test_plans_give_the_one_shot_results(seed):
    nd = 1 + seed % 3
    layout = LAYOUTS[seed // 3 % 2]
    dtype = [np.float32, np.float64][seed // 6 % 2]
    transposed = seed % 5 == 4
    rng = np.random.default_rng(500 + seed)
    conv, g, x, w, b, dy = problem(rng, nd, layout, dtype, transposed)
    with libconv.Context() as ctx:
        kw = dict(dtype=dtype, layout=layout, ctx=ctx)
        with conv.plan(x.shape, w.shape, "forward", bias=True, **kw) as plan:
            y = plan(x, w, b)
            assert np.array_equal(y, conv.forward(x, w, b, ctx=ctx))
            assert y.shape == plan.shapes[2] == dy.shape and y.dtype == dtype
            if not transposed:
                assert_close_ref(y, ref.forward(x, w, b, *ref_args(g), g["groups"]))
        with conv.plan(x.shape, w.shape, "backward_data", **kw) as plan:
            dx = plan(w, dy)
            assert np.array_equal(dx, conv.backward_data(w, dy, x.shape, ctx=ctx))
            assert dx.shape == x.shape
        with conv.plan(x.shape, w.shape, "backward_filter", bias=True, **kw) as plan:
            dw, db = plan(x, dy)
            want_dw, want_db = conv.backward_filter(x, dy, w.shape, bias=True, ctx=ctx)
            assert np.array_equal(dw, want_dw) and np.array_equal(db, want_db)
            assert db.shape == (dy.shape[1],)
        with conv.plan(x.shape, w.shape, "backward_filter", **kw) as plan:
            assert np.array_equal(plan(x, dy), want_dw)  # no bias: dw alone


def test_plan_writes_into_out_and_takes_a_workspace(ctx, rng):
    conv = libconv.Conv(2, padding=1, algorithm="im2col_gemm")  # needs a column buffer
    x = ref.integers(rng, (2, 4, 9, 9), np.float32)
    w = ref.integers(rng, (6, 4, 3, 3), np.float32)
    plan = conv.plan(x.shape, w.shape, ctx=ctx)
    out = np.full(plan.shapes[2], np.nan, np.float32)
    assert plan.workspace_size > 0
    with pytest.raises(libconv.WorkspaceTooSmallError):
        plan(x, w, out=out, workspace=libconv.Workspace(plan.workspace_size - 1, ctx=ctx))
    assert np.isnan(out).all()  # a refused call wrote nothing
    ws = libconv.Workspace(plan.workspace_size, ctx=ctx)  # exactly what it said is enough
    assert plan(x, w, out=out, workspace=ws) is out
    assert np.array_equal(out, conv.forward(x, w, ctx=ctx))
    xt = libconv.Tensor(x, ctx=ctx)
    assert isinstance(plan(xt, w), libconv.Tensor)  # a Tensor in, a Tensor out


def test_plan_reports_its_solver(ctx):
    conv = libconv.Conv(2, padding=1)
    plan = conv.plan((1, 8, 16, 16), (8, 8, 3, 3), ctx=ctx)
    assert isinstance(plan.workspace_size, int) and plan.workspace_size >= 0
    assert plan.solver_name == libconv.algo_name(plan.algorithm) != "unknown"
    assert plan.op == libconv.Op.FORWARD and plan.dtype == libconv.DType.FLOAT32
    assert plan.layout == libconv.Layout.CHANNELS_FIRST and not plan.bias
    assert plan.context is ctx
    assert plan.solver_name in repr(plan)
    # Made by name: the forced solver is the one the plan runs.
    conv.set_algorithm("forward", "im2col_gemm")
    assert conv.get_algorithm("forward") == libconv.Algo.IM2COL_GEMM
    plan = conv.plan((1, 8, 16, 16), (8, 8, 3, 3), ctx=ctx)
    assert plan.solver_name == "im2col_gemm" and plan.algorithm == libconv.Algo.IM2COL_GEMM


def test_algorithms_by_name():
    for algo in libconv.Algo:
        assert libconv.algo_from_name(libconv.algo_name(algo)) == algo
        assert libconv.algo_from_name(algo.name) == algo  # the member's name, any case
    conv = libconv.Conv(2, algorithm={"forward": "winograd_4x4_3x3", "backward_data": "IM2COL_GEMM"})
    assert conv.get_algorithm("forward") == libconv.Algo.WINOGRAD_4X4_3X3
    assert conv.get_algorithm("backward_data") == libconv.Algo.IM2COL_GEMM
    with pytest.raises(ValueError) as e:
        conv.set_algorithm("forward", "no_such_solver")
    assert isinstance(e.value, libconv.InvalidArgumentError)
    assert "no_such_solver" in str(e.value)
    assert "im2col_gemm" in str(e.value) and "winograd_4x4_3x3" in str(e.value)  # the known ones
    assert conv.get_algorithm("forward") == libconv.Algo.WINOGRAD_4X4_3X3  # unchanged


def test_a_forced_solver_that_does_not_apply_is_refused_at_creation(ctx):
    conv = libconv.Conv(2, algorithm="winograd_4x4_3x3")
    with pytest.raises(libconv.UnsupportedError):
        conv.plan((1, 4, 8, 8), (4, 4, 1, 1), ctx=ctx)  # Winograd needs a 3x3 kernel


def test_arrays_not_of_the_plans_problem_are_refused(ctx):
    conv = libconv.Conv(2, padding=1)
    x = np.ones((1, 4, 8, 8), np.float32)
    w = np.ones((4, 4, 3, 3), np.float32)
    plan = conv.plan(x.shape, w.shape, ctx=ctx)
    with pytest.raises(libconv.ShapeMismatchError):
        plan(np.ones((1, 4, 9, 9), np.float32), w)
    with pytest.raises(libconv.TypeMismatchError):
        plan(x.astype(np.float64), w.astype(np.float64))
    with pytest.raises(libconv.ConvError):
        plan(x, w, np.ones(4, np.float32))  # a bias the plan was not made for
    with conv.plan(x.shape, w.shape, bias=True, ctx=ctx) as with_bias:
        with pytest.raises(libconv.ConvError):
            with_bias(x, w)  # no bias for a plan made with one
    with pytest.raises(TypeError):
        plan(x)  # forward takes x and w


def test_eight_threads_execute_one_plan():
    rng = np.random.default_rng(8)
    conv = libconv.Conv(2, padding=1, groups=2)
    w = ref.integers(rng, (16, 4, 3, 3), np.float32)
    b = ref.integers(rng, (16,), np.float32)
    xs = [ref.integers(rng, (2, 8, 12, 12), np.float32) for _ in range(8)]
    with libconv.Context(threads=2) as ctx:
        want = [conv.forward(x, w, b, ctx=ctx).copy() for x in xs]
        plan = conv.plan(xs[0].shape, w.shape, bias=True, ctx=ctx)
        start = threading.Barrier(8)
        errors = []

        def run(i):
            try:
                start.wait()
                out = np.empty_like(want[i])
                for _ in range(25):
                    out.fill(np.nan)
                    plan(xs[i], w, b, out=out)
                    if not np.array_equal(out, want[i]):
                        errors.append("thread %d: wrong result" % i)
                        return
            except Exception as e:  # pragma: no cover - reported below
                errors.append("thread %d: %r" % (i, e))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors


def check_prepared_weights(ctx, conv, op, a, w, w2):
    """The header's rule: after prepare_weights, calls use the weights as they
    were then (if the solver keeps a copy) until prepared again. `a` is x
    (forward) or dy (backward_data, with dx of the same shape)."""
    if op == "forward":
        one_shot = lambda w_: conv.forward(a, w_, ctx=ctx)  # noqa: E731
        plan = conv.plan(a.shape, w.shape, op, ctx=ctx)
        call = lambda: plan(a, w)  # noqa: E731
    else:
        one_shot = lambda w_: conv.backward_data(w_, a, a.shape, ctx=ctx)  # noqa: E731
        plan = conv.plan(a.shape, w.shape, op, ctx=ctx)
        call = lambda: plan(w, a)  # noqa: E731
    old, new = one_shot(w.copy()).copy(), one_shot(w2.copy()).copy()
    assert not np.array_equal(old, new)
    prepared = plan.prepare_weights(w)
    assert isinstance(prepared, bool)
    assert np.array_equal(call(), old)
    w[...] = w2  # the weights change; the plan is not told
    assert np.array_equal(call(), old if prepared else new), (
        "the prepared copy was not used" if prepared else "a plan with nothing prepared read stale w")
    assert plan.prepare_weights(w) == prepared
    assert np.array_equal(call(), new)  # prepared again: fresh
    w[...] = 0
    plan.release_weights()
    assert not np.any(call())  # released: w is read again
    return prepared


@pytest.mark.parametrize("algo", ["winograd_4x4_3x3", "im2col_gemm", "auto"])
@pytest.mark.parametrize("op", ["forward", "backward_data"])
def test_prepared_weights_fresh_and_stale(ctx, rng, algo, op):
    conv = libconv.Conv(2, padding=1, algorithm=algo)
    x = ref.integers(rng, (2, 8, 12, 12), np.float32)
    w = ref.integers(rng, (8, 8, 3, 3), np.float32)
    w2 = ref.integers(rng, (8, 8, 3, 3), np.float32)
    prepared = check_prepared_weights(ctx, conv, op, x, w, w2)
    if algo == "winograd_4x4_3x3":
        # The AVX-512 kernels keep the Winograd-domain filter; the portable
        # ones (CONV_CPU_ISA=baseline) have nothing to prepare.
        assert prepared == ("(avx512" in ctx.device_name), ctx.device_name
    if algo == "im2col_gemm":
        assert not prepared, "im2col has no filter transform to keep"


def test_backward_filter_plans_have_no_weights_to_prepare(ctx):
    conv = libconv.Conv(2, padding=1)
    plan = conv.plan((1, 4, 8, 8), (4, 4, 3, 3), "backward_filter", ctx=ctx)
    with pytest.raises(libconv.ConvError):
        plan.prepare_weights(np.ones((4, 4, 3, 3), np.float32))


def test_a_plan_whose_context_is_closed_is_refused(rng):
    conv = libconv.Conv(2, padding=1)
    x = ref.integers(rng, (1, 4, 8, 8), np.float32)
    w = ref.integers(rng, (4, 4, 3, 3), np.float32)
    ctx = libconv.Context()
    plan = conv.plan(x.shape, w.shape, ctx=ctx)
    want = plan(x, w).copy()
    with libconv.Context() as other:
        xt, wt = libconv.Tensor(x, ctx=other), libconv.Tensor(w, ctx=other)
        assert np.array_equal(plan(xt, wt).numpy(), want)
        ctx.close()
        for args in ((x, w), (xt, wt)):
            with pytest.raises(libconv.InvalidHandleError) as e:
                plan(*args)
            assert e.value.status == libconv.Status.INVALID_HANDLE
            assert "context is closed" in str(e.value)
    assert plan.solver_name  # the plan itself is still there
    plan.close()
    with pytest.raises(libconv.InvalidHandleError):
        plan(x, w)
    plan.close()  # twice is fine


def test_the_c_library_refuses_a_plan_whose_context_was_destroyed():
    """Below the Python layer: conv_plan_execute after conv_context_destroy."""
    C = _libconv
    ctx = C.conv_context_create(int(libconv.Device.CPU), 0)
    desc = C.conv_desc_create(2)
    plan = C.conv_plan_create(ctx, desc, int(libconv.Op.FORWARD), int(libconv.DType.FLOAT32),
                              int(libconv.Layout.CHANNELS_FIRST), 4, (1, 2, 4, 4), (2, 2, 1, 1), 0)
    with libconv.Context() as other:
        x, w, y = (libconv.Tensor.zeros(s, ctx=other) for s in ((1, 2, 4, 4), (2, 2, 1, 1), (1, 2, 4, 4)))
        C.conv_plan_execute(plan, x._handle().ptr, w._handle().ptr, None, y._handle().ptr, None)
        C.conv_context_destroy(ctx)
        with pytest.raises(libconv.InvalidHandleError):
            C.conv_plan_execute(plan, x._handle().ptr, w._handle().ptr, None, y._handle().ptr, None)
    C.conv_plan_destroy(plan)
    C.conv_desc_destroy(desc)


def test_verbose_trace_names_the_solver(capfd, rng):
    conv = libconv.Conv(2, padding=1)
    x = ref.integers(rng, (1, 4, 8, 8), np.float32)
    w = ref.integers(rng, (4, 4, 3, 3), np.float32)
    with libconv.Context() as ctx:
        assert ctx.verbose == 0
        plan = conv.plan(x.shape, w.shape, ctx=ctx)
        capfd.readouterr()
        plan(x, w)
        assert capfd.readouterr().err == ""  # level 0: silent
        ctx.verbose = 1
        assert ctx.verbose == 1
        plan(x, w)
        lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("conv_verbose,")]
        assert len(lines) == 1, lines
        assert lines[0].startswith("conv_verbose,exec,cpu,fwd,float32,")
        assert "solver=%s," % plan.solver_name in lines[0]
        assert "x=1x4x8x8" in lines[0] and "w=4x4x3x3" in lines[0]
        # The trace shows the kernel that really ran: force one by name.
        conv.set_algorithm("forward", "im2col_gemm")
        conv.forward(x, w, ctx=ctx)
        err = capfd.readouterr().err
        assert "solver=im2col_gemm," in err and ",fwd," in err
        ctx.verbose = 2
        conv.set_algorithm("forward", "auto")
        conv.plan((1, 4, 8, 8), (4, 4, 3, 3), ctx=ctx)
        assert "conv_verbose,skip," in capfd.readouterr().err  # gemm_1x1 does not apply, at least
        ctx.verbose = 0
        plan(x, w)
        assert capfd.readouterr().err == ""


def test_verbose_levels_out_of_range_are_refused(ctx):
    ctx.verbose = 2
    for level in (-1, 3):
        with pytest.raises(libconv.InvalidArgumentError, match="0..2"):
            ctx.verbose = level
    assert ctx.verbose == 2  # unchanged


def test_contexts_start_at_the_level_of_conv_verbose(monkeypatch):
    monkeypatch.setenv("CONV_VERBOSE", "1")
    with libconv.Context() as ctx:
        assert ctx.verbose == 1
    monkeypatch.delenv("CONV_VERBOSE")
    with libconv.Context() as ctx:
        assert ctx.verbose == 0
