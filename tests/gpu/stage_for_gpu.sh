#!/bin/sh
# Copies what tests/gpu/run_on_gpu.sh needs from a CUDA build into one
# folder (default build-cuda/stage): libconv, the GPU tests, bench_overhead,
# convbench, and the shared libraries they load that a bare GPU machine may
# lack (OpenBLAS and its Fortran runtime, CMocka). cuDNN is not copied: the
# GPU machine has its own (a system install or pip's nvidia-cudnn-cu13).
# Used where the GPU machine cannot build (no OpenBLAS/CMocka there);
# docs/gpu.md has the plain configure-build-test route.
set -eu
BUILD=${1:-build-cuda}
STAGE=${2:-$BUILD/stage}
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/lib"
cp -L "$BUILD/src/libconv.so.0" "$STAGE/lib/"
for t in tests/gpu/test_gpu_conv tests/gpu/test_gpu_api tests/gpu/bench_overhead tools/convbench/convbench; do
    cp "$BUILD/$t" "$STAGE/bin/"
done
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libcmocka.so.0; do
    path=$(ldd "$BUILD/src/libconv.so.0" "$BUILD/tests/gpu/test_gpu_conv" | awk -v l="$lib" '$1 == l { print $3; exit }')
    if [ -n "$path" ]; then cp -L "$path" "$STAGE/lib/"; fi
done
du -sh "$STAGE"
