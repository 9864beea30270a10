"""Compare two runs of the same model: first divergent step, loss gap, parameter distance.

- first divergent step: the first row of /series/param_fingerprint (the XXH3 of every tensor's
  parameters after the step) where any tensor differs; equal fingerprints on every step mean the
  runs' weights were bitwise equal throughout (a fingerprint collision aside: 2^-64 per tensor).
  The gradient fingerprints give the step whose gradient first differed (the same step, or a
  step earlier when the parameters' first difference is that update's).
- loss gap: loss_b - loss_a per shared step.
- relative L2 distance at a step with parameters in both files (snapshots, final checkpoint):
  ||W_b - W_a||_2 / ||W_a||_2 over all tensors (or per tensor), in float64.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .runfile import Run


def relative_l2(a: dict, b: dict, names=None) -> float:
    """||b - a|| / ||a|| over the tensors `names` (all of a's by default), in float64."""
    names = list(a) if names is None else names
    num = sum(float(np.sum((b[n].astype(np.float64) - a[n].astype(np.float64)) ** 2)) for n in names)
    den = sum(float(np.sum(a[n].astype(np.float64) ** 2)) for n in names)
    return float(np.sqrt(num / den)) if den > 0 else float("nan")


def _first_row_differing(a: np.ndarray, b: np.ndarray):
    rows = min(len(a), len(b))
    diff = np.any(a[:rows] != b[:rows], axis=1) if a.ndim == 2 else a[:rows] != b[:rows]
    hit = np.flatnonzero(diff)
    return int(hit[0]) if hit.size else None


@dataclasses.dataclass
class Comparison:
    steps: np.ndarray              # (shared rows,) step numbers 1, 2, ...
    first_divergent_step: object   # step whose parameters first differ; None: bitwise identical
    first_divergent_grad_step: object  # step whose gradient first differs; None when none did
    divergent_tensors: list        # tensors differing at the first divergent step
    loss_gap: np.ndarray           # (shared rows,) loss_b - loss_a
    distance_steps: list           # steps with parameters in both runs
    distance: np.ndarray           # relative L2 distance at those steps
    distance_per_tensor: dict      # {tensor: (len(distance_steps),)}

    @property
    def identical(self) -> bool:
        return self.first_divergent_step is None and self.first_divergent_grad_step is None


def compare_runs(a: Run, b: Run) -> Comparison:
    if a.tensor_names != b.tensor_names:
        raise ValueError(f"{a.path} and {b.path} have different tensor layouts: compare runs of one model")
    rows = min(len(a.steps), len(b.steps))
    pa, pb = a["param_fingerprint"], b["param_fingerprint"]
    row = _first_row_differing(pa, pb)
    grow = _first_row_differing(a["grad_fingerprint"], b["grad_fingerprint"])
    tensors = [] if row is None else [n for i, n in enumerate(a.tensor_names) if pa[row, i] != pb[row, i]]
    shared = sorted(set(a.param_steps()) & set(b.param_steps()))
    dist = np.array([relative_l2(a.params_at(s), b.params_at(s)) for s in shared])
    per_tensor = {n: np.array([relative_l2(a.params_at(s), b.params_at(s), [n]) for s in shared])
                  for n in a.tensor_names}
    loss_gap = b["loss"][:rows].astype(np.float64) - a["loss"][:rows].astype(np.float64)
    return Comparison(steps=a.steps[:rows], first_divergent_step=None if row is None else int(a.steps[row]),
                      first_divergent_grad_step=None if grow is None else int(a.steps[grow]),
                      divergent_tensors=tensors, loss_gap=loss_gap, distance_steps=shared, distance=dist,
                      distance_per_tensor=per_tensor)
