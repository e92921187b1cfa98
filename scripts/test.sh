#!/usr/bin/env bash
# The README's test command: install the Debian packages, build (Release) and
# run every test with ctest. Exit code is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release "$@"
