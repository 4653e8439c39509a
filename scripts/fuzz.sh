#!/usr/bin/env bash
# Builds the libFuzzer target fuzz/fuzz_conv.c with clang (AddressSanitizer +
# UndefinedBehaviorSanitizer + LeakSanitizer) and runs it for a bounded time
# over the seed corpus fuzz/corpus and the past findings in fuzz/regressions.
# Exits non-zero on any crash, broken invariant, leak, sanitizer report or
# timeout; the input that caused it is left in <build>/run/artifacts/ (add
# it to fuzz/regressions/ once fixed: tests/test_fuzz_replay replays it).
# Usage: scripts/fuzz.sh [seconds]             (default 60)
# Environment: CONV_FUZZ_BUILD_DIR (default build-fuzz/), CONV_FUZZ_JOBS
# (parallel compile jobs, default 2), CONV_FUZZ_FLAGS (more libFuzzer flags).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${CONV_FUZZ_BUILD_DIR:-$root/build-fuzz}"

"$root/scripts/deps.sh" clang libclang-rt-14-dev   # libFuzzer is in libclang-rt-14-dev

cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" --parallel "${CONV_FUZZ_JOBS:-2}"

# New inputs go to run/corpus: the repository's corpus is only read.
run="$build/run"
rm -rf "$run"
mkdir -p "$run/corpus" "$run/artifacts"
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
echo "fuzz: running for ${seconds}s (log: $run/fuzz.log)"
set +e
# shellcheck disable=SC2086
"$build/conv_fuzz" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$run/artifacts/" ${CONV_FUZZ_FLAGS:-} \
  "$run/corpus" "$root/fuzz/corpus" "$root/fuzz/regressions" >"$run/fuzz.log" 2>&1
status=$?
set -e
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "$run/fuzz.log" \
  | sed 's/^/fuzz: /' || true
findings=$(find "$run/artifacts" -type f | wc -l)
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
  echo "fuzz: FAILED (exit status $status, $findings input(s) in $run/artifacts):" >&2
  grep -E 'ERROR|runtime error|invariant broken|SUMMARY|Test unit written' "$run/fuzz.log" \
    | head -20 >&2 || true
  echo "fuzz: reproduce with $build/conv_fuzz <input>; CONV_FUZZ_DEBUG=1 explains a compute input" >&2
  exit 1
fi
echo "fuzz: clean"
