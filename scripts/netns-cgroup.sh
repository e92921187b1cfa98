# Sourced by netns-cluster.sh: hosts smaller than a core (up --cpu-share F).
# Each host gets a cgroup of its own under trainscope-PREFIX with a CPU quota
# of F of its cores and a short period; netns-cluster.sh's variables (prefix,
# state_dir, count, cores_per_host, cpu_share) and helpers (die, run, host_ns)
# are used as they are there. Not a program of its own.
# shellcheck shell=bash
# ---- CPU share: a cgroup quota per host --------------------------------------
share_milli=1000     # F in thousandths (bash has integers only)
cpu_share_text=1     # F as recorded
hosts_per_group=1    # hosts that share one group of cores
cpu_period_us=0      # 0: no quota
cpu_quota_us=0
plan_share() {
  [[ -z "$cpu_share" ]] && return 0
  [[ "$cpu_share" =~ ^(0?\.[0-9]+|[01](\.[0-9]*)?)$ ]] ||
    die 2 "${share_flag:---cpu-share} '$cpu_share': give the fraction of a core each host gets, 0 < F <= 1 (e.g. 0.5)"
  share_milli=$(awk -v f="$cpu_share" 'BEGIN { printf "%.0f\n", f * 1000 }')
  ((share_milli >= 10 && share_milli <= 1000)) ||
    die 2 "${share_flag:---cpu-share} '$cpu_share': the share must be within 0.01..1"
  cpu_share_text=$(awk -v m="$share_milli" 'BEGIN { printf "%g\n", m / 1000 }')
  [[ -z "$cores_per_host" ]] && cores_per_host=1   # a share is of the host's own cores
  hosts_per_group=$((1000 / share_milli))
  # A short period, so that a step is throttled in 2 ms slices, not 100 ms
  # bursts; longer only where the quota would fall below the kernel's 1 ms.
  local milli_cores=$((share_milli * cores_per_host))
  cpu_period_us=2000
  cpu_quota_us=$((cpu_period_us * milli_cores / 1000))
  if ((cpu_quota_us < 1000)); then
    cpu_period_us=$(((1000000 + milli_cores - 1) / milli_cores))
    cpu_quota_us=$((cpu_period_us * milli_cores / 1000))
  fi
}

# The cpu controller's hierarchy: cgroup v2 where its root offers `cpu`
# (pure v2, or a hybrid whose unified tree has it), else v1's cpu mount.
cgroup_version=""
cgroup_root=""
find_cgroup() {
  local dev mnt type opts rest
  while read -r dev mnt type opts rest; do
    if [[ "$type" == cgroup2 && -r "$mnt/cgroup.controllers" ]] &&
       grep -qw cpu "$mnt/cgroup.controllers"; then
      cgroup_version=v2
      cgroup_root=$mnt
      return 0
    fi
  done </proc/mounts
  while read -r dev mnt type opts rest; do
    if [[ "$type" == cgroup && ",$opts," == *,cpu,* ]]; then
      cgroup_version=v1
      cgroup_root=$mnt
      return 0
    fi
  done </proc/mounts
  return 1
}
cluster_cgroup() { echo "$cgroup_root/trainscope-$prefix"; }
# The cluster's cgroup as processes inside the hosts reach it: `ip netns
# exec` mounts a sysfs of the namespace over /sys, hiding /sys/fs/cgroup, so
# the agent (started inside the head host by mpirun) could not join another
# host's cgroup there. A bind mount under the state folder stays visible.
cgroup_mount() { echo "$state_dir/cgroup"; }

# One cgroup per host under trainscope-P, each with the quota.
make_cgroups() {
  local dir cg i
  dir=$(cluster_cgroup)
  mkdir -p "$dir" || { echo "$prog: cannot create cgroup $dir" >&2; return 1; }
  if [[ $cgroup_version == v2 ]]; then
    echo +cpu >"$cgroup_root/cgroup.subtree_control" 2>/dev/null   # usually on already
    echo +cpu >"$dir/cgroup.subtree_control" ||
      { echo "$prog: cannot enable the cpu controller in $dir" >&2; return 1; }
  fi
  mkdir -p "$(cgroup_mount)" || { echo "$prog: cannot create $(cgroup_mount)" >&2; return 1; }
  if ! mountpoint -q "$(cgroup_mount)"; then
    run "bind-mounting $dir on $(cgroup_mount)" mount --bind "$dir" "$(cgroup_mount)" || return 1
  fi
  for ((i = 0; i < count; i++)); do
    make_quota_group "$dir/$(host_ns "$i")" || return 1
  done
}

# One cgroup at $1 with the planned quota (plan_share, find_cgroup first);
# also what cpu-share-run.sh puts a single host's job in.
make_quota_group() {
  local cg=$1
  mkdir -p "$cg" || { echo "$prog: cannot create cgroup $cg" >&2; return 1; }
  if [[ $cgroup_version == v2 ]]; then
    echo +cpu >"$(dirname "$cg")/cgroup.subtree_control" 2>/dev/null   # usually on already
    echo "$cpu_quota_us $cpu_period_us" >"$cg/cpu.max" ||
      { echo "$prog: cannot write $cg/cpu.max" >&2; return 1; }
  else
    # Unlimited first: a period shorter than the old quota is refused.
    { echo -1 >"$cg/cpu.cfs_quota_us" && echo "$cpu_period_us" >"$cg/cpu.cfs_period_us" &&
      echo "$cpu_quota_us" >"$cg/cpu.cfs_quota_us"; } ||
      { echo "$prog: cannot set the CPU quota in $cg" >&2; return 1; }
  fi
}

# Removes the cluster's cgroups; with `kill`, ends what is still in them
# first (a cgroup with processes cannot be removed).
remove_cgroups() {  # remove_cgroups [kill]
  if mountpoint -q "$(cgroup_mount)" 2>/dev/null; then
    umount "$(cgroup_mount)" 2>/dev/null || umount -l "$(cgroup_mount)"
  fi
  rmdir "$(cgroup_mount)" 2>/dev/null
  find_cgroup || return 0
  local dir cg try rc=0
  dir=$(cluster_cgroup)
  [[ -d "$dir" ]] || return 0
  for cg in "$dir"/"$prefix"-h*; do
    [[ -d "$cg" ]] || continue
    if [[ "${1:-}" == kill && -s "$cg/cgroup.procs" ]]; then
      xargs -r kill -KILL <"$cg/cgroup.procs" 2>/dev/null
    fi
    for try in 1 2 3 4 5 6 7 8 9 10; do   # a killed process takes a moment to leave
      rmdir "$cg" 2>/dev/null && break
      [[ "${1:-}" == kill ]] || break
      sleep 0.1
    done
    [[ -d "$cg" ]] && { echo "$prog: could not remove cgroup $cg" >&2; rc=1; }
  done
  rmdir "$dir" 2>/dev/null || { [[ -d "$dir" ]] && rc=1; }
  return $rc
}
