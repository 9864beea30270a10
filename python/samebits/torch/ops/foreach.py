"""The _foreach_ ops (torch.optim's and clip_grad_norm_'s multi-tensor forms): each runs as its
one-tensor op per list entry, through the table (_foreach_norm is in reductions.py). Every entry is
checked before any is written, so a refused entry leaves every tensor as it was."""
import torch

from . import aten

# _foreach_ overload -> the one-tensor op's overload (a scalar list gives each entry its scalar).
_OVERLOADS = {"List": "Tensor", "Scalar": "Scalar", "ScalarList": "Scalar", "Tensor": "Tensor", "default": "default"}


def one_tensor_op(func):
    """The one-tensor op of a _foreach_ OpOverload, or None."""
    packet = func.overloadpacket.__name__
    if not packet.startswith("_foreach_") or packet == "_foreach_norm":
        return None
    base = getattr(aten, packet[len("_foreach_"):], None)
    if base is None:
        return None
    overload = _OVERLOADS.get(func._overloadname, func._overloadname)
    return getattr(base, overload, None) or getattr(base, "default", None)


def entries(func, args, kwargs):
    """(args, kwargs) of each list entry: lists indexed, a tensor of scalars itemized, the rest as given."""
    n = len(args[0])
    out = []
    for i in range(n):
        a = []
        for x in args:
            if isinstance(x, (list, tuple)):
                a.append(x[i])
            elif isinstance(x, torch.Tensor) and func._overloadname == "Tensor" and x.dim() == 1 and x.numel() == n:
                a.append(x[i].item())
            else:
                a.append(x)
        out.append((tuple(a), dict(kwargs)))
    return out
