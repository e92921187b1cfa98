#!/usr/bin/env bash
# On demand, not in CI: how trustworthy the smoke gate (scripts/smoke-check.sh)
# is on this machine, measured rather than assumed.
#  1. A/A: `check calibrate smoke --runs RUNS` runs the smoke suite RUNS times
#     with this build and checks every pair of runs against each other as the
#     gate does (threshold 10%, the committed baseline's): a timing regression
#     in a pair is a false alarm. It also prints each case's run-to-run noise
#     and the repetitions a side the gate needs, and writes the runs pooled as
#     a baseline.
#  2. Power: POWER_RUNS runs with TRAINSCOPE_SLOWDOWN=15 (every rank busy-waits
#     15% of its own compute each step), each checked against that baseline:
#     a check detects the slowdown when every timed case is a REGRESSION.
# Targets (issue 24): at most 1 false alarm in 20 pairs; every timed case
# flagged in at least 9 of 10 checks. Each smoke run takes a minute or more
# (10 repetitions of 7 cases), so the defaults take about 10 minutes.
#   ./scripts/gate-calibration.sh [RUNS [POWER_RUNS]]    # defaults 5 and 5
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
power_runs=${2:-5}
slowdown=15
threshold=10
ts=./build/trainscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== A/A: $runs runs of the smoke suite, every pair checked (threshold $threshold%)"
"$ts" check calibrate smoke --runs "$runs" --threshold "$threshold" --db "$work/aa.db" \
  --save-baseline "$work/baseline.json" 2>"$work/calibrate.log" | tee "$work/calibration.txt"

echo "== power: $power_runs runs with TRAINSCOPE_SLOWDOWN=$slowdown, each checked against the pooled runs"
all_flagged=0
for i in $(seq "$power_runs"); do
  TRAINSCOPE_SLOWDOWN=$slowdown "$ts" suite run smoke --db "$work/slow$i.db" \
    >"$work/slow$i.log" 2>&1 || true
  "$ts" check --db "$work/slow$i.db" --baseline "$work/baseline.json" --allow-inconclusive \
    >"$work/check$i.txt" 2>&1 || true
  # The timed rows: metric column "step time median" (tokens/s rows only mention it).
  grep -E '^[^ ]+ +step time median ' "$work/check$i.txt" >"$work/timed$i.txt" || true
  timed=$(wc -l <"$work/timed$i.txt")
  flagged=$(grep -c "REGRESSION" "$work/timed$i.txt" || true)
  inconclusive=$(grep -c "INCONCLUSIVE" "$work/timed$i.txt" || true)
  echo "check $i: $flagged of $timed timed case(s) flagged, $inconclusive inconclusive"
  awk '{print "  " $0}' "$work/timed$i.txt" | cut -c1-160
  if [[ $timed -gt 0 && $flagged -eq $timed ]]; then all_flagged=$((all_flagged + 1)); fi
done

false_alarms=$(sed -n 's/^A\/A false alarms: \([0-9]*\) of \([0-9]*\) pairs.*/\1 of \2/p' \
  "$work/calibration.txt")
echo "== smoke gate on $(hostname): A/A false alarms $false_alarms pairs;" \
  "power at $slowdown%: every timed case flagged in $all_flagged of $power_runs checks"
