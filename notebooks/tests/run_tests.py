"""CTest entry of samebits.analysis's unit tests: exit 77 (skipped) when this python lacks numpy, h5py
or matplotlib; otherwise unittest over notebooks/tests/test_*.py (SAMEBITS_BIN, set by CTest,
enables the tests on runs trained by `samebits train`)."""
import importlib.util
import os
import sys
import unittest

missing = [m for m in ("numpy", "h5py", "matplotlib") if importlib.util.find_spec(m) is None]
if missing:
    print(f"skipped: {sys.executable} lacks {', '.join(missing)} (apt-get install python3-h5py python3-matplotlib)")
    sys.exit(77)
os.environ.setdefault("MPLBACKEND", "Agg")
here = os.path.dirname(os.path.abspath(__file__))
# The tests' helper module synthetic.py, and the package: $PYTHONPATH (CTest: the one built), else
# this checkout's python/ (samebits.analysis needs no extension module).
sys.path.insert(0, here)
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(here)), "python"))
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
