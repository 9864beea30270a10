"""CTest entry that runs samebits.analysis's tests (this folder) under pytest, on $PYTHONPATH (CTest:
the package built in <build>/python) or else this checkout's python/; exit 77 (skipped) when this
python lacks pytest, numpy, h5py or matplotlib; tests/support/pytest_ctest.py reads pytest's outcome (a
skipped test: 77, a failure under CI=true; no test collected: a failure).
The installed package runs the same tests in test_python_venv (python/tests/run_venv.py)."""
import importlib.util
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def main():
    missing = [m for m in ("pytest", "numpy", "h5py", "matplotlib") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"skipped: {sys.executable} lacks {', '.join(missing)} (apt-get install python3-pytest)")
        return 1 if os.environ.get("CI") == "true" else 77
    path = [p for p in (os.environ.get("PYTHONPATH"), os.path.join(root, "python"), here) if p]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.pathsep.join(path))
    runner = os.path.join(root, "tests", "support", "pytest_ctest.py")
    return subprocess.run([sys.executable, runner, here], cwd=here, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
