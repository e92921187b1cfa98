#!/usr/bin/env python3
"""PyTorch reference for trainscope's training-step benchmark (not built; run on demand).

The same model as trainscope's `seed` preset (Llama: 4 layers, dims 256, 4 heads,
SwiGLU 512, vocab 50257, RMSNorm, rotate-half RoPE, untied head), the same step
(forward, cross-entropy, backward, AdamW) at batch 4 x 511 tokens, in float32 on
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
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    C, L, H, FF, V = 256, 4, 4, 512, 50257
    hd = C // H
    T = block - 1

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.eps = eps

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotate_half(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat((-x2, x1), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm(C)
            self.q = nn.Linear(C, C, bias=False)
            self.k = nn.Linear(C, C, bias=False)
            self.v = nn.Linear(C, C, bias=False)
            self.o = nn.Linear(C, C, bias=False)
            self.post_attention_layernorm = RMSNorm(C)
            self.gate = nn.Linear(C, FF, bias=False)
            self.up = nn.Linear(C, FF, bias=False)
            self.down = nn.Linear(FF, C, bias=False)

        def forward(self, x):
            B = x.shape[0]
            h = self.input_layernorm(x)
            q = self.q(h).view(B, T, H, hd).transpose(1, 2)
            k = self.k(h).view(B, T, H, hd).transpose(1, 2)
            v = self.v(h).view(B, T, H, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True) \
                if hasattr(F, "scaled_dot_product_attention") else None
            if a is None:
                s = (q @ k.transpose(-1, -2)) / hd ** 0.5
                s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
                a = s.softmax(-1) @ v
            x = x + self.o(a.transpose(1, 2).reshape(B, T, C))
            h = self.post_attention_layernorm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(V, C)
            self.layers = nn.ModuleList([Block() for _ in range(L)])
            self.norm = RMSNorm(C)
            self.head = nn.Linear(C, V, bias=False)

        def forward(self, x):
            x = self.embed(x)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    model = Model()
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
    return {"threads": threads, "median_step_s": med, "tokens_per_s": batch * T / med,
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
