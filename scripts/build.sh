#!/usr/bin/env bash
# Configures and builds libconv (Release) into build/ after installing what
# is missing. Extra arguments go to CMake's configure step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/pydeps.sh"     # numpy and pytest for the Python binding (default python3)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" --parallel
