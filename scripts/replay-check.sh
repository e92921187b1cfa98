#!/usr/bin/env bash
# The N-host prediction's targets at 4 and 8 hosts (docs/METRICS.md, "Tested
# at 4 and 8 hosts: replayed compute and SimGrid"), measured: runs the
# `replay` suite (as root: virtual clusters) with its repetitions
# interleaved, stores SimGrid's step times for 2..64 hosts with the suite,
# prints the report's check table and each target's verdict:
#   * the replay itself: at 2 hosts within 5% of the real 2-host case;
#   * the prediction within 10% of the replay at 4 and 8 hosts;
#   * SimGrid within 10% of the replay at 4 and 8 hosts;
#   * the suite in under 15 minutes.
# Nothing here is a timed test: CI does not run it.
#
#   scripts/replay-check.sh [--db FILE] [--repeat N] [--binary PATH]
#   exit 0 every target met, 1 one missed, 2 bad usage, 3 a step failed
set -euo pipefail
cd "$(dirname "$0")/.."
db=out/replay-check.db repeat=3 bin=build/trainscope
usage() { echo "usage: scripts/replay-check.sh [--db FILE] [--repeat N] [--binary PATH]" >&2; exit 2; }
while (($#)); do
  case $1 in
    --db) [[ $# -ge 2 ]] || usage; db=$2; shift 2 ;;
    --repeat)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] ||
        { echo "replay-check.sh: --repeat: must be a whole number of at least 1, got '${2:-}'" >&2; exit 2; }
      repeat=$2; shift 2 ;;
    --binary) [[ $# -ge 2 ]] || usage; bin=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "replay-check.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ -x $bin ]] || { echo "replay-check.sh: --binary $bin: not an executable (build first)" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "replay-check.sh: run as root (the suite brings up virtual clusters)" >&2; exit 2; }
mkdir -p "$(dirname "$db")"
rm -f "$db"
start=$(date +%s)
"$bin" suite run replay --db "$db" --repeat "$repeat" >&2 || { echo "replay-check.sh: the suite failed" >&2; exit 3; }
suite_s=$(( $(date +%s) - start ))
"$bin" simgrid --db "$db" --save --link gige --link 2.5gbe >&2 ||
  { echo "replay-check.sh: trainscope simgrid failed" >&2; exit 3; }
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$bin" report --db "$db" --format md > "$report" || { echo "replay-check.sh: report failed" >&2; exit 3; }
# The check table: | link | all-reduce | hosts | predicted | SimGrid | replay | real | replay vs real |
# Both tables (weak, then strong scaling), each row led by its scaling.
table=$(awk '/^\*\*The prediction checked/ {on = 1; rows = 0; scaling = /strong/ ? "strong" : "weak"; next}
             on && /^\|/ {print scaling " " $0; rows++; next}
             on && rows > 0 {on = 0}' "$report")
echo "$table"
echo
awk -F'|' -v suite_s="$suite_s" '
  function pct(cell) { if (match(cell, /\(([-+][0-9.]+)%\)/)) return substr(cell, RSTART + 1, RLENGTH - 3) + 0; return "" }
  function ms(cell) { split(cell, a, " "); return a[1] + 0 }
  function verdict(name, value, limit, note) {
    ok = (value != "" && (value < 0 ? -value : value) <= limit)
    printf "%-44s %8s  %s%s\n", name, value == "" ? "-" : sprintf("%+.1f%%", value), ok ? "met" : "MISSED", note
    if (!ok) missed = 1
  }
  $4 ~ /^ *[0-9]+ *$/ {
    link = $2; gsub(/ /, "", link); red = $3; gsub(/^ +| +$/, "", red); n = $4 + 0
    sc = $1; gsub(/ /, "", sc)
    key = sc " " link " " red " N=" n
    if (n == 2 && $9 ~ /%/) verdict("replay vs real, " key " (within 5%)", pct($9), 5)
    if (n == 4 || n == 8) {
      replay = ms($7); pred = ms($5); sim = ms($6)
      # A replay whose links ran below their measured rate timed this machine.
      note = match($7, /links at [0-9]+%/) ? " (replay with " substr($7, RSTART, RLENGTH) ": bound by this machine)" : ""
      if (replay > 0 && pred > 0) verdict("prediction vs replay, " key " (within 10%)", (pred / replay - 1) * 100, 10, note)
      if (replay > 0 && sim > 0) verdict("SimGrid vs replay, " key " (within 10%)", (sim / replay - 1) * 100, 10, note)
    }
  }
  END {
    printf "%-44s %7ds  %s\n", "the suite (under 15 min)", suite_s, suite_s < 900 ? "met" : "MISSED"
    if (suite_s >= 900) missed = 1
    exit missed
  }' <<< "$table"
