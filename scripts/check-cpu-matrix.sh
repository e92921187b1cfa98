#!/usr/bin/env bash
# The test suite at every CPU level this machine can stand in for (on demand;
# CI runs it at avx2).
#
# For each ISA level from avx2 up to this CPU's own, runs ctest with
# oneDNN's DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA and the project's probe
# (TRAINSCOPE_MAX_CPU_ISA, kernels/cpu_isa.h) capped at that level, so that
# one machine shows the suite passes, or skips with a reason, on the CPUs
# the project meets: avx2 (an AVX2-only EPYC), avx512_core (AVX-512 without
# bf16), avx512_core_bf16 (Zen 4/5), avx512_core_amx (Sapphire Rapids).
# Code compiled with -march=native still runs this CPU's instructions; what
# changes per level is every decision the probe and oneDNN make.
#
#   scripts/check-cpu-matrix.sh                      # every level up to this CPU's
#   scripts/check-cpu-matrix.sh --levels avx2 -- -j2 # one level, ctest arguments after --
#
# Prints, per level, the counts and every skipped test with its reason.
# Exit 0: every level passed and every skip printed a reason; 1: a test
# failed or skipped silently; 2: bad usage (a level above this CPU's, say).
# Needs the release build (scripts/test.sh, or cmake --build --preset release).
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: check-cpu-matrix.sh [--levels L1,L2,...] [--build-dir DIR] [-- CTEST_ARGS...]"
all_levels=(avx2 avx512_core avx512_core_bf16 avx512_core_amx)
levels=""
build=build
ctest_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --levels) [[ $# -ge 2 && -n $2 ]] || { echo "check-cpu-matrix.sh: --levels needs a list" >&2; exit 2; }
              levels=$2; shift 2 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "check-cpu-matrix.sh: --build-dir needs a directory" >&2; exit 2; }
                 build=$2; shift 2 ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-cpu-matrix.sh: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
done
if [[ ! -x $build/trainscope ]]; then
  echo "check-cpu-matrix.sh: $build/trainscope not built (cmake --build --preset release)" >&2
  exit 2
fi

# This CPU's own level, from the project's probe (uncapped).
native=$(env -u TRAINSCOPE_MAX_CPU_ISA "$build/trainscope" version |
         sed -n 's/^cpu: .*(level \([a-z0-9_]*\))$/\1/p')
rank_of() {  # rank_of LEVEL: its index in all_levels, or -1
  local i
  for i in "${!all_levels[@]}"; do [[ ${all_levels[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo -1
}
native_rank=$(rank_of "$native")
if [[ -z $levels ]]; then
  if [[ $native_rank -lt 0 ]]; then
    echo "check-cpu-matrix.sh: this CPU's level is '$native', below avx2: nothing to cap" >&2
    exit 2
  fi
  levels=$(IFS=,; echo "${all_levels[*]:0:native_rank+1}")
fi
IFS=, read -r -a chosen <<<"$levels"
for level in "${chosen[@]}"; do
  r=$(rank_of "$level")
  if [[ $r -lt 0 ]]; then
    echo "check-cpu-matrix.sh: --levels: unknown level '$level' (one of ${all_levels[*]})" >&2
    exit 2
  fi
  if [[ $r -gt $native_rank ]]; then
    echo "check-cpu-matrix.sh: --levels: this CPU ($native) cannot stand in for $level" >&2
    exit 2
  fi
done

# Skipped tests of a ctest JUnit file with their reasons (gtest's line after
# "Skipped", or a shell test's "skipped: ..."), one "name<TAB>reason" a line.
skips() {
  awk '
    /<testcase name="/ {
      name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name); sub(/  #.*/, "", name)
      skipped = ($0 ~ /status="notrun"/); reason = ""; grab = 0; next
    }
    { line = $0; sub(/^.*<system-out>/, "", line) }
    grab { if (reason == "") reason = line; grab = 0 }
    line ~ /: Skipped$/ { grab = 1 }
    line ~ /^skipped: / { if (reason == "") reason = line }
    /<\/testcase>/ { if (skipped) print name "\t" reason; skipped = 0 }
  ' "$1"
}

status=0
summary=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for level in "${chosen[@]}"; do
  echo "== level $level (DNNL_MAX_CPU_ISA, ONEDNN_MAX_CPU_ISA, TRAINSCOPE_MAX_CPU_ISA) =="
  junit=$tmp/$level.xml
  DNNL_MAX_CPU_ISA=$level ONEDNN_MAX_CPU_ISA=$level TRAINSCOPE_MAX_CPU_ISA=$level \
    ctest --test-dir "$build" --output-on-failure --output-junit "$junit" "${ctest_args[@]}" \
    >"$tmp/$level.log" 2>&1
  rc=$?
  grep -E '^[0-9]+% tests passed|^The following tests FAILED|\((Failed|Timeout|Not Run)\)$' \
    "$tmp/$level.log"
  if [[ $rc -ne 0 ]]; then  # each failure's output, as ctest printed it
    status=1
    sed -n '/^[0-9]*\/[0-9]* Test *#[0-9]*: .*\*\*\*\(Failed\|Timeout\|Exception\)/,/^ *Start /p' "$tmp/$level.log"
  fi
  total=$(grep -o 'tests="[0-9]*"' "$junit" | head -1 | tr -dc 0-9)
  failed=$(grep -o 'failures="[0-9]*"' "$junit" | head -1 | tr -dc 0-9)
  skipped=$(skips "$junit" | wc -l)
  silent=0
  while IFS=$'\t' read -r name reason; do
    if [[ -z $reason ]]; then
      echo "  SKIPPED WITHOUT A REASON: $name"
      silent=$((silent + 1))
    else
      echo "  skipped $name: ${reason#skipped: }"
    fi
  done < <(skips "$junit")
  [[ $silent -eq 0 ]] || status=1
  summary+=("$(printf '%-18s %6s %6s %7s %6s' "$level" "$total" "$failed" "$skipped" "$silent")")
done
echo
printf '%-18s %6s %6s %7s %6s\n' level tests failed skipped silent
printf '%s\n' "${summary[@]}"
exit $status
