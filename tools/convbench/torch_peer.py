#!/usr/bin/env python3
"""torch_peer.py -- the layers of convbench JSON files through PyTorch.

For every row convbench wrote (`convbench --device cuda --json FILE ...`),
times the same layer, pass, dtype, layout and batch through PyTorch's cuDNN
convolution with torch.backends.cudnn.benchmark = True (its own exhaustive
algorithm search), TF32 allowed only where the convbench run had --math fast,
and with convbench's timing policy: warm-up calls (the first one runs the
search), then timed calls each followed by torch.cuda.synchronize(), the
median. Prints a table with both medians and ratio = torch ms / libconv ms
(> 1: libconv is faster), writes it as Markdown with --markdown and all rows
as JSON with --json.

    python3 tools/convbench/torch_peer.py cb_f32_b1.json cb_f16_b32.json \\
        --markdown gpu_vs_torch.md
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
MATH = {-1: "default", 0: "default", 1: "strict", 2: "fast"}


def time_calls(fn, warmup, repeats, target_ms=300.0, window_ms=20.0, enough=50, max_repeats=4000):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    total = 0.0
    while len(times) < (repeats or max_repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) * 1e3
        times.append(t)
        total += t
        if not repeats and len(times) >= 3 and (total >= target_ms or (len(times) >= enough and total >= window_ms)):
            break
    return statistics.median(times)


def layer_call(row, dev):
    n = len(row["in"])
    dt = DTYPES[row["dtype"]]
    b, c, k, g = row["batch"], row["c"], row["k"], row["groups"]
    x = torch.rand((b, c, *row["in"]), device=dev, dtype=dt) * 2 - 1
    w = torch.rand((k, c // g, *row["kernel"]), device=dev, dtype=dt) * 2 - 1
    fmt = {1: None, 2: torch.channels_last, 3: torch.channels_last_3d}[n]
    if row["layout"] == "nhwc" and fmt is not None:
        x = x.contiguous(memory_format=fmt)
        w = w.contiguous(memory_format=fmt)
    stride, dil = row["stride"], row["dilation"]
    pb, pe = row["pad_begin"], row["pad_end"]
    pad = list(pb)
    if pb != pe:  # asymmetric: F.pad first (a copy, as libconv makes), then symmetric 0
        pads = []
        for a in reversed(range(n)):
            pads += [pb[a], pe[a]]
        x = F.pad(x, pads)
        pad = [0] * n
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    y = conv(x, w, None, stride, pad, dil, g)
    dy = torch.rand_like(y) * 2 - 1
    op = row["op"]
    if op == "fwd":
        return lambda: conv(x, w, None, stride, pad, dil, g)
    mask = [True, False, False] if op == "bwd_data" else [False, True, False]
    return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, stride, pad, dil, False,
                                                       [0] * n, g, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="convbench --json outputs")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=0, help="0: adaptive, as convbench")
    ap.add_argument("--markdown", help="write the table here as Markdown")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}", flush=True)
    out = []
    for path in args.files:
        with open(path) as f:
            rows = json.load(f)
        for row in rows:
            if row["status"] != "ok" or row["device"] != "cuda":
                continue
            fast = row.get("math", -1) == 2
            torch.backends.cudnn.allow_tf32 = fast
            torch.backends.cuda.matmul.allow_tf32 = fast
            try:
                fn = layer_call(row, dev)
                t = time_calls(fn, args.warmup, args.repeats)
                err = None
            except Exception as e:  # noqa: BLE001 -- report and go on
                t, err = None, str(e).splitlines()[0]
            r = {k: row[k] for k in ("suite", "layer", "count", "op", "dtype", "layout", "batch",
                                     "algorithm", "ms", "workspace_bytes")}
            r["math"] = MATH.get(row.get("math", -1), "default")
            r["torch_ms"] = t
            r["ratio"] = t / row["ms"] if t and row["ms"] else None
            r["error"] = err
            out.append(r)
            print(f"{r['dtype']:>4} {r['math']:>7} b{r['batch']:<3} {r['layer']:<12} {r['op']:<10} "
                  f"libconv {row['ms']:9.4f} ms  torch {t if t else float('nan'):9.4f} ms  "
                  f"ratio {r['ratio'] if r['ratio'] else float('nan'):6.3f}  {row['algorithm']}"
                  + (f"  ({err})" if err else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| dtype | math | batch | layer | pass | libconv ms | PyTorch ms | ratio | libconv algorithm |\n")
            f.write("|---|---|---|---|---|---|---|---|---|\n")
            for r in out:
                f.write(f"| {r['dtype']} | {r['math']} | {r['batch']} | {r['layer']} | {r['op']} | "
                        f"{r['ms']:.4f} | {r['torch_ms'] if r['torch_ms'] else float('nan'):.4f} | "
                        f"{r['ratio'] if r['ratio'] else float('nan'):.2f} | {r['algorithm']} |\n")
            # per configuration: count-weighted totals and how many rows lose
            f.write("\n| dtype | math | batch | pass | libconv total ms | PyTorch total ms | ratio | rows slower than PyTorch |\n")
            f.write("|---|---|---|---|---|---|---|---|\n")
            keys = []
            for r in out:
                key = (r["dtype"], r["math"], r["batch"], r["op"])
                if key not in keys:
                    keys.append(key)
            for key in keys:
                rs = [r for r in out if (r["dtype"], r["math"], r["batch"], r["op"]) == key and r["torch_ms"]]
                lc = sum(r["ms"] * r["count"] for r in rs)
                tc = sum(r["torch_ms"] * r["count"] for r in rs)
                slow = sum(1 for r in rs if r["ratio"] < 1)
                f.write(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {lc:.3f} | {tc:.3f} | "
                        f"{tc / lc if lc else float('nan'):.2f} | {slow} of {len(rs)} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
