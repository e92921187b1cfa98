#!/usr/bin/env bash
# Runs the vs-pytorch suite (trainscope vs PyTorch DDP from the same weights and batches) and
# writes the report's first table into docs/RESULTS.md between the vs-pytorch markers, with
# the date, the CPU and the database: the speed comparison is this suite's output, never typed
# in (and dated, so it lives with the other measurements, not in the README). Needs
# build/trainscope and Debian's python3-torch (scripts/install-deps.sh).
#
#   scripts/vs-pytorch.sh [DB]        # default out/vs-pytorch.db; --no-results: report only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TRAINSCOPE:-$root/build/trainscope}
results=1
args=()
for a in "$@"; do
  if [[ $a == --no-results ]]; then results=0; else args+=("$a"); fi
done
db=${args[0]:-$root/out/vs-pytorch.db}
mkdir -p "$(dirname "$db")"
load=$(cut -d' ' -f1 /proc/loadavg)  # other work on the machine skews every figure
start=$(date +%s)
"$bin" suite run vs-pytorch --db "$db"
took=$(( $(date +%s) - start ))
md=$("$bin" report --db "$db" --format md)
# The first table: from its title to the line before the next section ("Baseline: ...").
table=$(printf '%s\n' "$md" | awk '/^\*\*trainscope vs PyTorch DDP/{on=1} /^Baseline:/{on=0} on')
if [[ -z $table ]]; then
  echo "vs-pytorch.sh: the report has no trainscope vs PyTorch table (no pair ran?)" >&2
  exit 1
fi
printf '%s\n' "$table"
[[ $results == 1 ]] || exit 0
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
stamp="Measured by \`scripts/vs-pytorch.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores ($cpu); the suite took ${took} s, load average ${load} at its start."
TABLE="$table" STAMP="$stamp" python3 - "$root/docs/RESULTS.md" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read()
begin, end = "<!-- vs-pytorch:begin -->", "<!-- vs-pytorch:end -->"
if begin not in text or end not in text:
    sys.exit(f"{path}: no {begin} ... {end} markers")
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
body = f"\n{os.environ['STAMP']}\n\n{os.environ['TABLE'].strip()}\n"
open(path, "w").write(head + begin + body + end + tail)
print(f"vs-pytorch.sh: {path} updated")
PY
