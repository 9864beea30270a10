"""scaled_dot_product_attention's CPU kernel (PyTorch 2's _scaled_dot_product_flash_attention_for_cpu
and its backward) as the math path on the table's ops: S = (Q·Kᵀ)·scale, masked (causal: −inf
above the diagonal; a boolean mask: −inf where False; a float mask added), P = softmax rows,
O = P·V, logsumexp = max + log(Σ exp(S − max)). The backward recomputes P from Q and K (the
saved logsumexp is not read): dV = Pᵀ·dO, dP = dO·Vᵀ, dS = softmax's gradient·scale, dQ = dS·K,
dK = dSᵀ·Q. Grouped-query heads: K and V repeated per query head; their gradients the chain over
the group's query heads in order. Dropout is outside the table."""
import math

import torch

from . import f32, implements, like, op
from .linalg import product
from .norms import _softmax, _softmax_backward
from .pointwise import apply
from .reductions import reduce


def _flat(t):
    return f32(t).reshape(-1, t.shape[-2], t.shape[-1])


def _repeat(t, heads):
    return t if t.shape[-3] == heads else t.repeat_interleave(heads // t.shape[-3], dim=-3)


def _unrepeat(g, kv_heads, like_shape):
    if g.shape[-3] == kv_heads:
        return g
    group = g.shape[-3] // kv_heads
    g = g.reshape(g.shape[:-3] + (kv_heads, group) + g.shape[-2:])
    return reduce(g, g.dim() - 3, False, "sum")[0].reshape(like_shape)


def _scores(ctx, q, k, is_causal, attn_mask, scale):
    E = q.shape[-1]
    s = float(torch.tensor(1.0) / torch.sqrt(torch.tensor(float(E)))) if scale is None else scale
    k = _repeat(k, q.shape[-3])
    S = torch.mul(product(ctx, _flat(q), _flat(k).transpose(1, 2)), s)
    L, Sk = q.shape[-2], k.shape[-2]
    S = S.reshape(q.shape[:-1] + (Sk,))
    if is_causal:
        S = S.masked_fill(torch.ones(L, Sk, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    if attn_mask is not None:
        S = S.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else torch.add(S, f32(attn_mask))
    return S, s


def _check(dropout_p):
    if dropout_p != 0:
        raise NotImplementedError("scaled_dot_product_attention with dropout_p > 0")


@implements(op("_scaled_dot_product_flash_attention_for_cpu"))
def sdpa_forward(ctx, q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    _check(dropout_p)
    S, _ = _scores(ctx, q, k, is_causal, attn_mask, scale)
    P = _softmax(S, -1, False, torch.float32)
    O = product(ctx, _flat(P), _flat(_repeat(v, q.shape[-3]))).reshape(q.shape[:-1] + (v.shape[-1],))
    m = reduce(S, -1, True, "max")[0]
    lse = torch.add(m.squeeze(-1), apply("log", reduce(apply("exp", torch.sub(S, m)), -1, False, "sum")[0]))
    return like(O, q.dtype), lse


@implements(op("_scaled_dot_product_flash_attention_for_cpu_backward"))
def sdpa_backward(ctx, dout, q, k, v, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None):
    _check(dropout_p)
    S, s = _scores(ctx, q, k, is_causal, attn_mask, scale)
    P = _softmax(S, -1, False, torch.float32)
    heads = q.shape[-3]
    kr, vr = _repeat(k, heads), _repeat(v, heads)
    dO = _flat(dout)
    dV = product(ctx, _flat(P).transpose(1, 2), dO).reshape(vr.shape)
    dP = product(ctx, dO, _flat(vr).transpose(1, 2)).reshape(P.shape)
    dS = torch.mul(_softmax_backward(dP, P, -1, False, torch.float32), s)
    dQ = product(ctx, _flat(dS), _flat(kr)).reshape(q.shape)
    dK = product(ctx, _flat(dS).transpose(1, 2), _flat(q)).reshape(kr.shape)
    return (like(dQ, q.dtype), like(_unrepeat(dK, k.shape[-3], k.shape), k.dtype),
            like(_unrepeat(dV, v.shape[-3], v.shape), v.dtype))
