#!/usr/bin/env bash
# The README stays a front page and dated figures stay in docs/RESULTS.md
# (issue 37: the README grew back past 200 lines over 14 commits, and
# METRICS gathered dated measurement sections). Fails, naming the file and
# line, when README.md is over 200 lines or when README.md or
# docs/METRICS.md holds a date (2026-11-26, 26 Nov 2026, November 2026): a
# dated figure is a measurement, and measurements go to docs/RESULTS.md,
# where METRICS and README point.
#
#   scripts/check-docs.sh [ROOT]      # exit 0 ok, 1 a rule broken, 2 bad usage
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[[ -f $root/README.md && -f $root/docs/METRICS.md ]] ||
  { echo "check-docs.sh: $root has no README.md and docs/METRICS.md" >&2; exit 2; }
max_lines=200
status=0
lines=$(wc -l < "$root/README.md")
if (( lines > max_lines )); then
  echo "check-docs.sh: README.md has $lines lines, at most $max_lines: move detail to docs/" >&2
  status=1
fi
months='\b(Jan(uary)?|Feb(ruary)?|Mar(ch)?|Apr(il)?|May|June?|July?|Aug(ust)?|Sep(tember)?|Oct(ober)?|Nov(ember)?|Dec(ember)?)\b'
date_re="(^|[^0-9])(19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]([^0-9]|$)|[0-9]{1,2} $months (19|20)[0-9]{2}|$months [0-9]{0,2},? ?(19|20)[0-9]{2}"
for f in README.md docs/METRICS.md; do
  if grep -nE "$date_re" "$root/$f" > /tmp/check-docs.$$; then
    while IFS= read -r hit; do
      echo "check-docs.sh: $f:${hit%%:*}: a date (dated figures go to docs/RESULTS.md): ${hit#*:}" >&2
    done < /tmp/check-docs.$$
    status=1
  fi
  rm -f /tmp/check-docs.$$
done
(( status == 0 )) && echo "check-docs.sh: README.md $lines lines, no dated figure in README.md or docs/METRICS.md"
exit $status
