#!/usr/bin/python3
"""PyTorch oracle of samebits' tensor-parallel Muon (optim.tp_mode, docs/DISTRIBUTED.md §10): runs
tp_oracle_export (TP groups of 2 and 4 simulated ranks), then recomputes every rank's update in
float64 from the definitions:

  blockwise          rank r's shard is a matrix of its own: Keller Jordan's Muon on the shard
                     (its momentum, its Frobenius norm, Newton-Schulz on its shape, the scale rule
                     of its shape) -- Megatron-Core's TP-local shortcut.
  distributed        Emerging-Optimizers' newton_schulz_tp(tp_mode="distributed"): the Newton-
  distributed_exact  Schulz of the FULL matrix (its norm, Gram matrices over the full unsplit side,
                     split_qkv's Q, K, V blocks of the full matrix), the scale rule of the full
                     shape; rank r's shard of the result. In exact arithmetic the distributed
                     computation (Gram = sum of the ranks' partial Grams) IS this one, so the
                     fp64 full-matrix Muon is its reference; the two modes differ only in how the
                     fp32 partials are added.

Shard r of a full tensor viewed as (outer, tp*part, inner) is [:, r*part:(r+1)*part, :]
(core/base/tp_layout.hpp), taken here from the full matrices independently of samebits' slicing.

Pass: max|a - b| / max|b| <= 1e-5 (the tolerance of optim_oracle.py's fp32 Muon cases) for each
rank's W_new, update W_new - W and momentum; and for the distributed modes the recorded update_rms
and ortho_error statistics are the full matrix's (relative 1e-5, absolute 1e-4 for ortho_error).
Why 1e-5: each fp32 element is a chain of <= 256 fma's per product (unit roundoff 6e-8), through
5 Newton-Schulz steps whose polynomial keeps the singular values in [0.7, 1.2]. Measured (printed):
W_new <= 2.4e-6, update <= 4.9e-6, momentum <= 5.4e-8; a reference with the wrong Q/K/V blocking
was off by 2e-2 (W_new) and 0.66 (update), and a shard's scale rule for the full one (sqrt(1.5) for
sqrt(3)) would be off by 0.3.
Each case must also be at least 1e-2 (relative, update) away from the other mode's reference
(blockwise vs full), so that it tells the modes apart. Exit 77 (skipped) when this python has no
torch or h5py.

usage: tp_oracle.py --export PATH/tp_oracle_export [--workdir DIR]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_oracle import ortho_residual, rel, t64, text, zeropower_via_newtonschulz5  # noqa: E402

import h5py  # noqa: E402  (optim_oracle exits 77 when it is missing)
import numpy as np  # noqa: E402
import torch  # noqa: E402

TOLERANCE = 1e-5
ORTHO_TOLERANCE = 1e-4
SEPARATION = 1e-2  # the update's distance from the other mode's reference, at least

SCALE_RULES = {  # core/optim/muon.cpp muon_scale, from the papers it cites
    "shape": lambda r, c: math.sqrt(max(1.0, r / c)),
    "max_dim": lambda r, c: math.sqrt(max(r, c)),
    "spectral": lambda r, c: math.sqrt(r / c),
}


def shard(full, at, r):
    """Rank r's block of a full tensor (outer, tp*part, inner), as its local (rows, cols) matrix."""
    tp, outer, part, inner = (int(at[k]) for k in ("tp", "outer", "part", "inner"))
    block = full.reshape(outer, tp, part, inner)[:, r]
    return block.reshape(int(at["local_rows"]), int(at["local_cols"]))


def muon(W, G, M, at, coeffs, blocks):
    """One Muon step of a whole matrix in float64: W_new, the new momentum, the orthogonalised X."""
    mu, lr, wd = at["momentum"], at["lr"], at["weight_decay"]
    M = mu * M + G
    U = G + mu * M if at["nesterov"] else M
    X = torch.cat([zeropower_via_newtonschulz5(b, coeffs, at["ns_eps"]) for b in U.chunk(blocks, 0)])
    scale = SCALE_RULES[text(at["scale_rule"])](W.size(0) // blocks, W.size(1))
    return W * (1 - lr * wd) - lr * scale * X, M, X


def check(case, name, g):
    at = g.attrs
    mode, tp = text(at["mode"]), int(at["tp"])
    coeffs = [tuple(row) for row in np.asarray(g["ns"])]
    W, G, M0 = t64(g["W"]), t64(g["G"]), t64(g["M0"])
    got_w, got_m = t64(g["W_new"]), t64(g["M_new"])
    blocks = 3 if at["split_qkv"] and name.endswith(".attn.qkv.w") else 1  # Q, K, V of the full matrix
    # blockwise: each shard on its own; the distributed modes: the full matrix, then its shards.
    own = [muon(shard(W, at, r), shard(G, at, r), shard(M0, at, r), at, coeffs, 1) for r in range(tp)]
    w, m, full_x = muon(W, G, M0, at, coeffs, blocks)
    whole = [(shard(w, at, r), shard(m, at, r)) for r in range(tp)]
    ref, other = (own, whole) if mode == "blockwise" else (whole, own)
    ref_w, ref_m = [x[0] for x in ref], [x[1] for x in ref]
    W_r = [shard(W, at, r) for r in range(tp)]
    got_w = [got_w[r].reshape(ref_w[r].shape) for r in range(tp)]
    got_m = [got_m[r].reshape(ref_m[r].shape) for r in range(tp)]
    errs = {
        "W_new": max(rel(got_w[r], ref_w[r]) for r in range(tp)),
        "update": max(rel(got_w[r] - W_r[r], ref_w[r] - W_r[r]) for r in range(tp)),
        "momentum": max(rel(got_m[r], ref_m[r]) for r in range(tp)),
    }
    # The other mode's reference must be far off, or this case could not tell the modes apart.
    gap = max(rel(got_w[r] - W_r[r], other[r][0] - W_r[r]) for r in range(tp))
    ok = all(e <= TOLERANCE for e in errs.values()) and gap >= SEPARATION
    stats = f"  other mode {gap:.1e}"
    if mode != "blockwise":  # the statistics are the full matrix's, the same on every rank
        rms = float(torch.cat([(ref_w[r] - W_r[r]).flatten() for r in range(tp)]).pow(2).mean().sqrt())
        ortho = max(ortho_residual(b) for b in full_x.chunk(blocks, 0))
        rms_err = max(abs(float(v) - rms) / rms for v in np.asarray(g["update_rms"]))
        ortho_err = max(abs(float(v) - ortho) for v in np.asarray(g["ortho_error"]))
        ok = ok and rms_err <= TOLERANCE and ortho_err <= ORTHO_TOLERANCE * max(1.0, ortho)
        stats += f"  update_rms {rms_err:.2e}  ortho {ortho:.4f} (|d| {ortho_err:.1e})"
    print(f"tp    {case:26s} {name:18s} {mode:17s} tp {tp}  "
          + "  ".join(f"{k} {v:.2e}" for k, v in errs.items()) + stats + f"  {'ok' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", required=True, help="path of the tp_oracle_export executable")
    ap.add_argument("--workdir", help="where to write the HDF5 file (default: a temporary folder)")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(args.workdir or tmp, "tp_oracle.h5")
        subprocess.run([args.export, path], check=True)
        ok = True
        with h5py.File(path, "r") as f:
            for case, grp in f["tp"].items():
                for name, g in grp.items():  # "h.0.attn.qkv.w": one group per sharded matrix
                    ok &= check(case, name, g)
    print("tp oracle:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
