"""samebits for PyTorch programs (docs/TORCH.md): a deterministic Muon for torch (Muon) and a
Recorder that writes a PyTorch training loop's run file and op-level trace in samebits' schema,
so that `samebits diff`, `samebits trace`, samebits.analysis and the notebooks read them.
"""
from .muon import Muon
from .recorder import Recorder

__all__ = ["Muon", "Recorder"]
