#!/usr/bin/python3
"""Oracle of train.schedule = adaptive (core/optim/include/samebits/core/optim/adaptive_lr.hpp): runs
`samebits train` with the adaptive schedule on a small model, then recomputes every step's lr
factor in float64 from what the run file records — series/grad_sq_est and series/trace_est (the
exact noise estimates, McCandlish et al. 2018) — with AdaScale's gain ratio (Johnson et al. 2020)
of the EMAs and the cosine schedule (math.cos), and compares with series/lr_factor, series/lr and
series/adam_lr. Pass: max relative error <= 1e-6 (the cosine's fp32 cos_2pi against math.cos), and
the gain is live (some step below 1). Exit 77 (skipped) without h5py.

usage: adaptive_lr_oracle.py --samebits PATH/samebits --config experiments/configs/default.ini
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {sys.executable} cannot import {e.name} (install python3-h5py)")
    sys.exit(77)

TOLERANCE = 1e-6
SETTINGS = {"train.schedule": "adaptive", "train.steps": 24, "train.warmup": 4, "train.min_lr_ratio": 0.1,
            "train.adaptive_beta": 0.8, "train.eval_every": 0, "data.leaves": 6, "data.leaf_size": 2,
            "model.n_layer": 2, "model.n_embd": 64, "model.n_head": 4, "model.seq_len": 32,
            "optim.lr": 0.02, "optim.adam_lr": 0.003, "train.checkpoint_every": 0, "run.threads": 2}


def cosine(step, steps, warmup, m):
    s = min(step, steps)
    if s <= warmup:
        return s / warmup
    p = (s - warmup) / (steps - warmup)
    return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))


def gain(g, t, bs, bb):
    if not t > 0:
        return bs / bb
    if not g > 0:
        return 1.0
    noise = t / g
    return (noise + bs) / (noise + bb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samebits", required=True)
    ap.add_argument("--config", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "adaptive.h5")
        cmd = [args.samebits, "train", args.config, "--run.out", out, "--run.progress", "off"]
        for k, v in SETTINGS.items():
            cmd += [f"--{k}", str(v)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with h5py.File(out, "r") as f:
            series = {k: np.asarray(f["series/" + k], dtype=np.float64)
                      for k in ("grad_sq_est", "trace_est", "lr_factor", "lr", "adam_lr")}
    S = SETTINGS
    bs, bb = S["data.leaf_size"], S["data.leaf_size"] * S["data.leaves"]
    beta = S["train.adaptive_beta"]
    g = t = 0.0
    worst, rhos = 0.0, []
    for i in range(len(series["lr_factor"])):
        x, y = series["grad_sq_est"][i], series["trace_est"][i]
        if math.isfinite(x) and math.isfinite(y):
            g = beta * g + (1 - beta) * x
            t = beta * t + (1 - beta) * y
        rho = gain(g, t, bs, bb)
        rhos.append(rho)
        factor = cosine(i + 1, S["train.steps"], S["train.warmup"], S["train.min_lr_ratio"]) * rho
        for key, want in (("lr_factor", factor), ("lr", S["optim.lr"] * factor),
                          ("adam_lr", S["optim.adam_lr"] * factor)):
            worst = max(worst, abs(series[key][i] - want) / abs(want))
    live = min(rhos) < 1.0
    ok = worst <= TOLERANCE and live and len(rhos) == S["train.steps"]
    print(f"adaptive lr: {len(rhos)} steps, gain rho in [{min(rhos):.4f}, {max(rhos):.4f}] "
          f"(bounds [{bs / bb:.4f}, 1]), max relative error of lr_factor, lr, adam_lr {worst:.2e}  "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
