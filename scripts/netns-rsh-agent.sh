#!/bin/sh
# Open MPI's "remote shell" for the virtual cluster of scripts/netns-cluster.sh:
# where ssh would log in to HOST, this enters network namespace HOST.
#
#   mpirun --mca plm_rsh_agent /path/netns-rsh-agent.sh ...
#   netns-rsh-agent.sh [ssh-style options] [user@]HOST COMMAND...
#
# Open MPI 4's rsh launcher calls the agent as `agent HOST orted -mca ess "env"
# ...`: the words are meant for a remote shell (some are quoted for it), so,
# as ssh does, they are joined with spaces and run by `sh -c`. ssh-style
# options before HOST (from plm_rsh_args, or `-x` that some launchers add)
# are accepted and ignored.
#
# The command runs in namespace HOST and in a UTS namespace of its own whose
# host name is HOST, so gethostname() (and MPI_Get_processor_name) differs per
# host as on a real cluster. `ip netns exec` also bind-mounts
# /etc/netns/HOST/hosts over /etc/hosts, so the cluster's names resolve there.
# When the cluster pins hosts to cores (netns-cluster.sh up --cores-per-host),
# the command runs under `taskset -c` on HOST's CPUs (recorded in
# /run/trainscope-netns/PREFIX/HOST.cpus), inherited by all it starts; with
# --cpu-share it first joins HOST's cgroup (HOST.cgroup), whose quota caps it.
#
# Exit status: the command's, or 255 (like ssh) when HOST cannot be entered.
prog=netns-rsh-agent.sh

while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    # ssh options that take a value
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: $prog [options] HOST COMMAND..." >&2
  exit 255
fi
host=${1#*@}
shift

if ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$host"; then
  echo "$prog: no network namespace '$host' (is the cluster up? scripts/netns-cluster.sh status)" >&2
  exit 255
fi
if ! command -v unshare >/dev/null 2>&1; then
  echo "$prog: 'unshare' is missing: install util-linux" >&2
  exit 255
fi

# HOST's cores: none recorded means the cluster is not pinned (taskset is
# then not needed, as with a cluster from before pinning existed).
cpus_file=/run/trainscope-netns/${host%-h*}/$host.cpus
pin=""
if [ -r "$cpus_file" ]; then
  pin="taskset -c $(cat "$cpus_file")"
fi

# HOST's CPU quota (netns-cluster.sh up --cpu-share): this shell joins the
# host's cgroup before exec, so the command and all it starts are charged to
# it. None recorded: no quota.
cgroup_file=/run/trainscope-netns/${host%-h*}/$host.cgroup
if [ -r "$cgroup_file" ]; then
  cgroup_dir=$(cat "$cgroup_file")
  if ! echo $$ 2>/dev/null >"$cgroup_dir/cgroup.procs"; then
    echo "$prog: cannot join $host's cgroup $cgroup_dir (is the cluster up? scripts/netns-cluster.sh status)" >&2
    exit 255
  fi
fi

# The host name is written through /proc (no dependency on hostname(1)); $1 is
# HOST, $2 the joined remote command. $pin is unquoted on purpose: empty, or
# three words.
# shellcheck disable=SC2016,SC2086
exec ip netns exec "$host" unshare --uts -- $pin sh -c \
  'printf %s "$1" > /proc/sys/kernel/hostname || exit 255; exec sh -c "$2"' sh "$host" "$*"
