#!/usr/bin/env python3
"""ctest pytorch_loss_match: trainscope and its PyTorch peer, from the same step-0 weights and
batches, lose alike: every step's loss within --tolerance relative (1e-4, fp32) over 50 steps.

Cases: one process (naive) and 2 ranks sharded under mpirun (DDP over gloo), the `tiny` preset
and a tied-embedding variant of it. Exits 77 (ctest's skip) with the reason when no Python
here has torch (Debian's python3-torch).

    loss_match_test.py TRAINSCOPE MPIRUN [--steps 50] [--tolerance 1e-4]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIED_TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
             "intermediate_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
             "num_key_value_heads": 2, "vocab_size": 260, "max_position_embeddings": 64,
             "tie_word_embeddings": True}


def torch_python():
    """$TRAINSCOPE_PYTHON, Debian's /usr/bin/python3 or python3: the first that imports torch."""
    for py in (os.environ.get("TRAINSCOPE_PYTHON"), "/usr/bin/python3", "python3"):
        if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def run(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}{r.stderr[-3000:]}")


def losses(path):
    with open(path) as f:
        s = json.load(f)
    return [step["loss"] for step in s["steps"][0]]


def compare(name, ours, theirs, tolerance):
    """The worst relative difference; a line saying where they part if over tolerance."""
    if len(ours) != len(theirs):
        return f"{name}: {len(ours)} trainscope steps but {len(theirs)} PyTorch steps", None
    worst, at = 0.0, 0
    for i, (a, b) in enumerate(zip(ours, theirs)):
        rel = abs(a - b) / max(abs(a), 1e-30)
        if rel > worst:
            worst, at = rel, i
    line = (f"{name}: {len(ours)} steps, worst relative difference {worst:.2e} at step {at} "
            f"(trainscope {ours[at]:.7f}, PyTorch {theirs[at]:.7f})")
    return line, worst <= tolerance


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trainscope")
    p.add_argument("mpirun")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    py = torch_python()
    if py is None:
        print("SKIP: no Python here imports torch (install python3-torch: "
              "scripts/install-deps.sh)")
        return 77
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mpi = [a.mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none"]
    ok = True
    with tempfile.TemporaryDirectory(prefix="ts-loss-match-") as tmp:
        tied = os.path.join(tmp, "tied.json")
        with open(tied, "w") as f:
            json.dump(TIED_TINY, f)
        for model_name, model in (("tiny", "tiny"), ("tiny-tied", tied)):
            common = ["--model", model, "--steps", str(a.steps), "--threads", "1", "--quiet"]
            export = os.path.join(tmp, f"{model_name}-export")
            run([a.trainscope, "train", *common, "--export-run", export], env)
            for mode, launch in (("naive", []), ("sharded", mpi)):
                ts, pt = (os.path.join(tmp, f"{model_name}-{mode}-{e}.json") for e in ("ts", "pt"))
                run([*launch, a.trainscope, "train", *common, "--mode", mode, "--summary", ts], env)
                peer = [*launch, py, os.path.join(HERE, "ddp_train.py"), "--run", export,
                        "--mode", mode, "--threads", "1", "--quiet", "--summary", pt]
                if launch:
                    peer += ["--rendezvous", os.path.join(tmp, f"{model_name}-{mode}.store")]
                run(peer, env)
                line, good = compare(f"{model_name} {mode}", losses(ts), losses(pt), a.tolerance)
                print(("ok   " if good else "FAIL ") + line)
                ok = ok and bool(good)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
