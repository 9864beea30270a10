#!/usr/bin/python3
"""What samebits.torch.deterministic costs a PyTorch program: the same GPT step (samebits.torch.nanogpt's
nanoGPT-style model: LayerNorm, erf-GELU MLP, causal attention through matmul and softmax, tied
head; torch.optim.AdamW and clip_grad_norm_) timed plain and under deterministic(), side by side in
one process, for each precision (fp32; bf16 autocast: the forward and the loss under
torch.autocast('cpu', torch.bfloat16)) and each thread count. The configurations alternate step by
step, so that a noisy machine slows them alike.

  PYTHONPATH=build/release/python SB_BUILD_DIR=build/release bench/native-blas /usr/bin/python3 \\
      bench/torch_deterministic.py --shape gpt2 --seq 256 --batch 4 --threads 1,2 --precision fp32,bf16

--shape gpt2: GPT-2 124M (50257 tokens, 12 layers, width 768, 12 heads); --shape default: samebits'
default model (experiments/configs/default.ini: 4 layers, width 128, 4 heads, 256 tokens). Prints a
JSON line per configuration: the step times (wall, s; the first step of each is a warm-up, not
counted), their median, and deterministic / plain; then the CPU and PyTorch's OpenBLAS core.
"""
import argparse
import contextlib
import ctypes
import json
import os
import statistics
import time

p = argparse.ArgumentParser()
p.add_argument("--shape", choices=["gpt2", "default"], default="default")
p.add_argument("--seq", type=int, default=0, help="sequence length (default: the shape's)")
p.add_argument("--batch", type=int, default=4)
p.add_argument("--threads", default="1,2")
p.add_argument("--precision", default="fp32,bf16")
p.add_argument("--steps", type=int, default=3, help="timed steps per configuration, after one warm-up")
p.add_argument("--bf16-dot", choices=["chain", "pairs"], default="chain",
               help="deterministic(bf16_dot=): bf16 products in fp32 chains or in the bf16 dot instructions' pairs")
a = p.parse_args()
import torch  # noqa: E402

import samebits.torch as sbt  # noqa: E402
from samebits.torch.nanogpt import GPT, GPTShape  # noqa: E402

shape = GPTShape(vocab=50257, seq_len=1024, n_layer=12, n_head=12, n_embd=768) if a.shape == "gpt2" else \
    GPTShape(vocab=256, seq_len=256, n_layer=4, n_head=4, n_embd=128)
if a.seq:
    shape.seq_len = a.seq


def cpu_name():
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")


def blas_core():
    for lib in ("libopenblas.so.0", "libopenblasp-r0.3.21.so"):
        try:
            f = ctypes.CDLL(lib).openblas_get_corename
            f.restype = ctypes.c_char_p
            return f().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"


class Config:
    def __init__(self, threads, precision, deterministic):
        self.threads, self.precision, self.deterministic = threads, precision, deterministic
        self.model = GPT(shape, seed=0)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.0)
        g = torch.Generator().manual_seed(1)
        self.batches = [torch.randint(0, shape.vocab, (a.batch, shape.seq_len + 1), generator=g)
                        for _ in range(a.steps + 1)]
        self.times = []

    def step(self, i):
        torch.set_num_threads(self.threads)
        tokens = self.batches[i]
        mode = sbt.deterministic(bf16_dot=a.bf16_dot) if self.deterministic else contextlib.nullcontext()
        cast = torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else contextlib.nullcontext()
        start = time.perf_counter()
        with mode:
            self.opt.zero_grad(set_to_none=True)
            with cast:
                loss = self.model(tokens[:, :-1], tokens[:, 1:])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
        self.times.append(time.perf_counter() - start)


for threads in [int(t) for t in a.threads.split(",")]:
    for precision in a.precision.split(","):
        pair = [Config(threads, precision, False), Config(threads, precision, True)]
        for i in range(a.steps + 1):
            for c in pair:
                c.step(i)
        plain, det = (statistics.median(c.times[1:]) for c in pair)
        print(json.dumps({"shape": a.shape, "seq": shape.seq_len, "batch": a.batch, "threads": threads,
                          "precision": precision, "bf16_dot": a.bf16_dot, "plain_s": [round(t, 4) for t in pair[0].times[1:]],
                          "deterministic_s": [round(t, 4) for t in pair[1].times[1:]], "plain_median_s": round(plain, 4),
                          "deterministic_median_s": round(det, 4), "ratio": round(det / plain, 3)}), flush=True)
        del pair
print(json.dumps({"cpu": cpu_name(), "torch": torch.__version__, "openblas_core": blas_core(),
                  "torch_threads_max": os.cpu_count()}))
