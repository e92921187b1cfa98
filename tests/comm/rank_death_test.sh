#!/usr/bin/env bash
# Kills rank 1 of a 2-rank job with SIGKILL and checks that mpirun ends (no
# hang) with a non-zero exit code, and that the job left nothing in /dev/shm.
#   rank_death_test.sh MPIRUN TRAINSCOPE [train|shm]
# train: a training job (Open MPI's all-reduce); shm: an all-reduce sweep of
# 64 MiB messages over the shared-memory algorithm, so rank 1 dies inside a
# shared-memory reduction (nearly all of its time is spent in one).
set -u
mpirun=$1
trainscope=$2
what=${3:-train}
if [[ $what == shm ]]; then
  command=(allreduce-bench --allreduce shm --min-bytes 67108864 --max-bytes 67108864
           --iters 100000 --warmup 0 --no-copy-probe)
else
  command=(train --model tiny --steps 100000 --threads 1 --quiet --mode sharded)
fi
shm_before=$(ls /dev/shm 2>/dev/null | sort)
"$mpirun" -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
  --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  "$trainscope" "${command[@]}" >/dev/null 2>&1 &
job=$!
# Whether $1 descends from $2: other tests' jobs may have a rank 1 too.
descends_from() {
  local pid=$1
  while [[ $pid -gt 1 ]]; do
    [[ $pid -eq $2 ]] && return 0
    pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $pid ]] || return 1
  done
  return 1
}
victim=""
for _ in $(seq 1 100); do
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}; pid=${pid%/environ}
    if { tr '\0' '\n' <"$env" | grep -qx 'OMPI_COMM_WORLD_RANK=1'; } 2>/dev/null &&
       grep -q trainscope "/proc/$pid/cmdline" 2>/dev/null && descends_from "$pid" "$job"; then
      victim=$pid
      break 2
    fi
  done
  sleep 0.1
done
if [[ -z "$victim" ]]; then
  echo "rank 1 never appeared"; kill "$job"; exit 1
fi
sleep 1   # let it get into the training loop
# This job's shared-memory segments share a job id ("vader_segment.HOST.0.JOBID.RANK"):
# the victim maps them. Only those count as left behind; other jobs on the
# machine (tests of other checkouts) may come and go meanwhile.
job_prefix=$(grep -o '/dev/shm/vader_segment\.[^ ]*' "/proc/$victim/maps" 2>/dev/null | head -n 1 |
  sed 's|^/dev/shm/||; s|\.[0-9]*$||')
kill -9 "$victim"
for _ in $(seq 1 600); do
  if ! kill -0 "$job" 2>/dev/null; then
    wait "$job"; rc=$?
    if [[ $rc -eq 0 ]]; then echo "job ended with exit 0 although rank 1 was killed"; exit 1; fi
    left=$(comm -13 <(echo "$shm_before") <(ls /dev/shm 2>/dev/null | sort))
    if [[ -n $job_prefix ]]; then
      left=$(grep -F -- "$job_prefix." <<<"$left" || true)
    fi
    if [[ -n $left ]]; then
      echo "job ended with exit $rc, but left in /dev/shm:"; echo "$left"; exit 1
    fi
    echo "$what job ended with exit $rc after rank 1 died, nothing left in /dev/shm: ok"; exit 0
  fi
  sleep 0.1
done
echo "job still running 60 s after rank 1 died: hang"
for env in /proc/[0-9]*/environ; do  # this job's ranks only, while mpirun still holds them
  pid=${env#/proc/}; pid=${pid%/environ}
  grep -q "100000" "/proc/$pid/cmdline" 2>/dev/null && descends_from "$pid" "$job" &&
    kill -9 "$pid"
done
kill -9 "$job"
exit 1
