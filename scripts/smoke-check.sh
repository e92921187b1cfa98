#!/usr/bin/env bash
# Runs the smoke suite into a fresh database and checks it: deterministic
# figures (tracked bytes, collective calls and bytes, losses at the fixed seed)
# against suites/baselines/smoke.json, and timing ratios within this run.
# Exit 0 pass, 1 regression or failed case, 2 error.
#   ./scripts/smoke-check.sh                   # check
#   ./scripts/smoke-check.sh --save-baseline   # refresh the committed baseline
set -euo pipefail
cd "$(dirname "$0")/.."
db=$(mktemp -d)/smoke.db
trap 'rm -rf "$(dirname "$db")"' EXIT
./build/trainscope suite run smoke --db "$db"
if [[ ${1:-} == --save-baseline ]]; then
  exec ./build/trainscope check --db "$db" --save-baseline suites/baselines/smoke.json \
    --ratio "step_time:sharded-r2-per-tensor-t1/duplicated-r2-fused-whole-t1<=2.0" \
    --ratio "step_time:sharded-r2-fused-b0.001-t1/duplicated-r2-fused-whole-t1<=2.0"
fi
./build/trainscope report --db "$db" --format md
exec ./build/trainscope check --db "$db" --baseline suites/baselines/smoke.json
