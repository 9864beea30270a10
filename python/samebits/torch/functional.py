"""samebits.torch.functional: the trainer's fused softmax cross-entropy for a PyTorch program
(Backend::softmax_xent_forward/backward, ops/softmax_xent.hpp): per row the exact max, the 32-lane
denominator and log(den) − (logit_target − max); the mean over the rows exact and rounded once
(rule 5); the gradient ((softmax − onehot)/N)·g for an upstream gradient g, one operation per
element — so a PyTorch model that ends in it trains with the C++ trainer's loss and logits'
gradient bits. CPU float32 logits (N, V), integer targets (N,) in [0, V)."""
import torch


def _module():
    from .. import _load
    return _load()


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, rows_out):
        if logits.dtype != torch.float32 or logits.device.type != "cpu" or logits.dim() != 2:
            raise TypeError("samebits.torch.functional.cross_entropy: CPU float32 logits (N, V); got "
                            f"{logits.dtype} {tuple(logits.shape)} on {logits.device}")
        N, V = logits.shape
        x = logits.detach().contiguous()
        t = targets.reshape(-1).to(torch.int32).contiguous()
        if t.numel() != N:
            raise ValueError(f"samebits.torch.functional.cross_entropy: {t.numel()} targets for {N} rows")
        if N and (int(t.min()) < 0 or int(t.max()) >= V):
            raise ValueError(f"samebits.torch.functional.cross_entropy: a target outside [0, {V})")
        losses = torch.empty(N, dtype=torch.float32)
        stats = torch.empty(N, 2, dtype=torch.float32)
        m = _module()
        m._op_xent_forward(losses.data_ptr(), stats.data_ptr(), x.data_ptr(), t.data_ptr(), N, V)
        if rows_out is not None:
            rows_out.append(losses)
        ctx.save_for_backward(x, stats, t)
        return torch.tensor(m._exact_mean(losses.data_ptr(), N, N), dtype=torch.float32)

    @staticmethod
    def backward(ctx, dloss):
        x, stats, t = ctx.saved_tensors
        N, V = x.shape
        dlogits = torch.empty_like(x)
        _module()._op_xent_backward(dlogits.data_ptr(), x.data_ptr(), stats.data_ptr(), t.data_ptr(), N, V,
                                    float(dloss))
        return dlogits, None, None


def cross_entropy(logits, targets, rows_out=None):
    """The mean softmax cross-entropy of logits (N, V) against targets (N,), with the trainer's bits
    (module docstring); rows_out, a list, receives the per-row losses (for an exact mean over many
    calls: exact_mean)."""
    return _CrossEntropy.apply(logits, targets, rows_out)


def exact_mean(values):
    """fl32(the exact sum of float32 values / their count): the trainer's mean loss over many rows."""
    v = torch.cat([x.reshape(-1) for x in values]) if isinstance(values, (list, tuple)) else values.reshape(-1)
    v = v.to(torch.float32).contiguous()
    return torch.tensor(_module()._exact_mean(v.data_ptr(), v.numel(), v.numel()), dtype=torch.float32)
