"""The op-level trace of a PyTorch step (docs/TORCH.md): one row per ATen op the dispatcher runs —
the module path as its site ("blocks.0.mlp.fc2 forward", "… backward", "optimizer"), the op and its
first output's dtype ("aten.addmm.default float32"), the XXH3-64 of each input's raw bits (before
the op) and each output's (after), the first output's shape. The rows go into samebits' trace file
(RUN.trace.h5, the format `samebits train --trace-steps` writes); `samebits trace` aligns two
configurations' streams (docs/TRACE.md). Tracing hashes every tensor an op touches: a traced step
is slower, an untraced one pays nothing (no mode, no hooks)."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def _fingerprints(values):
    from .. import _load
    raw = _load()._fingerprint_raw
    out = []
    for t in values:
        if not torch.is_tensor(t) or t.is_sparse or t.device.type == "meta":
            continue
        t = t.detach().contiguous().cpu()
        if t.dtype in (torch.bfloat16, torch.float16, torch.complex32):
            t = t.view(torch.int16)
        out.append(raw(t.reshape(-1).numpy()) if t.numel() > 0 else 0)
    return out


class _Mode(TorchDispatchMode):
    def __init__(self, tracer):
        super().__init__()
        self.tracer = tracer

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "profiler":  # record_function's handles: not values
            return func(*args, **kwargs)
        inputs = _fingerprints(tree_flatten((args, kwargs))[0])
        out = func(*args, **kwargs)
        # empty, empty_like, new_empty, empty_strided: uninitialised memory, not a result.
        tensors = [] if "empty" in func.__name__ else [t for t in tree_flatten(out)[0] if torch.is_tensor(t)]
        # An op that writes into an argument (add_, copy_, out=): that argument is its output.
        if not tensors and func._schema.is_mutable:
            tensors = [a for a in tree_flatten((args, kwargs))[0] if torch.is_tensor(a)][:1]
        first = tensors[0] if tensors else None
        dtype = str(first.dtype).replace("torch.", "") if first is not None else "none"
        self.tracer.rows.append((self.tracer.site(), f"{func} {dtype}", inputs, _fingerprints(tensors),
                                 list(first.shape) if first is not None else []))
        return out


class OpTracer:
    """Records the ops of the code that runs while it is open: model forward and backward (sites
    from module hooks), the optimizer's step (site "optimizer"), and what lies between ("" )."""

    def __init__(self, model, optimizer=None):
        self.rows = []
        self._stack = []        # module paths of the forward calls in progress
        self._backward = None   # the module whose output gradient arrived last
        self._in_optimizer = False
        self._handles = []
        for path, module in model.named_modules():
            name = path or type(model).__name__
            self._handles.append(module.register_forward_pre_hook(self._enter(name)))
            self._handles.append(module.register_forward_hook(self._leave(name)))
        self._optimizer = optimizer
        if optimizer is not None:
            inner = optimizer.step

            def step(*args, **kwargs):
                self._in_optimizer = True
                try:
                    return inner(*args, **kwargs)
                finally:
                    self._in_optimizer = False
            optimizer.step = step
        self._mode = _Mode(self)
        self._mode.__enter__()

    def site(self):
        if self._in_optimizer:
            return "optimizer"
        if self._stack:
            return self._stack[-1] + " forward"
        if self._backward is not None and not torch.is_grad_enabled():
            return self._backward + " backward"
        return ""

    def _enter(self, name):
        def hook(module, args):
            self._stack.append(name)
        return hook

    def _leave(self, name):
        def on_grad(grad):
            self._backward = name
        def hook(module, args, output):
            self._stack.pop()
            for t in tree_flatten(output)[0]:
                if torch.is_tensor(t) and t.requires_grad:
                    t.register_hook(on_grad)
        return hook

    def close(self):
        self._mode.__exit__(None, None, None)
        for h in self._handles:
            h.remove()
        if self._optimizer is not None:
            del self._optimizer.step  # the class's step again
