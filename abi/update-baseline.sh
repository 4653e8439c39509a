#!/usr/bin/env bash
# Records the current ABI as the baseline of this major version,
# abi/libconv-<major>.abi, which the abi_check test compares every build with.
# Run it deliberately, and commit the result:
#   - once per release (the released ABI is what later builds must keep), and
#   - before a release, when an unreleased function's signature is changed on
#     purpose (after a release that takes a _v2 function instead: docs/abi.md).
# Adding functions or enumerators needs no refresh: abi_check accepts them.
#   abi/update-baseline.sh [BUILD_DIR]   (default: build-abi/, a Debug build)
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/abi.sh" update "$@"
