"""samebits.torch.Leaves: the C++ trainer's exact gradient sum for a PyTorch program. A global batch
is cut into leaves of `leaf_size` rows; each leaf's loss is backpropagated on its own, and its
gradients (and loss) are added into the trainer's fixed-point accumulator (rule 4: exact, so any
order or partition of the same leaves gives the same sums); the sum over every leaf — of every
micro-batch and, under torch.distributed, of every rank — is rounded once to fp32 and divided once
by `divisor` into each parameter's .grad. So neither the micro-batch split nor the world size moves
a bit: 1, 2, 3 or 4 ranks give one process's gradients, as long as each leaf's own backward gives
the same bits on every rank (the same thread count and CPU, or samebits' kernels).

    leaves = samebits.torch.Leaves(model.parameters(), leaf_size=1)       # group: a process group
    loss = leaves.backward(lambda x, y: F.cross_entropy(model(x).flatten(0, 1), y.flatten(),
                                                        reduction="sum"), x, y, divisor=y.numel())
    optimizer.step()

`loss_fn(*leaf_tensors)` returns the leaf's summed loss; `backward` gives fl(Σ loss)/divisor. For
gradient accumulation: `zero()`, `accumulate(loss_fn, *micro_batch)` any number of times, then
`reduce(divisor)`. Under torch.distributed (gloo, or NCCL with CPU tensors copied) every rank passes
the same global batch and backpropagates a contiguous range of its leaves; the ranks' sums are
combined by the trainer's exact all-reduce (the block ranges' MAX, the wire words' integer SUM —
int64 addition, two's complement as uint64 — then the decode). Each leaf's per-tensor Σ‖g‖² is
summed exactly too (`statistics`): given to a Recorder (`leaves=`), the run records the trainer's
leaf statistics and gradient noise scale (McCandlish et al. 2018), leaves assumed of equal size.
Dense CPU float32 parameters.
"""
import functools
import operator

import torch
import torch.distributed as dist

from .adamw import _load_module


class Leaves:
    def __init__(self, params, leaf_size=1, group=None):
        if isinstance(params, torch.Tensor):
            params = [params]
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("samebits.torch.Leaves: no parameter requires a gradient")
        for p in self.params:
            if p.device.type != "cpu" or p.dtype != torch.float32 or p.is_sparse:
                raise TypeError(f"samebits.torch.Leaves sums dense CPU float32 gradients; got a {p.dtype} "
                                f"parameter on {p.device}")
        if int(leaf_size) < 1:
            raise ValueError(f"samebits.torch.Leaves: leaf_size must be at least 1, got {leaf_size}")
        self.leaf_size = int(leaf_size)
        self.group = group
        distributed = group is not None or (dist.is_available() and dist.is_initialized())
        self.world = dist.get_world_size(group) if distributed else 1
        self.rank = dist.get_rank(group) if distributed else 0
        # The gradients at torch_layout's offsets (zeros between), then the loss.
        self._acc = _load_module()._LeafAccumulator([(f"p{i}", list(p.shape)) for i, p in enumerate(self.params)])
        self._offsets = self._acc.offsets
        self._flat = torch.zeros(self._acc.size, dtype=torch.float32)
        self._leaves = 0  # leaves of every rank since zero()
        self.statistics = None  # the last reduce's leaf statistics, for the Recorder

    def zero(self):
        """Starts a step: no leaf summed yet."""
        self._acc.clear()
        self._leaves = 0

    def accumulate(self, loss_fn, *batch):
        """Adds the exact gradients (and losses) of this rank's leaves of `batch` (tensors whose first
        dimension is the batch's rows, the same on every rank); their .grad is left to the next call."""
        if not batch:
            raise ValueError("samebits.torch.Leaves.accumulate: no batch tensors given")
        rows = batch[0].shape[0]
        if any(t.shape[0] != rows for t in batch):
            raise ValueError("samebits.torch.Leaves.accumulate: the batch tensors' first dimensions differ: "
                             + ", ".join(str(t.shape[0]) for t in batch))
        if rows % self.leaf_size != 0:
            raise ValueError(f"samebits.torch.Leaves.accumulate: {rows} rows are not a whole number of leaves "
                             f"of {self.leaf_size}")
        count = rows // self.leaf_size
        begin, end = count * self.rank // self.world, count * (self.rank + 1) // self.world
        for leaf in range(begin, end):
            part = slice(leaf * self.leaf_size, (leaf + 1) * self.leaf_size)
            for p in self.params:
                p.grad = None
            loss = loss_fn(*(t[part] for t in batch))
            if loss.numel() != 1:
                raise ValueError(f"samebits.torch.Leaves: loss_fn returned {loss.numel()} values; it returns the "
                                 "leaf's summed loss, one value")
            loss.backward()
            with torch.no_grad():
                for p, at in zip(self.params, self._offsets):
                    view = self._flat[at:at + p.numel()]
                    if p.grad is None:
                        view.zero_()
                    else:
                        view.copy_(p.grad.reshape(-1))
                self._flat[-1] = loss.detach().float()
            self._acc.add(self._flat.data_ptr())
        self._leaves += count

    def reduce(self, divisor):
        """Every .grad ← fl32(Σ over the step's leaves) / divisor, the sum over every rank exact and
        rounded once; returns fl32(Σ loss) / divisor, a 0-dimensional tensor."""
        if self._leaves == 0:
            raise ValueError("samebits.torch.Leaves.reduce: no leaf was accumulated since zero()")
        divisor = float(divisor)
        if not divisor > 0.0:
            raise ValueError(f"samebits.torch.Leaves.reduce: divisor must be positive, got {divisor}")
        words = torch.tensor(self._acc.leaf_words(), dtype=torch.int64)
        if self.world > 1:
            dist.all_reduce(words, op=dist.ReduceOp.SUM, group=self.group)
            ranges = torch.from_numpy(self._acc.block_ranges())
            dist.all_reduce(ranges, op=dist.ReduceOp.MAX, group=self.group)
            wire = torch.from_numpy(self._acc.encode(self._leaves).view("int64"))
            dist.all_reduce(wire, op=dist.ReduceOp.SUM, group=self.group)
            statuses = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world)]
            dist.all_gather(statuses, torch.tensor([self._acc.status], dtype=torch.int64), group=self.group)
            self._acc.decode(self._leaves, functools.reduce(operator.or_, (int(s.item()) for s in statuses)))
        out = torch.empty_like(self._flat)
        self._acc.round(out.data_ptr(), divisor)
        with torch.no_grad():
            for p, at in zip(self.params, self._offsets):
                p.grad = out[at:at + p.numel()].view_as(p).clone()
        # A leaf's gradient is divisor / leaves times the batch gradient's scale (leaves of equal size).
        self.statistics = (words.tolist(), self._leaves, self.leaf_size, divisor / self._leaves)
        return out[-1].clone()

    def backward(self, loss_fn, *batch, divisor=None):
        """zero(), accumulate(loss_fn, *batch), reduce(divisor); divisor None: the batch's rows."""
        self.zero()
        self.accumulate(loss_fn, *batch)
        return self.reduce(batch[0].shape[0] if divisor is None else divisor)
