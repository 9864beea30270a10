"""matplotlib figures for the studies: divergence curves, noise scale per layer, Muon vs AdamW.
Each function draws into new axes and returns the figure (the notebooks only call these)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .compare import Comparison
from .noise import NoiseSeries
from .runfile import Run


def _floor(values, floor=1e-12):
    """Zero distances shown at `floor` on log axes (identical runs stay visible)."""
    v = np.asarray(values, dtype=np.float64)
    return np.where(v > 0, v, floor)


def divergence_curves(comparisons: dict):
    """{label: Comparison} -> loss gap per step and relative L2 distance at the shared snapshots."""
    fig, (ax_gap, ax_dist) = plt.subplots(1, 2, figsize=(11, 4))
    for label, c in comparisons.items():
        first = "identical" if c.first_divergent_step is None else f"first divergent step {c.first_divergent_step}"
        ax_gap.plot(c.steps, np.abs(c.loss_gap), label=f"{label} ({first})")
        if len(c.distance_steps):
            ax_dist.plot(c.distance_steps, _floor(c.distance), marker="o", label=label)
    ax_gap.set(xlabel="step", ylabel="|loss gap|", yscale="symlog", title="loss gap to the reference")
    ax_gap.set_yscale("symlog", linthresh=1e-7)
    ax_dist.set(xlabel="step", ylabel="||W - W_ref|| / ||W_ref||", yscale="log",
                title="relative parameter distance (0 drawn at 1e-12)")
    ax_gap.legend(fontsize=8)
    ax_dist.legend(fontsize=8)
    fig.tight_layout()
    return fig


def noise_scale(whole: NoiseSeries, per_tensor: dict = None):
    """The whole model's smoothed B_simple with its raw per-step values, and per tensor."""
    fig, axes = plt.subplots(1, 2 if per_tensor else 1, figsize=(11 if per_tensor else 6, 4), squeeze=False)
    ax = axes[0, 0]
    ax.plot(whole.steps, whole.raw_noise_scale, ".", alpha=0.4, label="per step (raw)")
    ax.plot(whole.steps, whole.noise_scale, label="EMA(tr Σ) / EMA(|G|²)")
    ax.set(xlabel="step", ylabel="B_simple (sequences)", title="gradient noise scale, whole model")
    ax.legend(fontsize=8)
    if per_tensor:
        ax = axes[0, 1]
        for name, s in per_tensor.items():
            ax.plot(s.steps, s.noise_scale, label=name)
        ax.set(xlabel="step", ylabel="B_simple (sequences)", yscale="symlog", title="per tensor (EMA)")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def leaf_variance(run: Run, tensors=None):
    """Per tensor: the tr(Σ) estimate (leaf variance) over training."""
    fig, ax = plt.subplots(figsize=(6, 4))
    trace = run.per_tensor("trace_est")
    for name in tensors or run.tensor_names:
        ax.plot(run.steps, trace[name], label=name)
    ax.set(xlabel="step", ylabel="tr(Σ) estimate", yscale="symlog", title="leaf variance per tensor")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def optimizer_comparison(runs: dict, perturbed: dict = None):
    """{label: Run}: loss, mean update RMS and Muon orthogonality error of the matrix tensors;
    perturbed {label: Comparison}: distance to the unperturbed run of the same optimizer."""
    panels = 4 if perturbed else 3
    fig, axes = plt.subplots(1, panels, figsize=(4 * panels, 4))
    for label, run in runs.items():
        matrices = [i for i, t in enumerate(run.tensors) if len(t.shape) == 2 and t.name.startswith("h.")]
        matrices = matrices or [i for i, t in enumerate(run.tensors) if len(t.shape) == 2]
        axes[0].plot(run.steps, run["loss"], label=label)
        axes[1].plot(run.steps, np.nanmean(run["per_tensor/update_rms"][:, matrices], axis=1), label=label)
        ortho = run["per_tensor/ortho_error"][:, matrices]
        if np.isfinite(ortho).any():
            axes[2].plot(run.steps, np.nanmean(ortho, axis=1), label=label)
    axes[0].set(xlabel="step", ylabel="training loss", title="loss")
    axes[1].set(xlabel="step", ylabel="update RMS", yscale="log", title="update RMS (hidden matrices)")
    axes[2].set(xlabel="step", ylabel="||XX^T - I||_F / sqrt(rows)", title="orthogonality error (Muon)")
    if perturbed:
        for label, c in perturbed.items():
            axes[3].plot(c.distance_steps, _floor(c.distance), marker="o", label=label)
        axes[3].set(xlabel="step", ylabel="relative distance", yscale="log", title="sensitivity to a perturbation")
    for ax in axes:
        if ax.lines:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def propagation(p, title: str = "propagation through the step"):
    """A Propagation (tracefile.load_propagation) -> relative L2 and differing fraction of each
    differing op's output against its place in the step's stream (the origin is the first point)."""
    fig, (ax_l2, ax_frac) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    ax_l2.plot(p.op, _floor(p.rel_l2), marker=".", linestyle="none")
    ax_l2.set(ylabel="rel L2 of the output", yscale="log", title=title)
    if len(p.op):
        ax_l2.annotate(f"origin: {p.names[0]}", (p.op[0], _floor(p.rel_l2[:1])[0]), fontsize=8)
    ax_frac.plot(p.op, p.differing_fraction, marker=".", linestyle="none")
    ax_frac.set(xlabel="op of the step (stream order)", ylabel="differing fraction", ylim=(0, 1.05))
    fig.tight_layout()
    return fig
