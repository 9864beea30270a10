"""samebits for PyTorch programs (docs/TORCH.md): deterministic(), which runs a training step's ATen
ops on samebits' kernels (the same bits on any thread count, SIMD level and world size); optimizers and clipping with the C++ trainer's
bits (AdamW, Muon, clip_grad_norm_: the same bits on any thread count), the trainer's exact sum of
leaf gradients across micro-batches and ranks (Leaves), and a Recorder that writes
a PyTorch training loop's run file and op-level trace in samebits' schema, so that
`samebits diff`, `samebits trace`, samebits.analysis and the notebooks read them.
"""
from .adamw import AdamW
from .clip import clip_grad_norm_
from .deterministic import deterministic, disable, enable
from .deterministic import is_enabled as deterministic_enabled
from .deterministic import table as deterministic_table
from .leaves import Leaves
from .muon import Muon
from .recorder import Recorder

__all__ = ["AdamW", "Leaves", "Muon", "Recorder", "clip_grad_norm_", "deterministic", "deterministic_enabled", "deterministic_table",
           "disable",
           "enable"]
