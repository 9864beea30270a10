"""A fresh venv for the tests that install from the package index (notebooks/tests/run_pytest.py,
tests/integration/h5py_wheel.py): emptied first, then `pip install` of what the caller asks for.

fresh_venv(DIR, [requirements]) returns the venv's python, or an exit code: 77 (skipped) when the
venv cannot be made or the package index cannot be reached, 1 when the install fails.
fresh_venv(DIR, [requirements], keep=True, system_site_packages=True) keeps a venv already at DIR
(its packages upgraded to the index's newest: a large download is made once) and lets it see the
system's packages (Debian's numpy, h5py, pytest), the requirements installed over them.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def fresh_venv(venv, requirements, keep=False, system_site_packages=False):
    venv = os.path.abspath(venv)
    python = os.path.join(venv, "bin", "python")
    if not (keep and os.access(python, os.X_OK)):
        shutil.rmtree(venv, ignore_errors=True)
        options = ["--system-site-packages"] if system_site_packages else []
        made = subprocess.run([sys.executable, "-m", "venv", *options, venv], capture_output=True, text=True)
        if made.returncode != 0:
            print(f"skipped: {sys.executable} -m venv failed (apt-get install python3-venv): {made.stderr.strip()}")
            return 77
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    with tempfile.TemporaryDirectory() as tmp:
        # A tiny download first: a failure here means no package index, not a broken package.
        probe = subprocess.run(pip + ["download", "--no-deps", "--no-cache-dir", "-d", tmp, "iniconfig"],
                               capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        print("skipped: the package index cannot be reached:", probe.stderr.strip().splitlines()[-1:])
        return 77
    upgrade = ["--upgrade"] if keep else []
    if subprocess.run(pip + ["install", "-q"] + upgrade + list(requirements), timeout=1200).returncode != 0:
        print("FAIL: pip install", " ".join(requirements))
        return 1
    return python
