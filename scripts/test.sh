#!/usr/bin/env bash
# The README's test command, which CI runs (.ci/run):
#  1. install the Debian packages and build (Release);
#  2. every test (ctest);
#  3. the whole suite again with the CPU capped at AVX2 (the weakest CPU the
#     project meets: scripts/check-cpu-matrix.sh), so that a change that
#     breaks it there is caught on any machine; skipped on a CPU whose own
#     level is AVX2, where step 2 already ran it;
#  4. the smoke suite's exact figures (tracked bytes, collective calls and
#     bytes, losses at the fixed seed) for every mode and reduction against
#     suites/baselines/smoke.json (scripts/smoke-check.sh);
#  5. the README's length and no dated figure in README or METRICS
#     (scripts/check-docs.sh), the changed sources' format
#     (scripts/check-format.sh);
#  6. the speed gate: this revision against the one before it, both built
#     and run here, paired and interleaved, plus the deterministic work
#     counts (scripts/speed-gate.sh); a REGRESSION fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/check-docs.sh
./scripts/check-format.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release "$@"
level=$(env -u TRAINSCOPE_MAX_CPU_ISA ./build/trainscope version |
        sed -n 's/^cpu: .*(level \([a-z0-9_]*\))$/\1/p')
if [[ $level == avx2 ]]; then
  echo "test.sh: the AVX2-capped pass is skipped: this CPU's own level is avx2, which ctest just ran"
else
  ./scripts/check-cpu-matrix.sh --levels avx2 -- "$@"
fi
./scripts/smoke-check.sh
./scripts/speed-gate.sh
