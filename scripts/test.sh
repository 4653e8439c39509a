#!/usr/bin/env bash
# Every test: builds libconv with its tests and runs them all under CTest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure --parallel 2 --timeout 600
