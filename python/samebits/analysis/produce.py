"""Train small runs with the samebits CLI (`samebits train`) for notebooks and tests.

The binary is $SAMEBITS_BIN, else `samebits` on PATH, else build/*/bin/samebits under the
repository. Every run is one `samebits train --out RUN.h5 --section.key VALUE ...` call.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

# A model small enough for a notebook executed in CI: 2 layers, 32 wide, 16 tokens, 30 steps,
# one thread.
TINY = {
    "model.vocab": 64, "model.seq_len": 16, "model.n_layer": 2, "model.n_head": 2, "model.n_embd": 32,
    "data.leaf_size": 1, "data.leaves": 8, "data.doc_len": 32,
    "train.steps": 30, "train.warmup": 3, "train.eval_every": 10, "train.checkpoint_every": 0,
    "train.snapshot_steps": "0,10,20", "run.threads": 1,
}


def samebits_binary() -> str:
    path = os.environ.get("SAMEBITS_BIN") or shutil.which("samebits")
    if not path:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        found = sorted(glob.glob(os.path.join(root, "build", "*", "bin", "samebits")), key=os.path.getmtime)
        path = found[-1] if found else None
    if not path or not os.access(path, os.X_OK):
        raise FileNotFoundError("no samebits binary: set SAMEBITS_BIN or build the `samebits` target")
    return path


def train_run(out: str, overrides: dict = None, base: dict = TINY, binary: str = None) -> str:
    """Trains base | overrides into the run file `out` (kept when it exists and is finished)."""
    from .runfile import Run
    if os.path.exists(out):
        try:
            if Run(out).status == "finished":
                return out
        except (OSError, ValueError, KeyError):
            pass
        os.remove(out)
    settings = dict(base)
    settings.update(overrides or {})
    cmd = [binary or samebits_binary(), "train", "--out", out]
    for k, v in settings.items():
        cmd += [f"--{k}", str(v)]
    # Idle OpenMP threads sleep instead of spinning: on a loaded machine (CI on 2 cores) spinning
    # threads make a 2-thread run of this tiny model 50x slower. Never changes a bit.
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return out
