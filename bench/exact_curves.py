#!/usr/bin/python3
"""Training under numerics.gemm=exact against canonical and vendor (docs/studies/exact_gemm.md): reads
finished run files of one experiment and prints each run's final training and validation loss, its
gap to the reference run, and the relative parameter distance ||W - W_ref|| / ||W_ref|| over all
tensors of the final states; writes the loss curves to a PNG.

A run stopped early (train --stop-after N) is compared at its last step N; its parameter distance
is printed only when it has as many steps as the reference.

usage: exact_curves.py REF.h5 NAME=RUN.h5 [NAME=RUN.h5 ...] [--plot OUT.png]
"""
import argparse
import math

import h5py
import numpy as np


def load(path):
    with h5py.File(path, "r") as f:
        names = f["tensors"].attrs["names"]
        names = (names.decode() if isinstance(names, bytes) else names).split("\n")
        loss = f["series/loss"][:]
        params = None
        if "checkpoint" in f and len(loss) == int(f["series/step"][-1]):
            params = {n: f["checkpoint/params/" + n][:].astype(np.float64) for n in names}
        return loss, f["series/val_loss"][:], params


def distance(params, ref):
    num = sum(float(np.sum((params[n] - ref[n]) ** 2)) for n in ref)
    den = sum(float(np.sum(ref[n] ** 2)) for n in ref)
    return math.sqrt(num / den)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("runs", nargs="+", help="NAME=RUN.h5")
    ap.add_argument("--plot")
    args = ap.parse_args()
    ref_loss, ref_val, ref_params = load(args.reference)
    curves = {"canonical (reference)": ref_loss}
    print("| run | steps | loss at its last step | gap to reference there | val loss there | rel. parameter distance |")
    print("|---|---|---|---|---|---|")
    print(f"| reference | {len(ref_loss)} | {ref_loss[-1]:.6f} | 0 | {ref_val[-1]:.4f} | 0 |")
    for item in args.runs:
        name, path = item.split("=", 1)
        loss, val, params = load(path)
        curves[name] = loss
        n = len(loss)
        dist = f"{distance(params, ref_params):.2e}" if n == len(ref_loss) and params is not None else "-"
        print(f"| {name} | {n} | {loss[-1]:.6f} | {loss[-1] - ref_loss[n - 1]:+.2e} | {val[-1]:.4f} "
              f"(ref {ref_val[n - 1]:.4f}) | {dist} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, gap) = plt.subplots(1, 2, figsize=(10, 3.6))
        for name, loss in curves.items():
            ax.plot(np.arange(1, len(loss) + 1), loss, label=name, lw=1)
            if name != "canonical (reference)":
                gap.plot(np.arange(1, len(loss) + 1), loss - ref_loss[: len(loss)], label=name, lw=1)
        ax.set_xlabel("step"), ax.set_ylabel("training loss"), ax.legend()
        gap.set_xlabel("step"), gap.set_ylabel("loss - canonical loss"), gap.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
