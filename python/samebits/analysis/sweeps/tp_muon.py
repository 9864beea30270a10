"""The measures and plots of experiments/sweeps/tp_muon.ini that the sweep's own report lacks.

    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.tp_muon runs/sweeps/tp_muon docs/studies/tp_muon

Reads OUT/runs/<cell>.h5 and the kept states of their stores (train.keep_states: snapshots are
refused under parallel.tp > 1), compares every cell with tp1-duplicated and prints a Markdown
table: identical (every row of param_fingerprint and grad_fingerprint, the training and validation
losses, the recorded ortho_error and every kept state's parameters bitwise equal), first divergent
step, relative L2 distance at each kept state, final validation loss and its gap, and the mean over the run of the recorded per-tensor orthogonality error by
matrix kind. Draws rel_l2.png, val_loss_gap.png and ortho_error.png into the plot folder.
Reads only; the figures are pure functions of the run files.
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

REFERENCE = "tp1-duplicated"
ORDER = ("tp1-duplicated", "tp2-duplicated", "tp4-duplicated", "tp2-blockwise", "tp4-blockwise", "tp2-distributed",
         "tp4-distributed")
KINDS = ("attn.qkv.w", "attn.proj.w", "mlp.fc.w", "mlp.proj.w")


def ortho_means(run, n):
    """Mean over the first n steps (and the layers) of series/per_tensor/ortho_error, by matrix kind."""
    err = run["per_tensor/ortho_error"][:n]
    out = {}
    for kind in KINDS:
        cols = [i for i, n in enumerate(run.tensor_names) if n.endswith(kind)]
        out[kind] = float(np.nanmean(err[:, cols]))
    return out


def measure(out_dir):
    """Each cell against the reference over the steps the cell has (a cell stopped early with
    train --stop-after is compared over its steps; finishing it is rerunning the sweep)."""
    runs = {}
    for name in ORDER:
        path = os.path.join(out_dir, "runs", name + ".h5")
        if os.path.exists(path):
            runs[name] = (load_run(path), kept_states(path))
    ref, ref_states = runs[REFERENCE]
    rows = {}
    for name, (run, states) in runs.items():
        n = len(run.steps)
        shared = sorted(set(states) & set(ref_states))
        same_series = all(same_bits(run[c], ref[c][:n])
                          for c in ("loss", "val_loss", "grad_fingerprint", "per_tensor/ortho_error"))
        same_params = all(bitwise_equal(ref_states[s], states[s]) for s in shared)
        differ = np.any(ref["param_fingerprint"][:n] != run["param_fingerprint"], axis=1)
        evals = ~np.isnan(run["val_loss"])
        rows[name] = {
            "run": run,
            "n": n,
            "identical": not differ.any() and same_series and same_params,
            "first_divergent": int(run.steps[np.argmax(differ)]) if differ.any() else 0,
            "steps": shared,
            "rel_l2": [relative_l2(ref_states[s], states[s]) for s in shared],
            "val_steps": run.steps[evals],
            "val_gap": (run["val_loss"] - ref["val_loss"][:n])[evals],
            "final_val": float(run["val_loss"][evals][-1]),
            "ref_val": float(ref["val_loss"][:n][evals][-1]),
            "ortho": ortho_means(run, n),
            "ref_ortho": ortho_means(ref, n),
        }
    return rows


def table(rows):
    lines = ["| cell | steps | identical to tp1-duplicated | first divergent step | rel. L2 at 25 | at 50 | at 100 | at 300 "
             "| val loss (last eval) | gap to reference | mean ortho_error qkv / attn.proj / fc / mlp.proj "
             "| reference's over the same steps |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        at = {s: f"{v:.3g}" for s, v in zip(r["steps"], r["rel_l2"])}
        o = " / ".join(f"{r['ortho'][k]:.4f}" for k in KINDS)
        ro = " / ".join(f"{r['ref_ortho'][k]:.4f}" for k in KINDS)
        lines.append(f"| {name} | {r['n']} | {'**yes**' if r['identical'] else 'no'} | {r['first_divergent'] or '—'} "
                     f"| {at.get(25, '—')} | {at.get(50, '—')} | {at.get(100, '—')} | {at.get(300, '—')} | {r['final_val']:.6f} "
                     f"| {r['final_val'] - r['ref_val']:+.6f} | {o} | {ro} |")
    return "\n".join(lines)


def style(name):
    color = {"duplicated": "k", "blockwise": "tab:red", "distributed": "tab:blue"}[name.split("-")[1]]
    return {"color": color, "linestyle": "-" if name.startswith("tp2") else "--", "marker": "o", "ms": 3}


def plots(rows, plot_dir):
    os.makedirs(plot_dir, exist_ok=True)
    cells = [n for n in rows if n != REFERENCE and not rows[n]["identical"]]
    same = [n for n in rows if n != REFERENCE and rows[n]["identical"]]
    note = f"identical to {REFERENCE} (not drawn): {', '.join(same)}" if same else ""

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=90)
    for n in cells:
        ax.semilogy(rows[n]["steps"], rows[n]["rel_l2"], label=n, **style(n))
    ax.set(xlabel="step", ylabel="‖W − W_ref‖ / ‖W_ref‖", title="Parameter distance to TP 1 duplicated")
    ax.legend(fontsize=8, title=note, title_fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(plot_dir, "rel_l2.png"))

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=90)
    for n in cells:
        ax.plot(rows[n]["val_steps"], rows[n]["val_gap"], label=n, **style(n))
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set(xlabel="step", ylabel="val loss − reference val loss", title="Validation loss gap")
    ax.legend(fontsize=8, title=note, title_fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(plot_dir, "val_loss_gap.png"))

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=90)
    names = [REFERENCE] + cells
    window = min(rows[n]["n"] for n in names)  # the steps every cell has
    width = 0.8 / len(names)
    for i, n in enumerate(names):
        x = np.arange(len(KINDS)) + (i - len(names) / 2 + 0.5) * width
        means = ortho_means(rows[n]["run"], window)
        ax.bar(x, [means[k] for k in KINDS], width, label=n, color=style(n)["color"],
               alpha=1.0 if n.startswith("tp2") or n == REFERENCE else 0.5)
    ax.set_xticks(np.arange(len(KINDS)), KINDS)
    ax.set(ylabel=f"mean ortho_error, steps 1–{window}",
           title="Recorded orthogonality error (blockwise: rank 0's shard)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(plot_dir, "ortho_error.png"))


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    out_dir, plot_dir = argv
    rows = measure(out_dir)
    print(table(rows))
    for name, r in rows.items():
        print(name, "rel_l2 at", dict(zip(r["steps"], (f"{v:.4g}" for v in r["rel_l2"]))))
    plots(rows, plot_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
