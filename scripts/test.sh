#!/usr/bin/env bash
# Every test: builds libconv with everything this machine can build (bindings,
# CUDA engine where the toolkit is installed); runs the sanitizer builds
# (ASan+UBSan+LSan over the C tests, TSan over the concurrency tests) and a
# bounded fuzzing run; then the whole CTest suite, last, so that its summary
# closes the output. Each stage runs even when an earlier one failed; the
# exit status is non-zero if any did. Each stage's time is printed at the
# end (docs/testing.md has the breakdown and what each costs).
# Environment: CONV_FUZZ_SECONDS (default 60; 0 skips fuzzing).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

times=()
stage() {  # stage NAME COMMAND...: runs it, records its time; returns its status
  local name="$1" t0 rc
  shift
  t0=$(date +%s)
  echo "test.sh: == $name" >&2
  "$@"
  rc=$?
  times+=("$name $(( $(date +%s) - t0 ))s")
  return $rc
}

stage deps "$root/scripts/deps.sh" all || exit 1
# Every CMake build below -- the release build, and those CTest makes again
# (pip's two builds of the Python package) -- compiles through ccache: the
# pip builds then take the release build's objects instead of compiling
# libconv a second time (190 s of CTest's 529 here). CMake reads these
# variables from the environment.
# The compilers by one name everywhere: CMake picks `c++` by itself and pip's
# build `g++` (Python's sysconfig), and ccache keys on the name.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CC="${CC:-gcc}" CXX="${CXX:-g++}"
fi
stage build "$root/scripts/build.sh" || exit 1

failed=()
stage sanitize "$root/scripts/sanitize.sh" || failed+=(sanitize)
seconds="${CONV_FUZZ_SECONDS:-60}"
if [ "$seconds" != 0 ]; then
  stage fuzz "$root/scripts/fuzz.sh" "$seconds" || failed+=(fuzz)
fi
stage ctest bash -c 'cd "$1" && ctest --output-on-failure --parallel 2 --timeout 900' _ "$root/build" ||
  failed+=(ctest)

echo "test.sh: stage times: ${times[*]}" >&2
if [ ${#failed[@]} -ne 0 ]; then
  echo "test.sh: FAILED stages: ${failed[*]}" >&2
  exit 1
fi
