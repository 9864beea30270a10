"""samebits.analysis.report on a synthetic summary.h5 (the layout `samebits sweep` writes): the cells are
read back in the sweep's order with their series, the five PNGs are drawn, a foreign file is refused."""
import os
import tempfile
import unittest

import h5py
import numpy as np

from samebits.analysis import report


def write_summary(path, cells):
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "samebits-sweep"
        f.attrs["cells"] = "\n".join(c["name"] for c in cells)
        for i, c in enumerate(cells):
            g = f.create_group(f"cells/{c['name']}")
            g.attrs["order"] = i
            for key in ("description", "reference"):
                g.attrs[key] = c[key]
            for key in ("identical", "available", "first_divergent_step"):
                g.attrs[key] = np.int64(c[key])
            for key in ("loss", "loss_gap", "distance_steps", "rel_l2", "grad_sq_est", "trace_est"):
                if key in c:
                    g[key] = c[key]


class ReportTest(unittest.TestCase):
    def test_reads_and_draws(self):
        steps = np.arange(1, 21)
        ref = dict(name="ref", description="(base)", reference="ref", identical=1, available=1,
                   first_divergent_step=0, loss=(5 - 0.1 * steps).astype(np.float32), loss_gap=np.zeros(20),
                   distance_steps=np.array([0, 10, 20]), rel_l2=np.zeros(3),
                   grad_sq_est=np.full(20, 2.0, np.float32), trace_est=np.full(20, 8.0, np.float32))
        vendor = dict(ref, name="vendor", description="mode=vendor", identical=0, first_divergent_step=3,
                      loss_gap=np.linspace(0, 1e-4, 20), rel_l2=np.array([0, 1e-6, 1e-4]))
        missing = dict(name="missing", description="ranks=2", reference="ref", identical=0, available=0,
                       first_divergent_step=0)
        with tempfile.TemporaryDirectory() as out:
            write_summary(os.path.join(out, "summary.h5"), [ref, vendor, missing])
            _, cells = report.read_summary(os.path.join(out, "summary.h5"))
            self.assertEqual([c.name for c in cells], ["ref", "vendor", "missing"])
            self.assertTrue(cells[0].is_reference)
            self.assertEqual(cells[1].first_divergent_step, 3)
            np.testing.assert_array_equal(cells[1].rel_l2, [0, 1e-6, 1e-4])
            self.assertEqual(len(cells[2].loss), 0)
            paths = report.draw(out)
            self.assertEqual(sorted(os.path.basename(p) for p in paths),
                             ["first_divergence.png", "loss.png", "loss_gap.png", "noise_scale.png", "rel_l2.png"])
            for p in paths:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_refuses_foreign_file(self):
        with tempfile.TemporaryDirectory() as out:
            with h5py.File(os.path.join(out, "summary.h5"), "w") as f:
                f.attrs["format"] = "samebits-run"
            with self.assertRaisesRegex(ValueError, "samebits-sweep"):
                report.read_summary(os.path.join(out, "summary.h5"))


if __name__ == "__main__":
    unittest.main()
