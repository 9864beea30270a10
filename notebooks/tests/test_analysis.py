"""samebits.analysis on synthetic run files (always) and on tiny runs trained by `samebits train`
($SAMEBITS_BIN, set by CTest; those tests are skipped without it)."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")

import samebits.analysis as nb
from samebits.analysis import plots
import synthetic


class EmaTest(unittest.TestCase):
    def test_bias_corrected_constant(self):
        np.testing.assert_allclose(nb.ema(np.full(5, 3.0), 0.9), np.full(5, 3.0), rtol=1e-15)

    def test_recursion_and_nan_skipped(self):
        x = np.array([1.0, np.nan, 3.0, 5.0])
        beta = 0.5
        m1 = 0.5 * 1.0
        m2 = 0.5 * m1 + 0.5 * 3.0
        m3 = 0.5 * m2 + 0.5 * 5.0
        w = [0.5, 0.75, 0.875]
        np.testing.assert_allclose(nb.ema(x, beta), [m1 / w[0], m1 / w[0], m2 / w[1], m3 / w[2]], rtol=1e-15)

    def test_leading_nan_and_bad_beta(self):
        self.assertTrue(np.isnan(nb.ema([np.nan, 2.0])[0]))
        self.assertEqual(nb.ema([np.nan, 2.0])[1], 2.0)
        with self.assertRaises(ValueError):
            nb.ema([1.0], 1.0)


class SyntheticRunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)

    def tearDown(self):
        self.dir.cleanup()

    def test_load(self):
        run = nb.load_run(synthetic.write_run(self.path("a.h5"), steps=6))
        self.assertEqual(run.tensor_names, ["w", "b"])
        self.assertEqual(run.tensors[0].shape, (4, 3))
        self.assertEqual(run.tensors[1].shape, (5,))
        np.testing.assert_array_equal(run.steps, np.arange(1, 7))
        self.assertEqual(run["param_fingerprint"].dtype, np.uint64)
        self.assertEqual(run.status, "finished")
        self.assertEqual(run.config()["train.steps"], "6")
        self.assertEqual(run.param_steps(), [0, 3, 6])
        self.assertEqual(run.params_at(3)["w"].shape, (4, 3))
        self.assertIsNone(run.params_at(2))
        self.assertEqual(set(run.per_tensor("update_rms")), {"w", "b"})

    def test_not_a_run_file(self):
        import h5py
        with h5py.File(self.path("x.h5"), "w") as f:
            f.attrs["format"] = "something else"
        with self.assertRaises(ValueError):
            nb.load_run(self.path("x.h5"))

    def test_identical_runs(self):
        a = nb.load_run(synthetic.write_run(self.path("a.h5")))
        b = nb.load_run(synthetic.write_run(self.path("b.h5")))
        c = nb.compare_runs(a, b)
        self.assertTrue(c.identical)
        self.assertIsNone(c.first_divergent_step)
        np.testing.assert_array_equal(c.distance, [0, 0, 0])
        np.testing.assert_array_equal(c.loss_gap, np.zeros(6))

    def test_divergent_runs(self):
        a = nb.load_run(synthetic.write_run(self.path("a.h5")))
        b = nb.load_run(synthetic.write_run(self.path("b.h5"), seed=1, diverge_at=3))
        c = nb.compare_runs(a, b)
        self.assertEqual(c.first_divergent_step, 3)
        self.assertEqual(c.first_divergent_grad_step, 3)
        self.assertEqual(c.divergent_tensors, ["w", "b"])
        self.assertEqual(c.distance_steps, [0, 3, 6])
        self.assertEqual(c.distance[0], 0.0)
        wa, wb = a.params_at(3), b.params_at(3)
        num = sum(np.sum((wb[n].astype(np.float64) - wa[n]) ** 2) for n in wa)
        den = sum(np.sum(wa[n].astype(np.float64) ** 2) for n in wa)
        self.assertAlmostEqual(c.distance[1], np.sqrt(num / den), places=12)
        np.testing.assert_allclose(c.loss_gap[:2], 0)
        self.assertTrue(np.all(c.loss_gap[2:] > 0))

    def test_noise_scale_is_ratio_of_smoothed_estimates(self):
        g = np.array([1.0, -0.5, 2.0, 1.0])
        t = np.array([10.0, 30.0, np.nan, 20.0])
        run = nb.load_run(synthetic.write_run(self.path("n.h5"), steps=4, noise=(g, t)))
        s = nb.noise_scale_series(run, beta=0.8)
        np.testing.assert_allclose(s.noise_scale, nb.ema(np.float32(t), 0.8) / nb.ema(np.float32(g), 0.8))
        self.assertTrue(np.isnan(s.raw_noise_scale[2]))
        self.assertEqual(len(nb.noise_scale_series(run, tensor="b").noise_scale), 4)

    def test_plots(self):
        a = nb.load_run(synthetic.write_run(self.path("a.h5")))
        b = nb.load_run(synthetic.write_run(self.path("b.h5"), seed=1, diverge_at=3))
        for fig in (plots.divergence_curves({"b": nb.compare_runs(a, b)}),
                    plots.noise_scale(nb.noise_scale_series(a), {"w": nb.noise_scale_series(a, tensor="w")}),
                    plots.leaf_variance(a),
                    plots.optimizer_comparison({"a": a, "b": b})):
            fig.savefig(self.path("fig.png"))
            self.assertGreater(os.path.getsize(self.path("fig.png")), 1000)


@unittest.skipUnless(os.environ.get("SAMEBITS_BIN"), "SAMEBITS_BIN not set (CTest sets it)")
class RealRunTest(unittest.TestCase):
    """Three tiny runs: a reference (1 thread), the same experiment on 2 threads (bitwise identical), and
    another init seed (divergent from step 1)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        p = lambda n: os.path.join(cls.dir.name, n)  # noqa: E731
        small = {"train.steps": 12, "train.snapshot_steps": "0,6", "train.eval_every": 6}
        cls.ref = nb.load_run(nb.train_run(p("ref.h5"), small))
        cls.threads = nb.load_run(nb.train_run(p("t2.h5"), dict(small, **{"run.threads": 2})))
        cls.seed = nb.load_run(nb.train_run(p("seed.h5"), dict(small, **{"train.seed": 2})))

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_run_contents(self):
        r = self.ref
        self.assertEqual(r.status, "finished")
        self.assertEqual(len(r.steps), 12)
        self.assertEqual(r.param_steps(), [0, 6, 12])
        self.assertEqual(r.config()["model.n_embd"], "32")
        self.assertEqual(r["per_tensor/noise_scale"].shape, (12, len(r.tensors)))
        for t in r.tensors:
            self.assertEqual(r.params_at(12)[t.name].shape, t.shape)
        self.assertTrue(np.all(np.isfinite(r["noise_scale"])))
        self.assertLess(r["loss"][-1], r["loss"][0])

    def test_execution_change_is_identical(self):
        c = nb.compare_runs(self.ref, self.threads)
        self.assertTrue(c.identical)
        np.testing.assert_array_equal(c.distance, np.zeros(3))
        self.assertEqual(self.ref.experiment_id, self.threads.experiment_id)

    def test_other_seed_diverges_at_once(self):
        c = nb.compare_runs(self.ref, self.seed)
        self.assertEqual(c.first_divergent_step, 1)
        self.assertTrue(np.all(c.distance > 0.1))

    def test_noise_series(self):
        s = nb.noise_scale_series(self.ref, beta=0.5)
        self.assertEqual(s.noise_scale.shape, (12,))
        self.assertTrue(np.all(np.isfinite(s.noise_scale)))
