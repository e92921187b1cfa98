#!/usr/bin/env bash
# Does time dilation hold on this machine? A check to run before trusting a
# `dilated` suite (docs/CLUSTERS.md, "Hosts smaller than a core").
#
#   scripts/dilation-check.sh [--share F] [--rounds R] [--steps S] [--cpu C]
#
# Dilation assumes that a host held to a CPU quota of F computes exactly
# 1/F times slower. This runs the `dilated` suite's model (suites/
# dilated-model.json, batch 2, one thread) on one CPU, R rounds in turn:
#
#   full      alone, no quota
#   alone     alone in a cgroup with a quota of F, the period netns-cluster.sh
#             gives its hosts (netns-cgroup.sh)
#   shared    floor(1/F) copies at once, each in a cgroup of its own at F, as
#             the hosts of a dilated cluster share a core
#
# and prints each one's median step and the effective share, full / dilated
# step time (F when dilation holds), per round and as the median over rounds.
#
# Exit status: 0 both effective shares within 10% of F; 1 not (a dilated
# suite's times scaled by F would be off by that much: docs/METRICS.md);
# 2 bad usage, not root, or no cgroup cpu controller; 3 a training run failed.
set -uo pipefail
prog=$(basename "$0")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { local code=$1; shift; echo "$prog: $*" >&2; exit "$code"; }

cpu_share=0.5 rounds=3 steps=12 cpu=""
while (($#)); do
  case "$1" in
    --share|--rounds|--steps|--cpu) (($# >= 2)) || die 2 "$1 needs a value (see --help)" ;;
  esac
  case "$1" in
    --share) cpu_share=${2:-}; shift 2 ;;
    --rounds) rounds=${2:-}; shift 2 ;;
    --steps) steps=${2:-}; shift 2 ;;
    --cpu) cpu=${2:-}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$cpu_share" ]] || die 2 "--share '': give a CPU share F, 0 < F < 1"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die 2 "--rounds '$rounds': give a whole number of rounds, 1 or more"
if ! [[ "$steps" =~ ^[0-9]+$ ]] || ((steps < 4)); then die 2 "--steps '$steps': give 4 or more"; fi
[[ -z "$cpu" || "$cpu" =~ ^[0-9]+$ ]] || die 2 "--cpu '$cpu': give a CPU number"
if [[ -n "$cpu" ]] && ! taskset -c "$cpu" true 2>/dev/null; then
  die 2 "--cpu $cpu: not a CPU this process may run on ($(taskset -pc $$ | sed 's/.*: //'))"
fi
bin=${TRAINSCOPE_BIN:-$root/build/trainscope}
[[ -x "$bin" ]] || die 2 "$bin not found: build first (cmake --preset release && cmake --build build)"
model=$root/suites/dilated-model.json
[[ -n "$cpu" ]] || cpu=$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')

# The share, its period and the cgroup hierarchy, as the virtual cluster has
# them (netns-cgroup.sh); the runs under a quota go through cpu-share-run.sh,
# a cgroup of its own for each.
cores_per_host=1
share_flag=--share
# shellcheck source=netns-cgroup.sh
source "$here/netns-cgroup.sh"
plan_share
((EUID == 0)) || die 2 "needs root (it makes cgroups)"
find_cgroup || die 2 "no cgroup cpu controller here (cgroup v2 with cpu, or v1's cpu mount)"
copies=$hosts_per_group

# The median step in ms of one training run on $cpu; with $1 = quota, under
# the share's quota.
train() {
  local out wrap=()
  [[ "${1:-}" == quota ]] && wrap=("$here/cpu-share-run.sh" "$cpu_share_text" --)
  out=$("${wrap[@]}" taskset -c "$cpu" "$bin" train --model "$model" --batch 2 --block 128 \
    --steps "$steps" --threads 1 --warmup-steps 2 2>&1)
  sed -n 's/^summary: .*median step \([0-9.]*\) ms.*/\1/p' <<<"$out" | grep . ||
    { echo "$prog: a training run failed:" >&2; tail -5 <<<"$out" >&2; return 1; }
}
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.4g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
share_of() { awk -v f="$1" -v d="$2" 'BEGIN { printf "%.3f", f / d }'; }

echo "dilation check: share $cpu_share_text (quota $cpu_quota_us us every $cpu_period_us us, cgroup $cgroup_version), CPU $cpu, $copies copies at once, $rounds rounds of $steps steps"
printf '%-6s %10s %10s %10s %12s %12s\n' round "full ms" "alone ms" "shared ms" "alone share" "shared share"
alone_shares=() shared_shares=()
for ((r = 1; r <= rounds; r++)); do
  full=$(train) || exit 3
  alone=$(train quota) || exit 3
  tmp=$(mktemp -d)
  pids=()
  for ((i = 0; i < copies; i++)); do train quota >"$tmp/$i" & pids+=($!); done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  shared=$(cat "$tmp"/* | median)
  rm -rf "$tmp"
  ((failed == 0)) || die 3 "a copy of the $copies at once failed"
  a=$(share_of "$full" "$alone") s=$(share_of "$full" "$shared")
  alone_shares+=("$a") shared_shares+=("$s")
  printf '%-6s %10s %10s %10s %12s %12s\n' "$r" "$full" "$alone" "$shared" "$a" "$s"
done
a=$(printf '%s\n' "${alone_shares[@]}" | median)
s=$(printf '%s\n' "${shared_shares[@]}" | median)
echo "effective share, median of $rounds rounds: alone $a, $copies at once $s (dilation assumes $cpu_share_text)"
if awk -v f="$cpu_share_text" -v a="$a" -v s="$s" \
  'BEGIN { exit !((a / f > 0.9 && a / f < 1.1) && (s / f > 0.9 && s / f < 1.1)) }'; then
  echo "dilation holds within 10% here"
  exit 0
fi
echo "dilation does not hold here: a host at share $cpu_share_text computes as at $a (alone) and $s (sharing a CPU); dilated step times scaled by $cpu_share_text are off by as much"
exit 1
