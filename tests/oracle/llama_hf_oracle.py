#!/usr/bin/python3
"""Llama export and import against transformers (CTest test_llama_hf, label slow): in a venv at
VENV with the newest torch and transformers from PyPI (kept between runs, as run_venv.py --torch
keeps its venv; it sees Debian's packages), for a Llama-shaped model with grouped-query attention
(LlamaForCausalLM, tied head) and one with QK-norm and a single key/value head (Qwen3ForCausalLM,
untied head):

  export  samebits trains it 6 steps on bytes of a text file and records the validation loss of
          the final weights; `samebits export --format hf` loads into transformers'
          AutoModelForCausalLM, which computes the loss of the same validation windows: relative
          error <= 1e-5 (float64 in PyTorch; samebits' fp32 loss).
  import  transformers builds the model (seeded random weights) and save_pretrained()s it;
          `samebits train --init DIR` starts from it: its first step's loss (the training set is
          exactly one batch) equals transformers' loss of those windows (<= 1e-5), and its step-0
          snapshot exported with --format hf holds transformers' tensors bit for bit.

The run files are read here, by Debian's python3 with h5py; the venv's python runs only the
PyTorch side (tests/oracle/llama_hf_torch.py). Exit 77 (skipped) when the package index cannot be
reached or this python has no h5py.

usage: llama_hf_oracle.py --samebits PATH/samebits --venv DIR [--workdir DIR]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "support"))
from fresh_venv import fresh_venv  # noqa: E402

try:
    import h5py
except ImportError:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {sys.executable} cannot import h5py (install python3-h5py)")
    sys.exit(77)

TOLERANCE = 1e-5
T, B = 32, 4  # context, sequences per leaf
MODELS = {
    "llama": dict(n_layer=2, n_head=4, n_kv_head=2, n_embd=64, ffn_dim=160, qk_norm="false", tied_head="true"),
    "qwen3": dict(n_layer=2, n_head=4, n_kv_head=1, n_embd=64, ffn_dim=96, qk_norm="true", tied_head="false"),
}


def config_text(m, train, val, leaves, steps):
    return f"""[model]
vocab = 256
seq_len = {T}
n_layer = {m['n_layer']}
n_head = {m['n_head']}
n_embd = {m['n_embd']}
n_kv_head = {m['n_kv_head']}
qk_norm = {m['qk_norm']}
norm = rmsnorm
tied_head = {m['tied_head']}
bias = false
mlp = swiglu
ffn_dim = {m['ffn_dim']}
pos = rope
rope_theta = 10000
[data]
source = text
path = {train}
val_path = {val}
leaf_size = {B}
leaves = {leaves}
[optim]
name = muon
[train]
steps = {steps}
warmup = 1
eval_every = {steps}
eval_leaves = 2
snapshot_steps = 0
[run]
threads = 1
progress = off
"""


def write_bytes(path, n, seed):
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 7))) for _ in range(300)]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words) + (b"\n" if rng.random() < 0.1 else b" ")
    with open(path, "wb") as f:
        f.write(bytes(out[:n]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samebits", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    python = fresh_venv(args.venv, ["torch", "transformers", "safetensors"], keep=True, system_site_packages=True)
    if isinstance(python, int):
        return python
    quiet = dict(check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        val = os.path.join(work, "val.txt")
        write_bytes(val, 2 * B * T + 1, 2)  # the validation set: 2 leaves of B windows
        cases = []
        for name, m in MODELS.items():
            # Export: samebits trains, transformers evaluates the recorded validation loss.
            train = os.path.join(work, f"{name}_train.txt")
            write_bytes(train, 20000, 1)
            ini, run, hf = (os.path.join(work, f"{name}_{x}") for x in ("export.ini", "export.h5", "export_hf"))
            with open(ini, "w") as f:
                f.write(config_text(m, train, val, 2, 6))
            subprocess.run([args.samebits, "train", ini, "--out", run], **quiet)
            subprocess.run([args.samebits, "export", run, "--format", "hf", hf], **quiet)
            with h5py.File(run, "r") as f:
                val_loss = float(f["series/val_loss"][-1])
            # Import: transformers' weights, a training set of exactly one batch (B windows).
            one_batch = os.path.join(work, f"{name}_batch.txt")
            write_bytes(one_batch, B * T + 1, 3)
            cases.append(dict(name=name, export_dir=hf, val=val, val_loss=val_loss, T=T, windows=2 * B,
                              import_dir=os.path.join(work, f"{name}_import_hf"), batch=one_batch,
                              config=json.load(open(os.path.join(hf, "config.json")))))
        spec = os.path.join(work, "cases.json")
        with open(spec, "w") as f:
            json.dump(cases, f)
        # PyTorch side 1: the exported models' losses, and the models to import, saved.
        torch_side = os.path.join(here, "llama_hf_torch.py")
        if subprocess.run([python, torch_side, "export", spec]).returncode != 0:
            return 1
        failed = 0
        for case in cases:
            m = MODELS[case["name"]]
            ini, run, back = (os.path.join(work, f"{case['name']}_{x}") for x in ("import.ini", "import.h5", "back_hf"))
            with open(ini, "w") as f:
                f.write(config_text(m, case["batch"], val, 1, 1))
            subprocess.run([args.samebits, "train", ini, "--init", case["import_dir"], "--out", run], **quiet)
            subprocess.run([args.samebits, "export", run, "--step", "0", "--format", "hf", back], **quiet)
            with h5py.File(run, "r") as f:
                case["first_loss"] = float(f["series/loss"][0])
            case["back_dir"] = back
        with open(spec, "w") as f:
            json.dump(cases, f)
        # PyTorch side 2: the first step's loss and the round trip's tensors.
        failed = subprocess.run([python, torch_side, "import", spec]).returncode
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
