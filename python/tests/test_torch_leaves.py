"""samebits.torch.Leaves: the exact sum of leaf gradients. The same global batch in any micro-batch
split and order gives the same .grad bits; under torch.distributed (gloo, file rendezvous) 1, 2, 3
and 4 ranks training a nanoGPT-style model with samebits.torch.AdamW give one process's parameters
bit for bit, and their Recorder runs (leaves=: the leaf statistics and noise scale recorded) are
IDENTICAL under `samebits diff`. Positive controls: the same leaf gradients summed in fp32 in another order, and
torch's own data-parallel mean (an fp32 all-reduce of each rank's mean gradient), differ. Bad
arguments are refused."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import samebits  # noqa: E402
from samebits.torch import Leaves  # noqa: E402
from samebits.torch.nanogpt import GPT, GPTShape  # noqa: E402

from conftest import run_cli  # noqa: E402

SHAPE = GPTShape(vocab=32, seq_len=8, n_layer=1, n_head=2, n_embd=16)
ROWS = 6


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, SHAPE.vocab, (ROWS, SHAPE.seq_len + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def leaf_loss(model):
    return lambda x, y: model(x, y) * y.numel()  # the leaf's summed loss (its mean times its tokens)


def grad_bits(model):
    return [p.grad.detach().numpy().view(np.uint32).copy() for p in model.parameters()]


def test_micro_batch_splits_and_orders_do_not_move_a_bit():
    torch.set_num_threads(1)
    x, y = batch()
    model = GPT(SHAPE, seed=0)
    leaves = Leaves(model.parameters(), leaf_size=1)
    whole = leaves.backward(leaf_loss(model), x, y, divisor=y.numel())
    reference = grad_bits(model)
    for splits in ([(0, 2), (2, 6)], [(4, 6), (0, 4)], [(3, 6), (0, 1), (1, 3)]):
        leaves.zero()
        for a, b in splits:
            leaves.accumulate(leaf_loss(model), x[a:b], y[a:b])
        loss = leaves.reduce(y.numel())
        assert loss.numpy().view(np.uint32) == whole.numpy().view(np.uint32), splits
        for got, want in zip(grad_bits(model), reference):
            assert np.array_equal(got, want), splits
    # Positive control: the same leaf gradients added in fp32, forward and in reverse, differ.
    per_leaf = []
    for r in range(ROWS):
        model.zero_grad(set_to_none=True)
        leaf_loss(model)(x[r:r + 1], y[r:r + 1]).backward()
        per_leaf.append([p.grad.clone() for p in model.parameters()])
    forward = [sum(g[i] for g in per_leaf) for i in range(len(reference))]
    backward = [sum(g[i] for g in reversed(per_leaf)) for i in range(len(reference))]
    assert any(not torch.equal(a, b) for a, b in zip(forward, backward))
    # And the exact sum is within an fp32 rounding of the fp64 sum (an outside reference).
    exact = [sum(g[i].double() for g in per_leaf) / y.numel() for i in range(len(reference))]
    leaves.backward(leaf_loss(model), x, y, divisor=y.numel())
    for p, e in zip(model.parameters(), exact):
        assert torch.allclose(p.grad.double(), e, rtol=1e-6, atol=1e-9)


def test_refusals():
    model = GPT(SHAPE, seed=0)
    with pytest.raises(ValueError, match="leaf_size"):
        Leaves(model.parameters(), leaf_size=0)
    with pytest.raises(TypeError, match="float32"):
        Leaves([torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))])
    leaves = Leaves(model.parameters(), leaf_size=4)
    x, y = batch()
    with pytest.raises(ValueError, match="whole number of leaves"):
        leaves.accumulate(leaf_loss(model), x, y)
    with pytest.raises(ValueError, match="no leaf"):
        Leaves(model.parameters()).reduce(1.0)


# One rank of a 3-step run (gloo over a file rendezvous): Leaves' exact gradient, or torch's own
# data-parallel mean (each rank's mean gradient all-reduced in fp32, then divided by the world);
# samebits.torch.AdamW; rank 0 writes the parameters' bytes.
RANK_SCRIPT = r"""
import sys
import numpy as np
import torch
import torch.distributed as dist
from samebits.torch import AdamW, Leaves, Recorder
from samebits.torch.nanogpt import GPT, GPTShape
rank, world, store, out, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
torch.set_num_threads(1)
if world > 1:
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
shape = GPTShape(vocab=32, seq_len=8, n_layer=1, n_head=2, n_embd=16)
model = GPT(shape, seed=0)
opt = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
leaves = Leaves(model.parameters(), leaf_size=1)
g = torch.Generator().manual_seed(1)
with Recorder(out[:-4] + ".h5", model, opt, experiment={"test": "leaves"}, tokens_per_step=48,
              leaves=leaves if mode == "leaves" else None) as rec:
    for step in range(3):
        tokens = torch.randint(0, shape.vocab, (6, shape.seq_len + 1), generator=g)
        x, y = tokens[:, :-1], tokens[:, 1:]
        if mode == "leaves":
            loss = leaves.backward(lambda a, b: model(a, b) * b.numel(), x, y, divisor=y.numel())
        else:
            rows = slice(6 * rank // world, 6 * (rank + 1) // world)
            model.zero_grad(set_to_none=True)
            loss = model(x[rows], y[rows])
            loss.backward()
            if world > 1:
                for p in model.parameters():
                    dist.all_reduce(p.grad)
                    p.grad /= world
        opt.step()
        rec.step(loss)
if rank == 0:
    np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]).tofile(out)
if world > 1:
    dist.destroy_process_group()
"""


def train(world, mode, tmp):
    script = os.path.join(tmp, "rank.py")
    with open(script, "w") as f:
        f.write(RANK_SCRIPT)
    store = os.path.join(tmp, f"store-{mode}-{world}")
    out = os.path.join(tmp, f"params-{mode}-{world}.bin")
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")  # no route out needed
    procs = [subprocess.Popen([sys.executable, script, str(r), str(world), store, out, mode], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    for p in procs:
        output, _ = p.communicate(timeout=300)
        assert p.returncode == 0, output
    return np.fromfile(out, dtype=np.uint32)


@pytest.mark.skipif(not dist.is_gloo_available(), reason="torch.distributed without gloo")
def test_one_two_three_and_four_ranks_give_one_process_bits(cli):
    with tempfile.TemporaryDirectory() as tmp:
        one = train(1, "leaves", tmp)
        runs = {w: os.path.join(tmp, f"params-leaves-{w}.h5") for w in (1, 2, 3, 4)}
        for world in (2, 3, 4):
            assert np.array_equal(train(world, "leaves", tmp), one), world
            # Recorded: every step's loss, fingerprints and statistics are one process's.
            assert run_cli(cli, "diff", runs[1], runs[world], check=False).returncode == 0, world
        run = samebits.open_run(runs[3])
        assert np.isfinite(run.series("noise_scale")).all() and np.isfinite(run.series("leaf_sq_mean")).all()
        assert np.isfinite(run.series("per_tensor/noise_scale")).all()
        assert "gradient_sum = exact leaves" in run.config_text and "world_size = 3" in run.config_text
        # Positive control: torch's fp32 data-parallel mean at 3 ranks is not one process's.
        assert not np.array_equal(train(3, "torch", tmp), train(1, "torch", tmp))
        torch_runs = [os.path.join(tmp, f"params-torch-{w}.h5") for w in (1, 3)]
        assert run_cli(cli, "diff", *torch_runs, check=False).returncode == 1
