"""Initialization on samebits' math: normal_ and uniform_ from the integers of PyTorch's generator
(torch.randint: the generator's own exact stream, the same on every CPU), so that torch.manual_seed
still decides the values while their bits do not depend on the SIMD path (PyTorch's normal_ has a
vectorized and a scalar Box–Muller). u = (k + 0.5)·2^-24 for k a 24-bit integer; uniform: a + (b − a)·u;
normal: the Box–Muller pair of (u1, u2), √(−2·log u1)·cos(2π·u2), samebits log and cos, then
mean + std·z. Not PyTorch's values for the same seed: samebits' own, the same everywhere."""
import math

import torch

from . import aten, implements, like
from .pointwise import apply


def _units(x, generator):
    """x.numel() values (k + 0.5)·2^-24 on x's device, k from the CPU generator's integers."""
    if generator is not None and generator.device.type != "cpu":
        raise NotImplementedError("normal_/uniform_ with a CUDA generator (the table draws from a CPU generator)")
    k = torch.randint(0, 1 << 24, (x.numel(),), generator=generator, dtype=torch.int64)
    return torch.mul(torch.add(k.to(torch.float32), 0.5), 2.0 ** -24).to(x.device)


@implements(aten.uniform_.default)
def uniform_(ctx, x, a=0.0, b=1.0, *, generator=None):
    u = _units(x, generator)
    return x.copy_(like(torch.add(torch.mul(u, float(b) - float(a)), float(a)).view(x.shape), x.dtype))


@implements(aten.normal_.default)
def normal_(ctx, x, mean=0.0, std=1.0, *, generator=None):
    u1, u2 = _units(x, generator), _units(x, generator)
    radius = torch.sqrt(torch.mul(apply("log", u1), -2.0))
    z = torch.mul(radius, apply("cos", torch.mul(u2, 2.0 * math.pi)))
    return x.copy_(like(torch.add(torch.mul(z, float(std)), float(mean)).view(x.shape), x.dtype))
