#!/usr/bin/env bash
# The fine-tuning walkthrough (../shared/background/003_*) on built-in data,
# offline: pre-train the seed model on the story corpus, LoRA-fine-tune it
# on the pirate instruction pairs on 1 rank and then on 2 ranks (gradients
# averaged across them), compare the two wall times, fuse the adapters, and
# generate with them. Everything lands in --out:
#   base/            the pre-trained model (Hugging Face checkpoint steps)
#   lora-1/ lora-2/  adapter checkpoints (PEFT folders, one per --save-every)
#   fused/           base + adapters merged
#   *.log *.json     each run's output and summary
#
#   scripts/finetune-walkthrough.sh                    # ~10 minutes on 2 cores
#   scripts/finetune-walkthrough.sh --quick            # a minute: fewer steps
#   scripts/finetune-walkthrough.sh --out DIR --pretrain-steps N --finetune-steps N
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/walkthrough pretrain=300 finetune=150
usage="usage: finetune-walkthrough.sh [--out DIR] [--pretrain-steps N] [--finetune-steps N] [--quick]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --out|--pretrain-steps|--finetune-steps)
      [[ $# -ge 2 ]] || { echo "finetune-walkthrough.sh: $1 needs a value ($usage)" >&2; exit 2; }
      case $1 in --out) out=$2 ;; --pretrain-steps) pretrain=$2 ;; *) finetune=$2 ;; esac
      shift 2 ;;
    --quick) pretrain=40 finetune=20; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "finetune-walkthrough.sh: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
done
for n in "$pretrain" "$finetune"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "finetune-walkthrough.sh: steps must be positive integers, got '$n'" >&2; exit 2; }
done
# Incremental: a no-op when the build is current, never a stale binary.
cmake --preset release >/dev/null && cmake --build --preset release
ts=build/trainscope
mkdir -p "$out"
# GPT-2's BPE when its vocabulary is here (seed's 50257 rows are its ids, and
# chats are ~4x fewer tokens than bytes); else bytes.
if [[ -f ../shared/data/gpt2/encoder.json ]]; then
  tok=(--tokenizer gpt2:../shared/data/gpt2) block_pre=128 block_ft=96
else
  tok=(--tokenizer byte) block_pre=128 block_ft=192
fi
echo "tokenizer: ${tok[1]}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two ranks on this machine; their traffic stays on loopback.
mpirun2=(mpirun -np 2 --oversubscribe --bind-to none --mca btl_tcp_if_include lo
         --mca oob_tcp_if_include lo)
now() { date +%s.%N; }
step_dir() { printf '%s/step-%08d' "$1" "$2"; }

echo "== 1. pre-train seed on builtin:stories ($pretrain steps)"
"$ts" train --model seed --data builtin:stories "${tok[@]}" --steps "$pretrain" --batch 8 --block "$block_pre" \
  --lr 1e-3 --schedule cosine --lr-warmup 20 --checkpoint-dir "$out/base" --overwrite \
  --log-every 25 --summary "$out/pretrain.json" | tee "$out/pretrain.log"
base=$(step_dir "$out/base" "$pretrain")

# The walkthrough's LoRA run: answers only (--mask-prompt), validation as it
# goes. One thread per rank: each rank stands for one machine of one core,
# so "1 rank vs 2 ranks" is the walkthrough's one machine vs two (on one
# box two ranks of two threads would only share the same cores).
lora=(train --threads 1 --init-from "$base" --fine-tune lora --lora-targets q_proj,v_proj
      --data builtin:instruct "${tok[@]}" --mask-prompt --batch 8 --block "$block_ft" --lr 1e-3
      --steps "$finetune" --eval-every $(( (finetune + 4) / 5 )) --save-every $(( (finetune + 1) / 2 ))
      --log-every 10 --overwrite)
echo "== 2. LoRA fine-tune on builtin:instruct, 1 rank ($finetune steps)"
t0=$(now)
"$ts" "${lora[@]}" --checkpoint-dir "$out/lora-1" --summary "$out/lora-1.json" | tee "$out/lora-1.log"
t1=$(now)
echo "== 3. the same on 2 ranks (sharded data, gradients averaged across the ranks)"
"${mpirun2[@]}" "$ts" "${lora[@]}" --mode sharded --checkpoint-dir "$out/lora-2" \
  --summary "$out/lora-2.json" | tee "$out/lora-2.log"
t2=$(now)

echo "== 4. fuse the 2-rank adapters into the base"
rm -rf "$out/fused"
"$ts" fuse --model "$base" --adapters "$out/lora-2" --out "$out/fused"

prompt="Tell this like a pirate: The old man walked to the market with his friend."
echo "== 5. generate: the base model, with the adapters, and from the fused checkpoint (the same text)"
"$ts" generate --model "$base" "${tok[@]}" --chat --prompt "$prompt" --max-tokens 60 --temp 0
"$ts" generate --model "$base" --adapters "$out/lora-2" "${tok[@]}" --chat --prompt "$prompt" \
  --max-tokens 60 --temp 0
"$ts" generate --model "$out/fused" "${tok[@]}" --chat --prompt "$prompt" --max-tokens 60 --temp 0

echo
echo "== wall time of the fine-tuning (start to end, data loading and checkpoints included)"
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
  one = b - a; two = c - b;
  printf "1 rank : %8.1f s\n2 ranks: %8.1f s\nthe second rank saved %.1f s (%.2fx)\n", one, two, one - two, one / two }'
echo "validation losses:"
for run in lora-1 lora-2; do
  printf '  %s:' "$run"; grep -o 'validation at step [0-9]*: loss [0-9.]*' "$out/$run.log" |
    awk '{ printf " %s@%s", $6, $4 }' | sed 's/://g'; echo
done
echo "outputs in $out (summaries: pretrain.json lora-1.json lora-2.json)"
