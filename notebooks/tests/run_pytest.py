"""CTest entry that runs samebits.analysis's tests (this folder) under pytest, on $PYTHONPATH (CTest:
the package built in <build>/python) or else this checkout's python/; exit 77 (skipped) when this
python lacks pytest, numpy, h5py or matplotlib. pytest's exit 5 (no test collected) is a failure.
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
        return 77
    path = [p for p in (os.environ.get("PYTHONPATH"), os.path.join(root, "python"), here) if p]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.pathsep.join(path))
    code = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", here], cwd=here,
                          env=env).returncode
    return 1 if code == 5 else code


if __name__ == "__main__":
    sys.exit(main())
