#!/usr/bin/env python3
"""trainscope's training step against PyTorch's, in interleaved rounds (on demand, not in CI).

The `seed` model (4 layers, dims 256, vocab 50257) at batch 4 x 512, float32, as
bench/pytorch_reference.py trains it in PyTorch and `trainscope train --model seed` in
trainscope. Each round runs every (threads, level, engine) once, in an order drawn at random
per round (the seed is printed); a round's ratio is trainscope's tokens/s over PyTorch's of the
same threads and level. A process is the unit: each run's figure is its own median step over
its timed steps, and the rounds are the samples.

Levels:
  native  both as they run on this CPU: trainscope's own dispatch and GEMM choice; PyTorch's
          OpenBLAS on the core trainscope reports (pytorch_reference.py's --coretype auto).
  avx2    an AVX2 machine's code on this one: TRAINSCOPE_MAX_CPU_ISA=avx2
          DNNL_MAX_CPU_ISA=AVX2 and OPENBLAS_CORETYPE=Haswell for trainscope,
          ATEN_CPU_CAPABILITY=avx2 and OPENBLAS_CORETYPE=Haswell for PyTorch. Give
          --trainscope-avx2 a binary built for x86-64-v3 (TRAINSCOPE_MARCH): code compiled
          with -march=native would still use this CPU's instructions outside the dispatch.
This script sets OPENBLAS_CORETYPE per run as said above (and OMP_NUM_THREADS), nothing else.
PyTorch runs with its allocator's memory kept (pytorch_reference.py's "tuned" malloc, its
faster setting).

Interval: the smallest and largest of n round ratios hold the median ratio with probability
1 - 2 x 0.5^n (93.8% at 5 rounds, 98.4% at 7), whatever their distribution.

    python3 bench/step_vs_pytorch.py --rounds 5
    python3 bench/step_vs_pytorch.py --threads 1 --levels avx2 \\
        --trainscope-avx2 build-gate/head/trainscope
Exit 0 when every run finished, 1 when a run failed (its output is printed), 2 bad usage.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "pytorch_reference.py")
TUNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 40), "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
                "MALLOC_TOP_PAD_": str(1 << 30)}
# Debian's python3-torch lives in the system Python (TRAINSCOPE_PYTHON names another, as for
# the suites' PyTorch peer).
PYTHON = os.environ.get("TRAINSCOPE_PYTHON", "/usr/bin/python3")
AVX2_TRAINSCOPE = {"TRAINSCOPE_MAX_CPU_ISA": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
                   "OPENBLAS_CORETYPE": "Haswell"}
AVX2_PYTORCH = {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stdout.write(out.stdout + out.stderr)
        sys.exit(f"step_vs_pytorch.py: {' '.join(cmd)} exited {out.returncode}")
    return out.stdout


def trainscope_tokens_per_s(binary, threads, level, a):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        if level == "avx2":
            env.update(AVX2_TRAINSCOPE)
        run([binary, "train", "--model", "seed", "--batch", str(a.batch), "--block", str(a.block),
             "--steps", str(a.steps), "--threads", str(threads), "--summary", summary], env)
        with open(summary) as f:
            return find_key(json.load(f), "tokens_per_s")


def find_key(j, key):
    """The first value of key anywhere in a JSON document (the summary nests it)."""
    if isinstance(j, dict):
        if key in j:
            return j[key]
        j = list(j.values())
    if isinstance(j, list):
        for v in j:
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def pytorch_tokens_per_s(native_core, threads, level, a):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), **TUNED_MALLOC)
    if level == "avx2":
        env.update(AVX2_PYTORCH)
    elif native_core:
        env["OPENBLAS_CORETYPE"] = native_core
    out = run([PYTHON, REFERENCE, "--child", "--threads", str(threads), "--steps",
               str(a.steps), "--batch", str(a.batch), "--block", str(a.block)], env)
    return json.loads(out.strip().splitlines()[-1])["tokens_per_s"]


def native_openblas_core(binary):
    sys.path.insert(0, HERE)
    import pytorch_reference
    return pytorch_reference.trainscope_core(binary)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--levels", nargs="+", default=["native", "avx2"], choices=["native", "avx2"])
    p.add_argument("--steps", type=int, default=6, help="steps a run (the first is not timed)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--block", type=int, default=512)
    p.add_argument("--seed", type=int, default=None, help="the order's seed (default: drawn)")
    p.add_argument("--trainscope", default=os.path.join(HERE, "..", "build", "trainscope"))
    p.add_argument("--trainscope-avx2", default=None,
                   help="the binary for the avx2 level (default: --trainscope)")
    a = p.parse_args()
    if a.rounds < 1 or a.steps < 2 or min(a.threads) < 1:
        p.error("--rounds and --threads at least 1, --steps at least 2")
    binaries = {"native": a.trainscope, "avx2": a.trainscope_avx2 or a.trainscope}
    for b in set(binaries.values()):
        if not os.access(b, os.X_OK):
            p.error(f"{b}: not an executable (build it: cmake --build build)")
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    core = native_openblas_core(a.trainscope)
    print(f"seed {seed}; {a.rounds} rounds of {a.steps} steps a run; PyTorch's OpenBLAS core at "
          f"native: {core or 'its own detection'}; avx2 binary {binaries['avx2']}", flush=True)
    cells = [(t, lv) for t in a.threads for lv in a.levels]
    figures = {(t, lv, e): [] for t, lv in cells for e in ("trainscope", "pytorch")}
    for r in range(a.rounds):
        jobs = [(t, lv, e) for t, lv in cells for e in ("trainscope", "pytorch")]
        rng.shuffle(jobs)
        for t, lv, e in jobs:
            if e == "trainscope":
                v = trainscope_tokens_per_s(binaries[lv], t, lv, a)
            else:
                v = pytorch_tokens_per_s(core, t, lv, a)
            figures[(t, lv, e)].append(v)
            print(f"[round {r + 1} of {a.rounds}] {e} threads {t} {lv}: {v:.0f} tokens/s", flush=True)
    print(f"\n{'threads':>7} {'level':>6} {'rounds':>6} {'trainscope':>10} {'pytorch':>8} "
          f"{'ratio':>6}  interval")
    for t, lv in cells:
        ts, pt = figures[(t, lv, "trainscope")], figures[(t, lv, "pytorch")]
        ratios = sorted(x / y for x, y in zip(ts, pt))
        cover = 100 * (1 - 2 * 0.5 ** len(ratios))
        print(f"{t:>7} {lv:>6} {len(ratios):>6} {statistics.median(ts):>10.0f} "
              f"{statistics.median(pt):>8.0f} {statistics.median(ratios):>5.2f}x  "
              f"[{ratios[0]:.2f}, {ratios[-1]:.2f}] ({cover:.1f}%)")


if __name__ == "__main__":
    main()
