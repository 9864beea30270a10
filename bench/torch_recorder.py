"""The Recorder's cost per step (docs/TORCH.md §Cost): samebits.torch.nanogpt's GPT at the GPT-2
124M shape trained on the CPU, bare steps and recorded steps (fingerprints of every parameter and
gradient, exact gradient statistics; no trace) alternating in one process, and one traced step.
Prints the medians and their ratio, and the CPU.

    PYTHONPATH=build/release/python OMP_WAIT_POLICY=passive /usr/bin/python3 bench/torch_recorder.py \
        [--pairs 3] [--seq-len 1024] [--batch 1] [--threads 2] [--trace]
"""
import argparse
import os
import statistics
import tempfile
import time

import torch

from samebits.torch import Recorder
from samebits.torch.nanogpt import GPT, GPT2_124M, GPTShape, batches


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--seq-len", type=int, default=GPT2_124M.seq_len)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--trace", action="store_true", help="also time one traced step")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    shape = GPTShape(**dict(vars(GPT2_124M), seq_len=args.seq_len))
    model = GPT(shape)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = batches(shape, args.batch, 4 * args.pairs + 4)
    bare, recorded, record_only = [], [], []

    def step(rec=None):
        x, y = next(data)
        start = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        opt.step()
        mid = time.perf_counter()
        if rec is not None:
            rec.step(loss)
        opt.zero_grad()
        end = time.perf_counter()
        return end - start, end - mid

    with tempfile.TemporaryDirectory() as tmp:
        step()  # warm-up
        with Recorder(os.path.join(tmp, "run.h5"), model, opt) as rec:
            for k in range(args.pairs):
                bare.append(step()[0])
                total, part = step(rec)
                recorded.append(total)
                record_only.append(part)
                print(f"pair {k + 1}: bare {bare[-1]:.3f} s, recorded {total:.3f} s (rec.step {part:.3f} s)", flush=True)
        n = sum(p.numel() for p in model.parameters())
        print(f"CPU {cpu_name()}, {args.threads} threads, torch {torch.__version__}; GPT {n / 1e6:.1f} M parameters, "
              f"seq_len {args.seq_len}, batch {args.batch}, {args.pairs} pairs")
        b, r, o = statistics.median(bare), statistics.median(recorded), statistics.median(record_only)
        print(f"bare step {b:.3f} s, recorded step {r:.3f} s (of it rec.step {o:.3f} s): "
              f"recorded / bare {r / b:.4f}, rec.step / bare {o / b:.4f}", flush=True)
        if args.trace:
            with Recorder(os.path.join(tmp, "traced.h5"), model, opt, trace_steps=(1,)) as rec:
                traced = step(rec)[0]
            print(f"traced step {traced:.3f} s: traced / bare {traced / b:.2f}")


if __name__ == "__main__":
    main()
