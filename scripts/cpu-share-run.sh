#!/usr/bin/env bash
# Runs a command under a CPU quota of F of one core, in a cgroup of its own,
# as a host of a virtual cluster at --cpu-share F runs its processes
# (netns-cgroup.sh: the same period and hierarchy), but without a cluster:
# the suites' one-host cases with cpu_share < 1, which measure how far this
# machine dilates compute alone (docs/CLUSTERS.md, "Hosts smaller than a core").
#
#   scripts/cpu-share-run.sh F -- COMMAND [ARG...]
#
# Exit status: the command's; 2 bad usage, or no cgroup could be made (needs
# root and the cpu controller). The cgroup goes when the command ends (also
# on TERM or INT, passed on to the command); one left by a wrapper that was
# killed outright is removed by the next one.
set -uo pipefail
prog=$(basename "$0")
here=$(cd "$(dirname "$0")" && pwd)
die() { local code=$1; shift; echo "$prog: $*" >&2; exit "$code"; }

if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0; fi
[[ $# -ge 3 && "$2" == "--" ]] || die 2 "usage: $prog F -- COMMAND [ARG...] (F: the share of a core, 0 < F <= 1)"
cpu_share=$1
shift 2
[[ -n "$cpu_share" ]] || die 2 "F '': give the share of a core, 0 < F <= 1 (e.g. 0.5)"
share_flag=F
cores_per_host=1
# shellcheck source=netns-cgroup.sh
source "$here/netns-cgroup.sh"
plan_share
((EUID == 0)) || die 2 "needs root (it makes a cgroup)"
find_cgroup || die 2 "no cgroup cpu controller here (cgroup v2 with cpu, or v1's cpu mount)"

# Groups of wrappers that are gone (killed before they could clean up).
for old in "$cgroup_root"/trainscope-share-*; do
  [[ -d "$old" ]] || continue
  kill -0 "${old##*-}" 2>/dev/null || rmdir "$old" 2>/dev/null
done

group="$cgroup_root/trainscope-share-$$"
make_quota_group "$group" || { rmdir "$group" 2>/dev/null; exit 2; }
procs="$group/tasks"
[[ $cgroup_version == v2 ]] && procs="$group/cgroup.procs"

child=""
trap '[[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null' TERM INT
# The command joins the group before it execs, so all it starts is in it.
bash -c 'echo $$ > "$1" || exit 2; shift; exec "$@"' _ "$procs" "$@" &
child=$!
rc=0
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2>/dev/null || break   # a trapped signal ended the wait, not the command
done
for _ in 1 2 3 4 5 6 7 8 9 10; do       # an exited process takes a moment to leave
  rmdir "$group" 2>/dev/null && break
  sleep 0.1
done
exit "$rc"
