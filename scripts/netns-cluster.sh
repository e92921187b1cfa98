#!/usr/bin/env bash
# A virtual cluster on one machine, made of Linux network namespaces, so that
# multi-host MPI jobs (mpirun --hostfile) can run for real without a second
# machine.
#
#   netns-cluster.sh up N [--prefix P]   # P-br (bridge br0) + hosts P-h0 .. P-h(N-1)
#   netns-cluster.sh down [--prefix P]   # removes everything `up` made
#   netns-cluster.sh status [--prefix P]
#
# Layout, for the default prefix `ts`:
#
#   namespace ts-br : bridge br0 and one veth port vhI per host (no address)
#   namespace ts-hI : lo up, eth0 = veth into br0, address 10.213.0.(I+1)/24
#   /etc/netns/ts-hI/hosts : every host name of the cluster -> its address
#
# `ip netns exec ts-hI CMD` bind-mounts /etc/netns/ts-hI/hosts over /etc/hosts,
# so every host name resolves inside every host. The root namespace gets no
# address and no interface: a cluster's traffic can only reach its own
# namespaces. Each cluster has its own bridge namespace, so clusters with
# different prefixes reuse the same subnet without seeing each other.
#
# Run jobs on it with scripts/netns-mpirun.sh (mpirun inside the first host of
# the hostfile, remote daemons started by scripts/netns-rsh-agent.sh); see
# docs/SUITES.md, "A virtual cluster on one machine".
#
# Exit codes: 0 ok, 1 a step failed, 2 bad usage or this machine cannot make
# namespaces (not root, no `ip`, no CAP_NET_ADMIN/CAP_SYS_ADMIN).
set -uo pipefail

