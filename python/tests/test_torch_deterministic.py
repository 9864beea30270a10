"""samebits.torch.deterministic: a PyTorch program's bits on any thread count, micro-batch split and
world size. A nanoGPT-style GPT trained 20 steps with torch.optim.AdamW and torch's clip_grad_norm_
(samebits.torch.example, a process per run, recorded with the Recorder) is IDENTICAL under `samebits diff`
on 1, 2 and 4 threads, on PyTorch's scalar, AVX2 and AVX-512 paths (ATEN_CPU_CAPABILITY) and
samebits' (SAMEBITS_ISA), with 1 or 4 leaves per micro-batch, and on 1, 2 and 3 gloo ranks sharing samebits.torch.Leaves; without
the mode the SIMD pair, the thread pair and torch's data-parallel mean differ (the positive
controls). Each table op is checked against PyTorch's (an outside reference, with a
tolerance) and bitwise across thread counts; strict mode refuses an op outside the table by name,
before it computes. Hugging Face models: test_torch_deterministic_hf.py."""
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import samebits  # noqa: E402
import samebits.torch as sbt  # noqa: E402
from samebits.torch import example  # noqa: E402

from conftest import run_cli  # noqa: E402

def diff(cli, a, b):
    return run_cli(cli, "diff", a, b, check=False).returncode


def programs(cli, tmp_path, model):
    """The acceptance rows for one model (nano here; GPT-2 and Llama in the _hf file)."""
    run = lambda name, *args, **kw: example.run(str(tmp_path / f"{name}.h5"), "--model", model, *args,
                                                       **kw)  # noqa: E731
    one = run("t1", "--threads", "1")
    for threads in (2, 4):
        assert diff(cli, one, run(f"t{threads}", "--threads", str(threads))) == 0, threads
    assert "samebits_kernels = strict, gemm canonical" in samebits.open_run(one).config_text
    # PyTorch's kernels on its scalar and AVX2 paths (ATEN_CPU_CAPABILITY; the AVX-512 path is
    # the default where the CPU has it): the pass-through ops stay PyTorch's.
    assert diff(cli, run("isa0", isa="default"), run("isa2", isa="avx2")) == 0
    assert diff(cli, one, run("isa2b", isa="avx2")) == 0
    # samebits' own per-ISA kernels forced (SAMEBITS_ISA: the row reductions' and the exact GEMM's
    # scalar and AVX2 forms; the canonical GEMM's micro-kernel is the build's), and the exact GEMM.
    for forced in ("scalar", "avx2"):
        assert diff(cli, one, run(f"sb{forced}", samebits_isa=forced)) == 0, forced
    exact = run("exact", "--gemm", "exact", "--steps", "5")
    assert diff(cli, exact, run("exact_scalar", "--gemm", "exact", "--steps", "5", samebits_isa="scalar")) == 0
    assert diff(cli, exact, run("exact2", "--gemm", "exact", "--steps", "5", "--threads", "2")) == 0
    assert diff(cli, run("canonical5", "--steps", "5"), exact) == 1  # positive control: another product
    # Positive controls: PyTorch's own kernels part between the scalar and AVX2 paths, and (GPT-2,
    # nanoGPT: their LayerNorm backward) between 1 and 2 threads.
    assert diff(cli, run("off0", "--mode", "off", isa="default"), run("offisa2", "--mode", "off", isa="avx2")) == 1
    if model != "llama":  # PyTorch's Llama kernels at this size happen to be thread-invariant here
        off1 = run("off1", "--mode", "off", "--threads", "1")
        assert diff(cli, off1, run("off2", "--mode", "off", "--threads", "2")) == 1
    # Leaves: 12 leaves a step as 12 micro-batches of one leaf or 3 of four (on 2 threads), and
    # shared by 2 and 3 gloo ranks.
    leaves = run("l1", "--leaves", "12", "--micro", "1")
    assert diff(cli, leaves, run("l4", "--leaves", "12", "--micro", "4", "--threads", "2")) == 0
    for ranks in (2, 3):
        got = run(f"r{ranks}", "--leaves", "12", "--micro", "2", ranks=ranks, store=str(tmp_path / f"s{ranks}"))
        assert diff(cli, leaves, got) == 0, ranks
    # Positive control: torch's data-parallel mean (an fp32 all-reduce) on 3 ranks against one.
    ddp = run("d3", "--mode", "off", "--leaves", "12", "--ddp", ranks=3, store=str(tmp_path / "sd"))
    assert diff(cli, run("d1", "--mode", "off", "--leaves", "12", "--ddp"), ddp) == 1


