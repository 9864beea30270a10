"""samebits.torch.clip_grad_norm_: torch.nn.utils.clip_grad_norm_'s signature with the C++
trainer's clipping: ‖G‖ over every gradient as one vector, from an exact sum of squares rounded
once to fp32 (the same bits for any thread count and any order of the parameters), the factor
fl32(max_norm / (‖G‖ + 1e-6)) computed in fp64 when below 1, and g ← fl32(g·factor) per element.

    total_norm = samebits.torch.clip_grad_norm_(model.parameters(), max_norm=1.0)

Differences from torch's: norm_type 2 only; max_norm must be positive; a non-finite ‖G‖ leaves the
gradients as they are (the trainer's rule: its overflow handling decides) where torch would
multiply them by NaN or 0, and raises with error_if_nonfinite=True as torch does.
"""
import math

import torch

from .adamw import device_index, synchronize


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    if float(norm_type) != 2.0:
        raise ValueError(f"samebits.torch.clip_grad_norm_: norm_type={norm_type!r} is not supported (only the "
                         "exact 2-norm, the trainer's)")
    max_norm = float(max_norm)
    if not max_norm > 0.0:
        raise ValueError(f"samebits.torch.clip_grad_norm_: max_norm must be positive, got {max_norm}")
    if foreach:
        raise ValueError("samebits.torch.clip_grad_norm_: foreach=True is not supported; leave it at None")
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    from .. import _load
    module = _load()
    for g in grads:
        if g.is_sparse or g.dtype != torch.float32:
            raise TypeError(f"samebits.torch.clip_grad_norm_ clips dense float32 gradients; got {g.dtype}"
                            + (" (sparse)" if g.is_sparse else ""))
    devices = [device_index(g, module, "samebits.torch.clip_grad_norm_") for g in grads]
    work = [g if g.is_contiguous() else g.contiguous() for g in grads]
    synchronize(devices)
    norm, factor = module._clip_grad_norm([w.data_ptr() for w in work], [w.numel() for w in work], devices,
                                          max_norm)
    if error_if_nonfinite and not math.isfinite(norm):
        raise RuntimeError(f"samebits.torch.clip_grad_norm_: the total norm of the gradients is non-finite ({norm}); "
                           "with error_if_nonfinite=False the gradients are left as they are")
    if factor < 1.0:
        for g, w in zip(grads, work):
            if w is not g:
                g.copy_(w)
    return torch.tensor(norm, dtype=torch.float32, device=grads[0].device)
