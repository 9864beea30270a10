"""PyTorch equals samebits: a GPT written here in PyTorch, op for op samebits' default model
(experiments/configs/default.ini: LayerNorm, biases, tanh-GELU, causal attention through matmul
and softmax, tied head), initialized from the trainer's step-0 weights and fed its batches
(Trainer.leaf_tokens), trained under samebits.torch.deterministic() with samebits.torch.Leaves
(the trainer's leaves of 4 sequences, summed exactly), clip_grad_norm_ and samebits.torch.AdamW or
samebits.torch.Muon + AdamW, gives the trainer's loss and every parameter's bits after each of 10
steps. Where PyTorch's own formulation would round differently, the model says so and uses
samebits' form: the fused cross-entropy (samebits.torch.functional.cross_entropy, the trainer's
loss and gradient) and the tied embedding's gradient (the head's dW, then each token's row added
in token order, as the trainer's embedding backward). Positive control: PyTorch's cross_entropy in
place of the fused one parts by step 1."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import samebits  # noqa: E402
import samebits.torch as sbt  # noqa: E402
from samebits.torch import functional  # noqa: E402

from conftest import DEFAULT_INI, run_cli  # noqa: E402

STEPS = 10
BASE = {"train.steps": 50, "run.threads": 1, "run.progress": "off", "train.eval_every": 0,
        "train.checkpoint_every": 0}


class _Head(torch.autograd.Function):
    """logits = h·wteᵀ; its dW for wte is left in `stash` for the embedding's backward."""
    @staticmethod
    def forward(ctx, h, w, stash):
        ctx.save_for_backward(h, w)
        ctx.stash = stash
        return h @ w.t()

    @staticmethod
    def backward(ctx, dlogits):
        h, w = ctx.saved_tensors
        ctx.stash.append(dlogits.t() @ h)
        return dlogits @ w, None, None


class _Embedding(torch.autograd.Function):
    """wte[idx]; wte's gradient: the head's dW, then the rows of the tokens in order (the trainer's)."""
    @staticmethod
    def forward(ctx, idx, w, stash):
        ctx.save_for_backward(idx)
        ctx.stash, ctx.shape = stash, w.shape
        return w[idx]

    @staticmethod
    def backward(ctx, dout):
        (idx,) = ctx.saved_tensors
        dw = ctx.stash.pop() if ctx.stash else torch.zeros(ctx.shape)
        dy = dout.reshape(-1, ctx.shape[1]).contiguous()
        tokens = idx.reshape(-1).to(torch.int32).contiguous()
        sbt.ops.module()._op_embedding_backward(dw.data_ptr(), dy.data_ptr(), tokens.data_ptr(), tokens.numel(),
                                                ctx.shape[1], ctx.shape[0])
        return None, dw, None


class GPT(torch.nn.Module):
    def __init__(self, params, n_head, fused_loss=True):
        super().__init__()
        self.names = list(params)
        self.p = torch.nn.ParameterList(torch.nn.Parameter(torch.tensor(np.array(params[n]))) for n in self.names)
        self.n_head, self.fused_loss = n_head, fused_loss
        self.stash = []

    def w(self, name):
        return self.p[self.names.index(name)]

    def forward(self, x, y, rows_out=None):
        B, T = x.shape
        C = self.w("wte").shape[1]
        hs = C // self.n_head
        scale = float(torch.tensor(1.0) / torch.sqrt(torch.tensor(float(hs))))  # ops::attention_scale in fp32
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        h = _Embedding.apply(x, self.w("wte"), self.stash) + self.w("wpe")[:T]
        for layer in range(sum(n.endswith(".ln1.w") for n in self.names)):
            p = lambda n: self.w(f"h.{layer}.{n}")  # noqa: E731
            a = F.linear(F.layer_norm(h, (C,), p("ln1.w"), p("ln1.b"), 1e-5), p("attn.qkv.w"), p("attn.qkv.b"))
            q, k, v = (z.view(B, T, self.n_head, hs).transpose(1, 2) for z in a.split(C, dim=2))
            att = ((q @ k.transpose(-2, -1)) * scale).masked_fill(~mask, float("-inf")).softmax(dim=-1)
            a = (att @ v).transpose(1, 2).reshape(B, T, C)
            h = h + F.linear(a, p("attn.proj.w"), p("attn.proj.b"))
            m = F.linear(F.layer_norm(h, (C,), p("ln2.w"), p("ln2.b"), 1e-5), p("mlp.fc.w"), p("mlp.fc.b"))
            h = h + F.linear(F.gelu(m, approximate="tanh"), p("mlp.proj.w"), p("mlp.proj.b"))
        h = F.layer_norm(h, (C,), self.w("lnf.w"), self.w("lnf.b"), 1e-5).reshape(B * T, C)
        logits = _Head.apply(h, self.w("wte"), self.stash)
        if self.fused_loss:
            return functional.cross_entropy(logits, y.reshape(-1), rows_out)
        return F.cross_entropy(logits, y.reshape(-1))


def _bits(t):
    return np.asarray(t, dtype=np.float32).view(np.uint32)