readonly SUBNET=10.213.0      # /24, unusual on purpose: it must not clash with real networks
readonly MAX_HOSTS=250
prog=${0##*/}

usage() {
  cat <<EOF
usage: $prog up N [--prefix P]    create (or complete) a cluster of N hosts P-h0..P-h(N-1)
       $prog down [--prefix P]    remove the cluster's namespaces and /etc/netns/P-* entries
       $prog status [--prefix P]  show the cluster's namespaces, addresses and processes

A virtual cluster in Linux network namespaces: bridge br0 in namespace P-br, and per
host a namespace P-hI with lo up and eth0 (a veth into br0) at $SUBNET.(I+1)/24, and
/etc/netns/P-hI/hosts naming every host. Nothing is added to the root namespace.
Default prefix: ts. Needs root and the \`ip\` command (iproute2).

Exit codes: 0 ok, 1 a step failed, 2 bad usage, not root, no \`ip\`, or namespaces not
permitted here (e.g. a container without CAP_NET_ADMIN).
EOF
}

die() {  # die CODE MESSAGE
  echo "$prog: $2" >&2
  exit "$1"
}

# ---- arguments ------------------------------------------------------------
cmd=${1:-}
[[ -z "$cmd" ]] && { usage >&2; exit 2; }
shift
case "$cmd" in
  -h|--help|help) usage; exit 0 ;;
  up|down|status) ;;
  *) echo "$prog: unknown command '$cmd'" >&2; usage >&2; exit 2 ;;
esac
count=""
prefix=ts
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --prefix) [[ $# -ge 2 ]] || die 2 "--prefix needs a value"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    [0-9]*) [[ "$cmd" == up && -z "$count" ]] || die 2 "unexpected argument '$1'"; count=$1; shift ;;
    *) die 2 "unexpected argument '$1' (see --help)" ;;
  esac
done
# The prefix becomes namespace names and host names (at most 63 characters).
[[ "$prefix" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] ||
  die 2 "--prefix '$prefix': use 1-40 of a-z, 0-9 and '-', starting with a letter or digit"
if [[ "$cmd" == up ]]; then
  [[ "$count" =~ ^[0-9]+$ ]] || die 2 "up needs the number of hosts, e.g. '$prog up 2'"
  (( count >= 1 && count <= MAX_HOSTS )) || die 2 "up: the number of hosts must be 1..$MAX_HOSTS, got $count"
fi

# ---- can this machine do it? ---------------------------------------------
command -v ip >/dev/null 2>&1 || die 2 "the 'ip' command is missing: install iproute2 (scripts/install-deps.sh)"
[[ $(id -u) -eq 0 ]] || die 2 "must run as root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"

bridge_ns="$prefix-br"
host_ns() { echo "$prefix-h$1"; }

# The namespaces of this prefix that exist, bridge first.
existing() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}-(br|h[0-9]+)\$" |
    awk -v br="$bridge_ns" -v skip=$((${#prefix} + 3)) '{ print ($1 == br) ? -1 : substr($1, skip), $1 }' |
    sort -n | cut -d' ' -f2
}

run() {  # run DESCRIPTION CMD... : one step of `up`, with a clear failure message
  local what=$1
  shift
  local err
  if ! err=$("$@" 2>&1); then
    echo "$prog: $what failed: $* : $err" >&2
    return 1
  fi
}

# ---- down ------------------------------------------------------------------
do_down() {
  local ns rc=0
  local -a pids
  for ns in $(existing); do
    # A process still inside would keep the namespace alive after its name is
    # gone; only jobs started into the cluster can be there.
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    if [[ ${#pids[@]} -gt 0 ]]; then
      echo "$prog: ending processes still in $ns: ${pids[*]}" >&2
      kill -TERM "${pids[@]}" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        [[ -z "$(ip netns pids "$ns" 2>/dev/null)" ]] && break
        sleep 0.2
      done
      mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
      [[ ${#pids[@]} -gt 0 ]] && kill -KILL "${pids[@]}" 2>/dev/null
    fi
    # Deleting a namespace destroys its interfaces, and with them the veth peers.
    ip netns delete "$ns" 2>/dev/null || { echo "$prog: could not delete namespace $ns" >&2; rc=1; }
  done
  local d
  for d in /etc/netns/"$prefix"-br /etc/netns/"$prefix"-h*; do
    [[ -d "$d" && "$(basename "$d")" =~ ^${prefix}-(br|h[0-9]+)$ ]] || continue
    rm -rf -- "$d" || rc=1
  done
  rmdir /etc/netns 2>/dev/null   # only if no other cluster (or user) has entries
  return $rc
}

# ---- up --------------------------------------------------------------------
make_ns() {  # make_ns NAME: create it if missing; probes whether we may at all
  local ns=$1 err
  ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" && return 0
  if ! err=$(ip netns add "$ns" 2>&1); then
    case "$err" in
      *"Operation not permitted"*|*"Permission denied"*|*"Read-only file system"*)
        echo "$prog: network namespaces are not permitted here (ip netns add $ns: $err)." >&2
        echo "$prog: a container needs CAP_NET_ADMIN and CAP_SYS_ADMIN (e.g. docker --privileged)." >&2
        do_down
        exit 2 ;;
    esac
    echo "$prog: ip netns add $ns failed: $err" >&2
    return 1
  fi
  ip -n "$ns" link set lo up
}

do_up() {
  local i ns port addr hosts_text
  make_ns "$bridge_ns" || return 1
  if ! ip -n "$bridge_ns" link show br0 >/dev/null 2>&1; then
    run "creating bridge br0 in $bridge_ns" ip -n "$bridge_ns" link add br0 type bridge || return 1
  fi
  run "bringing br0 up" ip -n "$bridge_ns" link set br0 up || return 1

  hosts_text=$'127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
  for ((i = 0; i < count; i++)); do
    hosts_text+="$SUBNET.$((i + 1))"$'\t'"$(host_ns "$i")"$'\n'
  done

  for ((i = 0; i < count; i++)); do
    ns=$(host_ns "$i")
    port="vh$i"
    addr="$SUBNET.$((i + 1))/24"
    make_ns "$ns" || return 1
    # Created inside the bridge namespace with its peer placed straight into
    # the host namespace: no interface ever appears in the root namespace.
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
      ip -n "$bridge_ns" link del "$port" >/dev/null 2>&1   # a half-made pair from a failed up
      run "creating veth eth0 of $ns" \
        ip -n "$bridge_ns" link add "$port" type veth peer name eth0 netns "$ns" || return 1
    fi
    run "attaching $port to br0" ip -n "$bridge_ns" link set "$port" master br0 up || return 1
    # IPv4 only: no router solicitations or link-local addresses for MPI to trip over.
    ip netns exec "$ns" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6' 2>/dev/null
    run "addressing eth0 of $ns" ip -n "$ns" addr replace "$addr" dev eth0 || return 1
    run "bringing eth0 of $ns up" ip -n "$ns" link set eth0 up || return 1
    mkdir -p "/etc/netns/$ns" || { echo "$prog: cannot create /etc/netns/$ns" >&2; return 1; }
    printf '%s' "$hosts_text" >"/etc/netns/$ns/hosts" || return 1
  done
  # Hosts beyond N from an earlier, larger `up` keep working but are not in
  # the new hosts files; say so rather than silently removing them.
  local extra
  extra=$(existing | grep -E "^${prefix}-h[0-9]+\$" | awk -F"${prefix}-h" -v n="$count" '$2 >= n' | tr '\n' ' ')
  if [[ -n "$extra" ]]; then
    echo "$prog: note: hosts from an earlier, larger cluster remain: ${extra% } ('down' removes them)" >&2
  fi
}

do_status() {
  local ns names
  names=$(existing)
  if [[ -z "$names" ]]; then
    echo "no cluster with prefix '$prefix'"
    return 0
  fi
  for ns in $names; do
    if [[ "$ns" == "$bridge_ns" ]]; then
      printf '%-20s bridge br0: %s\n' "$ns" \
        "$(ip -n "$ns" -br link show master br0 2>/dev/null | awk '{sub(/@.*/, "", $1); printf "%s(%s) ", $1, $2}')"
    else
      printf '%-20s %s  processes: %s\n' "$ns" \
        "$(ip -n "$ns" -4 -br addr show dev eth0 2>/dev/null | awk '{sub(/@.*/, "", $1); print $1, $2, $3}')" \
        "$(ip netns pids "$ns" 2>/dev/null | wc -l)"
    fi
  done
}

case "$cmd" in
  up)
    command -v unshare >/dev/null 2>&1 ||
      echo "$prog: note: 'unshare' (util-linux) is missing: netns-rsh-agent.sh needs it" >&2
    if ! do_up; then
      echo "$prog: up failed; removing what was made ('$prog down --prefix $prefix')" >&2
      do_down
      exit 1
    fi
    do_status
    ;;
  down) do_down || exit 1 ;;
  status) do_status ;;
esac
