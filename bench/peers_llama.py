#!/usr/bin/python3
"""bench/peers_llama.py — samebits' llama_124m step against transformers' LlamaForCausalLM in PyTorch, side by side in
one invocation on the same CPU (docs/PERFORMANCE.md §Llama peer).

The shape of experiments/configs/llama_124m.ini (12 x 768, GQA 12/4 heads, SwiGLU 2048, RMSNorm, rotary positions,
no biases, tied head, vocabulary 50257) at context 256, 8 sequences = 2048 tokens a step, random tokens, AdamW
(lr 6e-4, betas 0.9/0.95, eps 1e-8, clip 1.0). samebits: the CLI in deterministic mode with statistics and
fingerprints on, step times from the run file's timing/step_seconds. transformers: bench/peers_llama_torch.py
under the venv's python (torch and transformers from PyPI; its BLAS is printed). Each runs --steps steps; the
median over the steps after the first is reported, and the ratio samebits / transformers of tokens/s.

  bench/peers_llama.py --samebits build/release/bin/samebits --venv build/dev/hf_llama_venv [--threads 1,2] [--steps 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import h5py

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
p = argparse.ArgumentParser()
p.add_argument("--samebits", required=True)
p.add_argument("--venv", required=True, help="a venv whose python imports torch and transformers")
p.add_argument("--threads", default="1")
p.add_argument("--steps", type=int, default=4)
a = p.parse_args()
SEQ, BATCH = 256, 8


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def samebits_steps(threads, work):
    out = os.path.join(work, f"llama_{threads}.h5")
    cmd = [a.samebits, "train", os.path.join(root, "experiments/configs/llama_124m.ini"), "--data.source", "synthetic",
           "--data.path", "", "--data.val_path", "", "--model.seq_len", str(SEQ), "--data.leaf_size", "1",
           "--data.leaves", str(BATCH), "--optim.name", "adamw", "--optim.lr", "6e-4", "--train.steps", str(a.steps),
           "--train.warmup", "0", "--train.eval_every", "0", "--train.checkpoint_every", "0", "--run.threads",
           str(threads), "--run.progress", "off", "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with h5py.File(out) as f:
        return list(f["timing/step_seconds"][:]), [float(x) for x in f["series/loss"][:]]


def torch_steps(threads):
    py = os.path.join(a.venv, "bin", "python")
    r = subprocess.run([py, os.path.join(here, "peers_llama_torch.py"), "--seq", str(SEQ), "--batch", str(BATCH),
                        "--threads", str(threads), "--steps", str(a.steps)], check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


print(f"bench/peers_llama.py --threads {a.threads} --steps {a.steps} — {cpu_name()}, "
      f"{os.cpu_count()} CPUs — load {open('/proc/loadavg').read().split()[:3]}")
print("\n| threads | peer | median step (s) | tokens/s | steps (first left out) | first losses |\n|---|---|---|---|---|---|")
rows = []
with tempfile.TemporaryDirectory() as work:
    for threads in [int(t) for t in a.threads.split(",")]:
        sb_times, sb_losses = samebits_steps(threads, work)
        t = torch_steps(threads)
        for peer, times, losses, extra in (("samebits", sb_times, sb_losses, ""),
                                           ("transformers", t["wall"], t["losses"],
                                            f" (torch {t['torch']}, transformers {t['transformers']}, BLAS {t['blas']})")):
            median = statistics.median(times[1:])
            rows.append((threads, peer, median))
            print(f"| {threads} | {peer}{extra} | {median:.3f} | {SEQ * BATCH / median:.0f} | {len(times) - 1} | "
                  f"{', '.join(f'{x:.4f}' for x in losses[:2])} |")
print("\n| threads | samebits / transformers tokens/s |\n|---|---|")
for threads in sorted({r[0] for r in rows}):
    m = {peer: median for th, peer, median in rows if th == threads}
    print(f"| {threads} | {m['transformers'] / m['samebits']:.2f} |")
sys.exit(0)
