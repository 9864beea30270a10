"""CTest entry of samebits.analysis's unit tests: exit 77 (skipped) when this python lacks numpy, h5py
or matplotlib; otherwise unittest over notebooks/tests/test_*.py (SAMEBITS_BIN, set by CTest,
enables the tests on runs trained by `samebits train`); a run that skipped any test exits 77 too,
so the skip shows. Under CI=true each skip is a failure (CI has every dependency)."""
import importlib.util
import os
import sys
import unittest

SKIP = 1 if os.environ.get("CI") == "true" else 77
missing = [m for m in ("numpy", "h5py", "matplotlib") if importlib.util.find_spec(m) is None]
if missing:
    print(f"skipped: {sys.executable} lacks {', '.join(missing)} (apt-get install python3-h5py python3-matplotlib)")
    sys.exit(SKIP)
os.environ.setdefault("MPLBACKEND", "Agg")
here = os.path.dirname(os.path.abspath(__file__))
# The tests' helper module synthetic.py, and the package: $PYTHONPATH (CTest: the one built), else
# this checkout's python/ (samebits.analysis needs no extension module).
sys.path.insert(0, here)
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(here)), "python"))
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful():
    sys.exit(1)
if result.skipped:
    print(f"skipped: {len(result.skipped)} test(s), reasons above")
    sys.exit(SKIP)
