#!/usr/bin/env bash
# Configures and builds libconv (Release) into build/ after installing what
# is missing. Extra arguments go to CMake's configure step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
"$root/scripts/pydeps.sh"     # numpy and pytest for the Python binding (default python3)
# cudnn-frontend's headers for the CUDA engine's graph solvers, where there is
# a CUDA toolkit to build that engine with; without them those solvers are
# left out, nothing else (docs/gpu.md).
frontend=()
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  if dir="$("$root/scripts/cudnn_frontend.sh")"; then
    frontend=("-DCONV_CUDNN_FRONTEND_DIR=$dir")
  fi
fi
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${frontend[@]}" "$@" >/dev/null
cmake --build "$root/build" --parallel
