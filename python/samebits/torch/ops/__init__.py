"""The ATen table of samebits.torch.deterministic (docs/TORCH.md "Making a program reproducible"):
for each ATen op of a training step whose PyTorch kernel depends on the thread count, the CPU's
SIMD level or the library version — products, reductions, transcendental functions — an
implementation on samebits' kernels (the C++ backend's canonical or exact GEMM, its LayerNorm,
softmax rows in the 32-lane form, chains over reduced dimensions, samebits' own exp, log, tanh,
erf, sin, cos). Ops that are exact, or one IEEE operation per element, run on PyTorch's kernels
(PASS_THROUGH): their bits cannot depend on an order. Every other op is outside the table.

Each module registers its ops with @implements; an implementation receives the op's arguments
with the dispatch mode off (PyTorch ops inside it run PyTorch's kernels) and a Context (the GEMM
mode)."""
import torch

aten = torch.ops.aten

TABLE = {}  # OpOverload -> implementation(ctx, *args, **kwargs)

# Ops whose every output element is exact or one IEEE operation of its inputs (or that move,
# view, allocate or compare data): the same bits from any kernel, thread count or SIMD path.
# add/sub with alpha != 1, clamp, pow, rsqrt and the fused elementwise ops are in TABLE instead.
PASS_THROUGH = frozenset("""
_local_scalar_dense _reshape_alias _to_copy _unsafe_view alias arange as_strided bitwise_and bitwise_not
bitwise_or cat chunk clone constant_pad_nd contiguous copy_ detach div embedding empty empty_like
empty_strided eq expand fill_ full full_like gather ge gt index index_select is_nonzero le lift_fresh
lift_fresh_copy logical_and logical_not logical_or lt masked_fill mul narrow ne neg new_empty
new_empty_strided new_full new_ones new_zeros ones ones_like permute reciprocal repeat reshape resize_
select select_backward slice slice_backward split split_with_sizes sqrt squeeze stack t transpose tril
triu unbind unsqueeze view where zero_ zeros zeros_like abs sign floor ceil trunc flip roll equal isnan isinf
isfinite any all
""".split())

FLOATS = (torch.float32, torch.bfloat16, torch.float16)


def implements(*ops):
    def register(fn):
        for op in ops:
            if op is not None:
                TABLE[op] = fn
        return fn
    return register


def op(name, overload="default"):
    """aten.name.overload, or None where this PyTorch has no such op (newer ops on torch 1.13)."""
    try:
        return getattr(getattr(aten, name), overload)
    except (AttributeError, RuntimeError):
        return None


def f32(t):
    """t as a contiguous float32 tensor (bf16 and fp16 widen exactly)."""
    if t.dtype != torch.float32:
        t = t.to(torch.float32)
    return t.contiguous()


def like(result, dtype):
    """A float32 result in the op's dtype (one round to nearest even per element)."""
    return result if dtype == torch.float32 else result.to(dtype)


def module():
    from ... import _load
    return _load()


def launch(t):
    """(the extension module, t's device index: -1 for the CPU) once PyTorch's queued work on t's
    GPU is done (samebits' CUDA backend runs on its own stream and waits for itself)."""
    if t.device.type == "cuda":
        torch.cuda.current_stream(t.device).synchronize()
        return module(), t.device.index
    return module(), -1


from . import attention, foreach, linalg, losses, norms, pointwise, random, reductions  # noqa: E402,F401  (registration)
