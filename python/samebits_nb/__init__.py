"""samebits_nb: the former name of samebits.analysis, kept importable as an alias for one release
(0.1.x). Import samebits.analysis instead."""
import sys
import warnings

from samebits import analysis as _analysis
from samebits.analysis import *  # noqa: F401,F403
from samebits.analysis import compare, noise, plots, produce, report, runfile, studies, tracefile  # noqa: F401

__all__ = _analysis.__all__
for _name in ("compare", "noise", "plots", "produce", "report", "runfile", "studies", "tracefile"):
    sys.modules[f"{__name__}.{_name}"] = getattr(_analysis, _name)
warnings.warn("samebits_nb is now samebits.analysis; the old name goes after 0.1.x", DeprecationWarning, stacklevel=2)
