#!/usr/bin/env bash
# Fetches oneDNN 3.2 for benchmarking: the peer `convbench --peer onednn`
# times libconv against. Downloads the PyPI wheels onednn-cpu-gomp and
# onednn-devel-cpu-gomp (libdnnl.so.3 on GNU OpenMP, and its headers; no
# build) with pip and unpacks them into a cache folder, once:
#   ${XDG_CACHE_HOME:-~/.cache}/libconv/onednn-VERSION/{lib,include}
# convbench looks there by itself; elsewhere give the folder to
# `--peer-lib` or CONVBENCH_ONEDNN_LIB. Prints the lib folder, so:
#   export CONVBENCH_ONEDNN_LIB="$(scripts/onednn.sh)"
# Not installed by default and not needed by the build or the tests (the
# peer's CTest skips without it); libconv never links oneDNN.
#   usage: scripts/onednn.sh [VERSION]   (default 2023.2.0, oneDNN 3.2; the
#   package version, as on PyPI; convbench's default place is 2023.2.0's)
set -euo pipefail
version="${1:-2023.2.0}"
dest="${XDG_CACHE_HOME:-$HOME/.cache}/libconv/onednn-$version"

if [ -e "$dest/lib/libdnnl.so.3" ] && [ -e "$dest/include/oneapi/dnnl/dnnl.h" ]; then
  echo "$dest/lib"
  exit 0
fi
[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] ||
  { echo "onednn: the wheels are for Linux x86_64, not $(uname -s)-$(uname -m)" >&2; exit 1; }
py="$(command -v python3 || true)"
[ -n "$py" ] || { echo "onednn: needs python3 with pip" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "onednn: downloading onednn-cpu-gomp and onednn-devel-cpu-gomp $version into $dest" >&2
"$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$work/wheels" "onednn-cpu-gomp==$version" "onednn-devel-cpu-gomp==$version" >&2
# A wheel is a zip; its files live under NAME.data/data/ (lib/, include/, share/).
for w in "$work"/wheels/*.whl; do
  "$py" -m zipfile -e "$w" "$work/unpacked"
done
mkdir -p "$work/onednn"
for d in "$work"/unpacked/*.data/data; do
  cp -a "$d"/. "$work/onednn/"
done
[ -e "$work/onednn/lib/libdnnl.so.3" ] ||
  { echo "onednn: the wheels of $version hold no lib/libdnnl.so.3" >&2; exit 1; }
# Wheels cannot hold symlinks: libdnnl.so, .so.3 and .so.3.N are three copies
# of one 50 MB file. Keep one.
(cd "$work/onednn/lib" && for f in libdnnl.so.3.*; do
   for l in libdnnl.so libdnnl.so.3; do
     if [ -f "$l" ] && [ ! -L "$l" ] && cmp -s "$f" "$l"; then ln -sf "$f" "$l"; fi
   done
 done)
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$work/onednn" "$dest"
echo "$dest/lib"
