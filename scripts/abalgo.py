#!/usr/bin/env python3
"""Two --algo choices of one convbench binary, timed in interleaved rounds.

usage: scripts/abalgo.py ROUNDS ALGO_A ALGO_B [convbench args...]

Each round runs convbench once with `--algo A,A,A` and once with
`--algo B,B,B` (the order alternating between rounds), pinned to CPU 1 with
taskset (ABALGO_CPUS=0,1 pins both, for --threads 2), OPENBLAS_CORETYPE
unset; prints per layer and pass the median ms of
each and A's time over B's. $CONVBENCH names the binary (default
build/tools/convbench/convbench).
"""
import collections
import os
import statistics
import subprocess
import sys

rounds, a, b, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
binary = os.environ.get("CONVBENCH", "build/tools/convbench/convbench")
# Pinned to CPU 1 unless ABALGO_CPUS names others (e.g. 0,1 for --threads 2).
pin = ["taskset", "-c", os.environ.get("ABALGO_CPUS", "1")]
env = dict(os.environ)
env.pop("OPENBLAS_CORETYPE", None)
times = collections.defaultdict(lambda: {a: [], b: []})
chosen = {}
for r in range(rounds):
    for algo in (a, b) if r % 2 == 0 else (b, a):
        out = subprocess.run(pin + [binary, "--algo", f"{algo},{algo},{algo}"] + args,
                             env=env, capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            f = line.split()
            ops = [i for i, x in enumerate(f) if x in ("fwd", "bwd_data", "bwd_filter")]
            if not f or f[0] == "--" or not ops or ops[0] == 0 or len(f) <= ops[0] + 2:
                continue
            i = ops[0]
            try:
                ms = float(f[i + 2])
            except ValueError:
                continue  # n/a
            key = (f[0], f[2], f[3], f[i])
            times[key][algo].append(ms)
            chosen[(key, algo)] = f[i + 1]
for key, t in times.items():
    if t[a] and t[b]:
        ma, mb = statistics.median(t[a]), statistics.median(t[b])
        print("%-10s %-9s %-8s %-10s %s %8.3f  %s %8.3f  A/B %.2f" %
              (*key, chosen[(key, a)], ma, chosen[(key, b)], mb, ma / mb))
