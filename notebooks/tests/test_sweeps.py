"""samebits.analysis.sweeps on synthetic run folders (runs and kept states written with h5py): a
layout identical to its reference is found identical, a diverging one gets its first divergent step
and distances, the tables and plots are written, and wrong arguments print the usage."""
import os
import shutil
import tempfile
import unittest
import warnings

import h5py
import numpy as np

from samebits.analysis.sweeps import layouts, states, tp_muon, tp_muon_ortho
from synthetic import TENSORS, write_run


def write_cell(path, seed=0, diverge_at=None, kept=(0, 3, 6)):
    """A synthetic run with a validation loss and kept states of its parameters at `kept`."""
    write_run(path, steps=6, snapshot_steps=kept, seed=seed, diverge_at=diverge_at)
    with h5py.File(path, "a") as f:
        f["series/val_loss"] = f["series/loss"][()] + np.float32(0.5)
        params = {st: {n: f[f"snapshots/step_{st:06d}/{n}"][()] for n, _, _ in TENSORS} for st in kept}
    store = path[: -len(".h5")] + ".store"
    os.makedirs(store)
    for st, p in params.items():
        with h5py.File(os.path.join(store, f"state_step_{st:06d}.h5"), "w") as f:
            f.attrs["step"] = np.int64(st)
            for n, a in p.items():
                f[f"params/{n}"] = a
    return path


class SweepsTest(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.out, "runs"))

    def tearDown(self):
        shutil.rmtree(self.out)

    def cell(self, name, **kw):
        return write_cell(os.path.join(self.out, "runs", name + ".h5"), **kw)

    def test_kept_states_are_read_and_compared_bitwise(self):
        kept = states.kept_states(self.cell("a"))
        self.assertEqual(sorted(kept), [0, 3, 6])
        again = states.kept_states(self.cell("b"))
        self.assertTrue(states.bitwise_equal(kept[3], again[3]))
        self.assertFalse(states.bitwise_equal(kept[0], again[3]))
        self.assertTrue(states.same_bits(np.zeros(3), np.zeros(3)))
        self.assertFalse(states.same_bits(np.zeros(3), np.zeros(4)))

    def test_layouts_finds_identical_and_diverging_cells(self):
        for mode in ("det", "vendor"):
            self.cell(f"{mode}-1")
        self.cell("det-dp2")
        self.cell("vendor-dp2", seed=1, diverge_at=3)
        rows = layouts.measure(self.out)
        self.assertTrue(rows["det-dp2"]["identical"])
        self.assertFalse(rows["vendor-dp2"]["identical"])
        self.assertEqual(rows["vendor-dp2"]["first_divergent"], 3)
        self.assertEqual(rows["vendor-dp2"]["rel_l2"][0], 0.0)  # step 0: before the divergence
        self.assertGreater(rows["vendor-dp2"]["rel_l2"][-1], 0.0)
        self.assertIn("| vendor-dp2 | vendor-1 | no | 3 |", layouts.table(rows))
        plots = os.path.join(self.out, "plots")
        self.assertEqual(layouts.main([self.out, plots]), 0)
        self.assertTrue(os.path.exists(os.path.join(plots, "rel_l2.png")))
        self.assertTrue(os.path.exists(os.path.join(plots, "loss_gap.png")))

    def test_tp_muon_compares_every_cell_with_the_one_process_run(self):
        self.cell("tp1-duplicated")
        self.cell("tp2-duplicated")
        self.cell("tp2-blockwise", seed=2, diverge_at=4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no Muon matrices in the synthetic runs
            rows = tp_muon.measure(self.out)
            self.assertTrue(rows["tp2-duplicated"]["identical"])
            self.assertEqual(rows["tp2-blockwise"]["first_divergent"], 4)
            self.assertEqual(tp_muon.main([self.out, os.path.join(self.out, "plots")]), 0)
        self.assertTrue(os.path.exists(os.path.join(self.out, "plots", "val_loss_gap.png")))

    def test_wrong_arguments_print_the_usage(self):
        self.assertEqual(layouts.main([]), 2)
        self.assertEqual(tp_muon.main([self.out]), 2)
        self.assertEqual(tp_muon_ortho.main([]), 2)


if __name__ == "__main__":
    unittest.main()
