"""The measures and plots of experiments/sweeps/moe_flips.ini that the sweep's own report lacks.

    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.moe_flips runs/sweeps/moe_flips docs/studies/moe

Compares every cell of the sweep with its group's deterministic run at each snapshot through
`samebits diff --json` (SAMEBITS_BIN, else build/dev/bin/samebits): the relative L2 distance of
the parameters and, for the Mixture-of-Experts cells, the fraction of the probe batch's token
routes (positions × MoE blocks) whose top-k expert set differs from the reference's. Reads each
run's series/moe_route_flips (the tokens the step's update re-routed, within one run) and
series/moe_tokens (the expert load: the busiest expert's selections over the mean, per block, then
averaged over the blocks). Prints two Markdown tables; draws routes_differ.png and route_flips.png.
Reads only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..runfile import load_run  # noqa: E402

# cell -> its reference (the group's deterministic run)
PAIRS = {
    "moe-vendor-gemm": "moe",
    "moe-native-reduce": "moe",
    "moe-ulp": "moe",
    "dense-vendor-gemm": "dense",
    "dense-native-reduce": "dense",
    "dense-ulp": "dense",
    "moe-adamw-vendor-gemm": "moe-adamw",
    "moe-adamw-ulp": "moe-adamw",
    "moe-bias-vendor-gemm": "moe-bias",
    "moe-ep2": "moe",
    "moe-vendor-gemm-ep2": "moe",
    "moe-vendor-gemm-ep4": "moe",
    "dense-vendor-gemm-dp2": "dense",
}
MOE_RUNS = ("moe", "moe-adamw", "moe-bias")
EXPERTS = 8  # moe_tiny.ini's routed experts


def samebits_bin() -> str:
    return os.environ.get("SAMEBITS_BIN", os.path.join("build", "dev", "bin", "samebits"))


def diff_json(ref: str, run: str) -> dict:
    out = subprocess.run([samebits_bin(), "diff", ref, run, "--json"], capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"samebits diff {ref} {run}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def measure(out_dir):
    """Per compared cell: snapshot steps, rel. L2 and route disagreement there; per MoE run: flips."""
    runs = os.path.join(out_dir, "runs")
    rows = {}
    for cell, ref in PAIRS.items():
        d = diff_json(os.path.join(runs, ref + ".h5"), os.path.join(runs, cell + ".h5"))
        rows[cell] = {
            "ref": ref,
            "first_divergent": d["first_divergent_step"],
            "steps": [p["step"] for p in d["distance"]],
            "rel_l2": [p["rel_l2"] for p in d["distance"]],
            "routes": {a["step"]: a["route_disagreement"] for a in d["agreement"]},
            "moe": any(a["routes"] > 0 for a in d["agreement"]),
        }
    flips = {}
    for name in MOE_RUNS:
        run = load_run(os.path.join(runs, name + ".h5"))
        load = run["moe_tokens"].reshape(len(run.steps), -1, EXPERTS)
        flips[name] = {
            "steps": run.steps,
            "flips": run["moe_route_flips"],
            "imbalance": (load.max(axis=2) / load.mean(axis=2)).mean(axis=1),
            "loss": run["loss"],
        }
    return rows, flips


def tables(rows, flips) -> str:
    lines = ["| cell | reference | first divergent step | rel. L2 at 10 / 20 / 30 / 60 | routes differ at 10 / 20 / 30 / 60 |",
             "|---|---|---|---|---|"]
    for cell, r in rows.items():
        at = dict(zip(r["steps"], r["rel_l2"]))
        l2 = " / ".join(f"{at[s]:.2g}" if s in at else "—" for s in (10, 20, 30, 60))
        routes = " / ".join(f"{100 * r['routes'][s]:.2g} %" if s in r["routes"] else "—" for s in (10, 20, 30, 60))
        lines.append(f"| {cell} | {r['ref']} | {r['first_divergent']} | {l2} | {routes if r['moe'] else '—'} |")
    lines += ["", "| run | route flips per step, all blocks: steps 1–10 / 11–30 / 31–60 (mean) | largest (step) | "
              "expert load, busiest / mean: steps 1–10 / 11–30 / 31–60 | final loss |",
              "|---|---|---|---|---|"]
    spans = (slice(0, 10), slice(10, 30), slice(30, 60))
    for name, f in flips.items():
        total, imbalance = f["flips"].sum(axis=1), f["imbalance"]
        lines.append(f"| {name} | {' / '.join(f'{total[s].mean():.0f}' for s in spans)} | "
                     f"{int(total.max())} ({int(f['steps'][int(np.argmax(total))])}) | "
                     f"{' / '.join(f'{imbalance[s].mean():.2f}' for s in spans)} | {f['loss'][-1]:.6f} |")
    return "\n".join(lines) + "\n"


def _save(fig, ax, ylabel: str, title: str, path: str):
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(rows, flips, out):
    os.makedirs(out, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4))
    for cell, r in rows.items():
        if r["moe"]:
            steps = sorted(r["routes"])
            ax.plot(steps, [100 * r["routes"][s] for s in steps], marker="o", label=f"{cell} vs {r['ref']}")
    _save(fig, ax, "probe token routes that differ (%)", "routing against the deterministic run",
          os.path.join(out, "routes_differ.png"))
    fig, ax = plt.subplots(figsize=(8, 4))
    for name, f in flips.items():
        ax.plot(f["steps"], f["flips"].sum(axis=1), label=name)
    ax.set_yscale("log")
    _save(fig, ax, "route flips (tokens × blocks)", "tokens the step's update re-routes, within one run",
          os.path.join(out, "route_flips.png"))


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    rows, flips = measure(argv[1])
    print(tables(rows, flips))
    draw(rows, flips, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
