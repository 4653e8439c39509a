"""pytest configuration of the libconv Python tests.

Run from the build tree (ctest does this):
    PYTHONPATH=<build>/bindings/python python3 -m pytest bindings/python/tests
or against an installed package (no PYTHONPATH). Tests marked `slow`
(the `pip install` into a fresh venv) are a ctest test of their own.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import libconv
from libconv import _libconv

SOURCE_DIR = Path(os.environ.get("CONV_SOURCE_DIR") or Path(__file__).resolve().parents[3])
HEADER = SOURCE_DIR / "include" / "conv.h"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: minutes-long tests (pip install into a fresh venv)")
    config.addinivalue_line("markers", "torch: needs PyTorch (ctest python_torch runs these with "
                                       "an interpreter that has it)")


def require(module):
    """``import module``; a skip where it is not installed, but a failure under
    CONV_REQUIRE_TORCH=1 (ctest python_torch, whose interpreter must have torch
    and what the torch tests and examples use)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CONV_REQUIRE_TORCH") == "1":
            pytest.fail("CONV_REQUIRE_TORCH=1 but %s cannot import %s: %s"
                        % (sys.executable, module, e), pytrace=False)
        pytest.skip("%s is not installed for %s" % (module, sys.executable),
                    allow_module_level=True)


def import_torch():
    """torch, or a skip / failure as :func:`require` says."""
    return require("torch")


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: failures reproduce."""
    seed = sum(ord(ch) * (i + 1) for i, ch in enumerate(request.node.nodeid)) % (2 ** 32)
    return np.random.default_rng(seed)


@pytest.fixture
def ctx():
    with libconv.Context("cpu") as c:
        yield c


@pytest.fixture(scope="session")
def header_text():
    if not HEADER.exists():
        pytest.skip("conv.h not found at %s (set CONV_SOURCE_DIR)" % HEADER)
    return HEADER.read_text()


def requires_c(*names):
    """Skips a test of C functions this build's conv.h does not have yet."""
    missing = [n for n in names if not hasattr(_libconv, n)]
    return pytest.mark.skipif(bool(missing), reason="conv.h lacks %s" % ", ".join(missing))
