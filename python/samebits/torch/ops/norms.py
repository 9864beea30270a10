"""LayerNorm, softmax and log softmax, forward and backward, on samebits' row kernels: the
LayerNorm of samebits' models (32-lane row statistics, token-ascending chains for the gain and
bias gradients) with the program's eps, and softmax rows with the exact max and the 32-lane
denominator (ops/softmax.hpp)."""
import math

import torch

from . import aten, f32, implements, launch, like


@implements(aten.native_layer_norm.default)
def native_layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    C = math.prod(normalized_shape)
    N = x.numel() // C if C else 0
    xf = f32(x)
    w = f32(weight) if weight is not None else torch.ones(C, dtype=torch.float32, device=x.device)
    b = f32(bias) if bias is not None else None
    out = torch.empty_like(xf)
    stats_shape = x.shape[:x.dim() - len(normalized_shape)] + (1,) * len(normalized_shape)
    mean = torch.empty(stats_shape, dtype=torch.float32, device=x.device)
    rstd = torch.empty(stats_shape, dtype=torch.float32, device=x.device)
    if N and C:
        native, device = launch(xf)
        native._op_layernorm_forward(out.data_ptr(), mean.data_ptr(), rstd.data_ptr(), xf.data_ptr(), w.data_ptr(),
                                     b.data_ptr() if b is not None else 0, N, C, float(eps), device)
    return like(out, x.dtype), mean, rstd


@implements(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(ctx, dout, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    C = math.prod(normalized_shape)
    N = x.numel() // C if C else 0
    xf, dy = f32(x), f32(dout)
    w = f32(weight) if weight is not None else torch.ones(C, dtype=torch.float32, device=x.device)
    dinp = torch.empty_like(xf)
    dw = torch.empty(C, dtype=torch.float32, device=x.device)
    db = torch.empty(C, dtype=torch.float32, device=x.device) if bias is not None else None
    if N and C:
        mean, rstd = f32(mean), f32(rstd)
        native, device = launch(xf)
        native._op_layernorm_backward(dinp.data_ptr(), dw.data_ptr(), db.data_ptr() if db is not None else 0,
                                      dy.data_ptr(), xf.data_ptr(), w.data_ptr(), mean.data_ptr(), rstd.data_ptr(), N,
                                      C, device)
    else:
        dinp.zero_(), dw.zero_()
        if db is not None:
            db.zero_()
    return (like(dinp, x.dtype) if output_mask[0] else None,
            like(dw.view(normalized_shape), weight.dtype) if output_mask[1] and weight is not None else None,
            like(db.view(normalized_shape), bias.dtype) if output_mask[2] and bias is not None else None)


def rows_of(x, dim):
    """x with `dim` last, contiguous fp32, and the (rows, cols) it holds."""
    xf = f32(x.movedim(dim, -1))
    cols = xf.shape[-1] if xf.dim() else 1
    return xf, (xf.numel() // cols if cols else 0), cols


def _softmax(x, dim, log, dtype):
    xf, rows, cols = rows_of(x, dim)
    out = torch.empty_like(xf)
    if rows and cols:
        native, device = launch(xf)
        native._op_softmax(out.data_ptr(), xf.data_ptr(), rows, cols, log, device)
    return like(out.movedim(-1, dim).contiguous(), dtype)


def _softmax_backward(dout, y, dim, log, dtype):
    dy, rows, cols = rows_of(dout, dim)
    yf, _, _ = rows_of(y, dim)
    dinp = torch.empty_like(dy)
    if rows and cols:
        native, device = launch(dy)
        native._op_softmax_backward(dinp.data_ptr(), dy.data_ptr(), yf.data_ptr(), rows, cols, log, device)
    return like(dinp.movedim(-1, dim).contiguous(), dtype)


@implements(aten._softmax.default)
def softmax(ctx, x, dim, half_to_float):
    return _softmax(x, dim, False, torch.float32 if half_to_float else x.dtype)


@implements(aten._log_softmax.default)
def log_softmax(ctx, x, dim, half_to_float):
    return _softmax(x, dim, True, torch.float32 if half_to_float else x.dtype)


@implements(aten._softmax_backward_data.default)
def softmax_backward(ctx, dout, y, dim, input_dtype):
    return _softmax_backward(dout, y, dim, False, input_dtype)


@implements(aten._log_softmax_backward_data.default)
def log_softmax_backward(ctx, dout, y, dim, input_dtype):
    return _softmax_backward(dout, y, dim, True, input_dtype)
