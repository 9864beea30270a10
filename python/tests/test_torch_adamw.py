"""samebits.torch.AdamW: torch.optim.AdamW's signature, defaults and argument errors, its
unsupported switches refused; the same bits on 1 and 2 threads; bit for bit the C++ trainer's AdamW
update (optim.name=adamw, through samebits.Trainer: one step from its state, and 4 steps from its
first); within 1e-5 of torch.optim.AdamW (another order of operations); state_dict round trip
bitwise, and torch.optim.AdamW's state_dict loads; a step count per parameter, as torch's."""
import copy
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
from samebits.torch import AdamW  # noqa: E402

from conftest import SMALL  # noqa: E402

SHAPES = [(48, 32), (300, 1100), (17,)]


def bits(t):
    return t.detach().numpy().view(np.uint32).copy()


def make_params(seed=7):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=g) * 0.1) for s in SHAPES], g


def run_steps(opt_class, steps=3, **kw):
    """`opt_class` on three tensors, `steps` steps of seeded gradients; the parameters and optimizer."""
    params, g = make_params()
    opt = opt_class(params, **kw)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        opt.step()
    return params, opt


def test_signature_defaults_and_argument_errors_are_torch_optim_adamws():
    p = [torch.nn.Parameter(torch.zeros(4, 4))]
    for kw in ({"lr": -1.0}, {"eps": -1.0}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)}, {"weight_decay": -0.1},
               {"lr": torch.tensor([1.0, 2.0])}):
        with pytest.raises(ValueError):
            AdamW(p, **kw)
    ours, theirs = AdamW(p).defaults, torch.optim.AdamW(p).defaults
    for key in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable"):
        assert ours[key] == theirs[key], key
    for kw in ({"amsgrad": True}, {"maximize": True}, {"foreach": True}, {"capturable": True},
               {"differentiable": True}, {"fused": True}):
        with pytest.raises(ValueError, match=list(kw)[0]):
            AdamW(p, **kw)
    opt = AdamW(p)
    opt.param_groups[0]["amsgrad"] = True  # set after construction: refused at the step
    p[0].grad = torch.ones(4, 4)
    with pytest.raises(ValueError, match="amsgrad"):
        opt.step()
    opt = AdamW(p)
    p[0].grad = torch.zeros(4, 4).to_sparse()
    with pytest.raises(RuntimeError, match="sparse"):
        opt.step()
    q = torch.nn.Parameter(torch.zeros(4, 4, dtype=torch.float64))
    q.grad = torch.zeros(4, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match="float32"):
        AdamW([q]).step()


THREADS_SCRIPT = """
import hashlib, sys
import torch
torch.set_num_threads(int(sys.argv[2]))
sys.path.insert(0, sys.argv[1])
from samebits.torch import AdamW, clip_grad_norm_
from test_torch_adamw import make_params
params, g = make_params()
opt = AdamW(params, lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
for _ in range(4):
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    print(clip_grad_norm_(params, 50.0).numpy().view("uint32"))
    opt.step()
for p in params:
    print(hashlib.sha256(p.detach().numpy().tobytes()).hexdigest(),
          hashlib.sha256(opt.state[p]["exp_avg_sq"].numpy().tobytes()).hexdigest())
"""


def test_one_and_two_threads_give_the_same_bits():
    """AdamW and clip_grad_norm_ (a 330 000-element tensor: several blocks of the exact sum)."""
    here = os.path.dirname(os.path.abspath(__file__))
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, "-c", THREADS_SCRIPT, here, threads], env=env, capture_output=True,
                              text=True, check=True)
        outs.append(done.stdout)
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == 7


