"""The examples in examples/python run and check themselves."""

import os
import re
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR, require

# Examples that need torch (and scikit-learn, matplotlib) run in python_torch.
TORCH_EXAMPLES = {"train_digits.py"}
EXAMPLES = sorted(p for p in (SOURCE_DIR / "examples" / "python").glob("*.py")
                  if p.name not in TORCH_EXAMPLES)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path):
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "loss" in r.stdout


def test_there_is_an_example():
    assert EXAMPLES, "no example in %s" % (SOURCE_DIR / "examples" / "python")


@pytest.mark.torch
def test_train_digits_short_run(tmp_path):
    """Two epochs of examples/python/train_digits.py: both runs learn, agree, and plot."""
    for module in ("torch", "sklearn", "matplotlib"):
        require(module)
    plot = tmp_path / "loss.png"
    r = subprocess.run([sys.executable, str(SOURCE_DIR / "examples" / "python" / "train_digits.py"),
                        "--epochs", "2", "--plot", str(plot), "--time-convs", "2"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, MPLBACKEND="Agg"))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    accuracies = [float(a) for a in re.findall(r"test accuracy ([0-9.]+)%", out)]
    assert len(accuracies) == 4, out
    assert min(accuracies[1], accuracies[3]) > 80, out      # epoch 2 of each run has learned
    final = re.search(r"final test accuracy: torch.nn ([0-9.]+)%, libconv ([0-9.]+)%", out)
    assert final and abs(float(final.group(1)) - float(final.group(2))) <= 1.0, out
    assert float(re.search(r"largest per-epoch loss difference: (\S+)", out).group(1)) < 1e-3, out
    assert "libconv" in out and "ms" in out.splitlines()[-1], out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
