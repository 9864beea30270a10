"""samebits from Python: the trainer, its tensors and its run files, with the command line's bits.

    import samebits
    config = samebits.Config.from_ini("experiments/configs/default.ini", {"train.steps": 50})
    trainer = samebits.Trainer(config)
    stats = trainer.step()                      # the step's statistics (a dict)
    trainer.params["wte"]                       # read-only NumPy view of the weights
    samebits.train(config, out="runs/a.h5")     # the same run file as `samebits train`
    samebits.diff("runs/a.h5", "runs/b.h5")     # `samebits diff --json` as a dict

The extension (samebits._samebits) is loaded on first use, so that samebits.analysis (reading run
files with h5py, plots) works without it. Under `mpirun -np N python script.py` every rank trains
its share with the same bits; at exit the trainers are closed and MPI finalised, and an uncaught
exception on one rank ends the whole job (as the command line does). python/README.md documents
the API.
"""
import atexit
import importlib
import sys

__version__ = "0.1.0"

_EXPORTS = ("Config", "Trainer", "State", "Run", "Error", "train", "open_run", "diff", "fingerprint", "world")
__all__ = list(_EXPORTS) + ["analysis", "torch"]
_extension = None


def _load():
    global _extension
    if _extension is None:
        try:
            from . import _samebits
        except ImportError as e:
            raise ImportError(
                "samebits: the extension module is not built here (pip install . in the samebits "
                "checkout, or build it with cmake and put <build>/python on PYTHONPATH): " + str(e)) from e
        _extension = _samebits
        _watch(_samebits)
    return _extension


def _watch(ext):
    """At exit: every Trainer closed, then MPI finalised. An uncaught exception on one rank of an
    MPI job ends every rank (the others may wait in a collective this one will never join)."""
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        ext._abort_job(f"{kind.__name__}: {value}", 1)

    sys.excepthook = excepthook
    atexit.register(ext._end_session)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(_load(), name)
    if name in ("analysis", "torch"):
        return importlib.import_module(__name__ + "." + name)
    raise AttributeError(f"module 'samebits' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + __all__)
