"""A fresh venv for the tests that install from the package index (notebooks/tests/run_pytest.py,
tests/integration/h5py_wheel.py): emptied first, then `pip install` of what the caller asks for.

fresh_venv(DIR, [requirements]) returns the venv's python, or an exit code: 77 (skipped) when the
venv cannot be made or the package index cannot be reached, 1 when the install fails.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def fresh_venv(venv, requirements):
    venv = os.path.abspath(venv)
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if made.returncode != 0:
        print(f"skipped: {sys.executable} -m venv failed (apt-get install python3-venv): {made.stderr.strip()}")
        return 77
    python = os.path.join(venv, "bin", "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    with tempfile.TemporaryDirectory() as tmp:
        # A tiny download first: a failure here means no package index, not a broken package.
        probe = subprocess.run(pip + ["download", "--no-deps", "--no-cache-dir", "-d", tmp, "iniconfig"],
                               capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        print("skipped: the package index cannot be reached:", probe.stderr.strip().splitlines()[-1:])
        return 77
    if subprocess.run(pip + ["install", "-q"] + list(requirements), timeout=1200).returncode != 0:
        print("FAIL: pip install", " ".join(requirements))
        return 1
    return python
