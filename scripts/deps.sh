#!/usr/bin/env bash
# Installs what building and testing libconv needs on Debian/Ubuntu, and only
# what is missing (a machine that has it all runs no apt-get at all).
#   build:     cmake ninja g++ pkg-config libopenblas-dev
#   tests:     libcmocka-dev; make, abigail-tools, dpkg-dev, file, lintian and gfortran for
#              the install/ABI/package tests (OpenBLAS's static link names -lgfortran)
#   bindings:  swig; default-jdk-headless and junit4 (Java); the Python side's pip
#              packages come from scripts/pydeps.sh
#   torch:     python3-torch python3-numpy python3-pytest for Debian's /usr/bin/python3,
#              which runs the libconv.torch tests (ctest python_torch; same CPython
#              3.11 ABI as the binding's interpreter), and python3-sklearn
#              python3-matplotlib for examples/python/train_digits.py
#   comm:      openmpi-bin libopenmpi-dev (the MPI backend and its mpirun tests)
# The CUDA engine's graph solver needs cudnn-frontend's headers, which come
# from PyPI, not apt: scripts/cudnn_frontend.sh (run by scripts/build.sh).
# oneDNN, the peer convbench compares with, is not a Debian package here:
# scripts/onednn.sh fetches oneDNN 3.x from PyPI for benchmarking.
set -euo pipefail

packages=(cmake ninja-build g++ make pkg-config libopenblas-dev libcmocka-dev
          abigail-tools dpkg-dev file lintian gfortran
          swig default-jdk-headless junit4
          python3-torch python3-numpy python3-pytest python3-sklearn python3-matplotlib
          openmpi-bin libopenmpi-dev openssh-client)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
