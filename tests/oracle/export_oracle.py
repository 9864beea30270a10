#!/usr/bin/python3
"""Export oracle: trains a tiny GPT-2-shaped run with samebits, exports it (`samebits export`, both
formats), loads the files into PyTorch with this script's own safetensors reader, and compares the
logits of two fixed sequences with samebits' own (export_logits, fp32): relative error
||l_samebits - l_torch|| / ||l_torch|| <= 1e-5 for
  - the samebits-named file, run through the oracle model of gpt_oracle.py (float64);
  - the Hugging Face directory, run through a GPT-2 forward written from HF's conventions (names
    transformer.h.N.attn.c_attn.weight, Conv1D weights [in, out], gelu_new, layer_norm_epsilon
    and n_head read from config.json; float64);
  - the same directory loaded by transformers.GPT2LMHeadModel.from_pretrained (float32), when this
    python has transformers (else that check is reported as not run).
Exit 77 (skipped) when this python has no torch or numpy.

usage: export_oracle.py --samebits PATH/samebits --logits PATH/export_logits [--workdir DIR]
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {sys.executable} cannot import {e.name} (install python3-torch python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_oracle import leaf_logits  # noqa: E402  (the oracle model, samebits names)

TOLERANCE = 1e-5
CONFIG = """[model]
vocab = 61
seq_len = 16
n_layer = 2
n_head = 4
n_embd = 32
norm = layernorm
tied_head = true
bias = true
[data]
leaves = 4
[train]
steps = 6
warmup = 2
eval_every = 0
[run]
threads = 1
progress = off
"""


def read_safetensors(path):
    """name -> float64 tensor, and the metadata, from a safetensors file (F32 only)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        a = np.frombuffer(data[base + b:base + end], dtype="<f4").reshape(e["shape"])
        out[name] = torch.from_numpy(a.astype(np.float64))
    return out, meta


def hf_gpt2_logits(S, hc, inp):
    """GPT2LMHeadModel's forward from its state dict S (HF names) and config.json hc."""
    B, T = inp.shape
    C, NH, eps = hc["n_embd"], hc["n_head"], hc["layer_norm_epsilon"]
    assert hc["activation_function"] == "gelu_new" and hc["tie_word_embeddings"]
    p = "transformer."
    x = S[p + "wte.weight"][inp] + S[p + "wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    conv1d = lambda t, w, b: t @ S[w] + S[b]  # noqa: E731  (HF Conv1D: weight [in, out])
    for l in range(hc["n_layer"]):
        h = f"{p}h.{l}."
        a = F.layer_norm(x, (C,), S[h + "ln_1.weight"], S[h + "ln_1.bias"], eps=eps)
        q, k, v = conv1d(a, h + "attn.c_attn.weight", h + "attn.c_attn.bias").split(C, dim=-1)
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        y = (att.masked_fill(~mask, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(y, h + "attn.c_proj.weight", h + "attn.c_proj.bias")
        m = F.layer_norm(x, (C,), S[h + "ln_2.weight"], S[h + "ln_2.bias"], eps=eps)
        g = conv1d(m, h + "mlp.c_fc.weight", h + "mlp.c_fc.bias")
        g = 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g.pow(3))))  # gelu_new
        x = x + conv1d(g, h + "mlp.c_proj.weight", h + "mlp.c_proj.bias")
    f = F.layer_norm(x, (C,), S[p + "ln_f.weight"], S[p + "ln_f.bias"], eps=eps)
    return f @ S[p + "wte.weight"].T


def rel_error(ref, got):
    ref = ref.double()
    return ((got.double() - ref).norm() / ref.norm()).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samebits", required=True)
    ap.add_argument("--logits", required=True, help="path of the export_logits executable")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        ini, run = os.path.join(work, "gpt2_tiny.ini"), os.path.join(work, "run.h5")
        with open(ini, "w") as f:
            f.write(CONFIG)
        quiet = dict(check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.samebits, "train", ini, "--out", run], **quiet)
        hf_dir, st = os.path.join(work, "hf"), os.path.join(work, "weights.safetensors")
        subprocess.run([args.samebits, "export", run, "--format", "hf", hf_dir], **quiet)
        subprocess.run([args.samebits, "export", run, st], **quiet)
        subprocess.run([args.logits, run, os.path.join(work, "out")], check=True)
        with open(os.path.join(hf_dir, "config.json")) as f:
            hc = json.load(f)
        T, V = hc["n_positions"], hc["vocab_size"]
        inp = torch.from_numpy(np.fromfile(os.path.join(work, "out.tokens"), dtype="<i4").reshape(2, T).astype(np.int64))
        sb = torch.from_numpy(np.fromfile(os.path.join(work, "out.logits"), dtype="<f4").reshape(2, T, V).copy())

        results = []
        P, _ = read_safetensors(st)
        cfg = {"n_embd": hc["n_embd"], "n_head": hc["n_head"], "n_layer": hc["n_layer"], "norm": "layernorm",
               "tied_head": 1}
        results.append(("samebits names, oracle model (float64)", rel_error(leaf_logits(P, cfg, inp), sb)))
        S, meta = read_safetensors(os.path.join(hf_dir, "model.safetensors"))
        assert meta.get("format") == "pt", meta
        results.append(("Hugging Face directory, GPT-2 forward (float64)", rel_error(hf_gpt2_logits(S, hc, inp), sb)))
        try:  # transformers may be missing, or refuse this torch (an ImportError on first use)
            from transformers import GPT2LMHeadModel
            model = GPT2LMHeadModel.from_pretrained(hf_dir).eval()
        except ImportError as e:
            print(f"not run: transformers.GPT2LMHeadModel ({str(e).strip().splitlines()[0]})")
        else:
            with torch.no_grad():
                results.append(("transformers GPT2LMHeadModel (float32)", rel_error(model(inp).logits, sb)))
    ok = True
    for name, err in results:
        good = err <= TOLERANCE
        ok = ok and good
        print(f"{'ok  ' if good else 'FAIL'} {name}: logits relative error {err:.3g}")
    print(f"tolerance {TOLERANCE}: {'all pass' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
