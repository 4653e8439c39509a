#!/usr/bin/env bash
# Installs Debian/Ubuntu packages libconv needs, and only those missing (a
# machine that has them all runs no apt-get at all).
#   scripts/deps.sh build [PACKAGE...]   what building libconv and convbench needs
#                                        (scripts/bench.sh, the main job)
#   scripts/deps.sh all [PACKAGE...]     that, and what the tests need
#                                        (scripts/test.sh); the default
# The sets:
#   build:     cmake ninja g++ pkg-config libopenblas-dev libxbyak-dev (header-only:
#              the run-time code generator, src/cpu/jit)
#   tests:     libcmocka-dev; make, abigail-tools, dpkg-dev, file, lintian and gfortran for
#              the install/ABI/package tests (OpenBLAS's static link names -lgfortran)
#   bindings:  swig; default-jdk-headless and junit4 (Java); the Python side's pip
#              packages come from scripts/pydeps.sh
#   torch:     python3-torch python3-numpy python3-pytest for Debian's /usr/bin/python3,
#              which runs the libconv.torch tests (ctest python_torch; same CPython
#              3.11 ABI as the binding's interpreter), and python3-sklearn
#              python3-matplotlib for examples/python/train_digits.py
#   comm:      openmpi-bin libopenmpi-dev (the MPI backend and its mpirun tests)
#   ccache:    the test command's builds share compilations through it (the
#              pip builds of the Python tests recompile the release build's
#              objects otherwise; docs/testing.md)
# The CUDA engine's graph solver needs cudnn-frontend's headers, which come
# from PyPI, not apt: scripts/cudnn_frontend.sh. oneDNN, the peer convbench
# compares with, is not a Debian package here: scripts/onednn.sh fetches
# oneDNN 3.x from PyPI for benchmarking.
set -euo pipefail

set_name="all"
case "${1:-}" in
build | all) set_name="$1"; shift ;;
esac

packages=(cmake ninja-build g++ pkg-config libopenblas-dev libxbyak-dev)
if [ "$set_name" = all ]; then
  packages+=(make libcmocka-dev abigail-tools dpkg-dev file lintian gfortran
             swig default-jdk-headless junit4
             python3-torch python3-numpy python3-pytest python3-sklearn python3-matplotlib
             openmpi-bin libopenmpi-dev openssh-client ccache)
fi
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

# What to expect: the build set is a few hundred MB (OpenBLAS), a minute or
# two; the whole set brings PyTorch and a JDK, several minutes to tens of
# minutes depending on the mirror.
what="for the build"
[ "$set_name" = all ] && what="for the build and the tests"
echo "deps: installing ${#missing[@]} Debian package(s) $what: ${missing[*]}" >&2
if [ "$set_name" = all ] && [ ${#missing[@]} -gt 6 ]; then
  echo "deps: (PyTorch and a JDK among them: several minutes, more on a slow mirror)" >&2
else
  echo "deps: (usually one to three minutes)" >&2
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
echo "deps: apt-get update" >&2
$sudo apt-get update -qq
# One line per package as apt unpacks it: progress a person can follow.
set +e
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" |
  grep --line-buffered -E '^(Unpacking|Setting up) ' | sed -u 's/^/deps:   /' >&2
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { echo "deps: apt-get install failed ($status)" >&2; exit "$status"; }
echo "deps: done in $(( $(date +%s) - start )) s" >&2
