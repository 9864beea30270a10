"""The gradient noise scale over training, smoothed (docs/STUDIES.md §1).

A run file holds the raw per-step estimates of McCandlish et al. 2018 (appendix A), per tensor
and for the whole model: grad_sq_est (|G|^2, unbiased) and trace_est (tr(Sigma), unbiased); either
can be negative on a noisy step, and their per-step ratio noise_scale is noisy and biased (a ratio
of noisy estimates). Following the paper, |G|^2 and tr(Sigma) are smoothed separately by an
exponential moving average and then divided:

    B_simple[t] = EMA(tr(Sigma))[t] / EMA(|G|^2)[t]

EMA: m[t] = beta * m[t-1] + (1 - beta) * x[t], m[-1] = 0, divided by (1 - beta^n) where n counts
the finite values so far (Adam's bias correction, so early values are not pulled towards 0); steps
whose estimate is NaN (one leaf per step, skipped fp16 steps) leave the average unchanged and
report the previous value. The effective window is about 1 / (1 - beta) steps; the ratio of the
smoothed sums is consistent (its bias shrinks as the window grows), the mean of per-step ratios
is not.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .runfile import Run


def ema(x, beta: float = 0.9) -> np.ndarray:
    """Bias-corrected exponential moving average of x (float64), NaN entries skipped."""
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    m, weight = 0.0, 0.0
    for i, v in enumerate(x):
        if np.isfinite(v):
            m = beta * m + (1.0 - beta) * v
            weight = beta * weight + (1.0 - beta)
        out[i] = m / weight if weight > 0 else np.nan
    return out


@dataclasses.dataclass
class NoiseSeries:
    steps: np.ndarray
    grad_sq: np.ndarray       # EMA of the |G|^2 estimate
    trace: np.ndarray         # EMA of the tr(Sigma) estimate
    noise_scale: np.ndarray   # trace / grad_sq, in sequences
    raw_noise_scale: np.ndarray  # the run's per-step B_simple (unsmoothed)


def _series(steps, grad_sq, trace, raw, beta):
    g, t = ema(grad_sq, beta), ema(trace, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(g > 0, t / g, np.nan)
    return NoiseSeries(steps=steps, grad_sq=g, trace=t, noise_scale=b, raw_noise_scale=np.asarray(raw, np.float64))


def noise_scale_series(run: Run, beta: float = 0.9, tensor: str = None) -> NoiseSeries:
    """The smoothed noise scale of the whole model, or of one tensor."""
    if tensor is None:
        return _series(run.steps, run["grad_sq_est"], run["trace_est"], run["noise_scale"], beta)
    i = run.tensor_names.index(tensor)
    return _series(run.steps, run["per_tensor/grad_sq_est"][:, i], run["per_tensor/trace_est"][:, i],
                   run["per_tensor/noise_scale"][:, i], beta)


def noise_scale_per_layer(run: Run, beta: float = 0.9, kinds=(".w",)) -> dict:
    """{tensor: NoiseSeries} for the tensors whose names end with one of `kinds`."""
    return {n: noise_scale_series(run, beta, n) for n in run.tensor_names if n.endswith(tuple(kinds))}
