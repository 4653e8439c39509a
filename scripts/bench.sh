#!/usr/bin/env bash
# The main job: installs what building libconv and convbench needs (the
# compiler, CMake, Ninja, pkg-config, OpenBLAS -- nothing the tests need),
# builds those two alone in build-bench/ (no bindings, tests, sanitizer or
# fuzz builds; the CUDA engine where a CUDA toolkit is installed), and runs
# convbench with the given arguments (none: the default suite on the best
# device). Each stage says what it does; the build shows its progress.
#   scripts/bench.sh --verify                  the README's first command
#   scripts/bench.sh --suite all --peer onednn
# Environment: CONV_BENCH_BUILD_DIR (default build-bench/), CONV_CUDNN_GRAPH=1
# (build the cuDNN graph-API solver even where no GPU is seen; it needs
# cudnn-frontend's headers from PyPI and minutes more of compiling). OPENBLAS_CORETYPE is
# unset for the run: some environments set an older core, which halves
# OpenBLAS's speed on AVX-512 machines.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CONV_BENCH_BUILD_DIR:-$root/build-bench}"
say() { echo "bench: $*" >&2; }
start=$(date +%s)

say "[1/3] packages for the build (only what is missing)"
"$root/scripts/deps.sh" build

# The CUDA engine is built where its toolkit is; its graph-API solver (AUTO's
# first choice on a GPU, docs/gpu.md) where a GPU is seen or when asked for:
# without a GPU the suite runs on the CPU, and the minutes are saved.
cuda=(-DCONV_WITH_CUDA=OFF -DCONV_WITH_NCCL=OFF)
what="the CPU engine"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=(-DCONV_WITH_CUDA=AUTO -DCONV_WITH_NCCL=OFF)
  what="the CPU engine and the CUDA engine"
  if { [ "${CONV_CUDNN_GRAPH:-0}" = 1 ] || nvidia-smi -L >/dev/null 2>&1; } &&
     dir="$("$root/scripts/cudnn_frontend.sh")"; then
    cuda+=("-DCONV_CUDNN_FRONTEND_DIR=$dir")
    what="$what with its graph-API solver"
  else
    cuda+=(-DCONV_CUDNN_FRONTEND_DIR=)
  fi
fi
say "[2/3] building libconv ($what) and convbench in $build: about 2-4 minutes on 2 cores, the first time"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCONV_BUILD_TESTS=OFF -DCONV_BUILD_TOOLS=ON -DCONV_BUILD_STATIC=OFF \
  -DCONV_WITH_PYTHON=OFF -DCONV_WITH_JAVA=OFF -DCONV_WITH_MPI=OFF "${cuda[@]}" >/dev/null
cmake --build "$build" --target convbench --parallel
say "set up in $(( $(date +%s) - start )) s"

# `--peer onednn` times oneDNN 3.x beside libconv: fetch it first (a
# benchmark-only download, cached; convbench loads it at run time and
# libconv never links it).
prev=""
for a in "$@"; do
  if [ "$a" = "--peer=onednn" ] || { [ "$prev" = "--peer" ] && [ "$a" = "onednn" ]; }; then
    say "fetching oneDNN 3.2 from PyPI for --peer onednn (once, cached)"
    "$root/scripts/onednn.sh" >/dev/null
  fi
  prev="$a"
done
say "[3/3] convbench $*"
exec env -u OPENBLAS_CORETYPE "$build/tools/convbench/convbench" "$@"
