#!/usr/bin/env bash
# Runs the smoke suite (every data-parallel mode and gradient reduction of
# the tiny model) into a fresh database, 3 repetitions a case, and checks it
# against suites/baselines/smoke.json: the deterministic figures (tracked
# bytes by category, collective calls and bytes, losses at the fixed seed)
# exactly, and ratios between cases of this run with their bootstrap
# intervals. Step times are not compared with the stored baseline: a figure
# stored at another hour or on another machine is a bias, not a baseline.
# Speed is the speed gate's (scripts/speed-gate.sh): the base revision built
# and run beside this one, paired.
# Exit 0 pass, 1 a changed figure or a failed case, 2 error.
#   ./scripts/smoke-check.sh                   # check
#   ./scripts/smoke-check.sh --save-baseline   # refresh the committed baseline
set -euo pipefail
cd "$(dirname "$0")/.."
db=$(mktemp -d)/smoke.db
trap 'rm -rf "$(dirname "$db")"' EXIT
./build/trainscope suite run smoke --db "$db" --repeat 3 --no-limits
if [[ ${1:-} == --save-baseline ]]; then
  exec ./build/trainscope check --db "$db" --save-baseline suites/baselines/smoke.json \
    --threshold 10 \
    --ratio "step_time:sharded-r2-per-tensor-t1/duplicated-r2-fused-whole-t1<=2.0" \
    --ratio "step_time:sharded-r2-fused-b0.001-t1/duplicated-r2-fused-whole-t1<=2.0"
fi
./build/trainscope report --db "$db" --format md
exec ./build/trainscope check --db "$db" --baseline suites/baselines/smoke.json
