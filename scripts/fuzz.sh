#!/usr/bin/env bash
# Fuzzes the readers of outside files (tests/fuzz: JSONL records and data
# files, GPT-2 vocabularies, safetensors headers, suite files, hostfiles) with
# libFuzzer, on demand; not part of test.sh or CI.
#
#   scripts/fuzz.sh [--seconds N] [--out DIR] [FILTER...]
#
# Installs clang 14 and its fuzzer runtime, builds the `fuzz` preset
# (build-fuzz/), then runs each target whose name contains a FILTER (all by
# default) for N seconds (default 60) on a fresh copy of its seed corpus
# (tests/fuzz/corpus/TARGET). Per target, DIR/TARGET (default out/fuzz) holds
# the working corpus, the log, and under artifacts/ every crash, timeout (10 s
# per input), leak or out-of-memory input. Prints one row per target:
# executions, exec/s, coverage (libFuzzer's cov: edges and ft: features) and
# findings. Exits 1 if any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=60
out=out/fuzz
filters=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) filters+=("$1"); shift ;;
  esac
done

./scripts/install-deps.sh --fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

# Targets whose input is JSON also get the JSON words of dict/json.dict.
json_targets=" records_fuzz document_source_fuzz gpt2_vocab_fuzz gpt2_tokenizer_json_fuzz safetensors_fuzz "
export TRAINSCOPE_GPT2_DIR=${TRAINSCOPE_GPT2_DIR:-$root/../shared/data/gpt2}
# Targets whose parser reads a path write each input to a scratch file: in
# memory (/dev/shm) unless TMPDIR names another place.
if [[ -z ${TMPDIR:-} && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi

wanted() {
  [[ ${#filters[@]} -eq 0 ]] && return 0
  local f
  for f in "${filters[@]}"; do [[ $1 == *"$f"* ]] && return 0; done
  return 1
}

# The value after `key` in libFuzzer's final status line or stats.
final_stat() { grep -o "$1 *[0-9]*" "$2" | tail -1 | grep -o '[0-9]*$' || echo "-"; }

mkdir -p "$out"
echo "fuzz.sh: ${seconds} s per target; corpora, logs and findings in $out/TARGET"
rows=()
failed=0
for corpus in tests/fuzz/corpus/*/; do
  target=$(basename "$corpus")
  wanted "$target" || continue
  if [[ $target == gpt2_encode_fuzz && ! -f $TRAINSCOPE_GPT2_DIR/encoder.json ]]; then
    rows+=("$(printf '%-26s skipped: no GPT-2 vocabulary in %s' "$target" "$TRAINSCOPE_GPT2_DIR")")
    continue
  fi
  dir=$out/$target
  rm -rf "$dir"
  mkdir -p "$dir/artifacts"
  cp -r "$corpus" "$dir/corpus"
  cat "tests/fuzz/dict/$target.dict" 2>/dev/null >"$dir/dict" || true
  [[ $json_targets == *" $target "* ]] && cat tests/fuzz/dict/json.dict >>"$dir/dict"
  dict_flag=()
  [[ -s $dir/dict ]] && dict_flag=(-dict="$dir/dict")
  echo "fuzz.sh: $target"
  status=0
  "build-fuzz/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${dict_flag[@]}" -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
    >"$dir/log.txt" 2>&1 || status=$?
  findings=$(find "$dir/artifacts" -type f | wc -l)
  if [[ $status -ne 0 || $findings -gt 0 ]]; then
    failed=1
    echo "fuzz.sh: $target exited $status; see $dir/log.txt and $dir/artifacts/" >&2
  fi
  rows+=("$(printf '%-26s %12s %8s %7s %8s %9s' "$target" \
    "$(final_stat stat::number_of_executed_units: "$dir/log.txt")" \
    "$(final_stat stat::average_exec_per_sec: "$dir/log.txt")" \
    "$(final_stat 'cov:' "$dir/log.txt")" "$(final_stat 'ft:' "$dir/log.txt")" "$findings")")
done

printf '\n%-26s %12s %8s %7s %8s %9s\n' target executions exec/s cov ft findings
printf '%s\n' "${rows[@]}"
echo "findings (crash-*, timeout-*, leak-*, oom-*) are under $out/TARGET/artifacts/"
exit $failed
