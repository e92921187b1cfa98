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

OpenBLAS kernels: PyTorch's matmuls run on OpenBLAS, which picks its kernels by CPU
detection, and OpenBLAS 0.3.21 falls back to Prescott (SSE3) on CPUs it does not know
(Sapphire Rapids): PyTorch then runs at a fraction of its speed (176-416 against 692-1271
tokens/s on our VM). trainscope picks the best core itself (kernels/blas_core.h), so by
default this sets OPENBLAS_CORETYPE for PyTorch to the core `trainscope version` reports
(--coretype CORE to name one, --coretype detect to leave it to OpenBLAS; an
OPENBLAS_CORETYPE already in the environment is kept) and prints the core each run used.
"""
import argparse
import json
import os
import re
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
            "torch": torch.__version__, "blas_core": openblas_core()}


def openblas_core():
    """The kernels OpenBLAS runs in this process (the library torch loaded), or "?"."""
    import ctypes
    try:
        with open("/proc/self/maps") as maps:
            paths = [l.split()[-1] for l in maps if "openblas" in l and l.split()[-1].startswith("/")]
        if not paths:
            return "?"
        lib = ctypes.CDLL(paths[0])
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "?"


def trainscope_core(binary):
    """The OpenBLAS core trainscope runs on this CPU (`trainscope version`), or None."""
    try:
        out = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=120).stdout
    except OSError as e:
        sys.exit(f"--trainscope {binary}: {e.strerror}; build it (cmake --build build) or name it")
    except subprocess.TimeoutExpired:
        sys.exit(f"--trainscope {binary}: `version` did not answer in 120 s")
    m = re.search(r"^openblas: .* (\w+) MAX_THREADS", out, re.M)
    return m.group(1) if m else None


def coretype_env(choice, binary):
    """OPENBLAS_CORETYPE for the children ({} to leave OpenBLAS to detect) and what to say."""
    # A core named on the command line wins; else the environment's is kept.
    if os.environ.get("OPENBLAS_CORETYPE") and choice in ("auto", "detect"):
        return {}, f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} (from the environment)"
    if choice == "detect":
        return {}, "OpenBLAS's own detection (--coretype detect)"
    core = choice if choice != "auto" else trainscope_core(binary)
    if core is None:
        return {}, f"OpenBLAS's own detection ({binary} version did not name a core)"
    how = "as trainscope picks it" if choice == "auto" else "--coretype"
    return {"OPENBLAS_CORETYPE": core}, f"OPENBLAS_CORETYPE={core} ({how})"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--block", type=int, default=512)
    p.add_argument("--coretype", default="auto",
                   help="OpenBLAS kernels for PyTorch: auto (the core trainscope picks), detect "
                        "(OpenBLAS's own detection) or a core name such as Haswell")
    p.add_argument("--trainscope", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "trainscope"),
                   help="the trainscope binary --coretype auto asks (default: build/trainscope)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(run_one(a.threads[0], a.steps, a.batch, a.block)))
        return
    core_env, core_note = coretype_env(a.coretype, a.trainscope)
    print(f"OpenBLAS kernels for PyTorch: {core_note}")
    print(f"{'threads':>7} {'malloc':>8} {'step_ms':>9} {'tokens/s':>9} {'blas_core':>10}")
    for threads in a.threads:
        for label, extra in (("default", {}), ("tuned", TUNED_ENV)):
            env = dict(os.environ, OMP_NUM_THREADS=str(threads), **core_env, **extra)
            out = subprocess.run([sys.executable, __file__, "--child", "--threads", str(threads),
                                  "--steps", str(a.steps), "--batch", str(a.batch), "--block",
                                  str(a.block)], env=env, capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{threads:>7} {label:>8} {r['median_step_s'] * 1e3:>9.1f} {r['tokens_per_s']:>9.0f}"
                  f" {r['blas_core']:>10}", flush=True)
            asked = core_env.get("OPENBLAS_CORETYPE")
            if asked and r["blas_core"].lower() != asked.lower():
                print(f"warning: PyTorch ran on {r['blas_core']}, not the {asked} asked (OpenBLAS "
                      "ignores a core it does not know, and its other builds the variable)",
                      file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
