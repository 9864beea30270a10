"""Elementwise functions on samebits' own math (det/math.hpp, ops/: exp, log, tanh, sigmoid, silu,
GELU in both forms, sin, cos, erf) and their gradients; the fused elementwise ops (add and sub
with alpha, addcmul, addcdiv, lerp, clamp, pow with a small integer or half exponent, rsqrt) as
a fixed sequence of single IEEE operations, each one PyTorch op. In-place forms write the result
into self."""
import math

import torch

from . import aten, f32, implements, launch, like

_FUNCTIONS = {aten.exp: "exp", aten.log: "log", aten.tanh: "tanh", aten.sigmoid: "sigmoid", aten.silu: "silu",
              aten.sin: "sin", aten.cos: "cos", aten.erf: "erf"}


def apply(name, x):
    xf = f32(x)
    out = torch.empty_like(xf)
    if xf.numel():
        native, device = launch(xf)
        native._op_pointwise(name, out.data_ptr(), xf.data_ptr(), xf.numel(), device)
    return like(out, x.dtype)


def gradient(name, dout, at):
    dy, a = f32(dout), f32(at.expand_as(dout))
    dinp = torch.empty_like(dy)
    if dy.numel():
        native, device = launch(dy)
        native._op_pointwise_backward(name, dinp.data_ptr(), dy.data_ptr(), a.data_ptr(), dy.numel(), device)
    return like(dinp, dout.dtype)


def _register(packet, name):
    implements(packet.default)(lambda ctx, x: apply(name, x))
    implements(getattr(aten, packet.__name__.split(".")[-1] + "_").default)(lambda ctx, x: x.copy_(apply(name, x)))


for _packet, _name in _FUNCTIONS.items():
    _register(_packet, _name)


@implements(aten.gelu.default)
def gelu(ctx, x, *, approximate="none"):
    return apply("gelu_tanh" if approximate == "tanh" else "gelu_erf", x)


@implements(aten.gelu_.default)
def gelu_(ctx, x, *, approximate="none"):
    return x.copy_(gelu(ctx, x, approximate=approximate))


@implements(aten.gelu_backward.default)
def gelu_backward(ctx, dout, x, *, approximate="none"):
    return gradient("gelu_tanh" if approximate == "tanh" else "gelu_erf", dout, x)


@implements(aten.tanh_backward.default)
def tanh_backward(ctx, dout, y):
    return gradient("tanh", dout, y)


@implements(aten.sigmoid_backward.default)
def sigmoid_backward(ctx, dout, y):
    return gradient("sigmoid", dout, y)


@implements(aten.silu_backward.default)
def silu_backward(ctx, dout, x):
    return gradient("silu", dout, x)


# ---- fused elementwise ops as single IEEE operations -------------------------------------------
def _plus(x, y, alpha, sign):
    """x ± alpha·y: the product rounded, then the sum (PyTorch may fuse them into one fma)."""
    if alpha != 1:
        y = torch.mul(y, alpha)
    return torch.add(x, y) if sign > 0 else torch.sub(x, y)


for _name, _sign in (("add", 1), ("sub", -1)):
    for _overload in ("Tensor", "Scalar"):
        implements(getattr(getattr(aten, _name), _overload))(
            lambda ctx, x, y, alpha=1, _s=_sign: _plus(x, y, alpha, _s))
        implements(getattr(getattr(aten, _name + "_"), _overload))(
            lambda ctx, x, y, alpha=1, _s=_sign: x.copy_(_plus(x, y, alpha, _s)))


def _addc(x, a, b, value, divide):
    t = torch.div(a, b) if divide else torch.mul(a, b)
    if value != 1:
        t = torch.mul(t, value)
    return torch.add(x, t)


implements(aten.addcmul.default)(lambda ctx, x, a, b, *, value=1: _addc(x, a, b, value, False))
implements(aten.addcmul_.default)(lambda ctx, x, a, b, *, value=1: x.copy_(_addc(x, a, b, value, False)))
implements(aten.addcdiv.default)(lambda ctx, x, a, b, *, value=1: _addc(x, a, b, value, True))
implements(aten.addcdiv_.default)(lambda ctx, x, a, b, *, value=1: x.copy_(_addc(x, a, b, value, True)))


