#!/usr/bin/env bash
# Runs the smoke suite into a fresh database and checks it against
# suites/baselines/smoke.json: deterministic figures (tracked bytes, collective
# calls and bytes, losses at the fixed seed) exactly; each case's step time
# median over its 10 repetitions (the repetition is the unit: a run's steps
# are not independent samples) by a Mann-Whitney test and the threshold the
# baseline carries (10%), each row with the change's interval and the
# smallest slowdown it could detect; a row that could not detect 10% is
# INCONCLUSIVE (exit 2), never a silent pass; and ratios between cases of this
# run, each with its bootstrap interval. A warning line says when either side
# was measured on a loaded machine. Step times are compared only against a
# baseline saved on this machine (its host name and CPU): the committed one is
# not, so on CI the gate checks what compares across machines, the exact
# figures and the ratios within the run; refresh it with --save-baseline on
# the machine that gates, unloaded (scripts/gate-calibration.sh measures the
# gate's false alarms and power there).
# Exit 0 pass, 1 regression or failed case, 2 error (or inconclusive).
#   ./scripts/smoke-check.sh                   # check
#   ./scripts/smoke-check.sh --save-baseline   # refresh the committed baseline
set -euo pipefail
cd "$(dirname "$0")/.."
db=$(mktemp -d)/smoke.db
trap 'rm -rf "$(dirname "$db")"' EXIT
./build/trainscope suite run smoke --db "$db"
if [[ ${1:-} == --save-baseline ]]; then
  exec ./build/trainscope check --db "$db" --save-baseline suites/baselines/smoke.json \
    --threshold 10 \
    --ratio "step_time:sharded-r2-per-tensor-t1/duplicated-r2-fused-whole-t1<=2.0" \
    --ratio "step_time:sharded-r2-fused-b0.001-t1/duplicated-r2-fused-whole-t1<=2.0"
fi
./build/trainscope report --db "$db" --format md
exec ./build/trainscope check --db "$db" --baseline suites/baselines/smoke.json
