"""The GIL is released while libconv computes: other Python threads progress."""

import threading
import time

import numpy as np

import libconv


def long_call(ctx, target_seconds=0.4):
    """A forward call that takes about `target_seconds` on one thread, as a
    function whose run time is almost all inside the one C call."""
    rng = np.random.default_rng(0)
    conv = libconv.Conv(2, padding=1)
    w = libconv.Tensor(rng.standard_normal((64, 64, 3, 3)).astype(np.float32), ctx=ctx)

    def make(n):
        x = libconv.Tensor(rng.standard_normal((n, 64, 56, 56)).astype(np.float32), ctx=ctx)
        y = libconv.Tensor.zeros((n, 64, 56, 56), ctx=ctx)
        return lambda: conv.forward(x, w, out=y, ctx=ctx)

    once = make(1)
    once()  # warm up (workspace, OpenBLAS)
    t0 = time.perf_counter()
    once()
    seconds = max(time.perf_counter() - t0, 1e-4)
    return make(int(min(64, max(1, round(target_seconds / seconds)))))


def test_other_threads_run_during_a_call():
    """While one thread is inside a long C call, the main thread keeps running
    Python code: the gaps between its steps stay short."""
    with libconv.Context(threads=1) as ctx:
        call = long_call(ctx)
        window = {}

        def worker():
            window["start"] = time.perf_counter()
            call()
            window["end"] = time.perf_counter()

        thread = threading.Thread(target=worker)
        stamps = []
        thread.start()
        while thread.is_alive():
            stamps.append(time.perf_counter())
        thread.join()
    start, end = window["start"], window["end"]
    duration = end - start
    assert duration > 0.05, "the call was too short to tell (%.3f s)" % duration
    # Holding the GIL would stop the main thread for the whole call; a GIL
    # hand-over at its edges is not progress during it.
    margin = 0.1 * duration
    inside = [t for t in stamps if start + margin <= t <= end - margin]
    assert len(inside) >= 100, (len(inside), duration)


def test_two_threads_compute_at_the_same_time():
    """Thread A is inside one long C call while thread B completes many short
    calls -- impossible if either held the GIL while computing."""
    with libconv.Context(threads=1) as ctx_a, libconv.Context(threads=1) as ctx_b:
        call = long_call(ctx_a)
        xs = np.ones((1, 4, 16, 16), np.float32)
        ws = np.ones((4, 4, 3, 3), np.float32)
        want = libconv.conv2d(xs, ws, padding=1, ctx=ctx_b).copy()
        a_window = {}
        b_done = []
        b_ok = []
        a_started = threading.Event()

        def thread_a():
            a_started.set()
            a_window["start"] = time.perf_counter()
            call()
            a_window["end"] = time.perf_counter()

        def thread_b():
            a_started.wait()
            while "end" not in a_window:
                y = libconv.conv2d(xs, ws, padding=1, ctx=ctx_b)
                b_done.append(time.perf_counter())
                b_ok.append(np.array_equal(y, want))

        threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    start, end = a_window["start"], a_window["end"]
    margin = 0.1 * (end - start)  # a GIL hand-over at the edges is not overlap
    during = [t for t in b_done if start + margin <= t <= end - margin]
    assert all(b_ok)
    assert len(during) >= 5, (len(during), end - start)


def test_one_context_shared_by_threads_gives_right_results():
    rng = np.random.default_rng(1)
    ctx = libconv.Context()
    conv = libconv.Conv(2, padding=1, groups=2)
    problems = [(rng.integers(-2, 3, (2, 4, 9, 9)).astype(np.float32),
                 rng.integers(-2, 3, (6, 2, 3, 3)).astype(np.float32)) for _ in range(4)]
    want = [libconv.conv2d(x, w, padding=1, groups=2, ctx=ctx).copy() for x, w in problems]
    errors = []

    def run(i):
        try:
            for _ in range(20):
                x, w = problems[i]
                if not np.array_equal(conv.forward(x, w, ctx=ctx), want[i]):
                    errors.append(i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
