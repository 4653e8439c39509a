#!/usr/bin/env bash
# CTest python_wheel: the wheel scripts/wheel.sh makes installs and runs
# where nothing could build it.
#   check_wheel.sh WORK_DIR
# Environment: PYTHON (the interpreter to build for), CONV_SOURCE_DIR, and
# WITHOUT_GPU_MPI + HIDDEN_SONAMES (tests/install/without_gpu_mpi.sh and
# the libraries it hides; unset: that part is skipped).
#  1. scripts/wheel.sh: a manylinux_2_*_x86_64 wheel (pip wheel +
#     auditwheel repair), its CMake build kept in WORK_DIR/cmake-build;
#  2. a fresh venv installs it with --no-index --no-deps (no source build
#     can happen; NumPy comes from the base interpreter's site-packages);
#  3. with PATH holding only the venv's bin/ (no cmake, swig or compiler can
#     be reached: checked), smoke.py runs a forward and both backward passes
#     against the installed package -- also where CUDA, cuDNN and MPI are
#     hidden.
set -euo pipefail
work="$1"
: "${PYTHON:?}" "${CONV_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work/dist" "$work/venv"
CONV_WHEEL_BUILD_DIR="$work/cmake-build" "$CONV_SOURCE_DIR/scripts/wheel.sh" "$work/dist"
wheels=("$work"/dist/libconv-*-manylinux_2_*_x86_64.whl)
[ -f "${wheels[0]}" ] || fail "no manylinux_2_*_x86_64 wheel in $work/dist: $(ls "$work/dist")"
echo "-- wheel: $(basename "${wheels[0]}")"

"$PYTHON" -m venv --system-site-packages "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --no-index --no-deps --disable-pip-version-check "${wheels[0]}"

clean=(env -i "HOME=$HOME" "PATH=$work/venv/bin" PYTHONNOUSERSITE=1)
cd "$work"  # not where CTest starts: bindings/python of the build tree holds a package too
"${clean[@]}" "$py" - <<'PY'
import shutil, sys
import libconv
reachable = [t for t in ("cmake", "swig", "cc", "gcc", "c++", "g++", "clang", "nvcc")
             if shutil.which(t)]
assert not reachable, "the scrubbed PATH still reaches %s" % reachable
assert libconv.__file__.startswith(sys.prefix), "libconv imported from %s" % libconv.__file__
PY
"${clean[@]}" "$py" "$CONV_SOURCE_DIR/bindings/python/tests/smoke.py"
if [ -n "${WITHOUT_GPU_MPI:-}" ]; then
  rc=0
  # shellcheck disable=SC2086  # the two sonames
  bash "$WITHOUT_GPU_MPI" "${clean[@]}" "$py" "$CONV_SOURCE_DIR/bindings/python/tests/smoke.py" \
    --without $HIDDEN_SONAMES || rc=$?
  if [ "$rc" = 77 ]; then
    echo "-- no mount namespace here: the run without CUDA, cuDNN and MPI was skipped"
  elif [ "$rc" != 0 ]; then
    fail "the wheel failed where CUDA, cuDNN and MPI are hidden ($rc)"
  fi
fi
