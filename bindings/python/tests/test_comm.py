"""Communicators and gradient reducers: LOCAL groups of Python threads."""

import threading
import time

import numpy as np
import pytest

import libconv
from conftest import requires_c

pytestmark = requires_c("conv_comm_create_local", "conv_reducer_create")


def run_ranks(comms, body):
    """Runs body(comm) on one thread per rank; returns results, re-raises errors."""
    results = [None] * len(comms)
    errors = [None] * len(comms)

    def rank(i):
        try:
            results[i] = body(comms[i])
        except BaseException as e:  # noqa: B902 - reported to the test
            errors[i] = e

    threads = [threading.Thread(target=rank, args=(i,)) for i in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    return results, errors


def test_local_group_queries():
    comms = libconv.Communicator.local(3)
    assert [c.rank for c in comms] == [0, 1, 2]
    assert all(c.size == 3 and c.backend == libconv.CommBackend.LOCAL for c in comms)
    assert comms[0].device == (libconv.Device.CPU, 0)
    assert libconv.Communicator.backend_available("local")
    comms[1].timeout = 5.0
    assert comms[1].timeout == 5.0
    assert comms[0].error() is None and comms[0].state == libconv.CommState.OK
    assert "rank 2 of 3" in repr(comms[2])
    for c in comms:
        c.close()
    with pytest.raises(TypeError):
        libconv.Communicator()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_all_reduce_broadcast_barrier(dtype):
    n = 4
    comms = libconv.Communicator.local(n)
    data = [np.arange(10, dtype=dtype) * (r + 1) for r in range(n)]
    total = sum(data)

    def body(comm):
        mine = data[comm.rank].copy()
        out = np.empty_like(mine)
        assert comm.all_reduce(mine, out, op="sum") is out
        avg = mine.copy()
        comm.all_reduce(avg, op=libconv.ReduceOp.AVERAGE)       # in place
        b = np.full(5, comm.rank, dtype)
        comm.broadcast(b, root=2)
        comm.barrier()
        comm.synchronize()
        return out, avg, b

    results, errors = run_ranks(comms, body)
    assert not any(errors), errors
    for out, avg, b in results:
        np.testing.assert_array_equal(out, total)
        np.testing.assert_array_equal(avg, total / n)
        np.testing.assert_array_equal(b, np.full(5, 2, dtype))


def test_collectives_take_tensors_and_dlpack():
    comms = libconv.Communicator.local(2)

    class Producer:  # any DLPack producer (PyTorch, CuPy...)
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    def body(comm):
        t = libconv.Tensor(np.full((1, 2, 3), comm.rank + 1.0, np.float32))
        comm.all_reduce(t)
        d = np.full(4, comm.rank + 1.0)
        comm.all_reduce(Producer(d))
        return t.numpy().copy(), d

    results, errors = run_ranks(comms, body)
    assert not any(errors), errors
    assert all((t == 3.0).all() and (d == 3.0).all() for t, d in results)


def test_mismatched_collectives_fail_on_every_rank():
    comms = libconv.Communicator.local(2)
    for c in comms:
        c.timeout = 10

    def body(comm):
        comm.all_reduce(np.zeros(4 + comm.rank, np.float32))

    _, errors = run_ranks(comms, body)
    assert all(isinstance(e, libconv.InvalidArgumentError) for e in errors), errors


def test_timeout_and_abort_raise_instead_of_hanging():
    comms = libconv.Communicator.local(3)
    for c in comms:
        c.timeout = 0.3
    # Rank 2 never joins: the others time out.
    t0 = time.monotonic()
    _, errors = run_ranks(comms[:2], lambda c: c.all_reduce(np.zeros(3, np.float32)))
    assert time.monotonic() - t0 < 10
    assert all(isinstance(e, libconv.BackendError) for e in errors), errors
    err = comms[0].error()
    assert isinstance(err, libconv.BackendError) and err.message
    assert comms[0].state == libconv.CommState.TIMED_OUT
    # Sticky: later collectives fail at once.
    with pytest.raises(libconv.BackendError):
        comms[2].barrier()

    group = libconv.Communicator.local(2)
    for c in group:
        c.timeout = 30
    threading.Timer(0.2, group[1].abort).start()
    with pytest.raises(libconv.BackendError):
        group[0].barrier()  # rank 1 never comes; the abort ends the wait
    assert group[0].state == libconv.CommState.ABORTED


def test_wrong_buffers_are_refused():
    (comm,) = libconv.Communicator.local(1)
    with pytest.raises(libconv.TypeMismatchError):
        comm.all_reduce(np.zeros(3, np.int32))
    with pytest.raises(libconv.InvalidArgumentError, match="not dense"):
        comm.all_reduce(np.zeros(6, np.float32)[::2])
    with pytest.raises(libconv.InvalidArgumentError, match="recv"):
        comm.all_reduce(np.zeros(3, np.float32), np.zeros(4, np.float32))
    comm.close()
    with pytest.raises(libconv.InvalidHandleError, match="communicator is closed"):
        comm.barrier()


def test_reducer_averages_gradients_and_applies_sgd(rng):
    n = 2
    comms = libconv.Communicator.local(n)
    shapes = [(8, 3, 3, 3), (8,), (16, 8, 1, 1)]
    init = [rng.integers(-3, 4, s).astype(np.float32) for s in shapes]
    grads = [[np.full(s, 2.0 * (r + 1) + i, np.float32) for i, s in enumerate(shapes)]
             for r in range(n)]

    def body(comm):
        # Rank 0 starts from init, the others from zeros: broadcast_params aligns them.
        weights = [w.copy() if comm.rank == 0 else np.zeros_like(w) for w in init]
        red = libconv.Reducer(comm, "float32")
        assert [red.add_param(w) for w in weights] == [0, 1, 2]
        red.set_bucket_count(2)
        red.setup()
        red.broadcast_params(0)
        for w, w0 in zip(weights, init):
            np.testing.assert_array_equal(w, w0)
        assert red.param_count == 3 and red.bucket_count >= 1
        buckets = [red.bucket(b) for b in range(red.bucket_count)]
        assert sum(b.params for b in buckets) == 3
        slots = [red.param_slot(p) for p in range(3)]
        assert red.buffer().size >= sum(int(np.prod(s)) for s in shapes)
        for p in reversed(range(3)):  # backward order
            g = red.grad(p)
            assert g.shape == shapes[p] and slots[p][1] >= 0
            g[...] = grads[comm.rank][p]
            red.mark_ready(p)
        red.finish()
        averaged = [red.grad(p).copy() for p in range(3)]
        red.apply_sgd(0.5)
        times = red.step_times
        red.close()
        return averaged, weights, times

    results, errors = run_ranks(comms, body)
    assert not any(errors), errors
    for averaged, weights, times in results:
        for p in range(3):
            want = sum(grads[r][p] for r in range(n)) / n
            np.testing.assert_array_equal(averaged[p], want)
            np.testing.assert_allclose(weights[p], init[p] - 0.5 * want, rtol=1e-6)
        assert len(times) == 2


def test_reducer_gradient_slot_is_backward_output(rng):
    """conv_backward_filter writes straight into the reducer's buffer."""
    (comm,) = libconv.Communicator.local(1)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    dy = rng.standard_normal((2, 4, 4, 4)).astype(np.float32)
    red = libconv.Reducer(comm)
    red.add_param(w)
    red.setup()
    slot = red.grad(0)
    libconv.conv_backward_filter(x, None, dy, out=slot)
    red.mark_ready(0)
    red.finish()
    np.testing.assert_allclose(red.grad(0), libconv.conv_backward_filter(x, w.shape, dy), rtol=1e-5)
    with pytest.raises(libconv.TypeMismatchError):
        red.add_param(np.zeros(3, np.float64))
