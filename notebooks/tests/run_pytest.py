"""CTest entries that run samebits_nb's tests under pytest.

  run_pytest.py            pytest in this python, on the package of this checkout (pyproject.toml's
                           pythonpath); exit 77 (skipped) when it lacks pytest, numpy, h5py or
                           matplotlib.
  run_pytest.py --venv DIR a fresh venv at DIR (emptied first), `pip install NOTEBOOKS[test]` into it
                           from the package index (numpy, h5py, matplotlib, pytest), then the tests,
                           copied elsewhere so that they import the installed package (checked);
                           exit 77 (skipped) when the package index cannot be reached.
pytest's exit 5 (no test collected) is a failure.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
notebooks = os.path.dirname(here)
sys.path.insert(0, os.path.join(os.path.dirname(notebooks), "tests", "support"))
from fresh_venv import fresh_venv  # noqa: E402
env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")


def run_tests(python, cwd, check_installed):
    """pytest over notebooks/tests; returns its exit code (5, no tests, made 1)."""
    if check_installed:
        where = subprocess.run([python, "-c", "import samebits_nb; print(samebits_nb.__file__)"], cwd=cwd, env=env,
                               capture_output=True, text=True)
        print("samebits_nb imported from", where.stdout.strip() or where.stderr.strip())
        if where.returncode != 0 or "site-packages" not in where.stdout:
            print("FAIL: the tests would not use the installed package")
            return 1
    code = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=cwd, env=env).returncode
    return 1 if code == 5 else code


def main():
    if len(sys.argv) == 1:
        missing = [m for m in ("pytest", "numpy", "h5py", "matplotlib") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"skipped: {sys.executable} lacks {', '.join(missing)} (apt-get install python3-pytest)")
            return 77
        return run_tests(sys.executable, notebooks, False)
    if len(sys.argv) != 3 or sys.argv[1] != "--venv":
        sys.exit("usage: run_pytest.py [--venv DIR]")
    python = fresh_venv(sys.argv[2], [notebooks + "[test]"])
    if isinstance(python, int):
        return python
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(here, os.path.join(tmp, "tests"), ignore=shutil.ignore_patterns("__pycache__"))
        return run_tests(python, tmp, True)


if __name__ == "__main__":
    sys.exit(main())
