#!/usr/bin/env bash
# The README's test command: install the Debian packages, build (Release), run
# every test with ctest, then the CI smoke suite and its regression check
# against the baseline committed in suites/baselines/ (deterministic figures
# exactly, step times by a significance test and a threshold, timing ratios
# between cases of the same run; see scripts/smoke-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release "$@"
./scripts/smoke-check.sh
