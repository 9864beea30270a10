#!/usr/bin/python3
"""PyTorch oracle of samebits' optimizers: runs optim_oracle_export (samebits, CPU backend), then
recomputes every exported step in float64 from the published algorithms and compares.

  Muon:  Keller Jordan's muon.py (zeropower_via_newtonschulz5 with the exported coefficient list,
         momentum buf = mu*buf + g, Nesterov g + mu*buf), decoupled decay W*(1 - lr*wd) - lr*scale*X;
         the variants from their papers: Q/K/V blocks orthogonalised separately (Megatron-Core),
         NorMuon's per-row second moment (arXiv:2510.05491, modded-nanogpt's norm-keeping rule),
         cautious weight decay (decay only where W and the update agree in sign).
  AdamW: torch.optim.AdamW itself on float64 tensors, its state set to the exported moments.
  QK-clip: MuonClip's per-head max logit and the rescaled W_q, W_k rows (Kimi K2, arXiv:2507.20534).
  Newton-Schulz: the singular values of samebits' output equal the scalar polynomial composition
         p_T(...p_1(s)) applied to the input's singular values (s of U/(|U|_F + eps), torch.linalg.svdvals),
         and lie in the band that composition maps the input's singular-value range to.

Pass (fp32 cases): max|a - b| / max|b| <= 1e-5 for W_new, the update W_new - W, the optimizer
state and the Newton-Schulz output; singular values within 1e-4 of the composition and inside its
band. bf16 cases are reported and only required to stay within 5e-2 (bf16 operands). Exit 77
(skipped) when this python has no torch or h5py.

usage: optim_oracle.py --export PATH/optim_oracle_export [--workdir DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {sys.executable} cannot import {e.name} (install python3-torch python3-h5py)")
    sys.exit(77)

TOLERANCE = 1e-5
BF16_TOLERANCE = 5e-2
SV_TOLERANCE = 1e-4


def t64(ds):
    return torch.from_numpy(np.asarray(ds, dtype=np.float64))


def text(attr):
    """A string attribute (h5py returns fixed-length C strings as bytes)."""
    return attr.decode() if isinstance(attr, bytes) else str(attr)


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def zeropower_via_newtonschulz5(G, coeffs, eps):
    """Keller Jordan's Newton-Schulz quintic (muon.py), in float64, one (a, b, c) per step."""
    X = G.double()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm() + eps)
    for a, b, c in coeffs:
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


def composition(s, coeffs):
    for a, b, c in coeffs:
        s = a * s + b * s**3 + c * s**5
    return s


def normuon(X, v0, beta2):
    """NorMuon (arXiv:2510.05491; modded-nanogpt NorMuonAndAdam): per-row second moment of X,
    rows divided by its root, rescaled to keep the Frobenius norm of X."""
    v = beta2 * v0 + (1 - beta2) * (X * X).mean(dim=1)
    r = 1 / v.clamp_min(1e-10).sqrt()
    Y = X * r[:, None]
    return Y * (X.norm() / Y.norm().clamp_min(1e-10)), v


def ortho_residual(X):
    Xr = X.mT if X.size(0) > X.size(1) else X
    return float((Xr @ Xr.mT - torch.eye(Xr.size(0), dtype=torch.float64)).norm() / Xr.size(0) ** 0.5)


def check_muon(name, g):
    at = g.attrs
    coeffs = [tuple(row) for row in np.asarray(g["ns"])]
    W, G, M = t64(g["W"]), t64(g["G"]), t64(g["M0"])
    mu, lr, wd = at["momentum"], at["lr"], at["weight_decay"]
    blocks = 3 if at["split_qkv"] else 1  # Megatron-Core: Q, K, V orthogonalised separately
    M = mu * M + G
    U = G + mu * M if at["nesterov"] else M
    X = torch.cat([zeropower_via_newtonschulz5(b, coeffs, at["ns_eps"]) for b in U.chunk(blocks, 0)])
    D = X
    errs = {}
    if at["normuon"]:
        D, v = normuon(X, t64(g["v0"]), at["normuon_beta2"])
        errs["v"] = rel(t64(g["v_new"]), v)
    # Cautious weight decay (modded-nanogpt): decay where the update and the weight agree in sign.
    mask = (W * D > 0).double() if at["cautious_wd"] else torch.ones_like(W)
    W_new = W - lr * wd * W * mask - lr * at["scale"] * D
    errs.update({
        "W_new": rel(t64(g["W_new"]), W_new),
        "update": rel(t64(g["W_new"]) - W, W_new - W),
        "momentum": rel(t64(g["M_new"]), M),
        "X": rel(t64(g["X"]), X),
    })
    ortho = max(ortho_residual(b) for b in t64(g["X"]).chunk(blocks, 0))
    precision = text(at["precision"])
    limit = TOLERANCE if precision == "fp32" else BF16_TOLERANCE
    ok = all(e <= limit for e in errs.values())
    ok = ok and abs(at["ortho_error"] - ortho) <= 1e-4 * max(1.0, ortho)
    print(f"muon  {name:26s} {precision} {text(at['table']):15s} {len(coeffs)} steps  "
          + "  ".join(f"{k} {v:.2e}" for k, v in errs.items())
          + f"  ortho {at['ortho_error']:.4f} (fp64 {ortho:.4f})  {'ok' if ok else 'FAIL'}")
    return ok


