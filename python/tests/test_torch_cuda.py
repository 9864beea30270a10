"""samebits.torch on CUDA tensors (a device session: CTest test_python_cuda, label gpu, and
scripts/gpu-check): Muon's, AdamW's and clip_grad_norm_'s results on samebits' CUDA backend are bit
for bit the CPU's (the contract's CPU = GPU row) — Muon after 1 and several steps in both momentum
forms, with and without Nesterov; AdamW after 1 and 4 steps; the clipped gradient and its norm;
state_dict round trips bitwise on the GPU. Without a CUDA build a CUDA parameter is a TypeError
naming the missing CUDA. Skipped when torch sees no CUDA device."""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
from samebits.torch import AdamW, Muon, clip_grad_norm_  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to torch", allow_module_level=True)

BUILT_WITH_CUDA = samebits._load()._built_with_cuda
needs_cuda_build = pytest.mark.skipif(not BUILT_WITH_CUDA, reason="samebits built without CUDA")

SHAPES = [(48, 32), (32, 80), (17, 17), (256, 96)]
OPTIONS = [dict(lr=0.02, weight_decay=0.01), dict(lr=0.01, nesterov=False, momentum_form="sum"),
           dict(lr=0.02, ns_table="polar_express", adjust_lr_fn="match_rms_adamw")]


def bits(t):
    return t.detach().cpu().numpy().view(np.uint32).copy()


def run_steps(device, steps, **kw):
    """Muon on SHAPES, `steps` steps of seeded gradients on `device`; the parameters and optimizer."""
    g = torch.Generator().manual_seed(11)
    params = [torch.nn.Parameter((torch.randn(s, generator=g) * 0.1).to(device)) for s in SHAPES]
    opt = Muon(params, **kw)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g).to(device)
        opt.step()
    return params, opt


@needs_cuda_build
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("steps", [1, 4])
def test_cuda_update_is_the_cpu_update_bit_for_bit(options, steps):
    cpu, cpu_opt = run_steps("cpu", steps, **options)
    gpu, gpu_opt = run_steps("cuda", steps, **options)
    for p, q in zip(cpu, gpu):
        assert q.device.type == "cuda"
        assert np.array_equal(bits(p), bits(q)), tuple(p.shape)
        assert np.array_equal(bits(cpu_opt.state[p]["momentum_buffer"]), bits(gpu_opt.state[q]["momentum_buffer"]))


@needs_cuda_build
def test_cuda_state_dict_round_trip_is_bitwise():
    params, opt = run_steps("cuda", 2, lr=0.02)
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    other = Muon(copies, lr=0.02)
    # A saved state (deepcopy, as torch.save/torch.load): torch 2's load_state_dict keeps the
    # given tensors, so an unsaved state_dict would share its buffers with `opt`.
    other.load_state_dict(copy.deepcopy(opt.state_dict()))
    g = torch.Generator().manual_seed(99)
    for p, q in zip(params, copies):
        p.grad = torch.randn(p.shape, generator=g).cuda()
        q.grad = p.grad.clone()
    opt.step()
    other.step()
    for p, q in zip(params, copies):
        assert other.state[q]["momentum_buffer"].device.type == "cuda"
        assert np.array_equal(bits(p), bits(q))
        assert np.array_equal(bits(opt.state[p]["momentum_buffer"]), bits(other.state[q]["momentum_buffer"]))


def run_adamw(device, steps, clip=None):
    """AdamW (and clip_grad_norm_ before each step when `clip`) on SHAPES and a vector, `steps` steps
    of seeded gradients on `device`; the parameters, the optimizer and the norms."""
    g = torch.Generator().manual_seed(13)
    params = [torch.nn.Parameter((torch.randn(s, generator=g) * 0.1).to(device)) for s in SHAPES + [(300000,)]]
    opt = AdamW(params, lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
    norms = []
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g).to(device)
        if clip is not None:
            norms.append(clip_grad_norm_(params, clip).item())
        opt.step()
    return params, opt, norms


@needs_cuda_build
@pytest.mark.parametrize("steps", [1, 4])
@pytest.mark.parametrize("clip", [None, 100.0])
def test_cuda_adamw_and_clipping_are_the_cpu_bit_for_bit(steps, clip):
    cpu, cpu_opt, cpu_norms = run_adamw("cpu", steps, clip)
    gpu, gpu_opt, gpu_norms = run_adamw("cuda", steps, clip)
    assert cpu_norms == gpu_norms
    for p, q in zip(cpu, gpu):
        assert q.device.type == "cuda" and gpu_opt.state[q]["exp_avg"].device.type == "cuda"
        assert np.array_equal(bits(p), bits(q)), tuple(p.shape)
        for key in ("exp_avg", "exp_avg_sq"):
            assert np.array_equal(bits(cpu_opt.state[p][key]), bits(gpu_opt.state[q][key]))


@needs_cuda_build
def test_cuda_adamw_state_dict_round_trip_is_bitwise():
    params, opt, _ = run_adamw("cuda", 2)
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    other = AdamW(copies, lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
    other.load_state_dict(copy.deepcopy(opt.state_dict()))
    for p, q in zip(params, copies):
        p.grad = torch.ones(p.shape, device="cuda")
        q.grad = p.grad.clone()
    opt.step()
    other.step()
    for p, q in zip(params, copies):
        assert np.array_equal(bits(p), bits(q))
        assert np.array_equal(bits(opt.state[p]["exp_avg_sq"]), bits(other.state[q]["exp_avg_sq"]))


@pytest.mark.skipif(BUILT_WITH_CUDA, reason="samebits built with CUDA")
def test_without_a_cuda_build_a_cuda_parameter_is_refused():
    p = torch.nn.Parameter(torch.zeros(4, 4, device="cuda"))
    p.grad = torch.ones(4, 4, device="cuda")
    for run in (lambda: Muon([p]).step(), lambda: AdamW([p]).step(), lambda: clip_grad_norm_([p], 1.0)):
        with pytest.raises(TypeError, match="built without CUDA"):
            run()
