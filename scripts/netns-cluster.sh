#!/usr/bin/env bash
# A virtual cluster on one machine, made of Linux network namespaces, so that
# multi-host MPI jobs (mpirun --hostfile) can run for real without a second
# machine; optionally with each host on its own cores and behind a link of a
# given rate, so that it behaves like another machine on a network.
#
#   netns-cluster.sh up N [--prefix P] [--cores-per-host C] [--cpu-share F]
#                         [--link PROFILE | --rate RATE]
#   netns-cluster.sh down [--prefix P]   # removes everything `up` made
#   netns-cluster.sh status [--prefix P]
#
# Layout, for the default prefix `ts`:
#
#   namespace ts-br : bridge br0 and one veth port vhI per host (no address)
#   namespace ts-hI : lo up, eth0 = veth into br0, address 10.213.0.(I+1)/24
#   /etc/netns/ts-hI/hosts : every host name of the cluster -> its address
#   /run/trainscope-netns/ts/ : the cluster's configuration (see "State" below)
#
# `ip netns exec ts-hI CMD` bind-mounts /etc/netns/ts-hI/hosts over /etc/hosts,
# so every host name resolves inside every host. The root namespace gets no
# address and no interface: a cluster's traffic can only reach its own
# namespaces. Each cluster has its own bridge namespace, so clusters with
# different prefixes reuse the same subnet without seeing each other.
#
# Cores: with --cores-per-host C, host I owns the I-th group of C CPUs among
# those this script may run on (its affinity, what `nproc` counts), and
# netns-rsh-agent.sh and netns-mpirun.sh start every process of host I with
# `taskset -c` on that group; children inherit it. Affinity, not a cgroup:
# it needs nothing beyond util-linux and works the same under cgroup v1 and
# v2, but Open MPI, which sees the whole machine, would bind ranks to cores
# of other hosts, so netns-mpirun.sh refuses --bind-to other than none there.
#
# Hosts smaller than a core: with --cpu-share F (0 < F <= 1) each host also
# gets a CPU quota of F of its cores, a cgroup of its own (cpu.max on cgroup
# v2, cpu.cfs_quota_us/cfs_period_us on v1, whichever has the cpu
# controller here) with a short period (2 ms, longer only where F x period
# would fall below the kernel's 1 ms minimum quota), so that a step is
# throttled smoothly rather than in 100 ms bursts. floor(1/F) hosts then
# share each group of C CPUs (their quotas fit in it), so N hosts need
# ceil(N / floor(1/F)) x C CPUs: 8 hosts at 0.25 run on 2 cores. The agent
# and netns-mpirun.sh put every process they start into its host's cgroup
# (children inherit it). This is what time dilation needs: N hosts at share F
# with links at F x the rate behave, to first order, like N full-speed hosts
# with time stretched by 1/F (docs/CLUSTERS.md).
#
# Links: a token bucket (tc tbf) on both ends of each host's veth, the bridge
# port's egress (traffic into the host) and eth0's egress (traffic out of
# it), so each direction of each host's link runs at the rate, as on a
# full-duplex NIC. Only rates: netem (delay, loss) is not available on the
# machines this was written on, so latency is not emulated.
#
# State, in /run/trainscope-netns/P/ (gone with `down`, and at reboot with
# the namespaces themselves):
#   cluster.json  the configuration, for programs (suites/virtual_cluster.h):
#                 prefix, subnet, interface, cores_per_host (0: not pinned),
#                 cpu_share (1: no quota), cpu_period_us, cgroup (the
#                 cluster's cgroup folder, "" without a quota),
#                 link (profile, or "custom" for --rate; "unlimited"), rate
#                 (tc syntax, "" when unlimited), rate_bits_per_second (0:
#                 unlimited), tbf_burst_bytes, tbf_limit_bytes, hostfile, and
#                 hosts: [{name, address, cpus ("" when not pinned)}]
#   hostfile      `P-hI slots=S` per host (S = C when pinned, else 1)
#   P-hI.cpus     host I's CPU list, read by the agent and netns-mpirun.sh
#   P-hI.cgroup   host I's cgroup folder (with --cpu-share), ditto, through
#   cgroup/       a bind mount of the cluster's cgroup (visible in the hosts)
#
# Run jobs on it with scripts/netns-mpirun.sh (mpirun inside the first host of
# the hostfile, remote daemons started by scripts/netns-rsh-agent.sh); see
# docs/SUITES.md, "A virtual cluster on one machine".
#
# Exit codes: 0 ok, 1 a step failed, 2 bad usage (a bad rate, profile or core
# count too) or this machine cannot make namespaces (not root, no `ip`, no
# CAP_NET_ADMIN/CAP_SYS_ADMIN).
set -uo pipefail

