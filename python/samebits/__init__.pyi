"""Type stubs of the samebits package: the extension's API (loaded on first use) and the analysis subpackage."""
from . import analysis as analysis
from ._samebits import (Config as Config, Error as Error, Run as Run, State as State, StepStats as StepStats,
                        Trainer as Trainer, diff as diff, fingerprint as fingerprint, open_run as open_run,
                        train as train, world as world)

__version__: str
