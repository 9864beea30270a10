"""CTest entries (label slow) that install from the package index into a venv at DIR:

    run_venv.py DIR          `pip install .[test]` of this checkout into a fresh venv (emptied first;
                             numpy, h5py, matplotlib, pytest, scikit-build-core and pybind11 from the
                             index), timed; then the package's tests (python/tests) and the analysis
                             tests (notebooks/tests), copied elsewhere so that they import the
                             installed package (checked).
    run_venv.py --torch DIR  the torch tests (python/tests/test_torch_*.py: the Recorder, the trace
                             alignment between configurations, Muon, deterministic() with
                             transformers' GPT-2 and Llama) against the newest torch and
                             transformers on PyPI, in a venv that also sees Debian's numpy, h5py and pytest (the
                             module's build), on the build tree's package (PYTHONPATH, as
                             test_python). The venv is kept between runs (torch and its CUDA
                             libraries are a few GB) and torch upgraded each run.

    run_venv.py --transformers DIR
                             transformers (TRANSFORMERS, pinned: the newest release that supports
                             Debian's torch 1.13) into a venv that sees Debian's torch, numpy, h5py,
                             pytest and nbconvert (kept between runs); then, on the build tree's
                             package, test_torch_deterministic_hf.py (transformers' GPT-2 and Llama
                             under samebits.torch.deterministic) and notebooks/torch_reproducible.ipynb
                             executed (into DIR/notebook; its runs in DIR/notebook/runs).
Exit 77 (skipped) when the package index cannot be reached.
"""
import glob
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


def installed_package(python):
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


def pypi_torch(python, venv):
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.__file__)"],
                             capture_output=True, text=True)
    print("torch:", version.stdout.strip() or version.stderr.strip())
    if version.returncode != 0 or venv not in version.stdout:
        print("FAIL: the tests would not use the venv's torch")
        return 1
    tests = sorted(glob.glob(os.path.join(here, "test_torch_*.py")))
    return subprocess.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *tests]).returncode


TRANSFORMERS = "transformers==4.46.3"


def transformers_tests(python, venv):
    """test_torch_deterministic_hf.py, then the notebook executed with this venv's python."""
    code = subprocess.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           os.path.join(here, "test_torch_deterministic_hf.py")]).returncode
    out = os.path.join(venv, "notebook")
    runs = os.path.join(out, "runs")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(runs)
    notebook = os.path.join(root, "notebooks", "torch_reproducible.ipynb")
    # The notebook's kernel is this venv's python (a kernelspec in the venv shadows the system's).
    subprocess.run([python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"], check=True,
                   capture_output=True)
    start = time.monotonic()
    done = subprocess.run([python, "-m", "nbconvert", "--to", "notebook", "--execute",
                           "--ExecutePreprocessor.timeout=900", "--output-dir", out, notebook],
                          env=dict(os.environ, SAMEBITS_NB_RUNS=runs), cwd=os.path.dirname(notebook),
                          capture_output=True, text=True)
    print(f"torch_reproducible.ipynb: exit {done.returncode} in {time.monotonic() - start:.1f} s")
    if done.returncode != 0:
        print(done.stderr[-4000:])
    return max(code, 1 if done.returncode != 0 else 0)


def main():
    mode = sys.argv[1] if len(sys.argv) == 3 else None
    if mode not in (None, "--torch", "--transformers") or len(sys.argv) not in (2, 3):
        sys.exit("usage: run_venv.py [--torch | --transformers] DIR")
    torch = mode == "--torch"
    venv = os.path.abspath(sys.argv[-1])
    start = time.monotonic()
    if mode == "--transformers":
        python = fresh_venv(venv, [TRANSFORMERS], keep=True, system_site_packages=True)
        if isinstance(python, int):
            return python
        return transformers_tests(python, venv)
    if torch:
        python = fresh_venv(venv, ["torch", "transformers"], keep=True, system_site_packages=True)
    else:
        python = fresh_venv(venv, [root + "[test]"])
    if isinstance(python, int):
        return python
    print(f"pip install {'torch' if torch else '.[test]'} into {venv}: {time.monotonic() - start:.0f} s on "
          f"{os.cpu_count()} cores")
    return pypi_torch(python, venv) if torch else installed_package(python)


if __name__ == "__main__":
    sys.exit(main())