readonly SUBNET=10.213.0      # /24, unusual on purpose: it must not clash with real networks
readonly MAX_HOSTS=250
readonly STATE_ROOT=/run/trainscope-netns
prog=${0##*/}

usage() {
  cat <<EOF
usage: $prog up N [--prefix P] [--cores-per-host C] [--cpu-share F] [--link PROFILE | --rate RATE]
                                  create (or reconfigure) a cluster of N hosts P-h0..P-h(N-1)
       $prog down [--prefix P]    remove the cluster's namespaces, qdiscs, state and
                                  /etc/netns/P-* entries
       $prog status [--prefix P]  show the cluster's configuration, addresses, link
                                  rates and processes

A virtual cluster in Linux network namespaces: bridge br0 in namespace P-br, and per
host a namespace P-hI with lo up and eth0 (a veth into br0) at $SUBNET.(I+1)/24, and
/etc/netns/P-hI/hosts naming every host. Nothing is added to the root namespace.
Default prefix: ts. Needs root, \`ip\` and \`tc\` (iproute2), \`taskset\` (util-linux).

  --cores-per-host C  host I runs on the I-th group of C of the CPUs this command may
                      use (N x C of them must exist); every process started in it by
                      netns-rsh-agent.sh or netns-mpirun.sh is pinned there (taskset).
                      Without it, hosts share all cores.
  --cpu-share F       each host gets F (0 < F <= 1) of its cores' time: a cgroup CPU
                      quota (cgroup v2 cpu.max or v1 cfs quota) with a 2 ms period;
                      floor(1/F) hosts share each group of C cores (C = 1 if not
                      given). With link rates x F this dilates time by 1/F.
  --link PROFILE      each host's link, both directions: gige (1gbit), 2.5gbe (2500mbit),
                      10gbe (10gbit), tb-bridge (a Thunderbolt IP bridge, 20gbit),
                      unlimited (no shaping; the default)
  --rate RATE         a link rate in tc's syntax instead (500mbit, 2.5gbit, 100mbps =
                      bytes/s), at least 1mbit
  --time-scale S      the link S (>= 1) times slower, its token bucket the same bytes:
                      the link in a time S times longer (a slowed replay)

Rates are emulated with tc tbf; latency is not (netem is not available here), so a
virtual link has the rate of a real one and the latency of a veth (microseconds).
Re-running \`up\` with other options reconfigures the cluster; processes already
running keep their old cores. The configuration is in $STATE_ROOT/P/cluster.json
and the hostfile beside it.

Exit codes: 0 ok, 1 a step failed, 2 bad usage (also an unknown profile, a rate tc
rejects, more cores than exist, a share outside (0, 1]), not root, no \`ip\`, or namespaces not permitted here
(e.g. a container without CAP_NET_ADMIN). A failed \`up\` leaves nothing behind.
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
cores_per_host=""
cpu_share=""
link=""
rate_arg=""
time_scale=1
while [[ $# -gt 0 ]]; do
  opt=${1%%=*}
  if [[ "$1" == *=* ]]; then
    value=${1#*=}
    shift
    set -- "$opt" "$value" "$@"
  fi
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --prefix|--cores-per-host|--cpu-share|--link|--rate|--time-scale)
      [[ $# -ge 2 ]] || die 2 "$1 needs a value"
      [[ "$1" == --prefix || "$cmd" == up ]] || die 2 "$1 is an option of 'up' only"
      case "$1" in
        --prefix) prefix=$2 ;;
        --cores-per-host) cores_per_host=$2 ;;
        --cpu-share) cpu_share=$2 ;;
        --link) link=$2 ;;
        --rate) rate_arg=$2 ;;
        --time-scale) time_scale=$2 ;;
      esac
      shift 2 ;;
    [0-9]*) [[ "$cmd" == up && -z "$count" ]] || die 2 "unexpected argument '$1'"; count=$1; shift ;;
    *) die 2 "unexpected argument '$1' (see --help)" ;;
  esac
done
# The prefix becomes namespace names and host names (at most 63 characters).
[[ "$prefix" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] ||
  die 2 "--prefix '$prefix': use 1-40 of a-z, 0-9 and '-', starting with a letter or digit"
bridge_ns="$prefix-br"
host_ns() { echo "$prefix-h$1"; }
state_dir="$STATE_ROOT/$prefix"

# ---- cores -----------------------------------------------------------------
# The CPUs this process may run on, as a list "0 1 2 ...": its affinity
# (/proc/self/status of awk, which inherits ours), which is what `nproc`,
# taskset and the trainer's default thread count go by.
allowed_cpus() {
  local list range out=""
  list=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
  for range in ${list//,/ }; do
    out+="${out:+ }$(seq -s ' ' "${range%-*}" "${range#*-}")"
  done
  echo "$out"
}

# "0 1 2 5" -> "0-2,5": taskset's list syntax, also what the kernel prints.
cpu_list() {
  local out="" start="" prev="" c
  for c in "$@" ""; do
    if [[ -n "$prev" && ( -z "$c" || "$c" -ne $((prev + 1)) ) ]]; then
      out+="${out:+,}$start"
      [[ "$prev" != "$start" ]] && out+="-$prev"
      start=""
    fi
    [[ -z "$start" ]] && start=$c
    prev=$c
  done
  echo "$out"
}

declare -a host_cpus=()   # host I's CPU list, "" when not pinned
plan_cores() {
  local -a allowed
  read -r -a allowed <<<"$(allowed_cpus)"
  # With a CPU share, floor(1/F) hosts share a group: their quotas fit in it.
  local groups=$(((count + hosts_per_group - 1) / hosts_per_group)) i g
  local need=$((groups * cores_per_host))
  if ((need > ${#allowed[@]})); then
    if ((hosts_per_group > 1)); then
      die 2 "up $count --cores-per-host $cores_per_host --cpu-share $cpu_share_text needs $need cores ($hosts_per_group hosts share each group of $cores_per_host), but this process may use ${#allowed[@]} (CPUs $(cpu_list "${allowed[@]}"))"
    fi
    die 2 "up $count --cores-per-host $cores_per_host needs $count x $cores_per_host = $need cores, but this process may use ${#allowed[@]} (CPUs $(cpu_list "${allowed[@]}"))"
  fi
  for ((i = 0; i < count; i++)); do
    g=$((i / hosts_per_group))
    host_cpus[i]=$(cpu_list "${allowed[@]:g*cores_per_host:cores_per_host}")
  done
}

# ---- CPU share: a cgroup quota per host (scripts/netns-cgroup.sh) ---------
# shellcheck source=netns-cgroup.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns-cgroup.sh" || die 1 "cannot read $(dirname "${BASH_SOURCE[0]}")/netns-cgroup.sh"

# ---- link rates ------------------------------------------------------------
# Named links: the rate of one direction of a host's port.
profile_rate() {
  case "$1" in
    gige) echo 1gbit ;;
    2.5gbe) echo 2500mbit ;;
    10gbe) echo 10gbit ;;
    tb-bridge) echo 20gbit ;;   # Thunderbolt 3/4 IP bridge, as measured between two Macs
    unlimited) echo "" ;;
    *) return 1 ;;
  esac
}

# RATE in tc's syntax -> bits per second (integer), or failure. tc's units:
# bit (also a bare number), kbit..tbit, kibit..tibit; bps (bytes/s), kbps..tbps,
# kibps..tibps; case-insensitive.
rate_bits() {
  local r=${1,,} number unit factor
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([a-z]*)$ ]] || return 1
  number=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[3]}
  case "$unit" in
    ""|bit) factor=1 ;;
    kbit) factor=1e3 ;;  mbit) factor=1e6 ;;  gbit) factor=1e9 ;;  tbit) factor=1e12 ;;
    kibit) factor=1024 ;;  mibit) factor=1048576 ;;  gibit) factor=1073741824 ;;
    tibit) factor=1099511627776 ;;
    bps) factor=8 ;;
    kbps) factor=8e3 ;;  mbps) factor=8e6 ;;  gbps) factor=8e9 ;;  tbps) factor=8e12 ;;
    kibps) factor=8192 ;;  mibps) factor=8388608 ;;  gibps) factor=8589934592 ;;
    tibps) factor=8796093022208 ;;
    *) return 1 ;;
  esac
  awk -v n="$number" -v f="$factor" 'BEGIN { printf "%.0f\n", n * f }'
}

link_name=unlimited      # what cluster.json and status call the link
rate_text=""             # as given (tc syntax); "" = unlimited
rate_bps=0
tbf_burst=0
tbf_limit=0
plan_link() {
  [[ -n "$link" && -n "$rate_arg" ]] && die 2 "give --link or --rate, not both"
  [[ "$time_scale" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$time_scale" 'BEGIN { exit !(s >= 1) }' ||
    die 2 "--time-scale '$time_scale': a number of at least 1"
  if [[ -n "$link" ]]; then
    rate_text=$(profile_rate "$link") ||
      die 2 "--link '$link': unknown profile; profiles are gige (1gbit), 2.5gbe (2500mbit), 10gbe (10gbit), tb-bridge (20gbit), unlimited"
    link_name=$link
  elif [[ -n "$rate_arg" ]]; then
    rate_text=$rate_arg
    link_name=custom
  fi
  [[ -z "$rate_text" ]] && return 0
  rate_bps=$(rate_bits "$rate_text") ||
    die 2 "--rate '$rate_text': not a rate in tc's syntax: a number and a unit, e.g. 500mbit, 2.5gbit, 100mbps (bytes/s)"
  ((rate_bps >= 1000000)) || die 2 "--rate '$rate_text' is below 1mbit: too slow for MPI jobs"
  ((rate_bps <= 1000000000000)) || die 2 "--rate '$rate_text' is above 1tbit"
  # The bucket holds 4 ms of the rate: rate/HZ for HZ = 250 (so a timer tick
  # never starves the link on such kernels; tbf's own timer is a hrtimer),
  # and at least 128 KiB, two of the 64 KiB GSO packets a veth carries. Less
  # delivered 82% of 1gbit (64 KiB) where this delivers 96% (TCP payload of a
  # 300 MB transfer between two hosts, at 1gbit and 10gbit alike). The queue
  # behind it holds two buckets: more added nothing measurable but delay.
  tbf_burst=$((rate_bps / 8 / 250))
  ((tbf_burst < 131072)) && tbf_burst=131072
  tbf_limit=$((2 * tbf_burst))
  # Slowed: the rate / S, the bucket as it was (its bytes, not its 4 ms).
  rate_bps=$(awk -v r="$rate_bps" -v s="$time_scale" 'BEGIN { printf "%.0f\n", r / s }')
  [[ "$time_scale" == 1 ]] || rate_text="${rate_bps}bit"
}

# ---- can this machine do it? ---------------------------------------------
if [[ "$cmd" == up ]]; then
  [[ "$count" =~ ^[0-9]+$ ]] || die 2 "up needs the number of hosts, e.g. '$prog up 2'"
  (( count >= 1 && count <= MAX_HOSTS )) || die 2 "up: the number of hosts must be 1..$MAX_HOSTS, got $count"
  if [[ -n "$cores_per_host" ]]; then
    [[ "$cores_per_host" =~ ^[1-9][0-9]{0,5}$ ]] ||
      die 2 "--cores-per-host '$cores_per_host': give a positive number of cores"
  fi
  plan_share   # a share without --cores-per-host pins to one core each
  if [[ -n "$cores_per_host" ]]; then
    command -v taskset >/dev/null 2>&1 || die 2 "'taskset' is missing: install util-linux (scripts/install-deps.sh)"
    plan_cores
  fi
  if [[ -n "$cpu_share" ]]; then
    find_cgroup || die 2 "--cpu-share needs the cgroup cpu controller (cgroup v2 cpu.max or v1 cpu.cfs_quota_us); none is mounted here"
  fi
  plan_link
  [[ -n "$rate_text" ]] && { command -v tc >/dev/null 2>&1 || die 2 "the 'tc' command is missing: install iproute2"; }
fi
command -v ip >/dev/null 2>&1 || die 2 "the 'ip' command is missing: install iproute2 (scripts/install-deps.sh)"
[[ $(id -u) -eq 0 ]] || die 2 "must run as root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"

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
end_processes_in() {  # end_processes_in NS: TERM, up to 2 s, then KILL
  local ns=$1
  local -a pids
  mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
  [[ ${#pids[@]} -gt 0 ]] || return 0
  echo "$prog: ending processes still in $ns: ${pids[*]}" >&2
  kill -TERM "${pids[@]}" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [[ -z "$(ip netns pids "$ns" 2>/dev/null)" ]] && break
    sleep 0.2
  done
  mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
  [[ ${#pids[@]} -gt 0 ]] && kill -KILL "${pids[@]}" 2>/dev/null
}

do_down() {
  local ns rc=0 dev
  for ns in $(existing); do
    # A process still inside would keep the namespace alive after its name is
    # gone; only jobs started into the cluster can be there.
    end_processes_in "$ns"
    # The qdiscs would go with the interfaces; removed first all the same, so
    # that a namespace something still holds open is left unshaped.
    for dev in $(ip -n "$ns" -o link show 2>/dev/null | awk -F': ' '$2 ~ /^(eth0|vh[0-9]+)@/ { sub(/@.*/, "", $2); print $2 }'); do
      tc -n "$ns" qdisc del dev "$dev" root >/dev/null 2>&1
    done
    # Deleting a namespace destroys its interfaces, and with them the veth peers.
    ip netns delete "$ns" 2>/dev/null || { echo "$prog: could not delete namespace $ns" >&2; rc=1; }
  done
  remove_cgroups kill || rc=1
  local d
  for d in /etc/netns/"$prefix"-br /etc/netns/"$prefix"-h*; do
    [[ -d "$d" && "$(basename "$d")" =~ ^${prefix}-(br|h[0-9]+)$ ]] || continue
    rm -rf -- "$d" || rc=1
  done
  rmdir /etc/netns 2>/dev/null   # only if no other cluster (or user) has entries
  rm -rf -- "$state_dir" || rc=1
  rmdir "$STATE_ROOT" 2>/dev/null
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

make_host() {  # make_host I HOSTS_TEXT: namespace, veth into br0, address, hosts file
  local i=$1 hosts_text=$2
  local ns port addr
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
}

# Sets (or, unlimited, removes) the rate of both directions of host I's link.
# Returns 2 when tc refuses the rate: bad input, not a failed step.
shape_link() {
  local i=$1 ns_dev ns dev err
  for ns_dev in "$bridge_ns vh$i" "$(host_ns "$i") eth0"; do
    read -r ns dev <<<"$ns_dev"
    if [[ -z "$rate_text" ]]; then
      tc -n "$ns" qdisc del dev "$dev" root >/dev/null 2>&1   # none there is fine
      continue
    fi
    if ! err=$(tc -n "$ns" qdisc replace dev "$dev" root tbf rate "${rate_bps}bit" \
                 burst "$tbf_burst" limit "$tbf_limit" 2>&1); then
      echo "$prog: tc refused the link rate '$rate_text' ($rate_bps bit/s, burst $tbf_burst B, limit $tbf_limit B) on $dev of $ns: $err" >&2
      return 2
    fi
  done
}

# Writes FILE atomically (a reader sees the old or the new file, never half).
write_atomically() {  # write_atomically FILE TEXT
  local tmp="$1.tmp.$$"
  if ! { printf '%s' "$2" >"$tmp" && mv -f -- "$tmp" "$1"; }; then
    rm -f -- "$tmp"
    return 1
  fi
}

write_state() {
  local i ns slots=1 hosts_json="" json
  [[ -n "$cores_per_host" ]] && slots=$cores_per_host
  mkdir -p "$state_dir" || { echo "$prog: cannot create $state_dir" >&2; return 1; }
  rm -f -- "$state_dir"/*.cpus "$state_dir"/*.cgroup
  local cgroup_dir=""
  [[ -n "$cpu_share" ]] && cgroup_dir=$(cluster_cgroup)
  local hostfile_text=""
  for ((i = 0; i < count; i++)); do
    ns=$(host_ns "$i")
    hostfile_text+="$ns slots=$slots"$'\n'
    if [[ -n "${host_cpus[i]:-}" ]]; then
      write_atomically "$state_dir/$ns.cpus" "${host_cpus[i]}"$'\n' || return 1
    fi
    if [[ -n "$cgroup_dir" ]]; then
      write_atomically "$state_dir/$ns.cgroup" "$(cgroup_mount)/$ns"$'\n' || return 1
    fi
    # One host per line.
    hosts_json+="${hosts_json:+,}"$'\n'"    {\"name\": \"$ns\", \"address\": \"$SUBNET.$((i + 1))\", \"cpus\": \"${host_cpus[i]:-}\"}"
  done
  write_atomically "$state_dir/hostfile" "$hostfile_text" || return 1
  json=$(cat <<EOF
{
  "prefix": "$prefix",
  "subnet": "$SUBNET.0/24",
  "interface": "eth0",
  "cores_per_host": ${cores_per_host:-0},
  "cpu_share": $cpu_share_text,
  "cpu_period_us": $cpu_period_us,
  "cpu_quota_us": $cpu_quota_us,
  "cgroup": "$cgroup_dir",
  "link": "$link_name",
  "rate": "$rate_text",
  "rate_bits_per_second": $rate_bps,
  "tbf_burst_bytes": $tbf_burst,
  "tbf_limit_bytes": $tbf_limit,
  "time_scale": $time_scale,
  "hostfile": "$state_dir/hostfile",
  "hosts": [$hosts_json
  ]
}
EOF
)
  # Last: a program that finds cluster.json finds the files it names.
  write_atomically "$state_dir/cluster.json" "$json"$'\n'
}

do_up() {
  local i hosts_text rc
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
    make_host "$i" "$hosts_text" || return 1
    shape_link "$i"
    rc=$?
    ((rc == 0)) || return $rc
  done
  if [[ -n "$cpu_share" ]]; then
    make_cgroups || return 1
  else
    remove_cgroups   # an earlier `up` with a share; left if something still runs there
  fi
  write_state || return 1
  # Hosts beyond N from an earlier, larger `up` keep working but are not in
  # the new hosts files; say so rather than silently removing them.
  local extra
  extra=$(existing | grep -E "^${prefix}-h[0-9]+\$" | awk -F"${prefix}-h" -v n="$count" '$2 >= n' | tr '\n' ' ')
  if [[ -n "$extra" ]]; then
    echo "$prog: note: hosts from an earlier, larger cluster remain: ${extra% } ('down' removes them)" >&2
  fi
}

# ---- status ----------------------------------------------------------------
# A device's egress rate as tc shows it ("unlimited" without a tbf).
shaped_rate() {  # shaped_rate NS DEV
  local r
  r=$(tc -n "$1" qdisc show dev "$2" 2>/dev/null | awk '$2 == "tbf" { for (i = 1; i < NF; i++) if ($i == "rate") print $(i + 1) }')
  echo "${r:-unlimited}"
}

do_status() {
  local ns names state="$state_dir/cluster.json"
  names=$(existing)
  if [[ -z "$names" ]]; then
    echo "no cluster with prefix '$prefix'"
    return 0
  fi
  if [[ -r "$state" ]]; then
    awk -F'[:,]' '
      /^  "cores_per_host":/ { gsub(/[ "]/, "", $2); cores = ($2 == "0") ? "shared (not pinned)" : $2 }
      /^  "link":/ { gsub(/[ "]/, "", $2); link = $2 }
      /^  "rate":/ { gsub(/[ "]/, "", $2); rate = $2 }
      /^  "cpu_share":/ { gsub(/[ "]/, "", $2); share = $2 }
      /^  "cpu_period_us":/ { gsub(/[ "]/, "", $2); period = $2 }
      END { printf "cluster %s: link %s%s, cores per host %s%s\n", prefix, link, rate == "" ? "" : " (" rate ")", cores,
                   (share == "" || share == "1") ? "" : ", CPU share " share " of them (period " period " us)" }
    ' prefix="$prefix" "$state"
    echo "configuration: $state; hostfile: $state_dir/hostfile"
  else
    echo "cluster $prefix: no recorded configuration (made by an older netns-cluster.sh?)"
  fi
  for ns in $names; do
    if [[ "$ns" == "$bridge_ns" ]]; then
      printf '%-20s bridge br0: %s\n' "$ns" \
        "$(ip -n "$ns" -br link show master br0 2>/dev/null | awk '{sub(/@.*/, "", $1); printf "%s(%s) ", $1, $2}')"
    else
      local pinned="all" port="vh${ns##*-h}"
      [[ -r "$state_dir/$ns.cpus" ]] && pinned=$(<"$state_dir/$ns.cpus")
      printf '%-20s %s  cpus: %s  rate out/in: %s/%s  processes: %s\n' "$ns" \
        "$(ip -n "$ns" -4 -br addr show dev eth0 2>/dev/null | awk '{sub(/@.*/, "", $1); print $1, $2, $3}')" \
        "$pinned" "$(shaped_rate "$ns" eth0)" "$(shaped_rate "$bridge_ns" "$port")" \
        "$(ip netns pids "$ns" 2>/dev/null | wc -l)"
    fi
  done
}

case "$cmd" in
  up)
    command -v unshare >/dev/null 2>&1 ||
      echo "$prog: note: 'unshare' (util-linux) is missing: netns-rsh-agent.sh needs it" >&2
    do_up
    rc=$?
    if ((rc != 0)); then
      echo "$prog: up failed; removing what was made ('$prog down --prefix $prefix')" >&2
      do_down
      exit "$rc"
    fi
    do_status
    ;;
  down) do_down || exit 1 ;;
  status) do_status ;;
esac
