#!/usr/bin/env python3
"""Runs convbench against a peer over a matrix of configurations and prints
the ratios as a Markdown table (docs/performance.md's tables against oneDNN).

Each configuration (suite x batch x threads x math x dtype) runs once per
round, rounds interleaved (every configuration once, then again), so that a
disturbance of the shared machine lands in one round of many configurations
instead of all rounds of one. Per layer and pass the median over rounds of
libconv's median and of the peer's median is kept; a suite's pass total is
the count-weighted sum of those, and ratio = peer ms / libconv ms (> 1:
libconv faster). "worst" names the layer-pass with the lowest ratio.

  peer_matrix.py --convbench build/tools/convbench/convbench --rounds 3 \
      --suites resnet50,mobilenet_v1 --batch 1,8 --threads 1,2 \
      --math strict,default [--dtype f32] [--peer onednn] [--json-dir DIR]

One-thread runs are pinned to the last CPU (taskset), two-thread runs are
not. OPENBLAS_CORETYPE is removed from the environment; OMP_WAIT_POLICY is
left as given: oneDNN's OpenMP threads spin at barriers by default, its
fastest on a quiet machine (passive made its 2-thread ResNet-50 20% slower
here), and only on a machine busy with other work is passive the fairer.
"""
import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

OPS = ("fwd", "bwd_data", "bwd_filter")


def run_one(args, cfg, path):
    suite, batch, threads, math, dtype = cfg
    cmd = [args.convbench, "--suite", suite, "--batch", str(batch), "--threads", str(threads),
           "--math", math, "--dtype", dtype, "--op", "all", "--peer", args.peer, "--json", path]
    if args.repeats:
        cmd += ["--repeats", str(args.repeats)]
    if args.prepared:
        cmd.append("--prepared")
    if threads == 1 and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(os.cpu_count() - 1)] + cmd
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"peer_matrix: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    with open(path) as f:
        return json.load(f)


def summarize(rounds):
    """rounds: list of convbench row lists of one configuration."""
    per = {}
    for rows in rounds:
        for r in rows:
            if r.get("status") != "ok" or r.get("peer_ms") is None:
                continue
            key = (r["layer"], r["op"])
            e = per.setdefault(key, {"count": r["count"], "ms": [], "peer": [], "algo": r["algorithm"]})
            e["ms"].append(r["ms"])
            e["peer"].append(r["peer_ms"])
    totals = {op: [0.0, 0.0] for op in OPS}
    worst = None
    for (layer, op), e in per.items():
        ms, peer = statistics.median(e["ms"]), statistics.median(e["peer"])
        totals[op][0] += e["count"] * ms
        totals[op][1] += e["count"] * peer
        ratio = peer / ms
        if worst is None or ratio < worst[0]:
            worst = (ratio, f"{layer} {op} ({e['algo']})")
    return totals, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--convbench", default="build/tools/convbench/convbench")
    ap.add_argument("--peer", default="onednn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=0, help="convbench --repeats (0: its default)")
    ap.add_argument("--suites", default="resnet50")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--math", default="strict")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--prepared", action="store_true", help="convbench --prepared (plans)")
    ap.add_argument("--json-dir", help="keep every run's JSON here")
    a = ap.parse_args()
    a.convbench = os.path.abspath(a.convbench)
    split = lambda s: [x for x in s.split(",") if x]
    cfgs = list(itertools.product(split(a.suites), [int(b) for b in split(a.batch)],
                                  [int(t) for t in split(a.threads)], split(a.math), split(a.dtype)))
    out = a.json_dir or tempfile.mkdtemp(prefix="peer_matrix.")
    os.makedirs(out, exist_ok=True)
    results = {c: [] for c in cfgs}
    for rnd in range(a.rounds):
        for c in cfgs:
            name = "_".join(str(x) for x in c) + f"_r{rnd}.json"
            results[c].append(run_one(a, c, os.path.join(out, name)))
            print(f"  round {rnd + 1}/{a.rounds}: {' '.join(str(x) for x in c)}", file=sys.stderr)
    print(f"| suite | batch | threads | math | dtype | fwd | bwd_data | bwd_filter | all passes "
          f"(libconv / {a.peer} ms) | worst layer-pass |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in cfgs:
        totals, worst = summarize(results[c])
        cells = []
        for op in OPS:
            ms, peer = totals[op]
            cells.append(f"{peer / ms:.2f}" if ms > 0 else "n/a")
        ms = sum(t[0] for t in totals.values())
        peer = sum(t[1] for t in totals.values())
        allp = f"**{peer / ms:.2f}** ({ms:.1f} / {peer:.1f})" if ms > 0 else "n/a"
        w = f"{worst[0]:.2f} {worst[1]}" if worst else "n/a"
        suite, batch, threads, math, dtype = c
        print(f"| {suite} | {batch} | {threads} | {math} | {dtype} | " + " | ".join(cells) +
              f" | {allp} | {w} |")


if __name__ == "__main__":
    main()
