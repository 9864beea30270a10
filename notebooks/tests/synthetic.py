"""Writes a small run file in the run-file layout with h5py (for tests that need no samebits
binary): two tensors, `steps` rows, snapshots at the given steps, a final checkpoint."""
import zlib

import h5py
import numpy as np

TENSORS = [("w", (4, 3), 0), ("b", (5,), 16)]


def write_run(path, steps=6, snapshot_steps=(0, 3), seed=0, diverge_at=None, noise=None):
    """diverge_at: first step (1-based) whose parameters differ from the seed-0 run's
    (parameters of step s are a function of (seed, s), switched to `seed` from diverge_at on).
    noise: (grad_sq, trace) arrays of length steps for the whole-model estimates."""
    def params(step):
        s = seed if diverge_at is not None and step >= diverge_at else 0
        rng = np.random.default_rng(1000 * s + step)
        return {n: rng.standard_normal(shape).astype(np.float32) for n, shape, _ in TENSORS}

    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "samebits-run", "format_version": np.int64(1), "config": "[train]\nsteps = %d\n" % steps,
                        "experiment_id": "synthetic", "experiment_text": "", "steps": np.int64(steps),
                        "status": "finished", "error": ""})
        t = f.create_group("tensors")
        t.attrs["names"] = "\n".join(n for n, _, _ in TENSORS)
        t["offset"] = np.array([o for _, _, o in TENSORS], np.int64)
        t["numel"] = np.array([int(np.prod(s)) for _, s, _ in TENSORS], np.int64)
        t["rank"] = np.array([len(s) for _, s, _ in TENSORS], np.int64)
        t["shape"] = np.array([[s[0], s[1] if len(s) == 2 else 1] for _, s, _ in TENSORS], np.int64)
        s = f.create_group("series")
        s["step"] = np.arange(1, steps + 1, dtype=np.int64)
        s["loss"] = (np.linspace(4, 3, steps) + (0 if diverge_at is None else 1e-3 * (np.arange(1, steps + 1) >= diverge_at))).astype(np.float32)
        fp = np.array([[zlib.crc32(repr((n, seed if diverge_at is not None and st >= diverge_at else 0, st)).encode())
                        for n, _, _ in TENSORS] for st in range(1, steps + 1)], np.uint64)
        s["param_fingerprint"] = fp
        s["grad_fingerprint"] = fp ^ np.uint64(1)
        g, tr = noise if noise is not None else (np.ones(steps), 10 * np.ones(steps))
        s["grad_sq_est"], s["trace_est"] = np.float32(g), np.float32(tr)
        with np.errstate(divide="ignore", invalid="ignore"):
            s["noise_scale"] = np.float32(np.asarray(tr) / np.asarray(g))
        pt = s.create_group("per_tensor")
        for col in ("grad_sq_est", "trace_est", "noise_scale", "update_rms", "ortho_error"):
            pt[col] = np.ones((steps, len(TENSORS)), np.float32)
        f["timing/step_seconds"] = np.full(steps, 0.01)
        for st in snapshot_steps:
            g2 = f.create_group("snapshots/step_%06d" % st)
            g2.attrs["step"] = np.int64(st)
            for n, a in params(st).items():
                g2[n] = a
        c = f.create_group("checkpoint/params")
        for n, a in params(steps).items():
            c[n] = a
    return path
