#!/usr/bin/env bash
# zero_bench's flags: bad values are exit 2 with the flag named, never an
# "OK" over nothing compared; good ones (--bucket-mb included) run and pass.
#   zero_bench_test.sh ZERO_BENCH [MPIRUN]
set -u
bench=$1
mpirun=${2:-}
failed=0
expect() {  # expect CODE TEXT ARGS...: exit CODE and TEXT in the output
  local code=$1 text=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code || $out != *"$text"* ]]; then
    echo "FAIL: $* exited $rc (expected $code with '$text'):"
    echo "$out"
    failed=1
  fi
}
expect 2 "--steps: must be at least 1, got 0" "$bench" --steps 0
expect 2 "--steps: must be at least 1, got x" "$bench" --steps x
expect 2 "unknown all-reduce algorithm 'bogus'" "$bench" --allreduce bogus
expect 2 "--batch: must be a positive number" "$bench" --batch -1
expect 2 "--bucket-mb: must be a positive number" "$bench" --bucket-mb 0
if [[ -n $mpirun ]]; then
  expect 0 "# OK" "$mpirun" -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    "$bench" --model tiny --steps 3 --bucket-mb 0.05
fi
[[ $failed -eq 0 ]] && echo "zero_bench flags: ok"
exit $failed