def pytorch_side(optimizer, params, config, fused_loss=True):
    """The PyTorch GPT from `params` (name → array), its optimizers as the trainer's and its Leaves."""
    model = GPT(params, int(config["model.n_head"]), fused_loss)
    betas = tuple(float(b) for b in config["optim.adam_betas"].split(","))
    adam_eps = float(config["optim.adam_eps"])
    if optimizer == "adamw":
        opts = [sbt.AdamW(model.parameters(), lr=0.0, betas=betas, eps=adam_eps, weight_decay=0.0)]
    else:
        hidden = [model.w(n) for n in model.names if n.startswith("h.") and model.w(n).dim() == 2]
        others = [model.w(n) for n in model.names if not (n.startswith("h.") and model.w(n).dim() == 2)]
        opts = [sbt.Muon(hidden, lr=0.0, weight_decay=0.0, momentum=float(config["optim.momentum"]), nesterov=True,
                         eps=float(config["optim.ns_eps"]), ns_steps=int(config["optim.ns_steps"]), ns_table="keller",
                         scale="shape", momentum_form="sum"),
                sbt.AdamW(others, lr=0.0, betas=betas, eps=adam_eps, weight_decay=0.0)]
    return model, opts, sbt.Leaves(model.parameters(), leaf_size=int(config["data.leaf_size"]))


def torch_step(model, opts, acc, tokens, leaves, clip, lr, adam_lr, momentum):
    """One step of the PyTorch GPT on the step's leaves (rows of tokens); returns its loss."""
    rows = []
    acc.zero()
    acc.accumulate(lambda a, b: model(a, b, rows), tokens[:, :-1], tokens[:, 1:])
    acc.reduce(leaves)
    sbt.clip_grad_norm_(model.parameters(), clip)
    if len(opts) == 1:
        opts[0].param_groups[0]["lr"] = lr
    else:
        opts[0].param_groups[0].update(lr=lr, momentum=momentum)
        opts[1].param_groups[0]["lr"] = adam_lr
    for o in opts:
        o.step()
    return functional.exact_mean(rows) if rows else None


def train_side_by_side(optimizer, fused_loss=True, steps=STEPS):
    """The trainer (samebits.Trainer, in this process) and the PyTorch GPT step by step: the first
    step where their loss or any parameter's bits part (0: none in `steps`)."""
    torch.set_num_threads(1)
    overrides = dict(BASE, **({"optim.name": "adamw", "optim.lr": 3e-3} if optimizer == "adamw" else {}))
    config = samebits.Config.from_ini(samebits_default_ini(), overrides)
    trainer = samebits.Trainer(config)
    leaves = int(config["data.leaves"])
    model, opts, acc = pytorch_side(optimizer, {n: v for n, v in trainer.params.items()}, config, fused_loss)
    with sbt.deterministic():
        for step in range(1, steps + 1):
            tokens = torch.tensor(np.concatenate([trainer.leaf_tokens(step, i) for i in range(leaves)])).long()
            stats = trainer.step()
            loss = torch_step(model, opts, acc, tokens, leaves, float(config["optim.clip"]), stats["lr"],
                              stats["adam_lr"], stats["muon_momentum"])
            same = loss is None or _bits(loss) == _bits(stats["loss"])
            for name in model.names:
                same = same and np.array_equal(_bits(model.w(name).detach()), _bits(trainer.params[name]))
            if not same:
                return step
    trainer.close()
    return 0


def read_safetensors(path):
    """name → float32 array of a safetensors file of F32 tensors (its 8-byte header length, JSON, data)."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(t["shape"])
    return out


def samebits_default_ini():
    return DEFAULT_INI


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_pytorch_gpt_gives_the_trainers_losses_and_weights_bit_for_bit(optimizer):
    assert train_side_by_side(optimizer) == 0


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_pytorch_gpt_from_an_export_gives_the_runs_losses_and_fingerprints(cli, tmp_path, optimizer):
    """`samebits train` for 10 steps, `samebits export --step 0`; the PyTorch GPT from the export,
    fed the run's batches with its learning rates, gives every step's loss and per-tensor
    parameter fingerprint of the run file, bit for bit."""
    torch.set_num_threads(2)
    run = str(tmp_path / "run.h5")
    overrides = {"train.steps": STEPS, "train.warmup": 2, "train.snapshot_steps": 0, "train.eval_every": 0,
                 "train.checkpoint_every": 0, "run.threads": 2, "run.progress": "off", "run.out": run}
    if optimizer == "adamw":
        overrides.update({"optim.name": "adamw", "optim.lr": 3e-3})
    run_cli(cli, "train", samebits_default_ini(), *[f"--{k}={v}" for k, v in overrides.items()])
    run_cli(cli, "export", run, "--step", "0", str(tmp_path / "init.safetensors"))
    recorded = samebits.open_run(run)
    config = samebits.Config.from_ini(samebits_default_ini(), {k: v for k, v in overrides.items() if k != "run.out"})
    sampler = samebits.Trainer(config)  # its batches only: Trainer.leaf_tokens
    leaves = int(config["data.leaves"])
    model, opts, acc = pytorch_side(optimizer, read_safetensors(str(tmp_path / "init.safetensors")), config)
    names = [n for n, _ in recorded.tensors]
    assert names == model.names
    lr, adam_lr, momentum = (recorded.series(c) for c in ("lr", "adam_lr", "muon_momentum"))
    losses, fingerprints = recorded.series("loss"), recorded.series("param_fingerprint")
    fingerprint = sbt.ops.module()._fingerprint_raw
    with sbt.deterministic():
        for step in range(1, STEPS + 1):
            tokens = torch.tensor(np.concatenate([sampler.leaf_tokens(step, i) for i in range(leaves)])).long()
            loss = torch_step(model, opts, acc, tokens, leaves, float(config["optim.clip"]), float(lr[step - 1]),
                              float(adam_lr[step - 1]), float(momentum[step - 1]))
            assert _bits(loss) == _bits(losses[step - 1]), step
            got = [fingerprint(model.w(n).detach().numpy()) for n in names]
            assert got == [int(x) for x in fingerprints[step - 1]], step
    sampler.close()


def test_positive_control_pytorch_cross_entropy_parts_at_step_1():
    assert train_side_by_side("adamw", fused_loss=False, steps=2) == 1
