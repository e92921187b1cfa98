#!/usr/bin/env python3
"""The suites' PyTorch peer: trains the run `trainscope train --export-run DIR` exported.

Same model (bench/pytorch/llama.py), same step-0 weights (DIR/init/model.safetensors), the same
global batch of every step (DIR/batches.bin), AdamW with the exported learning rate of every
step and the same global-norm clipping, in float32 on the CPU. Under mpirun each process takes
its rank and the world size from Open MPI's environment and rows r, r + N, ... of each global
batch (trainscope's sharded strided order), and the gradients are averaged by
DistributedDataParallel over gloo (bucket size from --bucket-mb; --comm-dtype bf16 is DDP's
bf16_compress_hook). The loss is scaled as trainscope scales it (by the predicted tokens of the
whole global batch), so both engines compute the same gradient.

Writes a trainscope run summary (trainscope.run_summary/1) with --summary, so the suite runner
records it as any case. Exit codes as trainscope's: 0 ok, 1 the run failed, 2 bad input.

    trainscope train --model tiny --steps 50 --export-run run
    python3 bench/pytorch/ddp_train.py --run run --summary s.json
    mpirun -np 2 python3 bench/pytorch/ddp_train.py --run run --mode sharded --summary s.json
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

PHASES = ["data", "forward", "backward", "comm", "optimizer", "eval", "checkpoint"]
CATEGORIES = ["parameters", "gradients", "optimizer_state", "activations", "data", "comm",
              "workspace", "other"]


def fail(message, code=2):
    print(f"ddp_train.py: {message}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", help="directory written by trainscope --export-run")
    p.add_argument("--describe", action="store_true",
                   help="print PyTorch's version and BLAS (trainscope doctor) and exit")
    p.add_argument("--check-bf16-allreduce", action="store_true",
                   help="exit 0 if gloo all-reduces bf16 (--comm-dtype bf16), else say why, exit 1")
    p.add_argument("--summary", help="write the run summary (JSON) here (rank 0)")
    p.add_argument("--mode", default="naive", choices=["naive", "sharded"])
    p.add_argument("--reduce", default="fused",
                   choices=["per-tensor", "fused", "overlap", "overlap-poll"])
    p.add_argument("--bucket-mb", type=float, default=32.0)
    p.add_argument("--comm-dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--threads", type=int, default=0, help="per rank; 0: cores / ranks on the host")
    p.add_argument("--rendezvous", help="a file for torch.distributed's FileStore (several ranks)")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args()


def mpi_env():
    """Rank, world and ranks on this host, as Open MPI's launcher sets them (1 process: 0, 1, 1)."""
    env = os.environ
    return (int(env.get("OMPI_COMM_WORLD_RANK", 0)), int(env.get("OMPI_COMM_WORLD_SIZE", 1)),
            int(env.get("OMPI_COMM_WORLD_LOCAL_SIZE", 1)))