def test_nanogpt_same_bits_on_threads_leaves_and_ranks(cli, tmp_path):
    programs(cli, tmp_path, "nano")


# ---- each op against PyTorch (an outside reference) and bitwise across thread counts -----------
def _cases():
    g = torch.Generator().manual_seed(3)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    x, w, b = r(6, 40), r(40), r(40)
    a, m, v = r(5, 7), r(7, 9), r(9)
    q, k, vv = r(2, 4, 16, 8), r(2, 2, 16, 8), r(2, 2, 16, 8)
    labels = torch.tensor([1, 0, 39, 5, -100, 7])
    b1, b2, x3 = r(3, 5, 7), r(3, 7, 4), r(2, 3, 7)
    return [
        ("mm", lambda: a @ m), ("mm transposed", lambda: m.t() @ a.t()), ("addmm", lambda: torch.addmm(v, a, m)),
        ("addmm scaled", lambda: torch.addmm(v, a, m, beta=0.5, alpha=2.0)), ("mv", lambda: m @ v),
        ("bmm", lambda: torch.bmm(b1, b2)), ("linear 3-D", lambda: F.linear(x3, m.t(), v)),
        ("layer_norm", lambda: F.layer_norm(x, (40,), w, b, eps=1e-6)),
        ("layer_norm no affine", lambda: F.layer_norm(x, (40,))),
        ("softmax", lambda: F.softmax(x, dim=0)), ("log_softmax", lambda: F.log_softmax(x, dim=-1)),
        ("cross_entropy ignore", lambda: F.cross_entropy(x, labels)),
        ("cross_entropy weights", lambda: F.cross_entropy(x, labels.clamp(min=0), weight=w.abs())),
        ("gelu", lambda: F.gelu(x)), ("gelu tanh", lambda: F.gelu(x, approximate="tanh")),
        ("silu", lambda: F.silu(x)), ("tanh", lambda: torch.tanh(x)), ("sigmoid", lambda: torch.sigmoid(x)),
        ("exp", lambda: torch.exp(x)), ("log", lambda: torch.log(x.abs() + 0.5)), ("sin", lambda: torch.sin(x)),
        ("cos", lambda: torch.cos(x)), ("rsqrt", lambda: torch.rsqrt(x.abs() + 0.1)), ("pow 3", lambda: x.pow(3)),
        ("pow -2", lambda: (x.abs() + 1).pow(-2)), ("sum", lambda: x.sum()), ("sum dim 0", lambda: x.sum(0)),
        ("mean keepdim", lambda: x.mean(-1, keepdim=True)), ("sum dims 0,2", lambda: q.sum((0, 2))),
        ("var", lambda: x.var(1)), ("std", lambda: x.std()), ("amax", lambda: x.amax(1)),
        ("norm", lambda: torch.linalg.vector_norm(x)), ("norm inf", lambda: torch.linalg.vector_norm(x, float("inf"))),
        ("addcdiv", lambda: torch.addcdiv(x, w, b.abs() + 1, value=-0.3)), ("lerp", lambda: torch.lerp(x, w, 0.9)),
        ("add alpha", lambda: torch.add(x, w, alpha=0.1)), ("clamp", lambda: x.clamp(-0.5, 0.5)),
        ("bf16 mm", lambda: (a.bfloat16() @ m.bfloat16()).float()),
        ("bf16 layer_norm", lambda: F.layer_norm(x.bfloat16(), (40,)).float()),
    ] + ([("sdpa causal gqa", lambda: F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1),
                                                                       vv.repeat_interleave(2, 1), is_causal=True))]
         if hasattr(F, "scaled_dot_product_attention") else [])


@pytest.mark.parametrize("name,fn", _cases(), ids=[c[0] for c in _cases()])
def test_op_matches_pytorch_and_is_thread_invariant(name, fn):
    reference = fn()
    bits = []
    for threads in (1, 2, 4):
        torch.set_num_threads(threads)
        with sbt.deterministic():
            got = fn()
        bits.append(got.detach().numpy().tobytes())
    torch.set_num_threads(1)
    assert bits[0] == bits[1] == bits[2]
    tol = 1e-2 if "bf16" in name else 2e-5
    assert torch.allclose(got, reference, rtol=tol, atol=tol, equal_nan=True), (name, (got - reference).abs().max())


