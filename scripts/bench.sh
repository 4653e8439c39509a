#!/usr/bin/env bash
# The main job: builds libconv and runs convbench with the given arguments
# (none: the default suite on the best device). Unsets OPENBLAS_CORETYPE,
# which some environments set to an older core and which halves OpenBLAS's
# speed on AVX-512 machines.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
# `--peer onednn` times oneDNN 3.x beside libconv: fetch it first (a
# benchmark-only download, cached; convbench loads it at run time and
# libconv never links it).
prev=""
for a in "$@"; do
  if [ "$a" = "--peer=onednn" ] || { [ "$prev" = "--peer" ] && [ "$a" = "onednn" ]; }; then
    "$root/scripts/onednn.sh" >/dev/null
  fi
  prev="$a"
done
exec env -u OPENBLAS_CORETYPE "$root/build/tools/convbench/convbench" "$@"
