"""samebits.torch.Recorder: a PyTorch training loop recorded into a samebits run file (docs/TORCH.md,
docs/FORMAT.md) that `samebits inspect`, `diff`, `trace`, samebits.analysis and the notebooks read.

    with samebits.torch.Recorder("runs/a.h5", model, optimizer, experiment={"lr": 1e-3},
                                 trace_steps=(4,)) as rec:
        for x, y in batches:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            rec.step(loss)            # after optimizer.step(), before zero_grad
            optimizer.zero_grad()

Per step the loss, the learning rates, every parameter's fingerprint after the update and every
gradient's (XXH3-64 of the raw bits, as samebits' own runs), per-tensor gradient statistics from
samebits' exact sums; snapshots at `snapshot_steps` (0: before the first step), states every
`checkpoint_every` steps and at the end. Under torch.distributed rank 0 writes, and the gradient
it records is the one after DDP's all-reduce; the loss is averaged over the ranks. With
`leaves=` (a samebits.torch.Leaves over the model's parameters, in order) the gradient and loss are
Leaves' (the same on every rank: nothing averaged), the [execution] section names the exact leaf
sum and the leaf size, and each row holds the trainer's leaf statistics and gradient noise scale.
The files are written by samebits' own writers (the extension), never by a second implementation.
"""
import time

import torch

from . import execution
from .trace import OpTracer


def _raw(t):
    """The tensor's bits as a NumPy array (row-major; bf16 and fp16 as 16-bit integers)."""
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy()


def _table_shape(shape):
    """A run file's tensor table holds rank 1 or 2: (n), (rows, cols); higher ranks as (d0, rest)."""
    if len(shape) == 0:
        return [1]
    if len(shape) <= 2:
        return list(shape)
    rest = 1
    for d in shape[1:]:
        rest *= d
    return [shape[0], rest]


class Recorder:
    def __init__(self, path, model, optimizer=None, *, experiment=None, trace_steps=(), snapshot_steps=(),
                 checkpoint_every=0, tokens_per_step=0, leaves=None):
        self.path = str(path)
        self.model = model.module if hasattr(model, "module") else model  # DDP: the wrapped model's names
        self.optimizer = optimizer
        self.experiment = dict(experiment or {})
        self.trace_steps = sorted(set(int(s) for s in trace_steps))
        self.snapshot_steps = set(int(s) for s in snapshot_steps)
        self.checkpoint_every = int(checkpoint_every)
        self.tokens_per_step = int(tokens_per_step)
        self.params = list(self.model.named_parameters())
        self.leaves = leaves
        if leaves is not None and [id(p) for _, p in self.params] != [id(p) for p in leaves.params]:
            raise ValueError("samebits.torch.Recorder: leaves= must be a samebits.torch.Leaves over the model's "
                             "parameters, all of them, in named_parameters() order")
        self.steps = 0
        _, self.rank, _ = execution.distributed()
        self._run = None
        self._tracer = None
        self._traced = []  # (step, rows)

    # ---- the context ---------------------------------------------------------------------------

    def __enter__(self):
        if self.rank == 0:
            from .. import _load
            tensors = [(n, list(p.shape), str(p.dtype).replace("torch.", "")) for n, p in self.params]
            text = execution.experiment_text(self.model, self.optimizer, tensors, self.experiment)
            run_execution = execution.execution(self.model)
            if self.leaves is not None:
                run_execution.update(gradient_sum="exact leaves", leaf_size=self.leaves.leaf_size)
            config = text + "[execution]\n" + "\n".join(
                f"{k} = {execution.ini_value(v)}" for k, v in run_execution.items() if k != "environment") + "\n"
            self._run = _load()._TorchRun(self.path, config, text, [(n, _table_shape(p.shape)) for n, p in self.params],
                                          run_execution)
            if 0 in self.snapshot_steps:
                self._run.snapshot(0, self._floats(p for _, p in self.params))
        self._arm(1)
        return self

    def __exit__(self, kind, value, tb):
        if self._tracer is not None:
            self._tracer.close()
            self._tracer = None
        if self.rank != 0:
            return False
        if kind is not None:
            self._run.fail(f"{kind.__name__}: {value}")
        elif self.steps > 0:
            self._run.checkpoint(self.steps, self._floats(p for _, p in self.params), self._optimizer_state(), True)
        else:
            self._run.fail("no step was recorded")
        if self._traced:
            from .. import _load
            _load()._write_trace(self._trace_path(), self._run.experiment_id, self._traced)
        return False

    # ---- one step --------------------------------------------------------------------------------

    def step(self, loss):
        """Records the step just taken: call after optimizer.step() and before zero_grad()."""
        started = time.perf_counter()
        self.steps += 1
        if self._tracer is not None:
            self._traced.append((self.steps, self._tracer.rows))
            self._tracer.close()
            self._tracer = None
        loss = self._mean_over_ranks(loss) if self.leaves is None else float(loss)
        if self.rank == 0:
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for _, p in self.params]
            self._run.record(self._scalars(loss, started), [_raw(p) for _, p in self.params],
                             [_raw(g) for g in grads], self._floats(grads),
                             self.leaves.statistics if self.leaves is not None else None)
            if self.steps in self.snapshot_steps:
                self._run.snapshot(self.steps, self._floats(p for _, p in self.params))
            if self.checkpoint_every and self.steps % self.checkpoint_every == 0:
                self._run.checkpoint(self.steps, self._floats(p for _, p in self.params), self._optimizer_state(),
                                     False)
        self._arm(self.steps + 1)

    # ---- helpers ---------------------------------------------------------------------------------

    def _arm(self, step):
        if self.rank == 0 and step in self.trace_steps:
            self._tracer = OpTracer(self.model, self.optimizer)

    def _trace_path(self):
        return (self.path[:-3] if self.path.endswith(".h5") else self.path) + ".trace.h5"

    @staticmethod
    def _floats(tensors):
        return [t.detach().to(torch.float32).contiguous().cpu().reshape(-1).numpy() for t in tensors]

    @staticmethod
    def _mean_over_ranks(loss):
        loss = loss.detach().to(torch.float32).reshape(())
        world, _, _ = execution.distributed()
        if world > 1:
            loss = loss.clone()
            torch.distributed.all_reduce(loss)
            loss = loss / world
        return float(loss)

    def _scalars(self, loss, started):
        groups = self.optimizer.param_groups if self.optimizer is not None else []
        lr = float(groups[0]["lr"]) if groups else float("nan")
        last_lr = float(groups[-1]["lr"]) if groups else float("nan")
        momentum = float(groups[0].get("momentum", float("nan"))) if groups else float("nan")
        return {"step": self.steps, "loss": loss, "lr": lr, "adam_lr": last_lr, "lr_factor": float("nan"),
                "momentum": momentum, "tokens": self.tokens_per_step, "seconds": time.perf_counter() - started}

    def _optimizer_state(self):
        """'name/kind' → the float32 state tensors of each parameter (a checkpoint's content)."""
        out = []
        if self.optimizer is None:
            return out
        for name, p in self.params:
            for kind, v in sorted(self.optimizer.state.get(p, {}).items()):
                if torch.is_tensor(v) and v.numel() == p.numel() and v.is_floating_point():
                    out.append((f"{name}/{kind}", v.detach().to(torch.float32).reshape(-1).numpy()))
        return out
