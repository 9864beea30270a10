"""The measures and plots of experiments/sweeps/layouts.ini that the sweep's own report lacks.

    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.layouts runs/sweeps/layouts docs/studies/layouts

Reads OUT/runs/<cell>.h5 and the kept states of their stores (train.keep_states: snapshots are
refused under parallel.tp > 1) and compares every det-* cell with det-1 and every vendor-* cell
with vendor-1: identical (every row of param_fingerprint and grad_fingerprint, the training and
validation losses and every kept state's parameters bitwise equal), first divergent step, the
step-1 loss, the relative L2 distance at each kept state, the final training loss and its gap.
Prints a Markdown table and the spread of the vendor layouts' losses; draws rel_l2.png (distance
per kept state) and loss_gap.png (training loss minus the reference's, step by step). Reads only.
"""
from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..compare import relative_l2  # noqa: E402
from ..runfile import load_run  # noqa: E402
from .states import bitwise_equal, kept_states, same_bits  # noqa: E402

LAYOUTS = ("1", "threads-2", "dp2", "dp4", "dp2-micro1", "tp2", "tp4", "dp2-tp2")
MODES = ("det", "vendor")


def measure(out_dir):
    """Each cell against its mode's one-process cell, over the steps the cell has."""
    rows = {}
    for mode in MODES:
        ref_path = os.path.join(out_dir, "runs", f"{mode}-1.h5")
        ref, ref_states = load_run(ref_path), kept_states(ref_path)
        for layout in LAYOUTS:
            name = f"{mode}-{layout}"
            path = os.path.join(out_dir, "runs", name + ".h5")
            if not os.path.exists(path):
                continue
            run, states = load_run(path), kept_states(path)
            n = len(run.steps)
            shared = sorted(set(states) & set(ref_states))
            same_series = all(same_bits(run[c], ref[c][:n]) for c in ("loss", "val_loss", "grad_fingerprint"))
            differ = np.any(ref["param_fingerprint"][:n] != run["param_fingerprint"], axis=1)
            rows[name] = {
                "mode": mode,
                "n": n,
                "identical": not differ.any() and same_series
                and all(bitwise_equal(ref_states[s], states[s]) for s in shared),
                "first_divergent": int(run.steps[np.argmax(differ)]) if differ.any() else 0,
                "steps": shared,
                "rel_l2": [relative_l2(ref_states[s], states[s]) for s in shared],
                "loss": run["loss"],
                "loss_gap": run["loss"] - ref["loss"][:n],
                "run_steps": run.steps,
            }
    return rows


def table(rows):
    kept = sorted({s for r in rows.values() for s in r["steps"] if s > 0})
    head = " | ".join(f"rel. L2 at {s}" for s in kept)
    lines = [f"| cell | reference | identical | first divergent step | step-1 loss | {head} | final loss | gap |",
             "|---|---|---|---|---|" + "---|" * len(kept) + "---|---|"]
    for name, r in rows.items():
        at = dict(zip(r["steps"], r["rel_l2"]))
        dist = " | ".join(f"{at[s]:.3g}" if s in at else "—" for s in kept)
        lines.append(f"| {name} | {r['mode']}-1 | {'**yes**' if r['identical'] else 'no'} "
                     f"| {r['first_divergent'] or '—'} | {r['loss'][0]:.7f} | {dist} | {r['loss'][-1]:.7f} "
                     f"| {r['loss_gap'][-1]:+.2e} |")
    return "\n".join(lines)


def spread(rows, mode):
    """Max minus min over the mode's layouts of the loss at step 1 and at the last step."""
    losses = np.array([r["loss"] for r in rows.values() if r["mode"] == mode])
    return float(np.ptp(losses[:, 0])), float(np.ptp(losses[:, -1]))


def plots(rows, plot_dir):
    os.makedirs(plot_dir, exist_ok=True)
    vendor = [n for n, r in rows.items() if r["mode"] == "vendor" and not r["identical"]]
    same = [n for n, r in rows.items() if r["identical"] and not n.endswith("-1")]
    note = f"identical to their reference (not drawn): {', '.join(same)}" if same else ""
    colors = dict(zip(LAYOUTS, plt.cm.tab10.colors))

    fig, ax = plt.subplots(figsize=(7.2, 4.2), dpi=90)
    for n in vendor:
        kept = [(s, d) for s, d in zip(rows[n]["steps"], rows[n]["rel_l2"]) if s > 0]
        ax.semilogy([s for s, _ in kept], [d for _, d in kept], marker="o", ms=3, label=n,
                    color=colors[n.split("-", 1)[1]])
    ax.set(xlabel="step", ylabel="‖W − W_ref‖ / ‖W_ref‖", title="Vendor layouts: parameter distance to vendor-1")
    save(fig, ax, note, os.path.join(plot_dir, "rel_l2.png"))

    fig, ax = plt.subplots(figsize=(7.2, 4.2), dpi=90)
    for n in vendor:
        ax.plot(rows[n]["run_steps"], rows[n]["loss_gap"], lw=1, label=n, color=colors[n.split("-", 1)[1]])
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set(xlabel="step", ylabel="loss − vendor-1 loss", title="Vendor layouts: training loss gap")
    save(fig, ax, note, os.path.join(plot_dir, "loss_gap.png"))


def save(fig, ax, note, path):
    ax.legend(fontsize=7)
    fig.text(0.01, 0.01, note, fontsize=6)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path)


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    out_dir, plot_dir = argv
    rows = measure(out_dir)
    print(table(rows))
    for mode in MODES:
        first, last = spread(rows, mode)
        print(f"{mode}: loss spread over the layouts at step 1 {first:.3g}, at the last step {last:.3g}")
    plots(rows, plot_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
