"""Load one samebits run file (HDF5; the layout docs/FORMAT.md describes) into numpy arrays.

Layout read here: root attributes (format = "samebits-run", format_version, config, experiment_id,
experiment_text, steps, status, error, ...), /tensors (attribute names: one tensor name per line;
datasets offset, numel, rank (n,) and shape (n, 2)), /series/<column> with one row per step
((steps,) or (steps, tensors) under /series/per_tensor/, fingerprints (steps, tensors) u64),
/snapshots/step_NNNNNN/<tensor> (attribute step) and, once finished, /checkpoint/params/<tensor>
(format 2: external links into the run's store folder, which h5py follows).
Values are returned with their stored dtypes (no conversion), so bits can be compared.
"""
from __future__ import annotations

import dataclasses

import h5py
import numpy as np

RUN_FORMAT = "samebits-run"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclasses.dataclass
class Tensor:
    name: str
    shape: tuple
    offset: int
    numel: int


class Run:
    """A run file read whole into memory (runs of the studies are small)."""

    def __init__(self, path: str):
        self.path = str(path)
        with h5py.File(self.path, "r") as f:
            fmt = _text(f.attrs.get("format", ""))
            if fmt != RUN_FORMAT:
                raise ValueError(f"{self.path}: format attribute is {fmt!r}, expected {RUN_FORMAT!r} "
                                 "(not a samebits run file?)")
            self.attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v)
                          for k, v in f.attrs.items()}
            self.tensors = self._read_tensors(f["tensors"])
            self.series = {}
            f["series"].visititems(lambda name, obj: self._keep(name, obj))
            self.step_seconds = f["timing/step_seconds"][()] if "timing/step_seconds" in f else None
            self.snapshots = {}
            if "snapshots" in f:
                for g in f["snapshots"].values():
                    self.snapshots[int(g.attrs["step"])] = self._read_params(g)
            self.final_params = self._read_params(f["checkpoint/params"]) if "checkpoint/params" in f else None

    def _keep(self, name, obj):
        if isinstance(obj, h5py.Dataset):
            self.series[name] = obj[()]

    @staticmethod
    def _read_tensors(g) -> list:
        names = _text(g.attrs["names"]).split("\n")
        offset, numel, rank, shape = (g[k][()] for k in ("offset", "numel", "rank", "shape"))
        if not (len(names) == len(offset) == len(numel) == len(rank) == len(shape)):
            raise ValueError(f"/tensors: {len(names)} names but {len(offset)} offsets")
        return [Tensor(n, tuple(int(x) for x in shape[i][: int(rank[i])]), int(offset[i]), int(numel[i]))
                for i, n in enumerate(names)]

    def _read_params(self, g) -> dict:
        return {t.name: g[t.name][()] for t in self.tensors}

    # ---- what the run is -----------------------------------------------------------------
    @property
    def config_text(self) -> str:
        return self.attrs["config"]

    @property
    def experiment_id(self) -> str:
        return self.attrs["experiment_id"]

    @property
    def status(self) -> str:
        return self.attrs["status"]

    def config(self) -> dict:
        """The resolved configuration as {"section.key": "value"} (INI text of the run)."""
        out, section = {}, ""
        for line in self.config_text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
            elif "=" in line:
                k, v = line.split("=", 1)
                out[f"{section}.{k.strip()}" if section else k.strip()] = v.strip()
        return out

    # ---- series ---------------------------------------------------------------------------
    @property
    def tensor_names(self) -> list:
        return [t.name for t in self.tensors]

    @property
    def steps(self) -> np.ndarray:
        return self.series["step"]

    def __getitem__(self, column: str) -> np.ndarray:
        """A series column: "loss", "noise_scale", "per_tensor/update_rms", "param_fingerprint"."""
        return self.series[column]

    def per_tensor(self, column: str) -> dict:
        """{tensor name: (steps,) values} of a per-tensor column, e.g. "noise_scale"."""
        values = self.series[f"per_tensor/{column}"]
        return {t.name: values[:, i] for i, t in enumerate(self.tensors)}

    # ---- parameters -----------------------------------------------------------------------
    def params_at(self, step: int):
        """All parameters after `step` ({tensor: array}), from a snapshot or the final
        checkpoint; None when the file holds neither for that step."""
        if step in self.snapshots:
            return self.snapshots[step]
        if self.final_params is not None and self.status == "finished" and step == int(self.attrs["steps"]):
            return self.final_params
        return None

    def param_steps(self) -> list:
        steps = set(self.snapshots)
        if self.final_params is not None and self.status == "finished":
            steps.add(int(self.attrs["steps"]))
        return sorted(steps)


def load_run(path) -> Run:
    return Run(path)
