#!/usr/bin/env python3
"""A small CNN trained on scikit-learn's handwritten digits, twice: with
torch.nn's convolutions and with libconv.torch's, from the same initial
weights, on the same batches. Prints each epoch's loss and test accuracy
with a progress bar, and saves a PNG plot of both loss curves.

The digits (1797 images of 8x8 pixels, 10 classes) ship with scikit-learn:
nothing is downloaded. Needs torch, scikit-learn and matplotlib (Debian:
python3-torch python3-sklearn python3-matplotlib).

Run from the build tree:
    PYTHONPATH=build/bindings/python python3 examples/python/train_digits.py
Options: --epochs N, --plot PATH, --math MODE (libconv's accuracy mode:
strict, the default, or default/fast, which allow Winograd), --time-convs
REPS (times the model's convolutions, forward and backward, under both),
--time-steps REPS (times whole training steps of both, interleaved).
"""

import argparse
import copy
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import libconv.torch as lt


def load_data(seed):
    """(train images, train labels, test images, test labels) as tensors, 25% held out."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # N, 1, 8, 8
    y = torch.tensor(digits.target, dtype=torch.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)
    return xtr, ytr, xte, yte


def make_model(seed):
    """conv 1->16 -> relu -> conv 16->32 -> relu -> maxpool -> linear 512->10 (torch.nn)."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 10))


def progress(label, done, total, width=30):
    """A text progress bar, redrawn in place (drawn once, full, when not on a terminal)."""
    if done < total and not sys.stdout.isatty():
        return
    filled = width * done // total
    sys.stdout.write("\r%-8s [%s%s] %3d/%d" % (label, "#" * filled, "." * (width - filled), done, total))
    sys.stdout.flush()


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def train(name, model, data, epochs, batch_size, seed):
    """Trains ``model`` in place; returns per-epoch (mean loss, test accuracy)."""
    xtr, ytr, xte, yte = data
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.Generator().manual_seed(seed)  # the same batches for both runs
    history = []
    steps = (len(xtr) + batch_size - 1) // batch_size
    for epoch in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(len(xtr), generator=order)
        total = 0.0
        for step in range(steps):
            idx = perm[step * batch_size:(step + 1) * batch_size]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            progress("%s %d" % (name, epoch), step + 1, steps)
        model.eval()
        history.append((total / len(xtr), accuracy(model, xte, yte)))
        sys.stdout.write("  loss %.4f  test accuracy %.2f%%\n" % (history[-1][0], 100 * history[-1][1]))
    return history


def interleaved_medians(runs, reps, warmup):
    """Median milliseconds of each of ``runs`` (name -> callable), their calls
    interleaved (one of each in turn) so that all see the same moments of a busy
    machine; the first ``warmup`` rounds are not timed (plans, workspaces, caches)."""
    times = {name: [] for name in runs}
    for rep in range(warmup + reps):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            if rep >= warmup:
                times[name].append(1e3 * (time.perf_counter() - t0))
    return {name: statistics.median(t) for name, t in times.items()}


def time_convolutions(torch_model, libconv_model, batch, reps):
    """Median milliseconds of the convolutions' forward + backward on one batch, per model."""
    def run(model):
        convs = [m for m in model if isinstance(m, torch.nn.Conv2d)]
        x = batch.clone().requires_grad_()
        h = F.relu(convs[0](x))
        y = convs[1](h)
        y.backward(torch.ones_like(y))

    return interleaved_medians({"torch.nn": lambda: run(torch_model),
                                "libconv": lambda: run(libconv_model)}, reps, warmup=3)


def time_steps(models, data, batch_size, reps):
    """Median milliseconds of one whole training step (forward, loss, backward, SGD
    update) per model."""
    xtr, ytr = data[0][:batch_size], data[1][:batch_size]

    def stepper(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step():
            loss = F.cross_entropy(model(xtr), ytr)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return step

    return interleaved_medians({name: stepper(m) for name, m in models.items()}, reps, warmup=5)


def plot(histories, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, history), style in zip(histories.items(), ("-o", "--x")):
        ax.plot(range(1, len(history) + 1), [h[0] for h in history], style, label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (cross-entropy)")
    ax.set_title("digits CNN: torch.nn vs libconv.torch convolutions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", default="train_digits.png", help="where to save the loss plot")
    ap.add_argument("--math", default="strict", choices=["strict", "default", "fast"],
                    help="libconv's math mode (default: strict, as libconv.torch's)")
    ap.add_argument("--time-convs", type=int, default=0, metavar="REPS",
                    help="also time the convolutions (forward + backward, median of REPS)")
    ap.add_argument("--time-steps", type=int, default=0, metavar="REPS",
                    help="also time whole training steps, the two models interleaved "
                         "(median of REPS)")
    args = ap.parse_args(argv)

    data = load_data(args.seed)
    torch_model = make_model(args.seed)
    libconv_model = lt.convert(copy.deepcopy(torch_model), math=args.math)  # same initial weights
    print("torch %s, %d threads; libconv math %s; train %d, test %d digits" % (
        torch.__version__, torch.get_num_threads(), args.math, len(data[0]), len(data[2])))

    histories = {}
    for name, model in (("torch.nn", torch_model), ("libconv", libconv_model)):
        print("== %s convolutions" % name)
        histories[name] = train(name, model, data, args.epochs, args.batch_size, args.seed)

    print("final test accuracy: torch.nn %.2f%%, libconv %.2f%%" % (
        100 * histories["torch.nn"][-1][1], 100 * histories["libconv"][-1][1]))
    gap = max(abs(a[0] - b[0]) for a, b in zip(histories["torch.nn"], histories["libconv"]))
    print("largest per-epoch loss difference: %.2e" % gap)
    plot(histories, args.plot)
    print("loss curves saved to %s" % args.plot)

    if args.time_convs:
        ms = time_convolutions(torch_model, libconv_model, data[0][:args.batch_size], args.time_convs)
        print("convolutions, forward + backward of a batch of %d (median of %d, interleaved): "
              "torch.nn %.3f ms, libconv %.3f ms, ratio %.2f" % (
                  args.batch_size, args.time_convs, ms["torch.nn"], ms["libconv"],
                  ms["libconv"] / ms["torch.nn"]))
    if args.time_steps:
        ms = time_steps({"torch.nn": torch_model, "libconv": libconv_model}, data,
                        args.batch_size, args.time_steps)
        print("training step (forward, loss, backward, SGD) on a batch of %d (median of %d, "
              "interleaved): torch.nn %.3f ms, libconv %.3f ms, ratio %.2f" % (
                  args.batch_size, args.time_steps, ms["torch.nn"], ms["libconv"],
                  ms["libconv"] / ms["torch.nn"]))


if __name__ == "__main__":
    main()
