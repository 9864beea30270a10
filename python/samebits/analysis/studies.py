"""The run sets the notebooks analyse, trained on demand into one folder (kept between calls).

runs_dir(): $SAMEBITS_NB_RUNS, else runs/notebooks under the repository. Every set is the tiny
model of produce.TINY (2 layers, 32 wide, 16 tokens, 8 leaves of 1 sequence, 30 steps, snapshots
after steps 0, 10, 20 and the final state), so a notebook runs in seconds on 2 cores; pass
`base` to study a larger model.
"""
from __future__ import annotations

import os

from .produce import TINY, train_run
from .runfile import load_run


def runs_dir() -> str:
    d = os.environ.get("SAMEBITS_NB_RUNS")
    if not d:
        d = os.path.join(os.getcwd(), "runs", "notebooks")
    os.makedirs(d, exist_ok=True)
    return d


def _train_set(spec: dict, base: dict) -> dict:
    d = runs_dir()
    return {label: load_run(train_run(os.path.join(d, f"{name}.h5"), overrides, base))
            for label, (name, overrides) in spec.items()}


# Execution configurations (never change a bit) and numerics switches (each source on its own).
DIVERGENCE = {
    "reference (muon, 1 thread)": ("muon_ref", {}),
    "2 threads": ("muon_threads2", {"run.threads": 2}),
    "micro-steps of 2 leaves": ("muon_micro2", {"micro-leaves": 2}),
    "vendor gemm": ("muon_gemm_vendor", {"numerics.gemm": "vendor"}),
    "native reductions": ("muon_reduce_native", {"numerics.reduce": "native"}),
    "vendor mode (all switches)": ("muon_vendor", {"numerics.mode": "vendor"}),
}

# Both optimizers, each with a run whose one weight element moved by 1 ULP before step 6 (Summers &
# Dinneen 2021): the perturbation whose growth the notebook compares.
ULP_1 = {"perturb.tensor": "h.0.attn.qkv.w", "perturb.index": 5, "perturb.ulps": 1, "perturb.step": 5}
OPTIMIZERS = {
    "muon": ("muon_ref", {}),
    "adamw": ("adamw_ref", {"optim.name": "adamw"}),
    "muon, 1 ULP": ("muon_ulp1", ULP_1),
    "adamw, 1 ULP": ("adamw_ulp1", {"optim.name": "adamw", **ULP_1}),
}


def divergence_runs(base: dict = TINY) -> dict:
    return _train_set(DIVERGENCE, base)


def optimizer_runs(base: dict = TINY) -> dict:
    return _train_set(OPTIMIZERS, base)


def reference_run(base: dict = TINY):
    return _train_set({"reference": DIVERGENCE["reference (muon, 1 thread)"]}, base)["reference"]


def trace_propagation(a: str, b: str, out: str = None):
    """`samebits trace A B --out OUT` (docs/TRACE.md) and its propagation table: the first differing
    op of the runs' first divergent step, then every op after it whose output differs."""
    import subprocess
    from .produce import samebits_binary
    from .tracefile import load_propagation
    out = out or os.path.join(runs_dir(), "trace_" + os.path.basename(a).rsplit(".", 1)[0] + "_"
                              + os.path.basename(b).rsplit(".", 1)[0])
    done = subprocess.run([samebits_binary(), "trace", a, b, "--out", out], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"samebits trace {a} {b} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return load_propagation(out)
