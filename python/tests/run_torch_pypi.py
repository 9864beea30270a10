"""CTest entry (label slow): the package's torch tests (python/tests/test_torch_*.py: the Recorder,
the trace alignment between configurations, Muon) against the newest torch on PyPI, installed with
pip into a venv at DIR that also sees Debian's numpy, h5py and pytest (the module's build). The venv
is kept between runs (torch and its CUDA libraries are a few GB) and torch upgraded each run. The
package is the build tree's (PYTHONPATH, as test_python). Exit 77 (skipped) when the package index
cannot be reached.

    run_torch_pypi.py DIR
"""
import glob
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "tests", "support"))
from fresh_venv import fresh_venv  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_torch_pypi.py DIR")
    start = time.monotonic()
    python = fresh_venv(sys.argv[1], ["torch"], keep=True, system_site_packages=True)
    if isinstance(python, int):
        return python
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.__file__)"],
                             capture_output=True, text=True)
    print(f"torch from PyPI in {sys.argv[1]}: {version.stdout.strip() or version.stderr.strip()} "
          f"({time.monotonic() - start:.0f} s)")
    if version.returncode != 0 or os.path.abspath(sys.argv[1]) not in version.stdout:
        print("FAIL: the tests would not use the venv's torch")
        return 1
    tests = sorted(glob.glob(os.path.join(here, "test_torch_*.py")))
    return subprocess.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *tests]).returncode


if __name__ == "__main__":
    sys.exit(main())
