#!/usr/bin/python3
"""The PyTorch CPU eager peer of bench/peers: samebits' GPT-2 (LayerNorm with biases, tanh-GELU,
biases, tied head, learned positions) trained on random tokens, timed per step.

  peers_torch.py --layers 12 --width 768 --heads 12 --vocab 50257 --seq 256 --batch 8 \
      --optimizer adamw --threads 1 --steps 3

--autocast bf16: the forward and the loss under CPU autocast to bf16 (oneDNN's bf16 GEMMs: AMX-BF16
where the CPU has it); the weights, gradients and optimizer stay fp32.
--optimizer adamw: torch.optim.AdamW on every tensor (betas 0.9, 0.95, eps 1e-8, no weight decay).
--optimizer muon: Keller Jordan's Muon on the hidden matrices (momentum 0.95 in sum form,
Nesterov, Newton–Schulz quintic a, b, c = 3.4445, -4.7750, 2.0315, 5 steps, X = U / (‖U‖ + 1e-7),
update scaled by √max(1, rows/cols)) and AdamW on the rest: samebits' default optimizer config.
Both clip the global gradient norm at 1.0, as samebits does. A step is zero_grad, forward,
backward, clip and the optimizer step (random batches drawn before the clock starts). Prints one
JSON line: the step times (wall and process CPU), the losses, torch's thread count and the OpenBLAS core of this process.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

p = argparse.ArgumentParser()
for name, default in [("layers", 4), ("width", 128), ("heads", 4), ("vocab", 256), ("seq", 128),
                      ("batch", 32), ("threads", 1), ("steps", 5)]:
    p.add_argument(f"--{name}", type=int, default=default)
p.add_argument("--optimizer", choices=["adamw", "muon"], default="adamw")
p.add_argument("--lr", type=float, default=0.02, help="Muon's learning rate")
p.add_argument("--adam-lr", type=float, default=3e-3)
p.add_argument("--autocast", choices=["off", "bf16"], default="off",
               help="bf16: forward and loss under torch.autocast('cpu', torch.bfloat16) (oneDNN's bf16 kernels)")
a = p.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(a.threads)  # before torch loads OpenBLAS and OpenMP
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(1)


def openblas_core():
    """openblas_get_corename() of the OpenBLAS this process loaded (torch's BLAS)."""
    for path in sorted({ln.split()[-1] for ln in open("/proc/self/maps") if "openblas" in ln}):
        try:
            f = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_char_p
        return f().decode()
    return "none (no OpenBLAS loaded)"


class Block(torch.nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
        self.qkv, self.proj = torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)
        self.fc, self.fc_proj = torch.nn.Linear(c, 4 * c), torch.nn.Linear(4 * c, c)

    def forward(self, x, mask):
        # Attention as batched GEMMs over contiguous (B·H, T, D) blocks: torch 1.13 (Debian's) has
        # no scaled_dot_product_attention, and its 4-D matmul on strided heads is about 2x slower.
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = self.qkv(self.ln_1(x)).view(b, t, 3, self.heads, d).permute(2, 0, 3, 1, 4) \
            .reshape(3, b * self.heads, t, d).unbind(0)
        att = F.softmax(torch.baddbmm(mask[:t, :t], q, k.transpose(1, 2), alpha=1.0 / math.sqrt(d)), dim=-1)
        y = torch.bmm(att, v).view(b, self.heads, t, d).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(a.vocab, a.width), torch.nn.Embedding(a.seq, a.width)
        self.h = torch.nn.ModuleList(Block(a.width, a.heads) for _ in range(a.layers))
        self.ln_f = torch.nn.LayerNorm(a.width)
        self.register_buffer("mask", torch.full((a.seq, a.seq), float("-inf")).triu(1))  # additive causal mask
        for name, w in self.named_parameters():
            if name.endswith(".weight") and w.dim() == 2:
                torch.nn.init.normal_(w, std=0.02)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x, self.mask)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.view(-1, a.vocab), targets.reshape(-1))


def newton_schulz(g, steps=5, eps=1e-7):
    """Keller Jordan's quintic Newton–Schulz iteration (Muon), in fp32 as samebits."""
    qa, qb, qc = 3.4445, -4.7750, 2.0315
    x = g / (g.norm() + eps)
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.T
    for _ in range(steps):
        s = x @ x.T
        x = qa * x + (qb * s + qc * s @ s) @ x
    return x.T if tall else x


model = GPT()
params = list(model.parameters())
hidden = [w for n, w in model.named_parameters() if n.startswith("h.") and w.dim() == 2]
if a.optimizer == "muon":
    hidden_ids = {id(w) for w in hidden}
    adam = torch.optim.AdamW([w for w in params if id(w) not in hidden_ids], lr=a.adam_lr,
                             betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, foreach=True)
    momentum = {id(w): torch.zeros_like(w) for w in hidden}
else:
    hidden = []
    adam = torch.optim.AdamW(params, lr=a.adam_lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                             foreach=True)


@torch.no_grad()
def muon_step():
    for w in hidden:
        m = momentum[id(w)]
        m.mul_(0.95).add_(w.grad)  # M <- mu M + G
        u = newton_schulz(w.grad.add(m, alpha=0.95))  # Nesterov: G + mu M
        w.add_(u, alpha=-a.lr * math.sqrt(max(1.0, w.size(0) / w.size(1))))


gen = torch.Generator().manual_seed(2)
batches = [torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen) for _ in range(a.steps)]
seconds, cpu_seconds, losses = [], [], []
for tokens in batches:
    t0, c0 = time.perf_counter(), time.process_time()
    adam.zero_grad(set_to_none=True)
    for w in hidden:
        w.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
        loss = model(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    adam.step()
    muon_step()
    seconds.append(time.perf_counter() - t0)
    cpu_seconds.append(time.process_time() - c0)
    losses.append(loss.item())
    print(f"pytorch step {len(seconds)}/{a.steps} loss {losses[-1]:.4f} {seconds[-1]:.3f} s ({cpu_seconds[-1]:.3f} s CPU)",
          file=sys.stderr, flush=True)
print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "openblas_core": openblas_core(), "optimizer": a.optimizer,
                  "autocast": a.autocast,
                  "parameters": sum(w.numel() for w in params),
                  "tokens_per_step": a.batch * a.seq, "step_seconds": seconds,
                  "step_cpu_seconds": cpu_seconds, "loss": losses}))
