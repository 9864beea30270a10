"""CTest entry (label slow): `pip install .[test]` of this checkout into a fresh venv at DIR (emptied
first; numpy, h5py, matplotlib, pytest, scikit-build-core and pybind11 from the package index),
timed; then the package's tests (python/tests) and the analysis tests (notebooks/tests), copied
elsewhere so that they import the installed package (checked). Exit 77 (skipped) when the package
index cannot be reached.

    run_venv.py DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "tests", "support"))
from fresh_venv import fresh_venv  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_venv.py DIR")
    start = time.monotonic()
    python = fresh_venv(sys.argv[1], [root + "[test]"])
    if isinstance(python, int):
        return python
    print(f"pip install .[test] into a fresh venv: {time.monotonic() - start:.0f} s on {os.cpu_count()} cores")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", SAMEBITS_SOURCE_DIR=root)
    with tempfile.TemporaryDirectory() as tmp:
        where = subprocess.run([python, "-c", "import samebits, samebits._samebits as m; print(m.__file__)"],
                               cwd=tmp, env=env, capture_output=True, text=True)
        print("samebits imported from", where.stdout.strip() or where.stderr.strip())
        if where.returncode != 0 or "site-packages" not in where.stdout:
            print("FAIL: the tests would not use the installed package")
            return 1
        codes = []
        for name, source in (("python_tests", here), ("analysis_tests", os.path.join(root, "notebooks", "tests"))):
            copy = os.path.join(tmp, name)
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "run_*.py"))
            code = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", copy], cwd=tmp, env=env).returncode
            codes.append(1 if code == 5 else code)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
