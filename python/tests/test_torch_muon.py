"""samebits.torch.Muon: torch.optim.Muon's argument errors; the same bits on 1 and 2 threads; bit
for bit the C++ Muon's update (optim.momentum_form=lerp, through samebits.Trainer); within 1e-3 of a
float64 reference of torch.optim.Muon's mathematics; state_dict round trip bitwise; one C++ Muon
per group, reused, and a matrix without a gradient left as it was."""
import copy
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
from samebits.torch import Muon  # noqa: E402

from conftest import SMALL  # noqa: E402

SHAPES = [(48, 32), (32, 80), (17, 17)]


def bits(t):
    return t.detach().numpy().view(np.uint32).copy()


def run_steps(steps=3, **kw):
    """Muon on three matrices, `steps` steps of seeded gradients; the weights and buffers after."""
    g = torch.Generator().manual_seed(7)
    params = [torch.nn.Parameter(torch.randn(s, generator=g) * 0.1) for s in SHAPES]
    opt = Muon(params, **kw)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        opt.step()
    return params, opt


def test_argument_errors_are_torch_optim_muons():
    p = [torch.nn.Parameter(torch.zeros(4, 4))]
    for kw in ({"lr": -1.0}, {"momentum": -0.1}, {"weight_decay": -0.1}, {"adjust_lr_fn": "other"},
               {"ns_coefficients": (1.0, 2.0)}, {"ns_steps": 100}, {"lr": torch.tensor([1.0, 2.0])}):
        with pytest.raises(ValueError):
            Muon(p, **kw)
    with pytest.raises(ValueError, match="2-D"):
        Muon([torch.nn.Parameter(torch.zeros(4))])
    with pytest.raises(ValueError, match="2-D"):
        Muon([torch.nn.Parameter(torch.zeros(2, 2, 2))])
    opt = Muon(p)
    assert opt.defaults["lr"] == 1e-3 and opt.defaults["weight_decay"] == 0.1 and opt.defaults["momentum"] == 0.95
    assert opt.defaults["nesterov"] is True and opt.defaults["eps"] == 1e-7 and opt.defaults["ns_steps"] == 5
    p[0].grad = torch.zeros(4, 4, dtype=torch.float32).to_sparse()
    with pytest.raises(RuntimeError, match="sparse"):
        opt.step()


THREADS_SCRIPT = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from test_torch_muon import run_steps
params, opt = run_steps(4, lr=0.02, weight_decay=0.01)
for p in params:
    print(hashlib.sha256(p.detach().numpy().tobytes()).hexdigest(),
          hashlib.sha256(opt.state[p]["momentum_buffer"].numpy().tobytes()).hexdigest())
