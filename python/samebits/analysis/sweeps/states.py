"""The kept states of a run's store and bitwise comparisons of them (the sweeps' measures).

Reads only; every comparison is of raw bytes, so "equal" means bitwise equal.
"""
from __future__ import annotations

import glob

import h5py
import numpy as np


def kept_states(path: str) -> dict:
    """{step: {tensor: array}} of the run's store (RUN.store/state_step_N.h5)."""
    out = {}
    for state in sorted(glob.glob(path[: -len(".h5")] + ".store/state_step_*.h5")):
        with h5py.File(state, "r") as f:
            out[int(f.attrs["step"])] = {n: f["params"][n][()] for n in f["params"]}
    return out


def bitwise_equal(a: dict, b: dict) -> bool:
    """Every tensor of a has b's bytes."""
    return all(a[n].tobytes() == b[n].tobytes() for n in a)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()
