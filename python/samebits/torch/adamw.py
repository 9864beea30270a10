"""samebits.torch.AdamW: a drop-in for torch.optim.AdamW (its signature, defaults and argument
errors) whose update of an fp32 tensor is the C++ AdamW of samebits bit for bit (adamw_constants'
fp64 constants rounded once, then ops::adamw_update per element): the same bits on any thread
count, CPU or GPU, and the C++ trainer's update for the same gradient, state and step count.
State stays torch's (`step`, `exp_avg`, `exp_avg_sq` per parameter: state_dict, load_state_dict,
and a torch.optim.AdamW state_dict loads); the update runs in place on the tensors' memory.

    optimizer = samebits.torch.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)

Mathematics (core/base/include/samebits/core/ops/adamw.hpp): with t the parameter's own update
count (torch's state["step"]), m ← fma(β1, m, g·(1−β1)); v ← fma(β2, v, (g·g)·(1−β2));
d = √v / fl32(√(1−β2^t)) + ε; w ← fma(−fl32(lr/(1−β1^t)), m/d, w·fl32(1 − lr·wd)). Weight decay
applies to every tensor of a group whose weight_decay is not 0 (torch's rule; the C++ trainer
decays only tensors of two or more dimensions: give the others a group with weight_decay=0).
Refused (ValueError): amsgrad, maximize, capturable, differentiable, foreach and fused set to True.
"""
import torch
from torch.optim.optimizer import Optimizer

# torch.optim.AdamW's switches this optimizer does not implement: each must keep its default.
_UNSUPPORTED = ("amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused")


def _load_module():
    from .. import _load
    return _load()


def device_index(t, module, who):
    """-1 for a CPU tensor, the GPU's index for a CUDA tensor (CUDA builds); else a TypeError."""
    if t.device.type == "cpu":
        return -1
    if t.device.type == "cuda" and module._built_with_cuda:
        return t.device.index
    if t.device.type == "cuda":
        raise TypeError(f"{who}: a tensor on {t.device}, but this samebits package was built without CUDA "
                        "(build it with -DSAMEBITS_CUDA=ON, or keep the tensors on the CPU)")
    raise TypeError(f"{who}: tensors on the CPU or CUDA only, got one on {t.device}")


def synchronize(devices):
    """torch's work on these devices finished: samebits' CUDA backend runs on its own stream."""
    for d in set(devices):
        if d >= 0:
            torch.cuda.current_stream(d).synchronize()


def _refuse_switches(group):
    for key in _UNSUPPORTED:
        if group.get(key):
            raise ValueError(f"samebits.torch.AdamW: {key}={group[key]!r} is not supported (the C++ AdamW's update "
                             f"has no such variant); leave {key} at its default")


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        if isinstance(lr, torch.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused)
        _refuse_switches(defaults)
        super().__init__(params, defaults)

    @staticmethod
    def _check(p, module):
        if p.grad.is_sparse:
            raise RuntimeError("AdamW does not support sparse gradients")
        if torch.is_complex(p):
            raise RuntimeError("samebits.torch.AdamW: complex parameters are not supported")
        if p.dtype != torch.float32 or not p.is_contiguous():
            raise TypeError(f"samebits.torch.AdamW updates contiguous float32 parameters; got {p.dtype}"
                            + ("" if p.is_contiguous() else ", not contiguous"))
        return device_index(p, module, "samebits.torch.AdamW")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        module = _load_module()
        for group in self.param_groups:
            _refuse_switches(group)
            weights, grads, exp_avgs, exp_avg_sqs, numels, steps, devices = [], [], [], [], [], [], []
            keep = []  # contiguous fp32 copies of gradients, alive until the step returns
            for p in group["params"]:
                if p.grad is None:
                    continue
                devices.append(self._check(p, module))
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                for key in ("exp_avg", "exp_avg_sq"):
                    buf = state[key]
                    if buf.dtype != torch.float32 or buf.device != p.device or not buf.is_contiguous():
                        state[key] = buf.to(device=p.device, dtype=torch.float32,
                                            memory_format=torch.contiguous_format)
                t = int(state["step"]) + 1
                if isinstance(state["step"], torch.Tensor):
                    state["step"].fill_(t)
                else:
                    state["step"] = torch.tensor(float(t))
                g = p.grad.detach().to(torch.float32).contiguous()
                keep.append(g)
                weights.append(p.data_ptr())
                grads.append(g.data_ptr())
                exp_avgs.append(state["exp_avg"].data_ptr())
                exp_avg_sqs.append(state["exp_avg_sq"].data_ptr())
                numels.append(p.numel())
                steps.append(t)
            if not weights:
                continue
            synchronize(devices)
            beta1, beta2 = group["betas"]
            module._adamw_step(weights, grads, exp_avgs, exp_avg_sqs, numels, steps, devices, float(group["lr"]),
                               (float(beta1), float(beta2)), float(group["eps"]), float(group["weight_decay"]))
        return loss
