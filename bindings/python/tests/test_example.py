"""The example in examples/python runs and checks itself."""

import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

EXAMPLES = sorted((SOURCE_DIR / "examples" / "python").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path):
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "loss" in r.stdout


def test_there_is_an_example():
    assert EXAMPLES, "no example in %s" % (SOURCE_DIR / "examples" / "python")
