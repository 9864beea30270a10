"""The orthogonality error of the full update matrix of a run's last step (tp_muon_last_step.sh).

    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.tp_muon_ortho runs/sweeps/tp_muon_last

With weight decay 0, Muon's step S is W_S = W_(S−1) − lr·s·X, so X = (W_(S−1) − W_S)/(lr·s) (fp64),
s = sqrt(max(1, rows/cols)) of the shape Newton–Schulz ran on: the full matrix (duplicated), or
under blockwise the shard: (rows/T, C) for the row-split attn.qkv.w and mlp.fc.w, (C, cols/T) for
the column-split attn.proj.w and mlp.proj.w. Prints per matrix kind, averaged over layers:
the run file's ortho_error at step S (rank 0's shard under blockwise), the full X's error
sqrt(Σ(A − I)²/r) with A = XᵀX or XXᵀ (r = the smaller side, the recorded statistic's formula),
and the same after scaling X to ‖X‖²_F = r (what remains once a uniform scale is taken out).
The reference row checks the reconstruction: its full error must equal its recorded one. Reads only.
"""
from __future__ import annotations

import os
import sys

import h5py
import numpy as np

from ..runfile import load_run

KINDS = ("attn.qkv.w", "attn.proj.w", "mlp.fc.w", "mlp.proj.w")
ROW_SPLIT = ("attn.qkv.w", "mlp.fc.w")


def params(path, step):
    with h5py.File(path[: -len(".h5")] + f".store/state_step_{step:06d}.h5", "r") as f:
        return {n: f["params"][n][()].astype(np.float64) for n in f["params"]}


def error(x):
    r = min(x.shape)
    a = x.T @ x if x.shape[0] >= x.shape[1] else x @ x.T
    return float(np.sqrt(np.sum((a - np.eye(r)) ** 2) / r))


def measure(path):
    run = load_run(path)
    cfg = run.config()
    tp = int(cfg.get("parallel.tp", "1"))
    blockwise = cfg.get("optim.tp_mode", "duplicated") == "blockwise" and tp > 1
    lr = float(run["lr"][-1])
    last = int(run.steps[-1])
    w_prev, w_last = params(path, last - 1), params(path, last)
    recorded = run["per_tensor/ortho_error"][-1]
    out = {k: [] for k in KINDS}
    for i, name in enumerate(run.tensor_names):
        kind = next((k for k in KINDS if name.endswith(k)), None)
        if kind is None:
            continue
        rows, cols = w_last[name].shape
        if blockwise and kind in ROW_SPLIT:
            rows //= tp
        elif blockwise:
            cols //= tp
        x = (w_prev[name] - w_last[name]) / (lr * np.sqrt(max(1.0, rows / cols)))
        r = min(x.shape)
        unit = x * np.sqrt(r / np.sum(x * x))
        out[kind].append((float(recorded[i]), error(x), error(unit)))
    return {k: np.mean(np.array(v), axis=0) for k, v in out.items()}


def main(argv) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    out_dir = argv[0]
    print("| cell | matrix | recorded ortho_error (last step) | full update's error | full, unit scale |")
    print("|---|---|---|---|---|")
    for cell in ("tp1-duplicated", "tp2-blockwise", "tp4-blockwise"):
        for kind, (rec, full, unit) in measure(os.path.join(out_dir, "runs", cell + ".h5")).items():
            print(f"| {cell} | {kind} | {rec:.4f} | {full:.4f} | {unit:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
