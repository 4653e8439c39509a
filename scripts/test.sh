#!/usr/bin/env bash
# Every test: builds libconv with everything this machine can build (bindings,
# CUDA engine where the toolkit is installed); runs the sanitizer builds
# (ASan+UBSan+LSan over the C tests, TSan over the concurrency tests) and a
# bounded fuzzing run; then the whole CTest suite, last, so that its summary
# closes the output. Each stage runs even when an earlier one failed; the
# exit status is non-zero if any did.
# Environment: CONV_FUZZ_SECONDS (default 60; 0 skips fuzzing).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

"$root/scripts/build.sh" || exit 1

failed=()
"$root/scripts/sanitize.sh" || failed+=(sanitize)
seconds="${CONV_FUZZ_SECONDS:-60}"
if [ "$seconds" != 0 ]; then
  "$root/scripts/fuzz.sh" "$seconds" || failed+=(fuzz)
fi
(cd "$root/build" && ctest --output-on-failure --parallel 2 --timeout 900) || failed+=(ctest)

if [ ${#failed[@]} -ne 0 ]; then
  echo "test.sh: FAILED stages: ${failed[*]}" >&2
  exit 1
fi
