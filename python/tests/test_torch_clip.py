"""samebits.torch.clip_grad_norm_: torch.nn.utils.clip_grad_norm_'s signature, the options it does
not implement refused; bit for bit the C++ trainer's clipping (its ‖G‖ and its clipped gradient,
through samebits.Trainer), in any order of the parameters; within 1e-6 of torch's; a non-finite
norm leaves the gradients as they are (1 vs 2 threads: test_torch_adamw's threads test)."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
from samebits.torch import clip_grad_norm_  # noqa: E402

from conftest import SMALL  # noqa: E402


def bits(t):
    return t.detach().numpy().view(np.uint32).copy()


def with_grads(arrays):
    params = []
    for a in arrays:
        p = torch.nn.Parameter(torch.zeros(a.shape))
        p.grad = torch.from_numpy(np.array(a, dtype=np.float32))
        params.append(p)
    return params


def test_refusals():
    p = with_grads([np.ones(4)])
    for kw in ({"norm_type": 1.0}, {"norm_type": math.inf}, {"max_norm": 0.0}, {"max_norm": -1.0},
               {"foreach": True}):
        with pytest.raises(ValueError):
            clip_grad_norm_(p, **dict({"max_norm": 1.0}, **kw))
    q = torch.nn.Parameter(torch.zeros(4, dtype=torch.float16))
    q.grad = torch.ones(4, dtype=torch.float16)
    with pytest.raises(TypeError, match="float32"):
        clip_grad_norm_([q], 1.0)
    assert clip_grad_norm_([torch.nn.Parameter(torch.zeros(3))], 1.0).item() == 0.0  # no gradient: torch's 0


def test_equal_to_the_cpp_trainers_clipping_in_any_order():
    """One step of samebits.Trainer without clipping gives G and ‖G‖; the same step with
    optim.clip = ‖G‖/3 gives the clipped gradient. clip_grad_norm_ on G, in the layout's order and
    reversed, returns the trainer's ‖G‖ and leaves its clipped gradient, bit for bit."""
    overrides = dict(SMALL, **{"optim.name": "adamw", "optim.clip": 0, "train.steps": 1})
    trainer = samebits.Trainer(samebits.Config.from_ini(None, overrides))
    norm = trainer.step()["grad_norm"]
    raw = {name: np.array(g) for name, g in trainer.grads.items()}
    trainer.close()
    max_norm = norm / 3
    trainer = samebits.Trainer(samebits.Config.from_ini(None, dict(overrides, **{"optim.clip": max_norm})))
    stats = trainer.step()
    clipped = {name: np.array(g) for name, g in trainer.grads.items()}
    trainer.close()
    assert stats["grad_norm"] == norm and stats["clip_scale"] < 1
    for names in (list(raw), list(reversed(raw))):
        params = with_grads([raw[n] for n in names])
        total = clip_grad_norm_(params, max_norm)
        assert total.dtype == torch.float32 and total.item() == norm
        for name, p in zip(names, params):
            assert np.array_equal(bits(p.grad), clipped[name].view(np.uint32)), name


def test_within_1e6_of_torchs_clip_grad_norm():
    g = torch.Generator().manual_seed(5)
    arrays = [torch.randn(s, generator=g).numpy() * 3 for s in ((64, 48), (1000,), (7, 9, 11))]
    ours, theirs = with_grads(arrays), with_grads(arrays)
    for max_norm in (1.0, 1e6):
        a = clip_grad_norm_(ours, max_norm)
        b = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
        assert abs(a.item() - b.item()) <= 1e-6 * b.item()
        for p, q in zip(ours, theirs):
            assert torch.allclose(p.grad, q.grad, rtol=1e-6, atol=0)


def test_a_nonfinite_norm_leaves_the_gradients():
    arrays = [np.array([1.0, np.inf], dtype=np.float32), np.full(3, 2.0, dtype=np.float32)]
    params = with_grads(arrays)
    assert math.isinf(clip_grad_norm_(params, 1.0).item())
    for p, a in zip(params, arrays):
        assert np.array_equal(bits(p.grad), a.view(np.uint32))
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
