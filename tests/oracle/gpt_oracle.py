#!/usr/bin/python3
"""PyTorch oracle of samebits' GPT: for each model variant, runs oracle_export (samebits, fp32,
CPU backend), rebuilds the same GPT in PyTorch float64 from the exported weights and tokens, and
compares the batch loss and every parameter gradient. Pass: relative error <= 1e-5 for the loss
and for every tensor's gradient (||g_samebits - g_torch|| / ||g_torch||). Exit 77 (skipped) when
this python has no torch or h5py.

usage: gpt_oracle.py --export PATH/oracle_export [--workdir DIR]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {sys.executable} cannot import {e.name} (install python3-torch python3-h5py)")
    sys.exit(77)

TOLERANCE = 1e-5
VARIANTS = [  # norm, tied_head, bias
    ("layernorm", 1, 1),
    ("layernorm", 0, 0),
    ("rmsnorm", 1, 0),
    ("rmsnorm", 0, 1),
]


def norm(x, kind, w, b):
    if kind == "layernorm":
        return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    return x * r * w


def leaf_logits(P, cfg, inp):
    """Logits (B, T, V) of inputs inp (B, T) under samebits' tensor names and layouts."""
    B, T, C, NH = inp.shape[0], inp.shape[1], cfg["n_embd"], cfg["n_head"]
    hs = C // NH
    x = P["wte"][inp] + P["wpe"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(cfg["n_layer"]):
        h = f"h.{l}."
        a = norm(x, cfg["norm"], P[h + "ln1.w"], P.get(h + "ln1.b"))
        qkv = F.linear(a, P[h + "attn.qkv.w"], P.get(h + "attn.qkv.b"))
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, P[h + "attn.proj.w"], P.get(h + "attn.proj.b"))
        m = norm(x, cfg["norm"], P[h + "ln2.w"], P.get(h + "ln2.b"))
        f = F.gelu(F.linear(m, P[h + "mlp.fc.w"], P.get(h + "mlp.fc.b")), approximate="tanh")
        x = x + F.linear(f, P[h + "mlp.proj.w"], P.get(h + "mlp.proj.b"))
    f = norm(x, cfg["norm"], P["lnf.w"], P.get("lnf.b"))
    return F.linear(f, P["wte"] if cfg["tied_head"] else P["lm_head.w"])


def leaf_loss(P, cfg, tokens):
    """Mean cross-entropy of one leaf: tokens (B, T + 1)."""
    T = cfg["seq_len"]
    logits = leaf_logits(P, cfg, tokens[:, :T])
    tgt = tokens[:, 1:]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))


def check(path):
    with h5py.File(path, "r") as f:
        cfg = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        cfg = {k: (int(v) if k != "norm" else str(v)) for k, v in cfg.items()}
        tokens = torch.from_numpy(f["tokens"][...].astype("int64"))
        sb_loss = float(f["loss"][0])
        P = {n: torch.tensor(f["params"][n][...], dtype=torch.float64, requires_grad=True) for n in f["params"]}
        G = {n: torch.tensor(f["grads"][n][...], dtype=torch.float64) for n in f["grads"]}
    loss = sum(leaf_loss(P, cfg, tokens[l]) for l in range(cfg["leaves"])) / cfg["leaves"]
    loss.backward()
    name = f"norm={cfg['norm']} tied_head={cfg['tied_head']} bias={cfg['bias']}"
    loss_err = abs(sb_loss - loss.item()) / abs(loss.item())
    worst_name, worst = "", 0.0
    for n, p in P.items():
        ref = p.grad
        err = (G[n] - ref).norm().item() / ref.norm().item()
        if err > worst:
            worst_name, worst = n, err
    ok = loss_err <= TOLERANCE and worst <= TOLERANCE
    print(f"{'ok  ' if ok else 'FAIL'} {name}: loss {sb_loss:.9g} vs torch {loss.item():.12g}, "
          f"relative error {loss_err:.3g}; max gradient relative error {worst:.3g} ({worst_name}), "
          f"{len(P)} tensors")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", required=True, help="path of the oracle_export executable")
    ap.add_argument("--workdir", help="where to write the HDF5 files (default: a temporary folder)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        ok = True
        for norm_kind, tied, bias in VARIANTS:
            path = os.path.join(work, f"oracle_{norm_kind}_t{tied}_b{bias}.h5")
            subprocess.run([args.export, path, norm_kind, str(tied), str(bias)], check=True,
                           stdout=subprocess.DEVNULL)
            ok = check(path) and ok
    print(f"tolerance {TOLERANCE}: {'all variants pass' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
