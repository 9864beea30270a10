"""nll_loss (cross_entropy's second half, after log_softmax) and embedding's dense gradient. The
loss: the picked log-probabilities times their class weights (1 without weights), ignored targets
0, summed in the 32-lane form (rule 2) and divided once by the weights' sum for the mean; its
gradient is one operation per element. Embedding: each row's gradient the chain over the indices
in order (Backend::embedding_backward, rule 3)."""
import torch

from . import aten, f32, implements, launch, like
from .reductions import reduce


def _picked(x, target, weight, ignore_index):
    x2 = x if x.dim() == 2 else x.unsqueeze(0)
    t = target.reshape(-1)
    valid = t != ignore_index
    tc = torch.where(valid, t, torch.zeros_like(t))
    w = f32(weight)[tc] if weight is not None else torch.ones(t.shape, dtype=torch.float32, device=x.device)
    w = torch.where(valid, w, torch.zeros_like(w))
    return x2, tc, w


@implements(aten.nll_loss_forward.default)
def nll_loss_forward(ctx, x, target, weight, reduction, ignore_index):
    x2, tc, w = _picked(x, target, weight, ignore_index)
    picked = f32(x2).gather(1, tc.unsqueeze(1)).squeeze(1)
    losses = torch.where(w != 0, torch.neg(torch.mul(picked, w)), torch.zeros_like(w))
    if reduction == 0:
        return like(losses.reshape(target.shape), x.dtype), torch.zeros((), dtype=x.dtype, device=x.device)
    total, _ = reduce(losses, None, False, "sum")
    total_weight, _ = reduce(w, None, False, "sum")
    out = torch.div(total, total_weight) if reduction == 1 else total
    return like(out, x.dtype), like(total_weight, x.dtype)


@implements(aten.nll_loss_backward.default)
def nll_loss_backward(ctx, dout, x, target, weight, reduction, ignore_index, total_weight):
    x2, tc, w = _picked(x, target, weight, ignore_index)
    g = f32(dout).reshape(-1)
    if reduction == 1:
        g = torch.div(g, f32(total_weight))
    coef = torch.where(w != 0, torch.neg(torch.mul(g, w)), torch.zeros_like(w))
    grad = torch.zeros(x2.shape, dtype=torch.float32, device=x.device)
    grad.scatter_(1, tc.unsqueeze(1), coef.unsqueeze(1))
    return like(grad.reshape(x.shape), x.dtype)


@implements(aten.embedding_dense_backward.default)
def embedding_dense_backward(ctx, dout, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        raise NotImplementedError("embedding with scale_grad_by_freq=True")
    C = dout.shape[-1]
    dy = f32(dout).reshape(-1, C)
    idx = indices.reshape(-1).to(torch.int32).contiguous()
    if padding_idx >= 0:
        dy = torch.where((idx == padding_idx).unsqueeze(1), torch.zeros_like(dy), dy)
    dw = torch.zeros((num_weights, C), dtype=torch.float32, device=dout.device)
    if idx.numel() and C:
        native, device = launch(dy)
        native._op_embedding_backward(dw.data_ptr(), dy.data_ptr(), idx.data_ptr(), idx.numel(), C, num_weights, device)
    return like(dw, dout.dtype)
