"""samebits.torch.deterministic on CUDA tensors (a device session: CTest test_python_cuda, label gpu,
and scripts/gpu-check): every op of the table (test_torch_deterministic's cases) gives on a GPU the
bits it gives on the CPU, and a nanoGPT-style GPT trained 5 steps under the mode on the GPU (its
products on samebits' CUDA GEMM, its rows and reductions on core/cuda/torch_ops.cu) ends with the
CPU run's parameters bit for bit; positive control: without the mode the GPU's step (cuBLAS,
PyTorch's CUDA kernels) differs from the CPU's. Skipped when torch sees no CUDA device; without a
CUDA build of samebits a CUDA tensor under the mode is refused by name."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
import samebits.torch as sbt  # noqa: E402

from test_torch_deterministic import _cases  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to torch", allow_module_level=True)

BUILT_WITH_CUDA = samebits._load()._built_with_cuda


def bits(t):
    return t.detach().float().cpu().numpy().view(np.uint32).copy()


def on_cuda(fn):
    """fn with every CPU tensor it closes over moved to the GPU (its cell contents replaced)."""
    cells = fn.__closure__ or ()
    saved = [c.cell_contents for c in cells]
    for c in cells:
        if isinstance(c.cell_contents, torch.Tensor):
            c.cell_contents = c.cell_contents.cuda()
    try:
        return fn()
    finally:
        for c, v in zip(cells, saved):
            c.cell_contents = v


# PyTorch's SDPA on CUDA tensors picks its fused CUDA kernels, which are outside the table (strict
# mode refuses them by name); under the mode a program selects the math path
# (torch.nn.attention.sdpa_kernel(SDPBackend.MATH)), whose ops are the table's.
CASES = [c for c in _cases() if not c[0].startswith("sdpa")]


@pytest.mark.skipif(not BUILT_WITH_CUDA, reason="samebits built without CUDA")
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_op_on_the_gpu_gives_the_cpus_bits(name, fn):
    with sbt.deterministic():
        cpu = fn()
        gpu = on_cuda(fn)
    assert gpu.device.type == "cuda"
    assert np.array_equal(bits(gpu), bits(cpu)), name


def train(device, mode, steps=5):
    from samebits.torch.nanogpt import GPT, GPTShape
    torch.manual_seed(0)
    model = GPT(GPTShape(vocab=128, seq_len=32, n_layer=2, n_head=4, n_embd=64)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    ctx = sbt.deterministic() if mode else torch.enable_grad()
    with ctx:
        for _ in range(steps):
            tokens = torch.randint(0, 128, (4, 33), generator=g).to(device)
            loss = model(tokens[:, :-1], tokens[:, 1:])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    return [bits(p) for p in model.parameters()]


@pytest.mark.skipif(not BUILT_WITH_CUDA, reason="samebits built without CUDA")
def test_nanogpt_on_the_gpu_gives_the_cpus_parameters():
    cpu, gpu = train("cpu", True), train("cuda", True)
    assert all(np.array_equal(a, b) for a, b in zip(cpu, gpu))
    # Positive control: PyTorch's own CPU and CUDA kernels part.
    assert not all(np.array_equal(a, b) for a, b in zip(train("cpu", False), train("cuda", False)))


@pytest.mark.skipif(BUILT_WITH_CUDA, reason="samebits built with CUDA")
def test_without_a_cuda_build_a_cuda_tensor_is_refused_by_name():
    x = torch.randn(4, 4, device="cuda")
    with pytest.raises(RuntimeError, match="aten::mm.*built without CUDA"):
        with sbt.deterministic():
            x @ x