def _lerp(x, end, weight):
    """x + w·(end − x) for w < 0.5, else end − (end − x)·(1 − w): three single operations."""
    d = torch.sub(end, x)
    if isinstance(weight, torch.Tensor):
        w = weight.to(d.dtype)
        low = torch.add(x, torch.mul(w, d))
        high = torch.sub(end, torch.mul(d, torch.rsub(w, 1)))
        return torch.where(torch.abs(w) < 0.5, low, high)
    return torch.add(x, torch.mul(d, weight)) if abs(weight) < 0.5 else torch.sub(end, torch.mul(d, 1 - weight))


for _overload in ("Scalar", "Tensor"):
    implements(getattr(aten.lerp, _overload))(lambda ctx, x, end, weight: _lerp(x, end, weight))
    implements(getattr(aten.lerp_, _overload))(lambda ctx, x, end, weight: x.copy_(_lerp(x, end, weight)))


def _clamp(x, low, high):
    """Comparisons and selections only: exact, and NaN stays NaN."""
    if low is not None:
        x = torch.where(x < low, torch.as_tensor(low, dtype=x.dtype, device=x.device), x)
    if high is not None:
        x = torch.where(x > high, torch.as_tensor(high, dtype=x.dtype, device=x.device), x)
    return x


implements(aten.clamp.default, aten.clamp.Tensor)(lambda ctx, x, min=None, max=None: _clamp(x, min, max))
implements(aten.clamp_.default, aten.clamp_.Tensor)(lambda ctx, x, min=None, max=None: x.copy_(_clamp(x, min, max)))
implements(aten.clamp_min.default)(lambda ctx, x, min: _clamp(x, min, None))
implements(aten.clamp_max.default)(lambda ctx, x, max: _clamp(x, None, max))


def _rsqrt(x):
    return torch.reciprocal(torch.sqrt(x))


implements(aten.rsqrt.default)(lambda ctx, x: _rsqrt(x))
implements(aten.rsqrt_.default)(lambda ctx, x: x.copy_(_rsqrt(x)))


def power(x, e):
    """x^e for e an integer with |e| <= 8 (a left-to-right chain of products, its reciprocal for
    e < 0), ±0.5 (√x, 1/√x) — PyTorch's own values for 2 and 3 — or a float base raised to x
    (exp(x·ln base), samebits exp). Other exponents are outside the table."""
    if isinstance(e, torch.Tensor):
        raise NotImplementedError("pow with a tensor exponent")
    e = float(e)
    if e == 0.5:
        return torch.sqrt(x)
    if e == -0.5:
        return _rsqrt(x)
    if e.is_integer() and abs(e) <= 8:
        if e == 0:
            return torch.ones_like(x)
        y = x
        for _ in range(int(abs(e)) - 1):
            y = torch.mul(y, x)
        return torch.reciprocal(y) if e < 0 else (y.clone() if y is x else y)
    raise NotImplementedError(f"pow with exponent {e!r} (samebits' table has integers |e| <= 8 and ±0.5)")


@implements(aten.pow.Tensor_Scalar)
def pow_tensor_scalar(ctx, x, e):
    return power(x, e)


@implements(aten.pow_.Scalar)
def pow_tensor_scalar_(ctx, x, e):
    return x.copy_(power(x, e))


@implements(aten.pow.Tensor_Tensor)
def pow_tensor_tensor(ctx, x, e):
    """A one-element base or exponent tensor: as its scalar form."""
    if x.numel() == 1 and x.dim() == 0:
        return pow_scalar(ctx, x.item(), e)
    if e.numel() == 1 and e.dim() == 0:
        return power(x, e.item())
    raise NotImplementedError("pow of two tensors with more than one element each")


@implements(aten.pow.Scalar)
def pow_scalar(ctx, base, x):
    base = float(base)
    if not base > 0:
        raise NotImplementedError(f"pow of a scalar base {base!r} (samebits' table has positive bases)")
    return apply("exp", torch.mul(f32(x), math.log(base)))