def test_within_1e5_of_torch_optim_adamw():
    kw = dict(lr=0.01, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    ours, _ = run_steps(AdamW, 5, **kw)
    theirs, _ = run_steps(torch.optim.AdamW, 5, **kw)
    start, _ = make_params()
    for p, q, w0 in zip(ours, theirs, start):
        update, ref_update = (p - w0).detach().double(), (q - w0).detach().double()
        err = (update - ref_update).abs().max() / ref_update.abs().max()
        assert err < 1e-5, err


def test_state_dict_round_trip_is_bitwise_and_torch_optim_adamws_loads():
    params, opt = run_steps(AdamW, 2, lr=0.02)
    _, torch_opt = run_steps(torch.optim.AdamW, 2, lr=0.02)
    assert set(opt.state_dict()["state"][0]) == set(torch_opt.state_dict()["state"][0])
    for source in (opt, torch_opt):
        copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
        ref = [torch.nn.Parameter(p.detach().clone()) for p in params]
        other, again = AdamW(copies, lr=0.02), AdamW(ref, lr=0.02)
        # A saved state (deepcopy, as torch.save/torch.load): torch 2's load_state_dict keeps the
        # given tensors, so an unsaved state_dict would share its buffers with `source`.
        other.load_state_dict(copy.deepcopy(source.state_dict()))
        again.load_state_dict(copy.deepcopy(other.state_dict()))
        g = torch.Generator().manual_seed(99)
        for p, q in zip(copies, ref):
            p.grad = torch.randn(p.shape, generator=g)
            q.grad = p.grad.clone()
        other.step()
        again.step()
        for p, q in zip(copies, ref):
            assert np.array_equal(bits(p), bits(q))
            for key in ("exp_avg", "exp_avg_sq"):
                assert np.array_equal(bits(other.state[p][key]), bits(again.state[q][key]))
            assert int(other.state[p]["step"]) == int(again.state[q]["step"]) == 3
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    other = AdamW(copies, lr=0.02)
    other.load_state_dict(copy.deepcopy(opt.state_dict()))
    for p, q in zip(params, copies):
        p.grad = torch.ones(p.shape)
        q.grad = torch.ones(q.shape)
    opt.step()
    other.step()
    for p, q in zip(params, copies):  # loaded from our own state: the bits of continuing
        assert np.array_equal(bits(p), bits(q))


def test_equal_to_the_cpp_trainers_adamw():
    """Two steps of samebits.Trainer (optim.name=adamw, no clip): from its weights and state after
    step 1 and its batch gradient of step 2, samebits.torch.AdamW (weight decay on the tensors of two
    or more dimensions, the trainer's rule, by a second group) gives its weights and state after
    step 2, bit for bit, on every tensor."""
    wd, betas, eps = 0.01, (0.9, 0.95), 1e-8
    overrides = dict(SMALL, **{"optim.name": "adamw", "optim.clip": 0, "optim.weight_decay": wd,
                               "optim.adam_betas": betas, "optim.adam_eps": eps, "train.steps": 2})
    trainer = samebits.Trainer(samebits.Config.from_ini(None, overrides))
    trainer.step()
    before = trainer.export_state()
    stats = trainer.step()
    after, grads, state = trainer.params, trainer.grads, trainer.optimizer_state
    params = {}
    for name, w in before.params.items():
        p = torch.nn.Parameter(torch.from_numpy(w.copy()))
        p.grad = torch.from_numpy(np.array(grads[name]))
        params[name] = p
    assert any(p.ndim < 2 for p in params.values()) and any(p.ndim >= 2 for p in params.values())
    opt = AdamW([{"params": [p for p in params.values() if p.ndim >= 2], "weight_decay": wd},
                 {"params": [p for p in params.values() if p.ndim < 2], "weight_decay": 0.0}],
                lr=stats["lr"], betas=betas, eps=eps)
    for name, p in params.items():
        opt.state[p] = {"step": torch.tensor(1.0)}
        for key in ("exp_avg", "exp_avg_sq"):
            opt.state[p][key] = torch.from_numpy(before.optimizer[f"{name}/{key}"].copy()).reshape(p.shape)
    opt.step()
    for name, p in params.items():
        assert np.array_equal(bits(p), np.asarray(after[name]).view(np.uint32)), name
        for key in ("exp_avg", "exp_avg_sq"):
            theirs = np.asarray(state[f"{name}/{key}"]).reshape(-1).view(np.uint32)
            assert np.array_equal(bits(opt.state[p][key]).reshape(-1), theirs), (name, key)
    trainer.close()


def test_follows_the_cpp_trainer_from_its_first_step():
    """From samebits.Trainer's initial weights (optim.name=adamw, clipping on), fed its clipped
    gradient and lr of each step, samebits.torch.AdamW from a fresh state has its weights after
    every one of 4 steps, bit for bit (the step counts 1, 2, 3, 4 of the bias correction)."""
    wd, betas = 0.1, (0.9, 0.95)
    overrides = dict(SMALL, **{"optim.name": "adamw", "optim.clip": 0.5, "optim.weight_decay": wd,
                               "optim.adam_betas": betas, "train.steps": 4, "train.warmup": 2})
    trainer = samebits.Trainer(samebits.Config.from_ini(None, overrides))
    params = {name: torch.nn.Parameter(torch.from_numpy(np.array(w))) for name, w in trainer.params.items()}
    opt = AdamW([{"params": [p for p in params.values() if p.ndim >= 2], "weight_decay": wd},
                 {"params": [p for p in params.values() if p.ndim < 2], "weight_decay": 0.0}], betas=betas)
    for _ in range(4):
        stats = trainer.step()
        for name, p in params.items():
            p.grad = torch.from_numpy(np.array(trainer.grads[name]))
        for group in opt.param_groups:
            group["lr"] = stats["lr"]
        opt.step()
        for name, p in params.items():
            assert np.array_equal(bits(p), np.asarray(trainer.params[name]).view(np.uint32)), (stats["step"], name)
    assert stats["clip_scale"] < 1
    trainer.close()


def test_a_step_count_per_parameter_and_a_parameter_without_gradient_kept():
    params, g = make_params(3)
    alone = [torch.nn.Parameter(params[0].detach().clone())]
    opt, opt_alone = AdamW(params, lr=0.02), AdamW(alone, lr=0.02)
    kept = bits(params[1])
    for step in range(3):
        params[0].grad = torch.randn(params[0].shape, generator=g)
        alone[0].grad = params[0].grad.clone()
        params[2].grad = torch.randn(params[2].shape, generator=g) if step == 2 else None
        opt.step()
        opt_alone.step()
    assert np.array_equal(bits(params[1]), kept) and len(opt.state[params[1]]) == 0
    assert int(opt.state[params[0]]["step"]) == 3 and int(opt.state[params[2]]["step"]) == 1
    assert np.array_equal(bits(params[0]), bits(alone[0]))
    fresh = torch.nn.Parameter(make_params(3)[0][2].detach().clone())  # its first update: step 1's bias correction
    fresh.grad = params[2].grad.clone()
    AdamW([fresh], lr=0.02).step()
    assert np.array_equal(bits(params[2]), bits(fresh))
