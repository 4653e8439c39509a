#!/usr/bin/env bash
# libconv's ABI check, with libabigail (Debian: abigail-tools).
#
#   abi/abi.sh build BUILD_DIR     configure and build a Debug (-g) libconv.so in
#                                  BUILD_DIR (abidw reads types from DWARF: a
#                                  Release build has none); prints its path
#   abi/abi.sh dump LIB OUT.abi    write LIB's public ABI the way abi/ records it
#   abi/abi.sh check LIB           compare LIB with abi/libconv-<major>.abi;
#                                  exit 1 on any incompatible change
#   abi/abi.sh test BUILD_DIR      build + check: ctest's abi_check (exit 77,
#                                  "skipped", where abigail-tools is missing)
#   abi/abi.sh update [BUILD_DIR]  build + dump into abi/libconv-<major>.abi:
#                                  recording a new baseline (abi/update-baseline.sh)
#
# Compatible, and so accepted: added functions, enumerators added to an enum,
# renamed parameters. Anything else that abidiff reports fails: a removed
# function, a changed parameter or return type, an added or removed
# parameter, a changed enumerator value, a changed SONAME. See docs/abi.md.
#
# Settings from the environment: CMAKE (cmake), GENERATOR (Ninja when ninja
# is installed), CC and CXX (the compilers; default: CMake's choice).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
suppr="$here/libconv.suppr"
cmake="${CMAKE:-cmake}"
major="$(sed -n 's/^#define CONV_VERSION_MAJOR \([0-9][0-9]*\).*/\1/p' "$root/include/conv.h")"
[ -n "$major" ] || { echo "abi.sh: no CONV_VERSION_MAJOR in include/conv.h" >&2; exit 1; }
baseline="$here/libconv-$major.abi"

have_abigail() { command -v abidw > /dev/null && command -v abidiff > /dev/null; }

build() {
  local dir="$1" gen="${GENERATOR:-}"
  if [ -z "$gen" ]; then
    if command -v ninja > /dev/null; then gen=Ninja; else gen="Unix Makefiles"; fi
  fi
  local args=(-S "$root" -B "$dir" -G "$gen" -DCMAKE_BUILD_TYPE=Debug
              -DCONV_BUILD_TESTS=OFF -DCONV_BUILD_TOOLS=OFF -DCONV_BUILD_STATIC=OFF
              -DCONV_WITH_CUDA=OFF -DCONV_WITH_NCCL=OFF -DCONV_WITH_MPI=OFF
              -DCONV_WITH_PYTHON=OFF -DCONV_WITH_JAVA=OFF -DCONV_SANITIZE=)
  [ -n "${CC:-}" ] && args+=(-DCMAKE_C_COMPILER="$CC")
  [ -n "${CXX:-}" ] && args+=(-DCMAKE_CXX_COMPILER="$CXX")
  # A build directory of another generator is started afresh.
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=$gen" "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  "$cmake" "${args[@]}" > "$dir/abi-configure.log" 2>&1 ||
    { cat "$dir/abi-configure.log" >&2; echo "abi.sh: configuring $dir failed" >&2; exit 1; }
  "$cmake" --build "$dir" --target conv --parallel 2 > "$dir/abi-build.log" 2>&1 ||
    { tail -50 "$dir/abi-build.log" >&2; echo "abi.sh: building $dir failed" >&2; exit 1; }
  local lib
  lib="$(find "$dir" -name 'libconv.so.*.*.*' -type f | head -1)"
  [ -n "$lib" ] || { echo "abi.sh: no libconv.so.X.Y.Z in $dir" >&2; exit 1; }
  echo "$lib"
}

dump() {
  local lib="$1" out="$2"
  # No path, location or DT_NEEDED in the output: it depends on the library
  # and conv.h only, not on where or on which machine it was built.
  abidw --no-corpus-path --no-comp-dir-path --no-show-locs --short-locs --no-elf-needed \
        --type-id-style hash --headers-dir "$root/include" --drop-private-types \
        --suppressions "$suppr" --out-file "$out" "$lib"
  if ! grep -q "<function-decl name='conv_" "$out"; then
    echo "abi.sh: $lib has no debug information for conv_* (build it with -g)" >&2
    exit 1
  fi
}

check() {
  local lib="$1" tmp rc
  [ -f "$baseline" ] || {
    echo "abi.sh: no ABI baseline $baseline for major version $major:" >&2
    echo "        record one with abi/update-baseline.sh" >&2
    exit 1
  }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  dump "$lib" "$tmp/current.abi"
  echo "-- $(basename "$baseline") vs $lib"
  # The full report, added functions included, for the log.
  abidiff "$baseline" "$tmp/current.abi" || true
  # The verdict: without additions (harmless enumerator additions are never
  # counted), any reported change is an incompatible one.
  rc=0
  abidiff --no-added-syms "$baseline" "$tmp/current.abi" > /dev/null || rc=$?
  if [ $((rc & 3)) -ne 0 ]; then
    echo "abi.sh: abidiff failed (exit $rc)" >&2
    exit 1
  elif [ "$rc" -ne 0 ]; then
    echo "FAIL: incompatible ABI change in major version $major (abidiff exit $rc, see above)."
    echo "      Keep the old function and add a _v2, never renumber an enum value (docs/abi.md)."
    echo "      A deliberate change before the release: abi/update-baseline.sh, and commit it."
    exit 1
  fi
  echo "-- ABI compatible with $(basename "$baseline")"
}

cmd="${1:-}"
case "$cmd" in
build) build "$2" ;;
dump) dump "$2" "$3" ;;
check) check "$2" ;;
test)
  have_abigail || { echo "abidw/abidiff not found (Debian: abigail-tools): skipped"; exit 77; }
  lib="$(build "$2")"
  check "$lib"
  ;;
update)
  have_abigail || { echo "abi.sh: abidw not found: install abigail-tools" >&2; exit 1; }
  dir="${2:-$root/build-abi}"
  lib="$(build "$dir")"
  dump "$lib" "$baseline"
  echo "-- wrote $baseline from $lib ($(grep -c "<function-decl name='conv_" "$baseline") functions)"
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