"""


def test_one_and_two_threads_give_the_same_bits():
    here = os.path.dirname(os.path.abspath(__file__))
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, "-c", THREADS_SCRIPT, here], env=env, capture_output=True, text=True,
                              check=True)
        outs.append(done.stdout)
    assert outs[0] == outs[1]


def newton_schulz64(u, coefficients, steps, eps):
    x = u / (torch.linalg.norm(u) + eps)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    a, b, c = coefficients
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if transposed else x


def test_within_1e3_of_a_float64_reference_of_torch_optim_muon():
    lr, wd, mu, coeffs = 0.02, 0.01, 0.95, (3.4445, -4.775, 2.0315)
    params, _ = run_steps(3, lr=lr, weight_decay=wd)
    g = torch.Generator().manual_seed(7)
    w0 = [(torch.randn(s, generator=g) * 0.1).double() for s in SHAPES]
    w, m = [x.clone() for x in w0], [torch.zeros_like(x) for x in w0]
    for _ in range(3):
        for i, s in enumerate(SHAPES):
            grad = torch.randn(s, generator=g).double()
            m[i] = m[i] + (1 - mu) * (grad - m[i])
            u = grad + mu * (m[i] - grad)
            x = newton_schulz64(u, coeffs, 5, 1e-7)
            scale = max(1.0, s[0] / s[1]) ** 0.5
            w[i] = w[i] * (1 - lr * wd) - lr * scale * x
    for p, ref, start in zip(params, w, w0):
        update, ref_update = p.detach().double() - start, ref - start
        err = (update - ref_update).abs().max() / ref_update.abs().max()
        assert err < 1e-3, err


def test_state_dict_round_trip_is_bitwise():
    params, opt = run_steps(2, lr=0.02)
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    other = Muon(copies, lr=0.02)
    # A saved state (deepcopy, as torch.save/torch.load): torch 2's load_state_dict keeps the
    # given tensors, so an unsaved state_dict would share its buffers with `opt`.
    other.load_state_dict(copy.deepcopy(opt.state_dict()))
    g = torch.Generator().manual_seed(99)
    for p, q in zip(params, copies):
        p.grad = torch.randn(p.shape, generator=g)
        q.grad = p.grad.clone()
    opt.step()
    other.step()
    for p, q in zip(params, copies):
        assert np.array_equal(bits(p), bits(q))
        assert np.array_equal(bits(opt.state[p]["momentum_buffer"]), bits(other.state[q]["momentum_buffer"]))


def test_equal_to_the_cpp_muon_under_the_lerp_form():
    """Two steps of samebits.Trainer (optim.momentum_form=lerp, no clip): from its weights and
    momentum after step 1 and its batch gradient of step 2, samebits.torch.Muon gives its weights
    after step 2, bit for bit, on every matrix."""
    overrides = dict(SMALL, **{"optim.momentum_form": "lerp", "optim.clip": 0, "optim.weight_decay": 0.01,
                               "train.steps": 2})
    trainer = samebits.Trainer(samebits.Config.from_ini(None, overrides))
    trainer.step()
    before = trainer.export_state()
    stats = trainer.step()
    after = trainer.params
    grads = trainer.grads
    matrices = [name for name in before.params if name + "/momentum" in before.optimizer]
    assert matrices
    for name in matrices:
        w = torch.nn.Parameter(torch.from_numpy(before.params[name].copy()))
        w.grad = torch.from_numpy(np.array(grads[name]))
        opt = Muon([w], lr=stats["lr"], weight_decay=0.01, momentum=stats["muon_momentum"])
        opt.state[w]["momentum_buffer"] = torch.from_numpy(before.optimizer[name + "/momentum"].copy()).reshape(w.shape)
        opt.step()
        assert np.array_equal(bits(w), np.asarray(after[name]).view(np.uint32)), name
    trainer.close()


def test_one_cpp_muon_per_group_reused_and_a_matrix_without_gradient_kept():
    g = torch.Generator().manual_seed(3)
    params = [torch.nn.Parameter(torch.randn(s, generator=g) * 0.1) for s in SHAPES]
    alone = [torch.nn.Parameter(p.detach().clone()) for p in params[:2]]
    opt, opt_alone = Muon(params, lr=0.02), Muon(alone, lr=0.02)
    engines = []
    for _ in range(3):
        for p, q in zip(params[:2], alone):
            p.grad = torch.randn(p.shape, generator=g)
            q.grad = p.grad.clone()
        kept = bits(params[2])
        opt.step()
        opt_alone.step()
        assert np.array_equal(bits(params[2]), kept)  # no gradient: not updated
        engines.append(opt._engines[(0, torch.device("cpu"))][1])
    assert engines[0] is engines[1] is engines[2]
    assert "momentum_buffer" not in opt.state[params[2]]
    for p, q in zip(params[:2], alone):  # the others as if the matrix were not in the group
        assert np.array_equal(bits(p), bits(q))
        assert np.array_equal(bits(opt.state[p]["momentum_buffer"]), bits(opt_alone.state[q]["momentum_buffer"]))
    opt.param_groups[0]["weight_decay"] = 0.05  # an option the C++ Muon is built with: rebuilt
    opt.step()
    assert opt._engines[(0, torch.device("cpu"))][1] is not engines[0]
