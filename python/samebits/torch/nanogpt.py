"""A nanoGPT-style GPT in plain PyTorch (token and position embeddings, pre-LayerNorm blocks of
causal self-attention and a GELU MLP, a tied head) and its training loop under samebits.torch's
Recorder: the PyTorch program docs/TORCH.md, notebooks/torch_divergence.ipynb and
bench/torch_recorder.py study. Written for this package; the data is seeded random tokens."""
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class GPTShape:
    vocab: int = 64
    seq_len: int = 16
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32


GPT2_124M = GPTShape(vocab=50257, seq_len=1024, n_layer=12, n_head=12, n_embd=768)


class Attention(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.n_head = s.n_head
        self.qkv = nn.Linear(s.n_embd, 3 * s.n_embd)
        self.proj = nn.Linear(s.n_embd, s.n_embd)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.fc = nn.Linear(s.n_embd, 4 * s.n_embd)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * s.n_embd, s.n_embd)

    def forward(self, x):
        return self.fc2(self.act(self.fc(x)))


class Block(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(s.n_embd), Attention(s)
        self.ln_2, self.mlp = nn.LayerNorm(s.n_embd), MLP(s)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, s=GPTShape(), seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.shape = s
        self.wte, self.wpe = nn.Embedding(s.vocab, s.n_embd), nn.Embedding(s.seq_len, s.n_embd)
        self.h = nn.ModuleList(Block(s) for _ in range(s.n_layer))
        self.ln_f = nn.LayerNorm(s.n_embd)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))

    def hidden_matrices(self):
        """The blocks' 2-D weights (Muon's matrices); the rest (embeddings, norms, biases) for AdamW."""
        return [p for n, p in self.named_parameters() if p.dim() == 2 and n.startswith("h.")]


def batches(shape, batch, steps, seed=1, rank=0, world=1):
    """Seeded random token batches; under `world` ranks each takes its contiguous rows of every batch."""
    g = torch.Generator().manual_seed(seed)
    rows = batch // world
    for _ in range(steps):
        tokens = torch.randint(0, shape.vocab, (batch, shape.seq_len + 1), generator=g)
        tokens = tokens[rank * rows:(rank + 1) * rows]
        yield tokens[:, :-1], tokens[:, 1:]
