"""`pip install ./bindings/python` into a fresh virtual environment works.

Slow (it builds libconv from source through scikit-build-core): marked `slow`
and run as a ctest test of its own (python_pip_install). The venv sees the
base interpreter's site-packages for NumPy and pytest (--system-site-packages),
so only scikit-build-core comes from PyPI (or pip's cache).
"""

import os
import subprocess
import venv

import pytest

from conftest import SOURCE_DIR

pytestmark = pytest.mark.slow


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert r.returncode == 0, "%s failed (%d):\n%s\n%s" % (cmd, r.returncode, r.stdout[-6000:],
                                                           r.stderr[-6000:])
    return r.stdout


def test_pip_install_into_a_fresh_venv(tmp_path):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # only what the venv has installed
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = env.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # CONV_PIP_BUILD_DIR (set by CTest): a CMake build directory kept between
    # runs and shared with the python_wheel test, so that of the two source
    # builds of libconv only the first compiles it (docs/testing.md).
    build_dir = os.environ.get("CONV_PIP_BUILD_DIR")
    settings = ["--config-settings=build-dir=%s" % build_dir] if build_dir else []
    run([py, "-m", "pip", "install", "-q", *settings, SOURCE_DIR / "bindings" / "python"],
        env=env, cwd=tmp_path, timeout=900)

    # The installed package is the one imported, with its own libconv.so inside.
    out = run([py, "-c", "import libconv, numpy as np; print(libconv.__file__); "
                         "print(libconv.conv2d(np.ones((1,1,3,3),np.float32), "
                         "np.ones((1,1,3,3),np.float32)).item())"],
              env=env, cwd=tmp_path, timeout=120)
    path, value = out.split()
    assert path.startswith(str(env_dir)), path
    assert float(value) == 9.0

    # The whole suite against the installed package (this test excluded).
    tests = SOURCE_DIR / "bindings" / "python" / "tests"
    run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", tests],
        env=env, cwd=tmp_path, timeout=600)
