#!/usr/bin/env bash
# The README's test command: install the Debian packages, build (Release), run
# every test with ctest, then the CI smoke suite and its regression check
# against the baseline committed in suites/baselines/ (deterministic figures
# exactly, step times by a significance test and a threshold, timing ratios
# between cases of the same run; see scripts/smoke-check.sh). Between the
# two, the whole suite again with the CPU capped at AVX2 (the weakest CPU the
# project meets: scripts/check-cpu-matrix.sh), so that a change that breaks
# it there is caught on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release "$@"
./scripts/check-cpu-matrix.sh --levels avx2 -- "$@"
./scripts/smoke-check.sh
