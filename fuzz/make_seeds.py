#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_conv.c into fuzz/corpus (deterministic).

Each seed starts with the mode byte (0 shapes, 1 compute, 2 tuning files,
3 handles, 4 aliasing, 5 communicator failures) followed by the choices fuzz_conv.c reads in that mode; see the
comments there. Run it again after changing how fuzz_conv.c reads its input.
"""
import os
import random
import struct

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
seeds = {}


def compute(ctx, spatial, last, dtype, op, transposed, groups, cg, kg, n, axes, auto_pad=0,
            relu=0, bias=0, forced=0, ws_kind=0, ws_delta=80, wrap=0, special=0, oom_budget=0,
            rng=12345):
    """axes: (in, ker, stride, dil, pb, pe, opad) per spatial axis, as the values wanted."""
    maxin = 4 if spatial == 3 else 7
    b = [1, ctx, spatial - 1, last, dtype, op, 0 if transposed else 1, groups - 1, cg - 1,
         kg - 1, n]
    for (i, k, s, d, pb, pe, opad) in axes:
        assert 1 <= i <= maxin
        b += [i - 1, k - 1, s - 1, d - 1, pb, pe, opad]
    b += [auto_pad + 4 if auto_pad else 0, relu, bias, forced, ws_kind, ws_delta + 80, wrap,
          special, oom_budget]
    return bytes(b) + struct.pack(">Q", rng)


# hand-picked problems: plain, strided, dilated, grouped, depthwise, 1x1, Winograd-shaped
seeds["compute-2d-basic"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 2, 2, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                    bias=1)
seeds["compute-2d-nhwc-strided"] = compute(1, 2, 1, 130, 0, 0, 2, 2, 2, 1,
                                           [(7, 3, 2, 1, 1, 0, 0), (5, 2, 3, 2, 0, 2, 0)], relu=1,
                                           bias=1)
seeds["compute-1d-bwd-data"] = compute(0, 1, 0, 0, 1, 0, 1, 2, 3, 2, [(7, 3, 2, 2, 2, 1, 0)])
seeds["compute-3d-bwd-filter"] = compute(1, 3, 1, 130, 2, 0, 1, 2, 2, 1,
                                         [(4, 2, 1, 1, 1, 0, 0)] * 3, bias=1)
seeds["compute-depthwise"] = compute(0, 2, 0, 0, 0, 0, 3, 1, 2, 2, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                     forced=3)
seeds["compute-1x1"] = compute(1, 2, 1, 0, 0, 0, 1, 3, 3, 2, [(5, 1, 1, 1, 0, 0, 0)] * 2,
                               forced=2)
seeds["compute-winograd"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 3, 1, [(7, 3, 1, 1, 1, 1, 0)] * 2,
                                    forced=4)
seeds["compute-transposed-fwd"] = compute(0, 2, 0, 0, 0, 1, 1, 2, 3, 2,
                                          [(3, 3, 2, 1, 1, 0, 1), (4, 2, 2, 1, 0, 1, 1)], bias=1,
                                          relu=1)
seeds["compute-transposed-bwd"] = compute(1, 1, 1, 130, 2, 1, 2, 1, 2, 1,
                                          [(5, 3, 2, 2, 1, 1, 1)], bias=1)
seeds["compute-same-upper"] = compute(0, 2, 0, 0, 0, 0, 1, 2, 2, 1, [(7, 3, 2, 1, 0, 0, 0)] * 2,
                                      auto_pad=2)
seeds["compute-small-ws"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                    forced=1, ws_kind=2, ws_delta=-1)
seeds["compute-own-ws"] = compute(1, 2, 1, 0, 2, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                  ws_kind=1, bias=1)
seeds["compute-wrong-shape"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                       special=1)
# every buffer against a guard page (special 6; bit 3: before the start, not
# after the end), caller tensors and workspace wrapped; and a solver forced
# from the engine's list (forced 5..7: list[forced >> 3])
seeds["compute-guard-after"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 3, 2, [(7, 3, 1, 1, 1, 1, 0)] * 2,
                                       wrap=1, ws_kind=2, special=6, bias=1)
seeds["compute-guard-before"] = compute(1, 2, 1, 0, 1, 0, 1, 3, 2, 1, [(5, 3, 2, 1, 1, 0, 0)] * 2,
                                        wrap=1, ws_kind=2, special=14)
seeds["compute-forced-from-list"] = compute(0, 1, 0, 0, 2, 0, 1, 3, 2, 2, [(7, 3, 1, 1, 1, 1, 0)],
                                            forced=5 + 8 * 3)  # direct_avx512
seeds["compute-oom"] = compute(1, 2, 0, 0, 0, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                               forced=1, special=2, oom_budget=1)
seeds["compute-guard-nan"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                     special=4)
seeds["compute-search"] = compute(0, 2, 0, 0, 0, 0, 1, 3, 3, 1, [(7, 3, 1, 1, 1, 1, 0)] * 2,
                                  special=5)
seeds["compute-search-1x1"] = compute(1, 2, 1, 130, 2, 0, 1, 2, 2, 2,
                                      [(5, 1, 1, 1, 0, 0, 0)] * 2, special=5, ws_kind=1)
seeds["compute-half"] = compute(0, 2, 0, 245, 0, 0, 1, 3, 2, 1, [(6, 3, 1, 1, 1, 1, 0)] * 2)
seeds["compute-empty-batch"] = compute(0, 2, 1, 0, 2, 0, 1, 3, 2, 0, [(6, 3, 1, 1, 1, 1, 0)] * 2,
                                       bias=1)

# random compute problems
r = random.Random(2026)
for i in range(24):
    b = bytes([1]) + bytes(r.randrange(256) for _ in range(60))
    seeds["compute-random-%02d" % i] = b

# shapes: wild values
for i in range(16):
    seeds["shapes-random-%02d" % i] = bytes([0]) + bytes(r.randrange(256) for _ in range(120))
seeds["shapes-huge-dilation"] = bytes([0, 1, 2, 1, 14, 14, 14, 14, 14, 14]) + bytes(20)

# tuning files
entry = (b"fwd float32 cf n1 c2 k2 g1 in1x4x4 k1x3x3 s1x1x1 d1x1x1 pb0x0x0 pe0x0x0"
         b"\tim2col_gemm\n")
seeds["tuning-entries"] = bytes([2, 0, 2]) + entry
seeds["tuning-two-entries"] = bytes([2, 1, 2]) + entry + entry.replace(b"n1", b"n2").replace(
    b"im2col_gemm", b"gemm_1x1")
seeds["tuning-bad-algorithm"] = bytes([2, 0, 2]) + entry.replace(b"im2col_gemm", b"warp")
seeds["tuning-after-header"] = bytes([2, 0, 1]) + b"entries 1\n" + entry + b"checksum 0\nend\n"
seeds["tuning-raw"] = bytes([2, 0, 0]) + b"libconv-tuning 2\nlibrary 0.1.0\ndevice cpu x\n"

# handle sequences
for i in range(8):
    seeds["handles-random-%02d" % i] = bytes([3]) + bytes(r.randrange(256) for _ in range(150))


def alias(ctx, op, search, partial, x, w, pad, bias, db_out, other, shape_from_other, offset,
          rng=777):
    """x = (N, C, H, W), w = (K, kh, kw): read in fuzz_alias's order (the
    bias choices only where it reads them)."""
    b = [4, ctx, op, search, partial, x[0] - 1, x[1] - 1, x[2] - 1, x[3] - 1,
         w[0] - 1, w[1] - 1, w[2] - 1, pad[0], pad[1]]
    if not search and op != 1:
        b.append(bias)
        if op == 2 and bias:
            b.append(db_out)
    b += [other, shape_from_other, offset]
    return bytes(b) + struct.pack(">Q", rng)


# aliasing: slots 0 x, 1 w, 2 b, 3 y (roles per pass)
seeds["alias-forward-w-is-y"] = alias(0, 0, 0, 0, (2, 2, 3, 3), (2, 2, 2), (0, 0), 0, 0, 1, 0, 0)
seeds["alias-bwd-data-overlap"] = alias(1, 1, 0, 1, (1, 2, 4, 4), (2, 3, 3), (1, 1), 0, 0, 3, 0, 5)
seeds["alias-search-y-is-x"] = alias(0, 0, 1, 0, (2, 3, 5, 5), (3, 3, 3), (1, 1), 0, 0, 0, 0, 0)
seeds["alias-bwd-filter-db-is-dy"] = alias(1, 2, 0, 0, (1, 2, 3, 3), (2, 3, 3), (0, 0), 1, 1, 3,
                                           0, 0)
seeds["alias-bwd-filter-dw-is-x"] = alias(0, 2, 0, 0, (2, 2, 3, 3), (2, 3, 3), (0, 0), 0, 0, 0, 0,
                                          0)


def comm(n, kind, average, in_place, f64, count_hi, root, abort_rank, abort_delay, ranks):
    """ranks: (timeout index, delay index) per rank (fuzz_comm's tables)."""
    b = [5, n - 1, kind, average, in_place, f64, 1, count_hi, 0, root, abort_rank, abort_delay]
    for t, d in ranks:
        b += [t, d]
    return bytes(b)


# communicator failures: a late rank with a tiny timeout; an abort mid-call
seeds["comm-timeout-freed"] = comm(4, 0, 0, 0, 0, 16, 0, 5, 0, [(2, 0)] * 3 + [(0, 3)])
seeds["comm-abort-broadcast"] = comm(3, 1, 0, 1, 1, 8, 2, 1, 2, [(2, 0), (2, 2), (2, 3)])
seeds["comm-average-in-place"] = comm(2, 0, 1, 1, 0, 1, 0, 3, 0, [(2, 0), (2, 0)])

for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("%d seeds in %s" % (len(seeds), out))
