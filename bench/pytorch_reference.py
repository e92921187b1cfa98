#!/usr/bin/env python3
"""PyTorch reference for trainscope's training-step benchmark (not built; run on demand).

The same model as trainscope's `seed` preset (bench/pytorch/llama.py, which the suites'
PyTorch peer trains too: Llama, 4 layers, dims 256, 4 heads, SwiGLU 512, vocab 50257,
RMSNorm, rotate-half RoPE, untied head), the same step (forward, cross-entropy, backward,
AdamW) at batch 4 x 511 tokens, in float32 on
the CPU. Prints one row per configuration with median tokens/s over the timed steps.

    python3 bench/pytorch_reference.py              # 1 and 2 threads, default and tuned malloc
    python3 bench/pytorch_reference.py --threads 1 --steps 8

"tuned malloc" keeps freed memory in the process (glibc mmap/trim thresholds raised),
which removes the page faults PyTorch otherwise takes on every step's allocations.
Needs Debian's python3-torch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TUNED_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 40), "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
             "MALLOC_TOP_PAD_": str(1 << 30)}


def run_one(threads, steps, batch, block):
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch"))
    import llama  # the model the suites' PyTorch peer trains too

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = llama.Config.preset_seed()
    V = config.vocab
    model = llama.LlamaForCausalLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    tokens = torch.randint(0, V, (batch, block))
    x, y = tokens[:, :-1], tokens[:, 1:]
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i > 0:  # the first step allocates and faults everything in
            times.append(dt)
    med = statistics.median(times)
    return {"threads": threads, "median_step_s": med, "tokens_per_s": batch * (block - 1) / med,
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--block", type=int, default=512)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(run_one(a.threads[0], a.steps, a.batch, a.block)))
        return
    print(f"{'threads':>7} {'malloc':>8} {'step_ms':>9} {'tokens/s':>9}")
    for threads in a.threads:
        for label, extra in (("default", {}), ("tuned", TUNED_ENV)):
            env = dict(os.environ, OMP_NUM_THREADS=str(threads), **extra)
            out = subprocess.run([sys.executable, __file__, "--child", "--threads", str(threads),
                                  "--steps", str(a.steps), "--batch", str(a.batch), "--block",
                                  str(a.block)], env=env, capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{threads:>7} {label:>8} {r['median_step_s'] * 1e3:>9.1f} {r['tokens_per_s']:>9.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
