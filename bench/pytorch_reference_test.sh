#!/usr/bin/env bash
# bench/pytorch_reference.py gives PyTorch the OpenBLAS kernels trainscope
# runs on this CPU (or keeps the environment's OPENBLAS_CORETYPE), says so in
# its header, and each row names the core its run used; --coretype names one.
# Skipped (exit 77) without python3-torch, when its torch is not on OpenBLAS,
# or off x86-64 (the core names are x86's).
#   pytorch_reference_test.sh TRAINSCOPE
set -u
trainscope=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${TRAINSCOPE_PYTHON:-/usr/bin/python3}
[[ $(uname -m) == x86_64 ]] || { echo "skipped: OpenBLAS core names are x86-64's, this is $(uname -m)"; exit 77; }
"$py" -c "import torch" 2>/dev/null || { echo "skipped: $py has no torch (python3-torch)"; exit 77; }
want=$("$trainscope" version | sed -n 's/^openblas: .* \([A-Za-z0-9_]*\) MAX_THREADS.*/\1/p')
[[ -n "$want" ]] || { echo "FAIL: $trainscope version names no OpenBLAS core"; exit 1; }
failed=0
check() {  # check NOTE CORE ARGS...: the header has NOTE, every row ran on CORE
  local note=$1 core=$2 out rows bad
  shift 2
  out=$("$py" "$here/pytorch_reference.py" --trainscope "$trainscope" --threads 1 --steps 1 \
    --batch 1 --block 16 "$@" 2>&1)
  rows=$(grep -E '^ +1 +(default|tuned) ' <<<"$out")
  if [[ -n "$rows" && -z $(awk '$NF != "?"' <<<"$rows") ]]; then
    echo "skipped: $py's torch does not run on OpenBLAS (no core to name)"
    exit 77
  fi
  bad=$(awk -v c="$core" '$NF != c' <<<"$rows")
  if [[ $out != *"$note"* || $(wc -l <<<"$rows") -ne 2 || -n "$bad" ]]; then
    echo "FAIL: pytorch_reference.py $* (expected '$note' and two rows on $core):"
    echo "$out"
    failed=1
  fi
}
if [[ -n "${OPENBLAS_CORETYPE:-}" ]]; then
  check "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (from the environment)" "$want"
else
  check "OPENBLAS_CORETYPE=$want (as trainscope picks it)" "$want"
fi
# Prescott: a core every x86-64 CPU runs, and not the one trainscope picks;
# named on the command line, it wins over the environment's.
check "OPENBLAS_CORETYPE=Prescott (--coretype)" Prescott --coretype Prescott
exit "$failed"
