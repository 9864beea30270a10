"""samebits.torch.deterministic: a PyTorch program's training step on samebits' kernels, so that its
bits do not depend on the thread count, the CPU's SIMD level or the world size (docs/TORCH.md
"Making a program reproducible").

    with samebits.torch.deterministic():              # strict=True, gemm="canonical"
        loss = model(x, y); loss.backward(); optimizer.step()

While active, every ATen op on CPU tensors passes a dispatch mode (PyTorch's TorchDispatchMode:
below autograd, so the forward's ops and the backward's alike) that runs the op on samebits'
kernels when it is in the table (samebits.torch.ops: products on the C++ backend's canonical or
exact GEMM, LayerNorm, softmax, reductions, the transcendental functions on samebits' own math),
on PyTorch's kernel when the op is exact or one IEEE operation per element (ops.PASS_THROUGH), and
otherwise, with strict=True, raises RuntimeError naming the op and the module whose forward ran it
before the op computes anything; strict=False warns once per op and runs PyTorch's kernel.
enable() and disable() do the same without a with-block. Dense float32, bfloat16 and float16
tensors on the CPU and, when samebits is built with CUDA, on GPUs (samebits' CUDA kernels: a CUDA
tensor gets a CPU tensor's bits); float64 is outside the table."""
import threading
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import ops
from .ops import foreach

# Outside aten: the profiler's markers (record_function), which compute nothing.
_PASS_NAMESPACES = ("profiler",)
# c10d's collectives on integer tensors (the exact all-reduce of samebits.torch.Leaves).
_INTEGER_NAMESPACES = ("c10d",)


class _Context:
    """What a table implementation reads of the mode: its GEMM ("canonical", "exact", "pairs")."""
    def __init__(self, gemm):
        self.gemm = gemm


class _Modules:
    """The modules whose forward is running (global hooks, while a mode is active): an error names them."""
    def __init__(self):
        self.local = threading.local()
        self.handles = []
        self.users = 0

    def stack(self):
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def acquire(self):
        self.stack().clear()
        if self.users == 0:
            hooks = torch.nn.modules.module
            self.handles = [hooks.register_module_forward_pre_hook(lambda m, a: self.stack().append(m)),
                            hooks.register_module_forward_hook(lambda m, a, r: self._pop(m))]
        self.users += 1

    def _pop(self, m):
        s = self.stack()
        while s and s.pop() is not m:
            pass

    def release(self):
        self.stack().clear()  # a forward that raised left its modules
        self.users -= 1
        if self.users == 0:
            for h in self.handles:
                h.remove()
            self.handles = []

    def where(self):
        s = self.stack()
        if not s:
            return "outside any module's forward (a backward, an optimizer or plain tensor code)"
        return "in the forward of " + " > ".join(type(m).__name__ for m in s)


_modules = _Modules()


def _name(func):
    return f"{func.namespace}::{func._schema.name.split('::')[-1]}" + (
        f".{func._overloadname}" if func._overloadname != "default" else "")


def _passes(func):
    """An op of PASS_THROUGH, or its in-place form."""
    name = func.overloadpacket.__name__
    return name in ops.PASS_THROUGH or (name.endswith("_") and name[:-1] in ops.PASS_THROUGH)


def _tensors(args, kwargs):
    for x in list(args) + list(kwargs.values()):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from (t for t in x if isinstance(t, torch.Tensor))


def _bind(func, args, kwargs):
    """args beyond func's positional parameters given as its keyword-only ones (_foreach_ entries)."""
    positional = [a for a in func._schema.arguments if not a.kwarg_only]
    if len(args) <= len(positional):
        return args, kwargs
    names = [a.name for a in func._schema.arguments if a.kwarg_only]
    return args[:len(positional)], {**kwargs, **dict(zip(names, args[len(positional):]))}