def check_adamw(name, g):
    at = g.attrs
    W = t64(g["W"]).clone().requires_grad_(False)
    p = torch.nn.Parameter(W.clone())
    p.grad = t64(g["G"])
    opt = torch.optim.AdamW([p], lr=at["lr"], betas=(at["beta1"], at["beta2"]), eps=at["eps"],
                            weight_decay=at["weight_decay"] if at["decay"] else 0.0, foreach=False)
    opt.state[p] = {"step": torch.tensor(float(at["step"] - 1)),
                    "exp_avg": t64(g["m0"]), "exp_avg_sq": t64(g["v0"])}
    opt.step()
    st = opt.state[p]
    W_new = p.detach()
    errs = {
        "W_new": rel(t64(g["W_new"]), W_new),
        "update": rel(t64(g["W_new"]) - W, W_new - W),
        "exp_avg": rel(t64(g["m_new"]), st["exp_avg"]),
        "exp_avg_sq": rel(t64(g["v_new"]), st["exp_avg_sq"]),
    }
    ok = all(e <= TOLERANCE for e in errs.values())
    print(f"adamw {name:26s} step {int(at['step']):2d} decay {int(at['decay'])}  "
          + "  ".join(f"{k} {v:.2e}" for k, v in errs.items()) + f"  {'ok' if ok else 'FAIL'}")
    return ok


def check_ns(name, g):
    at = g.attrs
    coeffs = [tuple(row) for row in np.asarray(g["ns"])]
    U = t64(g["U"])
    s_in = torch.linalg.svdvals(U / (U.norm() + at["eps"]))
    expect = torch.sort(composition(s_in, coeffs)).values
    got = torch.sort(torch.linalg.svdvals(t64(g["X"]))).values
    grid = torch.linspace(float(s_in.min()), float(s_in.max()), 200001, dtype=torch.float64)
    image = composition(grid, coeffs)
    lo, hi = float(image.min()), float(image.max())
    err = float((got - expect).abs().max())
    ok = err <= SV_TOLERANCE and float(got.min()) >= lo - SV_TOLERANCE and float(got.max()) <= hi + SV_TOLERANCE
    x_err = rel(t64(g["X"]), zeropower_via_newtonschulz5(U, coeffs, at["eps"]))
    ok = ok and x_err <= TOLERANCE
    print(f"ns    {name:26s} input s in [{float(s_in.min()):.4f}, {float(s_in.max()):.4f}]  "
          f"output s in [{float(got.min()):.4f}, {float(got.max()):.4f}], band of the table "
          f"[{lo:.4f}, {hi:.4f}], |s - p(s_in)| <= {err:.2e}, X {x_err:.2e}  {'ok' if ok else 'FAIL'}")
    return ok


def check_qk_clip(name, g):
    """MuonClip's QK-clip (Kimi K2, arXiv:2507.20534): S_h = max causal logit q_t.k_j/sqrt(hs) of
    head h; heads with S_h > tau get their W_q, W_k rows (and biases) times sqrt(tau / S_h)."""
    at = g.attrs
    nh, tau = int(at["n_head"]), at["tau"]
    qkv = t64(g["qkv"])
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // nh
    q = qkv[:, :, :C].reshape(B, T, nh, hs).transpose(1, 2)
    k = qkv[:, :, C:2 * C].reshape(B, T, nh, hs).transpose(1, 2)
    logits = (q @ k.mT) / hs ** 0.5
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    S = logits.masked_fill(~mask, float("-inf")).amax(dim=(0, 2, 3))
    W, b = t64(g["W"]).clone(), t64(g["b"]).clone()
    clipped = 0
    for h in range(nh):
        if S[h] > tau:
            clipped += 1
            gamma = (tau / S[h]) ** 0.5
            for block in (0, 1):
                rows = slice(block * C + h * hs, block * C + (h + 1) * hs)
                W[rows] *= gamma
                b[rows] *= gamma
    errs = {"max_logits": rel(t64(g["max_logits"]), S), "W_new": rel(t64(g["W_new"]), W),
            "b_new": rel(t64(g["b_new"]), b)}
    ok = all(e <= TOLERANCE for e in errs.values()) and clipped == int(at["clipped"]) and 0 < clipped < nh
    print(f"qk    {name:26s} tau {tau:.4f}  {clipped}/{nh} heads clipped  "
          + "  ".join(f"{k} {v:.2e}" for k, v in errs.items()) + f"  {'ok' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", required=True, help="path of the optim_oracle_export executable")
    ap.add_argument("--workdir", help="where to write the HDF5 file (default: a temporary folder)")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(args.workdir or tmp, "optim_oracle.h5")
        subprocess.run([args.export, path], check=True)
        ok = True
        with h5py.File(path, "r") as f:
            for name, g in f["muon"].items():
                ok &= check_muon(name, g)
            for name, g in f["adamw"].items():
                ok &= check_adamw(name, g)
            for name, g in f["ns"].items():
                ok &= check_ns(name, g)
            for name, g in f["qk_clip"].items():
                ok &= check_qk_clip(name, g)
    print("optim oracle:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
