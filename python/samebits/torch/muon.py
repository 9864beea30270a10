"""samebits.torch.Muon: a drop-in for torch.optim.Muon (its signature, defaults and argument
errors) whose update of an fp32 matrix is the C++ Muon of samebits (canonical GEMM chains, an
exact norm): the same bits on any thread count, CPU or GPU, bitwise the C++ optimizer's update under
`optim.momentum_form = lerp` (torch.optim.Muon's EMA momentum) for the same gradient and state.
Each parameter group keeps one C++ Muon per device, built at its first step and reused; the
momentum buffers stay torch tensors in `state` (state_dict, load_state_dict), copied in and out
at every step. CUDA tensors run on samebits' CUDA backend (the CUDA trainer's kernels) when the
package is built with CUDA; without, they are refused with a TypeError.

    optimizer = samebits.torch.Muon(model.hidden_matrices(), lr=1e-4, weight_decay=0.01)

Mathematics (docs/OPTIM.md): M ← M + (1 − μ)·(G − M); U = G + μ·(M − G) (Nesterov) or M;
X = NS(U / (‖U‖_F + eps)) with ns_steps quintic iterations; W ← W·(1 − lr·wd) − lr·scale·X, the
decay with the unadjusted lr. Extra keywords: `ns_table` (a named coefficient table of samebits:
keller, polar_express, polar_express_5, polar_express_8, quintic; default: ns_coefficients),
`scale` (any samebits scale rule: shape, moonlight, spectral, unit_rms, max_dim, none; default
from adjust_lr_fn), `extra_scale`, and `momentum_form="sum"` for samebits' M ← μ·M + G.
"""
import torch
from torch.optim.optimizer import Optimizer

_ADJUST_LR = {None: "shape", "original": "shape", "match_rms_adamw": "moonlight"}
# The group options its C++ Muon is built with; lr and momentum are passed at every step.
_BUILT_WITH = ("weight_decay", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn", "ns_table", "scale",
               "extra_scale", "momentum_form")


def _load_module():
    from .. import _load
    return _load()


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None, *,
                 ns_table=None, scale=None, extra_scale=1.0, momentum_form="lerp"):
        if isinstance(lr, torch.Tensor) and lr.numel() != 1:
            raise ValueError("Muon: a Tensor lr must hold one element")
        if not 0.0 <= lr:
            raise ValueError(f"Muon: invalid learning rate {lr} (expected >= 0)")
        if not 0.0 <= momentum:
            raise ValueError(f"Muon: invalid momentum {momentum} (expected >= 0)")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Muon: invalid weight_decay {weight_decay} (expected >= 0)")
        if adjust_lr_fn not in _ADJUST_LR:
            raise ValueError(f"Muon: adjust_lr_fn {adjust_lr_fn!r} is not supported (None, 'original' or "
                             "'match_rms_adamw')")
        if len(ns_coefficients) != 3:
            raise ValueError(f"Muon: ns_coefficients must be three numbers (a, b, c), got {ns_coefficients!r}")
        if not 0 < ns_steps < 100:
            raise ValueError(f"Muon: ns_steps must be in 1..99, got {ns_steps}")
        if momentum_form not in ("lerp", "sum"):
            raise ValueError(f"Muon: momentum_form must be 'lerp' or 'sum', got {momentum_form!r}")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn, ns_table=ns_table, scale=scale, extra_scale=extra_scale,
                        momentum_form=momentum_form)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon: only 2-D parameters are supported, got one of size {tuple(p.size())}")

    @staticmethod
    def _args(group):
        """The group's options that its C++ Muon is built with (lr and momentum are per step)."""
        a = _load_module()._MuonArgs()
        a.weight_decay = float(group["weight_decay"])
        a.nesterov = bool(group["nesterov"])
        a.eps = float(group["eps"])
        a.ns_steps = int(group["ns_steps"])
        a.ns_table = group["ns_table"] or "custom"
        a.ns_coefficients = [float(x) for x in group["ns_coefficients"]]
        a.scale = group["scale"] or _ADJUST_LR[group["adjust_lr_fn"]]
        a.extra_scale = float(group["extra_scale"])
        a.momentum_form = group["momentum_form"]
        return a

    def _engine(self, index, device, params, group, module):
        """The C++ Muon of group `index`'s matrices on `device`: built on first use, rebuilt only when
        the matrices' shapes or the group's options change (torch's __getstate__ leaves it out)."""
        shapes = [tuple(p.shape) for p in params]
        key = (tuple(shapes), tuple(group[k] for k in _BUILT_WITH))
        engines = self.__dict__.setdefault("_engines", {})
        cached = engines.get((index, device))
        if cached is None or cached[0] != key:
            cached = (key, module._MuonGroup(shapes, self._args(group), -1 if device.type == "cpu" else device.index))
            engines[(index, device)] = cached
        return cached[1]

    @staticmethod
    def _check(p, module):
        if torch.is_complex(p):
            raise RuntimeError("Muon: complex parameters are not supported")
        if p.grad.is_sparse:
            raise RuntimeError("Muon: sparse gradients are not supported")
        if p.device.type not in ("cpu", "cuda") or p.dtype != torch.float32 or not p.is_contiguous():
            raise TypeError(f"samebits.torch.Muon updates contiguous float32 CPU or CUDA parameters; got "
                            f"{p.dtype} on {p.device}" + ("" if p.is_contiguous() else ", not contiguous"))
        if p.device.type == "cuda" and not module._built_with_cuda:
            raise TypeError(f"samebits.torch.Muon: a parameter on {p.device}, but this samebits package was "
                            "built without CUDA (build it with -DSAMEBITS_CUDA=ON, or keep the parameters "
                            "on the CPU)")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        module = _load_module()
        for index, group in enumerate(self.param_groups):
            by_device = {}
            for p in group["params"]:
                by_device.setdefault(p.device, []).append(p)
            for device, params in by_device.items():
                present = [p.grad is not None for p in params]
                if not any(present):
                    continue
                weights, grads, momenta = [], [], []
                for p, has_grad in zip(params, present):
                    if not has_grad:  # not updated: its pointers are not read
                        weights.append(0)
                        grads.append(None)
                        momenta.append(0)
                        continue
                    self._check(p, module)
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None or not buf.is_contiguous():
                        buf = state["momentum_buffer"] = (torch.zeros_like(p, memory_format=torch.contiguous_format)
                                                          if buf is None else buf.contiguous())
                    weights.append(p.data_ptr())
                    grads.append(p.grad.detach().to(torch.float32).contiguous())  # alive until the step returns
                    momenta.append(buf.data_ptr())
                engine = self._engine(index, device, params, group, module)
                if device.type == "cuda":
                    # samebits' CUDA backend runs on its own stream: torch's work on these tensors is
                    # finished first, and the update is complete when the call returns.
                    torch.cuda.current_stream(device).synchronize()
                engine.step(weights, [0 if g is None else g.data_ptr() for g in grads], momenta, present,
                            float(group["lr"]), float(group["momentum"]))
        return loss
