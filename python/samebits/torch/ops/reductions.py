"""Reductions on samebits' orders (host_ops.hpp reduce_middle): sum, mean, amax/amin, var, std,
var_mean, the vector norms (ord 1, 2, inf) and _foreach_norm. The input is read in its logical
(contiguous) order; the reduced dimensions, when they are not one block of consecutive
dimensions, are moved after the kept ones. Reducing the innermost block is a row: the 32-lane form
(rule 2); any other block is a chain over its elements in order for each output (rule 3). mean is
the sum divided once by the count; var the sum of squared deviations from that mean, divided
once by (count − correction). Integer and bool inputs are exact: PyTorch's kernels."""
import math

import torch

from . import FLOATS, aten, f32, implements, launch, like


def dims_of(x, dim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(1, x.dim()) for d in dims})


def reduce(x, dim, keepdim, reduction):
    """The reduction of float x over dim (None: all) in fp32; the result's shape as PyTorch's."""
    dims = dims_of(x, dim)
    xf = f32(x)
    if x.dim() == 0:
        xf, dims = xf.reshape(1), [0]
    kept = [d for d in range(xf.dim()) if d not in dims]
    if dims != list(range(dims[0], dims[-1] + 1)):
        xf = xf.permute(kept + dims).contiguous()
        outer, K, inner = math.prod(xf.shape[:len(kept)]), math.prod(xf.shape[len(kept):]), 1
    else:
        outer, inner = math.prod(xf.shape[:dims[0]]), math.prod(xf.shape[dims[-1] + 1:])
        K = math.prod(xf.shape[d] for d in dims)
    out = torch.empty(outer * inner, dtype=torch.float32, device=x.device)
    if out.numel():
        native, device = launch(xf)
        native._op_reduce(reduction, out.data_ptr(), xf.data_ptr(), outer, K, inner, device)
    if keepdim:
        shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
    else:
        shape = [s for d, s in enumerate(x.shape) if d not in dims]
    return out.reshape(shape), K


def _float(x):
    return x.dtype in FLOATS


@implements(aten.sum.dim_IntList)
def sum_dim(ctx, x, dim, keepdim=False, *, dtype=None):
    if not _float(x):
        return aten.sum.dim_IntList(x, dim, keepdim, dtype=dtype)
    return like(reduce(x, dim, keepdim, "sum")[0], dtype or x.dtype)


@implements(aten.sum.default)
def sum_all(ctx, x, *, dtype=None):
    return sum_dim(ctx, x, None, False, dtype=dtype)


@implements(aten.mean.dim)
def mean_dim(ctx, x, dim, keepdim=False, *, dtype=None):
    s, K = reduce(x, dim, keepdim, "sum")
    return like(torch.div(s, float(K)), dtype or x.dtype)


@implements(aten.mean.default)
def mean_all(ctx, x, *, dtype=None):
    return mean_dim(ctx, x, None, False, dtype=dtype)


@implements(aten.amax.default)
def amax(ctx, x, dim=(), keepdim=False):
    if not _float(x):
        return aten.amax.default(x, dim, keepdim)
    return like(reduce(x, dim, keepdim, "max")[0], x.dtype)


@implements(aten.amin.default)
def amin(ctx, x, dim=(), keepdim=False):
    if not _float(x):
        return aten.amin.default(x, dim, keepdim)
    return like(torch.neg(reduce(torch.neg(x), dim, keepdim, "max")[0]), x.dtype)


def variance(x, dim, correction, keepdim):
    s, K = reduce(x, dim, True, "sum")
    mean = torch.div(s, float(K))
    ss, _ = reduce(torch.sub(f32(x), mean), dim, keepdim, "sumsq")
    c = 1.0 if correction is None else float(correction)
    return torch.div(ss, max(0.0, K - c)), (mean if keepdim else mean.reshape(ss.shape))


@implements(aten.var.correction)
def var(ctx, x, dim=None, *, correction=None, keepdim=False):
    return like(variance(x, dim, correction, keepdim)[0], x.dtype)


@implements(aten.std.correction)
def std(ctx, x, dim=None, *, correction=None, keepdim=False):
    return like(torch.sqrt(variance(x, dim, correction, keepdim)[0]), x.dtype)


@implements(aten.var_mean.correction)
def var_mean(ctx, x, dim=None, *, correction=None, keepdim=False):
    v, m = variance(x, dim, correction, keepdim)
    return like(v, x.dtype), like(m, x.dtype)


def vector_norm(x, ord, dim, keepdim, dtype=None):
    ord = 2.0 if ord is None else float(ord)
    if ord == 2:
        y = torch.sqrt(reduce(x, dim, keepdim, "sumsq")[0])
    elif ord == 1:
        y = reduce(x, dim, keepdim, "abssum")[0]
    elif ord == math.inf:
        y = reduce(x, dim, keepdim, "absmax")[0]
    else:
        raise NotImplementedError(f"vector norm of order {ord!r} (samebits' table has 1, 2 and inf)")
    return like(y, dtype or x.dtype)


@implements(aten.linalg_vector_norm.default)
def linalg_vector_norm(ctx, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    return vector_norm(x, ord, dim, keepdim, dtype)


@implements(aten.norm.ScalarOpt_dim)
def norm_dim(ctx, x, p, dim, keepdim=False):
    return vector_norm(x, p, dim, keepdim)


@implements(aten.norm.Scalar)
def norm(ctx, x, p=2):
    return vector_norm(x, p, None, False)


@implements(aten._foreach_norm.Scalar)
def foreach_norm(ctx, tensors, ord=2, dtype=None):
    return [vector_norm(t, ord, None, False, dtype) for t in tensors]
