#!/usr/bin/env bash
# The main job: builds libconv and runs convbench with the given arguments
# (none: the default suite on the best device). Unsets OPENBLAS_CORETYPE,
# which some environments set to an older core and which halves OpenBLAS's
# speed on AVX-512 machines.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# oneDNN is the peer `--peer onednn` compares with: a benchmark-only package,
# never linked into libconv.
"$root/scripts/deps.sh" libdnnl-dev
"$root/scripts/build.sh"
exec env -u OPENBLAS_CORETYPE "$root/build/tools/convbench/convbench" "$@"
