"""The plots of a sweep's report: `python3 -m samebits.analysis.report OUT` reads OUT/summary.h5 (written by
`samebits sweep`; layout in docs/STUDIES.md, "Sweeps") and writes OUT/plots/loss.png, loss_gap.png,
rel_l2.png, first_divergence.png and noise_scale.png. Only reads the summary: every number was computed by samebits.
"""
from __future__ import annotations

import dataclasses
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)
import numpy as np  # noqa: E402

from .noise import ema  # noqa: E402

SWEEP_FORMAT = "samebits-sweep"
FLOOR = 1e-12  # zero distances are drawn here on log axes, so identical runs stay visible


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclasses.dataclass
class Cell:
    name: str
    description: str
    reference: str
    identical: bool
    available: bool
    first_divergent_step: int      # 0: none
    loss: np.ndarray               # (steps,)
    loss_gap: np.ndarray           # (compared steps,) loss - reference loss
    distance_steps: np.ndarray     # steps where both runs hold the parameters
    rel_l2: np.ndarray             # (len(distance_steps),)
    grad_sq_est: np.ndarray        # (steps,) |G|^2 estimate per step
    trace_est: np.ndarray          # (steps,) tr(Sigma) estimate per step

    @property
    def is_reference(self) -> bool:
        return self.reference == self.name


def read_summary(path: str):
    """(root attributes, [Cell] in the sweep's order) of a summary.h5."""
    with h5py.File(path, "r") as f:
        fmt = _text(f.attrs.get("format", ""))
        if fmt != SWEEP_FORMAT:
            raise ValueError(f"{path}: format attribute is {fmt!r}, expected {SWEEP_FORMAT!r}")
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        cells = []
        for name in attrs["cells"].split("\n") if attrs["cells"] else []:
            g = f["cells"][name]
            get = lambda key, dtype: g[key][()] if key in g else np.zeros(0, dtype=dtype)  # noqa: E731
            cells.append(Cell(name=name, description=_text(g.attrs["description"]),
                              reference=_text(g.attrs["reference"]), identical=bool(g.attrs["identical"]),
                              available=bool(g.attrs["available"]),
                              first_divergent_step=int(g.attrs["first_divergent_step"]),
                              loss=get("loss", np.float32), loss_gap=get("loss_gap", np.float64),
                              distance_steps=get("distance_steps", np.int64), rel_l2=get("rel_l2", np.float64),
                              grad_sq_est=get("grad_sq_est", np.float32), trace_est=get("trace_est", np.float32)))
    return attrs, cells


def _label(c: Cell) -> str:
    if c.is_reference:
        return f"{c.name} (reference)"
    return f"{c.name} ({'identical' if c.identical else f'diverges at {c.first_divergent_step}'})"


def _style(c: Cell) -> dict:
    """Identical cells dashed over their reference's solid line, so both stay visible."""
    return {"linestyle": "--" if c.identical and not c.is_reference else "-", "linewidth": 1.2}


def plot_loss(cells):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in cells:
        if len(c.loss):
            ax.plot(np.arange(1, len(c.loss) + 1), c.loss, label=_label(c), **_style(c))
    ax.set(xlabel="step", ylabel="training loss", title="loss")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_loss_gap(cells):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in cells:
        if len(c.loss_gap) and not c.is_reference:
            ax.plot(np.arange(1, len(c.loss_gap) + 1), c.loss_gap, label=_label(c), **_style(c))
    ax.set_yscale("symlog", linthresh=1e-7)
    ax.set(xlabel="step", ylabel="loss - reference loss", title="loss gap to the reference (symlog)")
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_rel_l2(cells):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in cells:
        if len(c.distance_steps) and not c.is_reference:
            ax.plot(c.distance_steps, np.where(c.rel_l2 > 0, c.rel_l2, FLOOR), marker="o", markersize=3,
                    label=_label(c), **_style(c))
    ax.set_yscale("log")
    ax.set(xlabel="step", ylabel="||W - W_ref|| / ||W_ref||",
           title=f"relative L2 distance to the reference (0 drawn at {FLOOR:g})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_first_divergence(cells, steps: int):
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(cells) + 1.5))
    names = [c.name for c in cells]
    values = [c.first_divergent_step if c.first_divergent_step > 0 else 0 for c in cells]
    bars = ax.barh(names, values, color=["tab:red" if v else "tab:green" for v in values])
    for bar, c in zip(bars, cells):
        text = "reference" if c.is_reference else ("identical" if c.identical else
                                                    f"step {c.first_divergent_step}" if c.first_divergent_step
                                                    else "different (no step)")
        ax.text(max(bar.get_width(), 0) + steps * 0.01, bar.get_y() + bar.get_height() / 2, text, va="center",
                fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(steps, 1) * 1.15)
    ax.set(xlabel="first divergent step (no bar: bitwise identical to the reference)", title="first divergent step")
    fig.tight_layout()
    return fig


def plot_noise_scale(cells, beta: float = 0.9):
    """B_simple per step: |G|^2 and tr(Sigma) smoothed separately, then divided (samebits_nb.noise)."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in cells:
        if len(c.grad_sq_est):
            g, t = ema(c.grad_sq_est, beta), ema(c.trace_est, beta)
            with np.errstate(divide="ignore", invalid="ignore"):
                b = np.where(g > 0, t / g, np.nan)
            ax.plot(np.arange(1, len(b) + 1), b, label=_label(c), **_style(c))
    ax.set_yscale("log")
    ax.set(xlabel="step", ylabel="B_simple (sequences)",
           title=f"gradient noise scale: EMA(tr Sigma) / EMA(|G|^2), beta = {beta}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def draw(out: str) -> list:
    """Writes the four PNGs under out/plots/ and returns their paths."""
    _, cells = read_summary(os.path.join(out, "summary.h5"))
    shown = [c for c in cells if c.available]
    steps = max([len(c.loss) for c in shown] + [1])
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    figures = {"loss.png": plot_loss(shown), "loss_gap.png": plot_loss_gap(shown), "rel_l2.png": plot_rel_l2(shown),
               "first_divergence.png": plot_first_divergence(shown, steps), "noise_scale.png": plot_noise_scale(shown)}
    paths = []
    for name, fig in figures.items():
        path = os.path.join(plots, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python3 -m samebits.analysis.report OUT   (the output folder of samebits sweep)", file=sys.stderr)
        return 2
    for path in draw(argv[0]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