class _Mode(TorchDispatchMode):
    def __init__(self, strict, gemm):
        super().__init__()
        self.strict = strict
        self.ctx = _Context(gemm)
        self.warned = set()
        self.cuda = bool(ops.module()._built_with_cuda)

    def refuse(self, func, why):
        message = (f"samebits.torch.deterministic: {_name(func)} ({_modules.where()}) {why}; "
                   "see docs/TORCH.md for the table, or use strict=False to run PyTorch's kernel with a warning")
        if self.strict:
            raise RuntimeError(message)
        if func not in self.warned:
            self.warned.add(func)
            warnings.warn(message, RuntimeWarning, stacklevel=3)
        return None

    def covered(self, func, args, kwargs):
        """Why the op is outside the table for these arguments, or None."""
        for t in _tensors(args, kwargs):
            if t.device.type == "cuda" and not self.cuda:
                return "on a CUDA tensor is outside the table: this samebits package was built without CUDA"
            if t.device.type not in ("cpu", "cuda"):
                return f"on a {t.device.type} tensor is outside the table (CPU and CUDA tensors)"
            if t.is_floating_point() and t.dtype not in ops.FLOATS:
                return f"on a {t.dtype} tensor is outside the table (float32, bfloat16 and float16)"
        return None

    def run(self, func, args, kwargs):
        kwargs = kwargs or {}
        impl = ops.TABLE.get(func)
        base = foreach.one_tensor_op(func) if impl is None else None
        floats = any(t.is_floating_point() for t in _tensors(args, kwargs))
        if impl is not None or base is not None:
            why = self.covered(func, args, kwargs)
            if why is not None:
                return self.fallback(func, args, kwargs, why)
            if base is not None:
                calls = [_bind(base, a, k) for a, k in foreach.entries(func, args, kwargs)]
                if base not in ops.TABLE and not _passes(base):
                    return self.fallback(func, args, kwargs, f"has no table entry for its one-tensor op {_name(base)}")
                results = [self.run(base, a, k) for a, k in calls]
                return None if func._schema.name.endswith("_") else results
            try:
                return impl(self.ctx, *args, **kwargs)
            except NotImplementedError as e:
                return self.fallback(func, args, kwargs, f"with {e} is outside the table")
        if func.namespace in _PASS_NAMESPACES or _passes(func):
            return func(*args, **kwargs)
        if func.namespace in _INTEGER_NAMESPACES and not floats:
            return func(*args, **kwargs)
        if not floats and func.namespace == "aten":
            return func(*args, **kwargs)  # integer and bool arithmetic is exact
        return self.fallback(func, args, kwargs, "is not in samebits' table")

    def fallback(self, func, args, kwargs, why):
        self.refuse(func, why)
        return func(*args, **kwargs)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.run(func, args, kwargs)


_active = []  # the contexts enable() entered, innermost last
_entered = []  # every entered context (with-blocks and enable()), innermost last


class deterministic:
    """Context manager: the ATen ops of the block run on samebits' kernels (module docstring).
    strict: an op outside the table raises (True) or warns once and runs PyTorch's kernel (False).
    gemm: "canonical" (rule 1's fma chains) or "exact" (samebits' exact GEMM: the exactly rounded
    product, the same bits for any k split). bf16_dot: "chain" (bf16 operands in fp32 fma chains)
    or "pairs" (numerics.bf16_dot = pairs: pairs of exact bf16 products into the chain, the bf16 dot
    instructions' order — vdpbf16ps where the CPU has it, emulated bit for bit elsewhere)."""

    def __init__(self, strict=True, gemm="canonical", bf16_dot="chain"):
        if gemm not in ("canonical", "exact"):
            raise ValueError(f"samebits.torch.deterministic: gemm must be 'canonical' or 'exact', got {gemm!r}")
        if bf16_dot not in ("chain", "pairs"):
            raise ValueError(f"samebits.torch.deterministic: bf16_dot must be 'chain' or 'pairs', got {bf16_dot!r}")
        if bf16_dot == "pairs" and gemm == "exact":
            raise ValueError("samebits.torch.deterministic: bf16_dot='pairs' is an order of the canonical GEMM; "
                             "gemm='exact' has its own")
        self.strict = bool(strict)
        self.gemm = gemm
        self.bf16_dot = bf16_dot
        self._mode = None

    def __enter__(self):
        ops.module()  # the extension loads before any op is dispatched
        self._mode = _Mode(self.strict, "pairs" if self.bf16_dot == "pairs" else self.gemm)
        _modules.acquire()
        self._mode.__enter__()
        _entered.append(self)
        return self

    def __exit__(self, *exc):
        try:
            _entered.remove(self)
            self._mode.__exit__(*exc)
        finally:
            _modules.release()
            self._mode = None
        return False


def enable(strict=True, gemm="canonical", bf16_dot="chain"):
    """Turns the mode on until disable() (module docstring)."""
    ctx = deterministic(strict, gemm, bf16_dot)
    ctx.__enter__()
    _active.append(ctx)


def disable():
    """Turns off the innermost enable(); an error when none is on."""
    if not _active:
        raise RuntimeError("samebits.torch.disable: samebits.torch.enable() is not on")
    _active.pop().__exit__(None, None, None)


def is_enabled():
    """Whether a deterministic() block or enable() is on."""
    return bool(_entered)


def describe():
    """The innermost active mode as the Recorder records it ("strict, gemm canonical"), or "off"."""
    if not _entered:
        return "off"
    d = _entered[-1]
    return f"{'strict' if d.strict else 'warn'}, gemm {d.gemm}" + (", bf16_dot pairs" if d.bf16_dot == "pairs" else "")


def table():
    """(the ATen ops the table runs on samebits' kernels, the op names it passes to PyTorch's kernels);
    samebits.torch.deterministic_table."""
    return sorted(_name(op) for op in ops.TABLE), sorted(ops.PASS_THROUGH)
