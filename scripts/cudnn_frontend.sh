#!/usr/bin/env bash
# Fetches the cudnn-frontend C++ headers (the graph API the CUDA engine's
# "cudnn_graph" solver is built on, docs/gpu.md) from PyPI's
# nvidia-cudnn-frontend wheel -- its include/ folder is the header-only C++
# API, nlohmann json included -- into a cache, never into the source tree,
# and prints the include directory (CMake's CONV_CUDNN_FRONTEND_DIR).
#   CONV_CUDNN_FRONTEND_VERSION  the pinned release (default below)
#   CONV_DEPS_CACHE              the cache (default ${XDG_CACHE_HOME:-~/.cache}/libconv)
# Exit status 0 with the directory on stdout, else non-zero with why on
# stderr: building without it only leaves the graph solvers out.
set -euo pipefail

version="${CONV_CUDNN_FRONTEND_VERSION:-1.32.0}"
cache="${CONV_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libconv}"
dest="$cache/cudnn-frontend-$version"
if [ -f "$dest/include/cudnn_frontend.h" ]; then
  echo "$dest/include"
  exit 0
fi

py="$(command -v python3 || true)"
if [ -z "$py" ]; then
  echo "cudnn_frontend.sh: no python3 to run pip with" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Any platform's wheel has the same headers; pip picks this interpreter's.
if ! "$py" -m pip download --quiet --no-deps --only-binary=:all: \
       "nvidia-cudnn-frontend==$version" -d "$tmp" >&2; then
  echo "cudnn_frontend.sh: pip could not download nvidia-cudnn-frontend==$version" >&2
  exit 1
fi
mkdir -p "$cache"
"$py" - "$tmp" "$tmp/unpacked" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_cudnn_frontend-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])
PY
if [ ! -f "$tmp/unpacked/include/cudnn_frontend.h" ]; then
  echo "cudnn_frontend.sh: the wheel has no include/cudnn_frontend.h" >&2
  exit 1
fi
rm -rf "$dest.partial"
mkdir -p "$dest.partial"
mv "$tmp/unpacked/include" "$dest.partial/include"
rm -rf "$dest"
mv "$dest.partial" "$dest"   # whole or not at all, for concurrent builds
echo "$dest/include"
