"""samebits.analysis (formerly samebits_nb): read samebits run files (HDF5, docs/FORMAT.md) and analyse them in notebooks.

Modules: runfile (load a run), compare (first divergent step, loss gap, parameter distance),
noise (EMA-smoothed gradient noise scale), tracefile (op-hash streams and trace propagation tables),
plots (matplotlib figures), produce (train small runs with the samebits CLI), sweeps (the shipped
studies' measures, each run as `python3 -m samebits.analysis.sweeps.<name>`; not imported here).
The notebooks in notebooks/ only call these and plot.
"""
from .runfile import Run, load_run
from .compare import Comparison, compare_runs, relative_l2
from .noise import ema, NoiseSeries, noise_scale_series
from .produce import TINY, samebits_binary, train_run
from .tracefile import Propagation, Row, first_difference, load_propagation, load_trace
from . import plots, studies

__all__ = [
    "Run", "load_run", "Comparison", "compare_runs", "relative_l2", "ema", "NoiseSeries",
    "noise_scale_series", "samebits_binary", "train_run", "TINY", "plots", "studies",
    "Row", "load_trace", "first_difference", "Propagation", "load_propagation",
]
