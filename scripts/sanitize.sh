#!/usr/bin/env bash
# Sanitizer builds, each in a build directory of its own, exiting non-zero on
# any test failure or sanitizer report:
#   asan  the whole C test suite (ctest label "unit") built with
#         CONV_SANITIZE="address;undefined": AddressSanitizer, LeakSanitizer
#         (leaks fail the test at exit) and UndefinedBehaviorSanitizer
#         (-fno-sanitize-recover: any report aborts); build-asan/
#   tsan  the concurrency tests (ctest label "tsan": test_threads, test_plans,
#         test_threads_churn, test_thread_pool, test_api, test_comm_local)
#         built with CONV_SANITIZE=thread; build-tsan/
# Usage: scripts/sanitize.sh [asan] [tsan]     (none: both)
# Environment: CONV_ASAN_BUILD_DIR, CONV_TSAN_BUILD_DIR (build directories),
# CONV_SANITIZE_JOBS (parallel compile and test jobs, default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${CONV_SANITIZE_JOBS:-2}"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)

"$root/scripts/deps.sh"

# RelWithDebInfo: optimised like the release, with line numbers in reports.
# Only the C library and its tests: no bindings, no tools, no GPU, no MPI.
configure() {
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCONV_SANITIZE="$2" -DCONV_WITH_PYTHON=OFF -DCONV_WITH_JAVA=OFF \
    -DCONV_BUILD_TOOLS=OFF -DCONV_WITH_CUDA=OFF -DCONV_WITH_NCCL=OFF -DCONV_WITH_MPI=OFF \
    >/dev/null
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"

failed=()
for kind in "${kinds[@]}"; do
  case "$kind" in
  asan)
    dir="${CONV_ASAN_BUILD_DIR:-$root/build-asan}"
    echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer in $dir"
    configure "$dir" "address;undefined"
    cmake --build "$dir" --target conv_unit_tests --parallel "$jobs"
    ctest --test-dir "$dir" -L unit --output-on-failure --parallel "$jobs" --timeout 900 \
      || failed+=(asan)
    ;;
  tsan)
    dir="${CONV_TSAN_BUILD_DIR:-$root/build-tsan}"
    echo "sanitize: ThreadSanitizer in $dir"
    configure "$dir" "thread"
    cmake --build "$dir" --target conv_tsan_tests --parallel "$jobs"
    ctest --test-dir "$dir" -L tsan --output-on-failure --parallel "$jobs" --timeout 900 \
      || failed+=(tsan)
    ;;
  *)
    echo "sanitize: unknown kind '$kind' (asan or tsan)" >&2
    exit 2
    ;;
  esac
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "sanitize: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "sanitize: ${kinds[*]}: clean"