def test_gradients_match_pytorch():
    """Every backward of the table (LayerNorm, softmax, GELU, embedding, the products, the loss)."""
    torch.manual_seed(0)
    from samebits.torch.nanogpt import GPT, GPTShape
    model = GPT(GPTShape(vocab=64, seq_len=16, n_layer=1, n_head=2, n_embd=32))
    x = torch.randint(0, 64, (3, 16))
    model(x, x).backward()
    reference = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with sbt.deterministic():
        model(x, x).backward()
    for p, want in zip(model.parameters(), reference):
        assert torch.allclose(p.grad, want, rtol=1e-4, atol=1e-6)


def test_exact_gemm_is_the_rounded_exact_product():
    """Integer operands (|x| < 2^11) are exact under the exact GEMM's slicing: C is the exact dot
    (Python integers) rounded once to fp32."""
    g = torch.Generator().manual_seed(5)
    a = torch.randint(-2048, 2048, (8, 300), generator=g).float()
    b = torch.randint(-2048, 2048, (300, 6), generator=g).float()
    with sbt.deterministic(gemm="exact"):
        got = a @ b
    ai, bi = a.long().tolist(), b.long().tolist()
    want = torch.tensor([[float(sum(ai[i][p] * bi[p][j] for p in range(300))) for j in range(6)] for i in range(8)],
                        dtype=torch.float64).float()
    assert torch.equal(got, want)
    with sbt.deterministic():
        canonical = a @ b
    assert not torch.equal(canonical, got)  # positive control: the fma chain rounds at every step past 2^24


class _Cumulative(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.lin(x), dim=-1)


def test_strict_refuses_an_op_outside_the_table_by_name_before_it_runs():
    model = torch.nn.Sequential(_Cumulative())
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(2, 4)
    with pytest.raises(RuntimeError, match=r"aten::cumsum .*in the forward of Sequential > _Cumulative"):
        with sbt.deterministic():
            model(x).sum().backward()
    assert all(p.grad is None for p in model.parameters())  # nothing half-applied
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))
    assert not sbt.deterministic_enabled()
    assert torch.equal(model(x), model(x))  # PyTorch runs as before after the error
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sbt.deterministic(strict=False):
            got = model(x)
            again = model(x)
    assert torch.equal(got, again)
    assert sum("aten::cumsum" in str(w.message) for w in caught) == 1  # once per op
    with pytest.raises(ValueError, match="gemm"):
        sbt.deterministic(gemm="fast")
    with pytest.raises(RuntimeError, match=r"aten::cumsum"):  # an op the table does not have, on ints too
        with sbt.deterministic():
            torch.cumsum(torch.randn(3), 0)


def test_enable_and_disable():
    computed, passed = sbt.deterministic_table()
    assert {"aten::mm", "aten::native_layer_norm_backward", "aten::nll_loss_forward"} <= set(computed)
    assert "view" in passed and "mm" not in passed
    a = torch.randn(4, 4)
    sbt.enable(gemm="exact")
    try:
        assert sbt.deterministic_enabled()
        exact = a @ a
    finally:
        sbt.disable()
    assert not sbt.deterministic_enabled()
    with sbt.deterministic(gemm="exact"):
        assert torch.equal(a @ a, exact)
    with pytest.raises(RuntimeError, match="enable"):
        sbt.disable()


def test_bf16_pairs_order():
    """bf16_dot="pairs": bf16 products in the bf16 dot instructions' pair order — the same bits on 1,
    2 and 4 threads, another order than the fp32 chains (positive control: a few of 65 536 outputs
    round to another bf16), within bf16 rounding of the fp64 product; fp32 products keep the chains."""
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(256, 1024, generator=g).bfloat16(), torch.randn(1024, 256, generator=g).bfloat16()
    bits = []
    for threads in (1, 2, 4):
        torch.set_num_threads(threads)
        with sbt.deterministic(bf16_dot="pairs"):
            pairs = a @ b
        bits.append(pairs.float().numpy().tobytes())
    torch.set_num_threads(1)
    assert bits[0] == bits[1] == bits[2]
    with sbt.deterministic():
        chain = a @ b
    assert not torch.equal(pairs, chain)
    reference = a.double() @ b.double()
    assert torch.allclose(pairs.double(), reference, rtol=2e-2, atol=0.1)
    x, y = a.float(), b.float()
    with sbt.deterministic(bf16_dot="pairs"):
        fp32 = x @ y
    with sbt.deterministic():
        assert torch.equal(fp32, x @ y)
    with pytest.raises(ValueError, match="bf16_dot"):
        sbt.deterministic(gemm="exact", bf16_dot="pairs")
