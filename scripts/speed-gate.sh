#!/usr/bin/env bash
# The speed gate CI runs (scripts/test.sh): is this revision slower than the
# one before it? Both are built and run here, in the same job, never
# against a figure stored at another hour or on another machine.
#
#  1. Builds the base revision's trainscope in build-gate/base (only that
#     target; its tree a git worktree in build-gate/base-src): TRAINSCOPE_GATE_BASE names the
#     revision, default the head commit's parent (HEAD~1).
#  2. Timed lane: `trainscope compare --base B --head H gate`: every case of
#     suites/gate.toml in pairs, base and head back to back in a random
#     order, until each case is decided (threshold 10%, at most 6 minutes).
#  3. Work lane: `trainscope work --base B --head H gate`: the same cases
#     under callgrind, instructions, estimated cycles and (in the one-rank
#     case) L1 data misses of each compute phase (threshold 1% of a phase).
#  4. The head's exact figures of the gate suite (tracked bytes, collective
#     calls and bytes, losses at the fixed seed) against
#     suites/baselines/gate.json (`trainscope check --exact-only`; refresh
#     it with `trainscope suite run gate --db g.db && trainscope check --db
#     g.db --save-baseline suites/baselines/gate.json`).
# Valgrind runs no AVX-512: on a CPU that has it, base and head are both
# built for x86-64-v3 (AVX2) in build-gate/, and both lanes time those; on
# one without it the head is build/trainscope and the base is built natively.
#
# A change that means to cost more work or time says so in its commit
# message with a line "speed-gate: accept <why>": the gate then runs and
# prints as always, but a REGRESSION does not fail it.
#
# Exit 0: no regression (an INCONCLUSIVE lane is printed, not failed: a gate
# that cried wolf would be switched off); 1: a REGRESSION, a failed run or
# a changed exact figure; 2: bad usage or a build that failed.
#   scripts/speed-gate.sh                  # base HEAD~1
#   TRAINSCOPE_GATE_BASE=7b1ef05 scripts/speed-gate.sh
#   scripts/speed-gate.sh --head-binary x  # time another head (a wrapper, say)
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: speed-gate.sh [--head-binary PATH] [--no-timed] [--no-work] [--db-dir DIR]"
head_binary="" timed=1 work=1 db_dir=build-gate
while [[ $# -gt 0 ]]; do
  case $1 in
    --head-binary) [[ $# -ge 2 && -n $2 ]] || { echo "speed-gate.sh: --head-binary needs a path" >&2; exit 2; }
                   head_binary=$2; shift 2 ;;
    --no-timed) timed=0; shift ;;
    --no-work) work=0; shift ;;
    --db-dir) [[ $# -ge 2 && -n $2 ]] || { echo "speed-gate.sh: --db-dir needs a folder" >&2; exit 2; }
              db_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "speed-gate.sh: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say() { echo "speed-gate: $*"; }

# --- which revision, and whether this change accepts a cost ---------------
if ! git rev-parse --verify -q HEAD >/dev/null; then
  say "SKIPPED: not a git checkout, so there is no base revision to compare with"
  exit 0
fi
base_rev=${TRAINSCOPE_GATE_BASE:-HEAD~1}
if ! base_sha=$(git rev-parse --verify -q "$base_rev^{commit}"); then
  if [[ -n ${TRAINSCOPE_GATE_BASE:-} ]]; then
    echo "speed-gate.sh: TRAINSCOPE_GATE_BASE=$base_rev is not a revision of this repository" >&2
    exit 2
  fi
  say "SKIPPED: HEAD has no parent in this checkout (a shallow clone?); set TRAINSCOPE_GATE_BASE"
  exit 0
fi
accept=$(git log -1 --format=%B HEAD | grep -i '^speed-gate: accept' || true)

# --- builds -----------------------------------------------------------------
flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF)
if grep -qw avx512f /proc/cpuinfo; then
  # Both sides for x86-64-v3, in a form every revision's CMakeLists takes.
  flags+=(-DTRAINSCOPE_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3)
  build_head=1
  say "this CPU has AVX-512, which valgrind cannot run: base and head built for x86-64-v3"
else
  build_head=0
fi
build() {  # build NAME SOURCE_DIR
  local dir=$db_dir/$1 start=$SECONDS
  say "building $1 ($(git -C "$2" rev-parse --short HEAD)) in $dir"
  if ! { cmake -S "$2" -B "$dir" "${flags[@]}" >"$dir.log" 2>&1 &&
         cmake --build "$dir" --target trainscope >>"$dir.log" 2>&1; }; then
    tail -20 "$dir.log" >&2
    echo "speed-gate.sh: building $1 failed (log: $dir.log)" >&2
    exit 2
  fi
  say "built $1 in $((SECONDS - start)) s"
}
mkdir -p "$db_dir"
# The base's tree as a worktree of its own, so that its build records its
# own revision (git rev-parse in its folder).
src=$db_dir/base-src
git worktree prune
if [[ ! -e $src/.git ]]; then
  rm -rf "$src"
  git worktree add -q --detach "$src" "$base_sha"
elif [[ $(git -C "$src" rev-parse HEAD) != "$base_sha" ]]; then
  git -C "$src" checkout -q --detach "$base_sha"
fi
build base "$src"
base=$db_dir/base/trainscope
if [[ -n $head_binary ]]; then
  head=$head_binary
elif ((build_head)); then
  build head .
  head=$db_dir/head/trainscope
else
  head=build/trainscope
  [[ -x $head ]] || { echo "speed-gate.sh: $head not built (cmake --build --preset release)" >&2; exit 2; }
fi
say "base $base_rev = $("$base" version | head -1)"
say "head $("$head" version | head -1)"

# --- the lanes ----------------------------------------------------------------
status=0
lane() {  # lane NAME COMMAND...: runs it, keeps the worst status
  local rc=0 start=$SECONDS
  "${@:2}" || rc=$?
  case $rc in
    0) say "$1: PASS ($((SECONDS - start)) s)" ;;
    4) say "$1: INCONCLUSIVE ($((SECONDS - start)) s): printed, not failed" ;;
    *) say "$1: FAILED with exit $rc ($((SECONDS - start)) s)"; status=1 ;;
  esac
}
# The head suite's exact figures: the table in full only when one changed.
exact_figures() {
  local out rc=0
  out=$(./build/trainscope check --exact-only --db "$db" --baseline suites/baselines/gate.json 2>&1) || rc=$?
  if ((rc != 0)); then echo "$out"; else echo "$out" | grep -E '^[0-9]+ regression' || true; fi
  return "$rc"
}
db=$db_dir/gate.db
rm -f "$db" "$db-wal" "$db-shm"
if ((timed)); then
  lane "timed lane" ./build/trainscope compare --base "$base" --head "$head" --db "$db" gate
  lane "exact figures" exact_figures
fi
if ((work)); then
  lane "work lane" ./build/trainscope work --base "$base" --head "$head" --db "$db" gate
fi
if ((status != 0)) && [[ -n $accept ]]; then
  say "the head commit says \"$accept\": not failing"
  status=0
fi
exit "$status"
