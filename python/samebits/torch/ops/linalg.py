"""Products on samebits' GEMM (Backend::gemm of the CPU or CUDA backend: rule 1's canonical fma
chains, the exact GEMM, or for bf16 operands with bf16_dot="pairs" the bf16 dot instructions' pair
order): mm, addmm, bmm, baddbmm, mv, dot. matmul and linear reach these. Operands in
bf16 or fp16 widen exactly to fp32; the product is rounded once to the op's dtype; a bias, alpha
and beta are one IEEE operation each after the product: alpha·P, then beta·bias + that."""
import torch

from . import aten, f32, implements, launch, like


def _operand(t):
    """(tensor, transposed, leading dimension) of a 2-D or batched matrix as the GEMM reads it."""
    r, c = t.shape[-2], t.shape[-1]
    s0, s1 = t.stride(-2), t.stride(-1)
    if t.dtype == torch.float32:
        if s1 == 1 and s0 >= max(1, c):
            return t, False, s0
        if s0 == 1 and s1 >= max(1, r):
            return t, True, s1
    t = f32(t)
    return t, False, max(1, c)


def product(ctx, a, b):
    """op(a)·op(b) in fp32: (m, k)·(k, n), or batched (B, m, k)·(B, n, k) — a new contiguous tensor."""
    batched = a.dim() == 3
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[0] if batched else 1
    out = torch.empty((batch, m, n) if batched else (m, n), dtype=torch.float32, device=a.device)
    if out.numel() == 0:
        return out
    if k == 0:
        return out.zero_()
    # bf16 operands in the pair order when the mode asks (gemm "pairs"): their values are bf16's.
    precision = "bf16" if a.dtype == b.dtype == torch.bfloat16 else "fp32"
    a, ta, lda = _operand(a)
    b, tb, ldb = _operand(b)
    ba = a.stride(0) if batched else 0
    bb = b.stride(0) if batched else 0
    native, device = launch(a)
    native._op_gemm(ctx.gemm, ta, tb, m, n, k, a.data_ptr(), lda, b.data_ptr(), ldb, out.data_ptr(), n, False, batch,
                    ba, bb, m * n, device, precision)
    return out


def _scaled(p, bias, beta, alpha):
    if alpha != 1:
        p = p * alpha
    if beta == 0 or bias is None:
        return p
    bias = bias.to(torch.float32)
    return (bias if beta == 1 else bias * beta) + p


@implements(aten.mm.default, aten.bmm.default)
def mm(ctx, a, b):
    return like(product(ctx, a, b), a.dtype)


@implements(aten.addmm.default, aten.baddbmm.default)
def addmm(ctx, bias, a, b, *, beta=1, alpha=1):
    return like(_scaled(product(ctx, a, b), bias, beta, alpha), a.dtype)


@implements(aten.mv.default)
def mv(ctx, a, v):
    return like(product(ctx, a, v.unsqueeze(1)).squeeze(1), a.dtype)


@implements(aten.dot.default)
def dot(ctx, a, b):
    return like(product(ctx, a.unsqueeze(0), b.unsqueeze(1)).reshape(()), a.dtype)