def threads_per_rank(requested, local_ranks):
    """training/threads.cpp's rule: this process's cores, at most the host's share."""
    if requested > 0:
        return requested
    cores = len(os.sched_getaffinity(0))
    return max(1, min(cores, (os.cpu_count() or 1) // max(1, local_ranks)))


def read_run(directory):
    with open(os.path.join(directory, "run.json")) as f:
        run = json.load(f)
    if run.get("format") != "trainscope.run_export/1":
        fail(f"{directory}/run.json: format {run.get('format')!r}, expected trainscope.run_export/1")
    return run


def read_batches(torch, directory, run):
    """[steps, 2, batch, seq_len] int64: each step's inputs, then its targets (-1: not predicted)."""
    shape = (run["steps"], 2, run["batch"], run["seq_len"])
    path = os.path.join(directory, run["batches"])
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    want = shape[0] * shape[1] * shape[2] * shape[3] * 4
    if len(raw) != want:
        fail(f"{path}: {len(raw)} bytes, expected {want} for {shape[0]} steps of {shape[2]} x "
             f"{shape[3]} tokens")
    return torch.frombuffer(raw, dtype=torch.int32).view(shape).long(), len(raw)


class CommMeter:
    """What DDP's buckets sent in one step, measured in a comm hook around DDP's own hook."""

    def __init__(self, inner, state, bytes_per_element):
        self.inner, self.state, self.bytes_per_element = inner, state, bytes_per_element
        self.reset()

    def reset(self):
        self.calls, self.bytes = 0, 0
        self.first_launch = self.last_launch = self.last_done = None

    def hook(self, _state, bucket):
        now = time.perf_counter()
        self.calls += 1
        self.bytes += bucket.buffer().numel() * self.bytes_per_element
        self.first_launch = self.first_launch or now
        self.last_launch = now

        def done(fut):
            self.last_done = time.perf_counter()
            return fut.value()

        return self.inner(self.state, bucket).then(done)

    def in_flight_s(self):
        """From the first bucket's launch to the last one's completion."""
        if self.first_launch is None or self.last_done is None:
            return 0.0
        return max(0.0, self.last_done - self.first_launch)


def wrap_ddp(torch, model, args, world):
    """DDP with trainscope's reduction settings mapped to what DDP offers."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel
    # DDP always reduces buckets during backward: fused, overlap and overlap-poll are one thing
    # to it. per-tensor is a bucket per tensor (the smallest cap); <= 0 is the whole gradient.
    whole = sum(p.numel() for p in model.parameters()) * 4 / 2**20 + 1
    cap = {"per-tensor": 1e-6}.get(args.reduce, args.bucket_mb if args.bucket_mb > 0 else whole)
    ddp = DistributedDataParallel(model, bucket_cap_mb=cap, broadcast_buffers=False)
    group = torch.distributed.group.WORLD
    if args.comm_dtype == "bf16":
        meter = CommMeter(default_hooks.bf16_compress_hook, group, 2)
    else:
        meter = CommMeter(default_hooks.allreduce_hook, group, 4)
    ddp.register_comm_hook(None, meter.hook)
    return ddp, meter, cap


def bf16_allreduce_problem(torch):
    """Why gloo cannot all-reduce bf16 here (DDP's bf16_compress_hook needs it); None if it can."""
    import torch.distributed as dist
    group = dist.new_group(backend="gloo") if dist.is_initialized() else None
    if group is None:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        dist.all_reduce(torch.ones(1, dtype=torch.bfloat16), group=group)
        return None
    except RuntimeError as e:
        return (f"DDP's bf16_compress_hook all-reduces bf16, which gloo in PyTorch "
                f"{torch.__version__} does not ({e})")
    finally:
        if group is None:
            dist.destroy_process_group()


def time_stats(values):
    """trainscope's TimeStats: mean, median, p95 (linear between ranks), min, max."""
    if not values:
        return {"mean": 0.0, "median": 0.0, "p95": 0.0, "min": 0.0, "max": 0.0}
    s = sorted(values)
    at = 0.95 * (len(s) - 1)
    lo = int(at)
    p95 = s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (at - lo)
    return {"mean": statistics.fmean(s), "median": statistics.median(s), "p95": p95,
            "min": s[0], "max": s[-1]}


def process_memory():
    """VmHWM and VmRSS of this process, bytes (-1: unknown)."""
    out = {"VmHWM": -1, "VmRSS": -1}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in out:
                    out[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out["VmHWM"], out["VmRSS"]


def blas_description(torch):
    """'PyTorch 1.13.0 (BLAS generic: /usr/lib/.../libopenblas.so.0)' as far as it can tell."""
    config = torch.__config__.show()
    info = next((part.split("=")[1] for part in config.replace(",", " ").split()
                 if part.startswith("BLAS_INFO=")), "unknown")
    library = ""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                name = line.split()[-1] if len(line.split()) >= 6 else ""
                if "blas" in os.path.basename(name) or "mkl_rt" in name:
                    library = os.path.realpath(name)
                    break
    except OSError:
        pass
    return f"PyTorch {torch.__version__} (BLAS {info}{': ' + library if library else ''})"


class Trainer:
    """One rank's run: the steps, timed by phase, and what the summary records of them."""

    def __init__(self, torch, args, run, rank, world, threads):
        import llama
        self.torch, self.args, self.run = torch, args, run
        self.rank, self.world, self.threads = rank, world, threads
        self.batches, self.batch_bytes = read_batches(torch, args.run, run)
        self.model = llama.LlamaForCausalLM(llama.Config(run["model"]))
        llama.load_checkpoint(self.model, os.path.join(args.run, run["init"], "model.safetensors"))
        self.params = list(self.model.parameters())
        self.net, self.meter, self.bucket_cap_mb = self.model, None, None
        if world > 1:
            self.net, self.meter, self.bucket_cap_mb = wrap_ddp(torch, self.model, args, world)
        self.opt = torch.optim.AdamW(self.params, lr=run["lr"][0] if run["lr"] else 0.0,
                                     betas=(run["beta1"], run["beta2"]), eps=run["adam_eps"],
                                     weight_decay=run["weight_decay"])
        self.steps = []

    def step(self, s):
        torch, phases = self.torch, dict.fromkeys(PHASES, 0.0)
        start = time.perf_counter()
        inputs, targets = self.batches[s, 0], self.batches[s, 1]
        x, y = inputs[self.rank::self.world], targets[self.rank::self.world]
        predicted = int((targets >= 0).sum())  # of the whole global batch: the loss's denominator
        t = time.perf_counter()
        phases["data"] = t - start
        if self.meter:
            self.meter.reset()
        self.opt.zero_grad(set_to_none=True)
        logits = self.net(x)
        loss_sum = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1, reduction="sum")
        # DDP averages over ranks; trainscope sums and divides by the global batch's tokens.
        scaled = loss_sum * (self.world / predicted)
        t, phases["forward"] = time.perf_counter(), time.perf_counter() - t
        scaled.backward()  # DDP's buckets are all-reduced inside, and waited for at its end
        backward_end = time.perf_counter()
        phases["backward"] = backward_end - t
        loss_total = loss_sum.detach().double()
        if self.world > 1:
            torch.distributed.all_reduce(loss_total)
        t = time.perf_counter()
        exposed = 0.0
        if self.meter and self.meter.last_launch is not None:
            # The last bucket is launched when backward's compute ends; the rest is waiting.
            exposed = max(0.0, backward_end - self.meter.last_launch)
        phases["comm"] = exposed + (t - backward_end)
        phases["backward"] -= exposed
        loss = float(loss_total) / predicted
        lr = self.run["lr"][s]
        grad_norm = self.optimizer_step(lr)
        phases["optimizer"] = time.perf_counter() - t
        seconds = time.perf_counter() - start
        hwm, rss = process_memory()
        self.steps.append({
            "step": s, "loss": loss, "lr": lr, "grad_norm": grad_norm,
            "tokens": x.numel(), "step_time_s": seconds, "phases": phases,
            "comm_calls": self.meter.calls if self.meter else 0,
            "comm_bytes": self.meter.bytes if self.meter else 0,
            "comm_exposed_s": phases["comm"], "mem_active": rss, "mem_peak": hwm,
            "comm_time_s": self.meter.in_flight_s() if self.meter else 0.0})
        return loss

    def optimizer_step(self, lr):
        """trainscope's clipping (by clip / norm when the norm is above it) and AdamW."""
        torch = self.torch
        grads = [p.grad for p in self.params if p.grad is not None]
        norm = float(torch.stack([g.double().pow(2).sum() for g in grads]).sum().sqrt())
        clip = self.run["grad_clip"]
        if clip > 0 and norm > clip:
            for g in grads:
                g.mul_(clip / norm)
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        return norm

    def train(self):
        torch = self.torch
        for s in range(self.run["steps"]):
            loss = self.step(s)
            if not torch.isfinite(torch.tensor(loss)):
                return f"loss is {loss} at step {s}", s
            last = s + 1 == self.run["steps"]
            if self.rank == 0 and not self.args.quiet and (s == 0 or last or (s + 1) % 10 == 0):
                r = self.steps[-1]
                print(f"step {s + 1:>5}/{self.run['steps']} | loss {loss:.4f} | lr {r['lr']:.2e} | "
                      f"{r['step_time_s'] * 1e3:7.1f} ms", flush=True)
        return "", None

    def rank_result(self):
        measured = self.steps[min(self.run["warmup_steps"], max(0, len(self.steps) - 1)):]
        wall = time_stats([r["step_time_s"] for r in measured])
        hwm, rss = process_memory()
        n_params = sum(p.numel() for p in self.params) * 4
        peaks = dict.fromkeys(CATEGORIES, 0)
        # What PyTorch holds that trainscope's tracker counts: weights, gradients, AdamW's two
        # moments, the batches. Activations and workspace are PyTorch's allocator's, unseen.
        peaks.update(parameters=n_params, gradients=n_params, optimizer_state=2 * n_params,
                     data=self.batch_bytes)
        comm = {"calls": sum(r["comm_calls"] for r in self.steps),
                "bytes": sum(r["comm_bytes"] for r in self.steps),
                "time_s": sum(r["comm_time_s"] for r in self.steps),
                "exposed_s": sum(r["comm_exposed_s"] for r in self.steps)}
        tokens = self.steps[0]["tokens"] if self.steps else 0
        return {
            "rank": self.rank, "host": socket.gethostname(), "pid": os.getpid(),
            "tokens_per_s": tokens / wall["median"] if wall["median"] > 0 else 0.0,
            "step_time": wall,
            "phases": {p: time_stats([r["phases"][p] for r in measured]) for p in PHASES},
            "tracked_peak_total": sum(peaks.values()), "tracked_peak_by_category": peaks,
            "vm_hwm": hwm, "vm_rss": rss, "pss": -1,
            "data": {"examples_held": self.run["steps"] * self.run["batch"],
                     "tokens_held": self.batches.numel() // 2, "bytes_held": self.batch_bytes,
                     "bytes_read": self.batch_bytes},
            "comm": comm,
            "kernels": {"blas_library": blas_description(self.torch), "blas_core": "",
                        "blas_choice": "pytorch", "blas_best": "", "cpu_isa": "",
                        "omp_threads": self.torch.get_num_threads(),
                        "blas_threads": self.torch.get_num_threads(), "precision": "fp32",
                        "bf16_gemm": ""}}


def summary(args, run, trainer, results, error, failed_step, transports):
    """trainscope.run_summary/1 from every rank's (result, steps)."""
    options = dict(run["options"], engine="pytorch", mode=args.mode, reduce=args.reduce,
                   bucket_mb=args.bucket_mb, comm_dtype=args.comm_dtype)
    ranks = [r for r, _ in results]
    hosts = list(dict.fromkeys(r["host"] for r in ranks))
    worst = max(ranks, key=lambda r: r["step_time"]["median"])["step_time"]
    p95 = max(r["step_time"]["p95"] for r in ranks)
    tokens_per_step = run["batch"] * run["seq_len"]
    same = all(t == transports[0] for t in transports)
    return {
        "schema": "trainscope.run_summary/1",
        "trainscope_version": f"pytorch {trainer.torch.__version__}", "git_revision": "",
        "model": run["model"], "options": options, "world_size": trainer.world,
        "threads_per_rank": trainer.threads, "comm_dtype": args.comm_dtype,
        "parameters": run["parameters"], "trainable_parameters": run["parameters"],
        "flops_per_step": run["flops_per_step"], "hosts": hosts,
        "transport": transports[0], "transport_per_rank": [] if same else transports,
        "status": "failed" if error else "ok", "error": error, "failed_step": failed_step,
        "steps": [s for _, s in results], "val": [], "ranks": ranks,
        "totals": {"tokens_per_s": tokens_per_step / worst["median"] if worst["median"] > 0 else 0,
                   "step_time_median_s": worst["median"], "step_time_p95_s": p95}}


def transport(trainer):
    """Open MPI's settings in effect, as trainscope records them, and what DDP ran on."""
    skip = ("orte_", "ess_", "pmix", "initial_wdir", "shmem_RUNTIME")
    out = {k[9:]: v for k, v in os.environ.items()
           if k.startswith("OMPI_MCA_") and not k[9:].startswith(skip)
           and k[9:] not in ("plm", "routed", "mpi_yield_when_idle")}
    if trainer.world > 1:
        out["torch_backend"] = "gloo"
        out["ddp_bucket_cap_mb"] = f"{trainer.bucket_cap_mb:g}"
    return out


def main():
    args = parse_args()
    if args.describe:
        import torch
        torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS library
        print(blas_description(torch))
        return
    if args.check_bf16_allreduce:
        import torch
        problem = bf16_allreduce_problem(torch)
        print(problem or "ok")
        sys.exit(1 if problem else 0)
    if not args.run:
        fail("--run DIR is required (a directory written by trainscope train --export-run)")
    rank, world, local_ranks = mpi_env()
    if args.mode == "naive" and world > 1:
        fail(f"--mode naive runs one process, but this job has {world} ranks (use sharded)")
    threads = threads_per_rank(args.threads, local_ranks)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch
    torch.set_num_threads(threads)
    run = read_run(args.run)
    if run["batch"] % world:
        fail(f"the global batch {run['batch']} is not divisible by the world size {world}")
    if world > 1:
        if not args.rendezvous:
            fail("several ranks need --rendezvous FILE (on a filesystem every rank sees)")
        store = torch.distributed.FileStore(args.rendezvous, world)
        torch.distributed.init_process_group("gloo", store=store, rank=rank, world_size=world)
    if world > 1 and args.comm_dtype == "bf16":
        problem = bf16_allreduce_problem(torch)
        if problem:
            fail(problem)
    trainer = Trainer(torch, args, run, rank, world, threads)
    if rank == 0 and not args.quiet:
        print(f"ddp_train.py: PyTorch {torch.__version__}, {world} rank{'s' if world > 1 else ''}"
              f" x {threads} thread{'s' if threads > 1 else ''}, {run['steps']} steps of "
              f"{run['batch']} x {run['seq_len']} tokens", flush=True)
    error, failed_step = trainer.train()
    mine = (trainer.rank_result(), trainer.steps)
    results, transports = [mine], [transport(trainer)]
    if world > 1:
        gathered = [None] * world
        torch.distributed.all_gather_object(gathered, (mine, transports[0]))
        results = [g[0] for g in gathered]
        transports = [g[1] for g in gathered]
    if rank == 0 and args.summary:
        text = json.dumps(summary(args, run, trainer, results, error, failed_step, transports))
        tmp = f"{args.summary}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, args.summary)
    if world > 1:
        torch.distributed.destroy_process_group()
    if error:
        fail(error, 1)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
