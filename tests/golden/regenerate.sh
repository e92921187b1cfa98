#!/usr/bin/env bash
# Rewrites the golden files in tests/golden/testdata with build/trainscope, as
# testdata/README.md describes. Run it only when a change to a format or a
# report is deliberate, and say so in the commit: the golden test exists to
# catch the changes nobody meant.
#   tests/golden/regenerate.sh            # everything
#   tests/golden/regenerate.sh reports    # keep the database and summaries, redo what is
#                                         # rendered from them (reports, baseline, check)
set -euo pipefail
cd "$(dirname "$0")/testdata"
ts=../../../build/trainscope
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ ${1:-} != reports ]]; then
  for suite in golden_suite golden_fail_suite golden_allreduce_suite; do
    "$ts" suite run "$suite.toml" --db "$work/g.db" >/dev/null 2>&1 || true
  done
  sqlite3 "$work/g.db" .dump > results_v1.sql
  mpirun -np 2 --oversubscribe --bind-to none --mca btl_tcp_if_include lo \
    --mca oob_tcp_if_include lo "$ts" train --model tiny --steps 3 --threads 1 \
    --mode sharded --eval-every 2 --summary sharded.summary.json --quiet >/dev/null
  "$ts" train --model tiny --steps 20 --threads 1 --lr 1e30 --grad-clip 0 \
    --summary failed.summary.json --quiet >/dev/null 2>&1 || true
else
  sqlite3 "$work/g.db" < results_v1.sql
  sqlite3 "$work/g.db" "PRAGMA application_id = 1414746692; PRAGMA user_version = 1;"
fi
cp -f golden_*.toml "$work/"
(
  cd "$work"
  "$OLDPWD/$ts" report --db g.db --suite all --format md > report.md
  TRAINSCOPE_GNUPLOT=/nonexistent "$OLDPWD/$ts" report --db g.db --suite all \
    --out report.html 2>/dev/null
  "$OLDPWD/$ts" report --db g.db --suite all --out report_charts.html >/dev/null
  "$OLDPWD/$ts" check --db g.db --suite 1 --save-baseline baseline.json >/dev/null
  "$OLDPWD/$ts" check --db g.db --suite 1 --baseline baseline.json \
    --ratio "step_time:sharded-r2-overlap-b0.001-t1/naive-r1-fused-t1<=100" > check.txt || true
)
cp "$work"/report.md "$work"/report.html "$work"/report_charts.html "$work"/baseline.json \
  "$work"/check.txt .
echo "regenerated $(pwd): review with git diff before committing"
