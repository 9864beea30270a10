"""samebits.analysis.tracefile: trace files written here with h5py (always), and the streams and
propagation table of tiny runs traced by `samebits train --trace-steps` and `samebits trace`
($SAMEBITS_BIN, set by CTest; skipped without it)."""
import os
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")

import samebits.analysis as nb
from samebits.analysis import plots


def write_trace(path, rows, offsets_end=None):
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "samebits-trace"
        f.attrs["format_version"] = 1
        g = f.create_group("steps/3")
        g.attrs["step"] = 3
        g["site"] = np.frombuffer("".join(r[0] + "\n" for r in rows).encode(), dtype=np.uint8)
        g["op"] = np.frombuffer("".join(r[1] + "\n" for r in rows).encode(), dtype=np.uint8)
        g["leaf"] = np.array([r[2] for r in rows], dtype=np.int64)
        for name, k, dtype in (("inputs", 3, np.uint64), ("outputs", 4, np.uint64), ("shape", 5, np.int64)):
            flat = [x for r in rows for x in r[k]]
            off = np.cumsum([0] + [len(r[k]) for r in rows]).astype(np.uint64)
            if offsets_end is not None and name == "inputs":
                off[-1] = offsets_end
            g[name] = np.array(flat, dtype=dtype)
            g[name + "_offsets"] = off
    return path


ROWS = [("h.0.ln1 norm forward", "layernorm_forward", 0, (1, 2, 3), (4, 5, 6), (16, 32)),
        ("h.0.attn.qkv matmul forward", "gemm", 0, (4, 7), (8,), (16, 96))]


class SyntheticTraceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)

    def tearDown(self):
        self.dir.cleanup()

    def test_load_and_compare(self):
        steps = nb.load_trace(write_trace(self.path("a.trace.h5"), ROWS))
        self.assertEqual(list(steps), [3])
        a = steps[3]
        self.assertEqual(a[1].name, "h.0.attn.qkv matmul forward gemm")
        self.assertEqual(a[0].inputs, (1, 2, 3))
        self.assertEqual(a[1].shape, (16, 96))
        self.assertIsNone(nb.first_difference(a, a))
        changed = [r if i else r[:4] + ((4, 5, 9),) + r[5:] for i, r in enumerate(ROWS)]
        b = nb.load_trace(write_trace(self.path("b.trace.h5"), changed))[3]
        self.assertEqual(nb.first_difference(a, b), (0, "op"))

    def test_not_a_trace_and_bad_offsets(self):
        with h5py.File(self.path("x.h5"), "w") as f:
            f.attrs["format"] = "samebits-run"
        with self.assertRaises(ValueError):
            nb.load_trace(self.path("x.h5"))
        with self.assertRaises(ValueError):
            nb.load_trace(write_trace(self.path("bad.trace.h5"), ROWS, offsets_end=99))


@unittest.skipUnless(os.environ.get("SAMEBITS_BIN"), "SAMEBITS_BIN not set (CTest sets it)")
class TracedRunsTest(unittest.TestCase):
    def test_streams_and_propagation(self):
        with tempfile.TemporaryDirectory() as d:
            a = nb.train_run(os.path.join(d, "a.h5"), {"trace-steps": 1, "train.steps": 2, "train.warmup": 1, "train.snapshot_steps": "0"})
            b = nb.train_run(os.path.join(d, "b.h5"), {"trace-steps": 1, "train.steps": 2, "train.warmup": 1, "train.snapshot_steps": "0",
                                                          "numerics.gemm": "vendor"})
            sa = nb.load_trace(os.path.join(d, "a.trace.h5"))[1]
            sb = nb.load_trace(os.path.join(d, "b.trace.h5"))[1]
            first = nb.first_difference(sa, sb)
            self.assertIsNotNone(first)
            self.assertEqual(first[1], "op")
            self.assertEqual(sa[first[0]].op, "gemm")
            done = subprocess.run([nb.samebits_binary(), "trace", a, b, "--out", os.path.join(d, "out")],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
            p = nb.load_propagation(os.path.join(d, "out"))
            self.assertEqual(p.op[0], first[0])
            self.assertEqual(p.names[0], sa[first[0]].name)
            self.assertTrue(np.all(p.rel_l2[:1] > 0))
            self.assertIsNotNone(plots.propagation(p))


if __name__ == "__main__":
    unittest.main()
