#!/bin/sh
# mpirun on the virtual cluster of scripts/netns-cluster.sh: a drop-in for
# `mpirun` (e.g. `trainscope suite run ... --mpirun scripts/netns-mpirun.sh`).
#
#   netns-mpirun.sh --hostfile HOSTS [mpirun arguments...]
#
# mpirun itself runs inside the "head" host: the namespace named by
# $NETNS_HEAD, else the first host of the hostfile (as on a real cluster, where
# one launches from the first node). Like the other hosts, the head gets a UTS
# namespace whose host name is its namespace name, so Open MPI starts the
# head's ranks locally and everything else through scripts/netns-rsh-agent.sh.
#
# Added to mpirun: the agent. Tree spawn stays on (Open MPI's default): with
# plm_rsh_no_tree_spawn the remote daemons start with --daemonize and leave
# mpirun's process tree, where the suite runner's poller and its timeout kill
# would no longer find them. Tree spawn works here because every host sees
# the same files and may enter the other namespaces.
# Not added: the interface to use. Pass `--mca oob_tcp_if_include eth0 --mca
# btl_tcp_if_include eth0` (the suite runner's `--tcp-interface eth0`):
# loopback does not reach the other hosts.
#
# Cores: when the cluster pins hosts to cores (netns-cluster.sh up
# --cores-per-host), mpirun runs under `taskset -c` on the head's CPUs, so its
# local ranks inherit them (the agent pins the other hosts' daemons). Open
# MPI sees the whole machine, though, and binding would put ranks on other
# hosts' cores (mpirun -np 1 binds to core 0 by default): so binding defaults
# to none here (OMPI_MCA_hwloc_base_binding_policy), and --bind-to other than
# none, --cpu-set/--cpu-list, --map-by ...:PE=N and that MCA setting are
# refused (exit 2).
#
# Environment: MPIRUN (default mpirun), NETNS_HEAD (default: the hostfile's
# first host). Exit status: mpirun's, or 2 when the head cannot be found or
# binding was asked for on a pinned cluster.
prog=netns-mpirun.sh
here=$(cd "$(dirname "$0")" && pwd)
mpirun=${MPIRUN:-mpirun}

head=${NETNS_HEAD:-}
if [ -z "$head" ]; then
  hostfile=""
  prev=""
  for a in "$@"; do
    case "$prev" in
      --hostfile|-hostfile|--machinefile|-machinefile) hostfile=$a ;;
    esac
    case "$a" in
      --hostfile=*|--machinefile=*) hostfile=${a#*=} ;;
    esac
    prev=$a
  done
  if [ -z "$hostfile" ]; then
    echo "$prog: give --hostfile FILE (its first host is the head) or set NETNS_HEAD" >&2
    exit 2
  fi
  if [ ! -r "$hostfile" ]; then
    echo "$prog: cannot read hostfile $hostfile" >&2
    exit 2
  fi
  head=$(sed 's/#.*//' "$hostfile" | awk 'NF { print $1; exit }')
  head=${head#*@}
  if [ -z "$head" ]; then
    echo "$prog: hostfile $hostfile lists no hosts" >&2
    exit 2
  fi
fi
if ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$head"; then
  echo "$prog: no network namespace '$head' (is the cluster up? scripts/netns-cluster.sh status)" >&2
  exit 2
fi
if ! command -v unshare >/dev/null 2>&1; then
  echo "$prog: 'unshare' is missing: install util-linux" >&2
  exit 2
fi

# The head's cores, when the cluster pins hosts (see above).
cpus_file=/run/trainscope-netns/${head%-h*}/$head.cpus
pin=""
if [ -r "$cpus_file" ]; then
  refuse_binding() {
    echo "$prog: '$1': binding would put ranks on cores of other virtual hosts (Open MPI sees" \
      "the whole machine); on a cluster with --cores-per-host every host's processes are" \
      "already pinned to its cores: use --bind-to none" >&2
    exit 2
  }
  prev=""
  prev2=""
  for a in "$@"; do
    case "$prev" in
      --bind-to|-bind-to) [ "$a" = none ] || refuse_binding "$prev $a" ;;
      --map-by|-map-by) case "$a" in *[Pp][Ee]=*) refuse_binding "$prev $a" ;; esac ;;
      hwloc_base_binding_policy)
        case "$prev2" in --mca|-mca|--gmca|-gmca) [ "$a" = none ] || refuse_binding "$prev2 $prev $a" ;; esac ;;
    esac
    case "$a" in
      --bind-to=none) ;;
      --bind-to=*|--cpu-set|-cpu-set|--cpu-list|-cpu-list|--cpu-set=*|--cpu-list=*|-bind-to-core|--bind-to-core|-bind-to-socket|--bind-to-socket)
        refuse_binding "$a" ;;
    esac
    prev2=$prev
    prev=$a
  done
  case "${OMPI_MCA_hwloc_base_binding_policy:-none}" in
    none) ;;
    *) refuse_binding "OMPI_MCA_hwloc_base_binding_policy=$OMPI_MCA_hwloc_base_binding_policy" ;;
  esac
  export OMPI_MCA_hwloc_base_binding_policy=none
  pin="taskset -c $(cat "$cpus_file")"
fi

# HOST's CPU quota (netns-cluster.sh up --cpu-share): this shell joins the
# host's cgroup before exec, so the command and all it starts are charged to
# it. None recorded: no quota.
cgroup_file=/run/trainscope-netns/${head%-h*}/$head.cgroup
if [ -r "$cgroup_file" ]; then
  cgroup_dir=$(cat "$cgroup_file")
  if ! echo $$ 2>/dev/null >"$cgroup_dir/cgroup.procs"; then
    echo "$prog: cannot join $head's cgroup $cgroup_dir (is the cluster up? scripts/netns-cluster.sh status)" >&2
    exit 2
  fi
fi

# exec all the way down: mpirun keeps this script's pid (and process group),
# so whoever started us can signal it directly. $pin is unquoted on purpose:
# empty, or three words.
# shellcheck disable=SC2016,SC2086
exec ip netns exec "$head" unshare --uts -- $pin sh -c \
  'printf %s "$1" > /proc/sys/kernel/hostname || exit 2; shift; exec "$@"' sh "$head" \
  "$mpirun" --mca plm_rsh_agent "$here/netns-rsh-agent.sh" "$@"
