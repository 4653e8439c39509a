#!/usr/bin/env python3
"""What a call from Python costs the host, beside the C call itself.

Times, on a problem too small for the arithmetic to count (3x3 8->8 on
1x8x4x4, one thread), the median of several rounds of many calls:
  - wrapping one NumPy array (``libconv.Tensor(a)``) and, with torch, one
    torch tensor the way libconv.torch hands it over;
  - ``Conv.forward`` given NumPy arrays, given libconv Tensors, and the bare
    C call (``conv_forward`` on ready handles) -- their differences are what
    the Python layer adds per call.

    PYTHONPATH=build/bindings/python python3 tools/python/host_cost.py [--calls N]
(docs/python.md, "Host cost of a call")
"""
import argparse
import statistics
import time

import numpy as np

import libconv
from libconv import _libconv as _C


def per_call_us(fn, calls, rounds=7):
    for _ in range(calls // 10 + 1):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv)
    ctx = libconv.Context("cpu", threads=1, math="strict")
    conv = libconv.Conv(2, padding=1)
    rng = np.random.default_rng(0)
    x = rng.random((1, 8, 4, 4), np.float32)
    w = rng.random((8, 8, 3, 3), np.float32)
    y = np.empty((1, 8, 4, 4), np.float32)
    xt, wt, yt = (libconv.Tensor(a, ctx=ctx) for a in (x, w, y))
    hc, hd = ctx._handle().ptr, conv._handle().ptr
    hx, hw, hy = (t._handle().ptr for t in (xt, wt, yt))
    rows = [
        ("wrap a NumPy array: libconv.Tensor(a)", lambda: libconv.Tensor(x, ctx=ctx)),
        ("Conv.forward(x, w, out=y), NumPy arrays",
         lambda: conv.forward(x, w, out=y, ctx=ctx)),
        ("Conv.forward(x, w, out=y), libconv Tensors",
         lambda: conv.forward(xt, wt, out=yt, ctx=ctx)),
        ("conv_forward on ready handles (the C call)",
         lambda: _C.conv_forward(hc, hd, hx, hw, None, hy, None)),
    ]
    try:
        import torch

        from libconv import _torch_bridge as bridge

        tx = torch.from_numpy(x)
        p = bridge.Pass(tx, libconv.Math.STRICT, libconv.Layout.CHANNELS_FIRST)
        rows.insert(1, ("hand a torch tensor over (libconv.torch)", lambda: p.handle(tx, "x")))
        rows.insert(2, ("wrap a torch tensor through DLPack: Tensor.from_dlpack(t)",
                        lambda: libconv.Tensor.from_dlpack(tx, ctx=ctx)))
    except ImportError:
        pass
    for what, fn in rows:
        print("%-60s %7.2f us" % (what, per_call_us(fn, args.calls)))


if __name__ == "__main__":
    main()
