"""Read the op-hash streams of `samebits train --trace-steps` (RUN.trace.h5, docs/FORMAT.md §"Trace
file") and the propagation table of `samebits trace --out DIR` (DIR/propagation.tsv, docs/TRACE.md).

A stream is a list of Row (site, op, leaf, input hashes, output hashes, shape) in one process's
order; first_difference compares two streams by hash as `samebits trace` does (without values: the
distances come from the replay, in propagation.tsv).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os

import h5py
import numpy as np

TRACE_FORMAT = "samebits-trace"


@dataclasses.dataclass
class Row:
    site: str
    op: str
    leaf: int
    inputs: tuple
    outputs: tuple
    shape: tuple

    @property
    def name(self) -> str:
        return f"{self.site} {self.op}" if self.site else self.op


def _ragged(group, name):
    flat, offsets = group[name][:], group[name + "_offsets"][:]
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(flat) or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise ValueError(f"{group.file.filename}:{group.name}/{name}_offsets: not ascending offsets into {name}")
    return [tuple(int(x) for x in flat[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]


def _lines(group, name, rows):
    text = bytes(group[name][:]).decode("utf-8", "replace")
    lines = text.split("\n")
    if lines[-1] != "" or len(lines) - 1 != rows:
        raise ValueError(f"{group.file.filename}:{group.name}/{name}: expected {rows} lines")
    return lines[:-1]


def load_trace(path: str) -> dict:
    """{step: [Row, ...]} of a trace file; ValueError for a file that is not one."""
    with h5py.File(path, "r") as f:
        fmt = f.attrs.get("format", b"")
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        if fmt != TRACE_FORMAT:
            raise ValueError(f"{path}: not a samebits trace file (format {fmt!r})")
        steps = {}
        for name, g in f.get("steps", {}).items():
            leaf = g["leaf"][:]
            n = len(leaf)
            sites, ops = _lines(g, "site", n), _lines(g, "op", n)
            ins, outs, shapes = _ragged(g, "inputs"), _ragged(g, "outputs"), _ragged(g, "shape")
            if not (len(ins) == len(outs) == len(shapes) == n):
                raise ValueError(f"{path}:{g.name}: columns of different lengths")
            steps[int(g.attrs["step"])] = [Row(sites[i], ops[i], int(leaf[i]), ins[i], outs[i], shapes[i]) for i in range(n)]
        return dict(sorted(steps.items()))


def first_difference(a: list, b: list):
    """(index, kind) of the first row whose op, inputs or outputs differ — kind "sequence", "op"
    (equal inputs, different outputs) or "input" — or None when the streams are equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if (x.site, x.op, x.leaf, x.shape, len(x.inputs)) != (y.site, y.op, y.leaf, y.shape, len(y.inputs)):
            return i, "sequence"
        if x.inputs != y.inputs:
            return i, "input"
        if x.outputs != y.outputs:
            return i, "op"
    if len(a) != len(b):
        return min(len(a), len(b)), "sequence"
    return None


@dataclasses.dataclass
class Propagation:
    op: np.ndarray  # (k,) the row index of each differing op in the step's stream
    leaf: np.ndarray
    names: list
    differing_fraction: np.ndarray
    max_ulp: np.ndarray  # float: NaN for a NaN difference
    rel_l2: np.ndarray


def load_propagation(path: str) -> Propagation:
    """DIR/propagation.tsv of `samebits trace --out DIR` (or the file itself)."""
    if os.path.isdir(path):
        path = os.path.join(path, "propagation.tsv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    need = {"op", "leaf", "site", "op_name", "differing_fraction", "max_ulp", "rel_l2"}
    if rows and not need <= set(rows[0]):
        raise ValueError(f"{path}: expected the columns {sorted(need)}")
    num = lambda key, conv=float: np.array([conv(r[key]) for r in rows])
    return Propagation(
        op=num("op", int), leaf=num("leaf", int),
        names=[f"{r['site']} {r['op_name']}".strip() for r in rows],
        differing_fraction=num("differing_fraction"),
        max_ulp=np.array([math.nan if r["max_ulp"] == "nan" else float(r["max_ulp"]) for r in rows]),
        rel_l2=num("rel_l2"))
