"""CTest entry that executes the notebooks headless: run_notebooks.py OUT_DIR.
The notebooks are committed without outputs (checked here); each is executed with nbconvert into
OUT_DIR on runs this test trains itself ($SAMEBITS_NB_RUNS = OUT_DIR/runs, emptied first) with
$SAMEBITS_BIN. Exit 77 (skipped) when this python lacks h5py, matplotlib, nbconvert or ipykernel,
SAMEBITS_BIN is not set, or a notebook that needs the samebits extension cannot import it; under
CI=true each of those is a failure (CI has every dependency: a notebook that cannot run there is a
broken build, not a skip)."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

NOTEBOOKS = ("divergence.ipynb", "gradient_variance.ipynb", "muon_vs_adamw.ipynb", "perturbation.ipynb",
             "torch_divergence.ipynb")
# Notebooks that drive the trainer through the samebits extension (built with the Python module).
NEEDS_EXTENSION = ("perturbation.ipynb", "torch_divergence.ipynb")

missing = [m for m in ("numpy", "h5py", "matplotlib", "nbconvert", "ipykernel")
           if importlib.util.find_spec(m) is None]
SKIP = 1 if os.environ.get("CI") == "true" else 77
if missing or not os.environ.get("SAMEBITS_BIN"):
    print(f"skipped: {sys.executable} lacks {', '.join(missing)}" if missing else "skipped: SAMEBITS_BIN not set")
    sys.exit(SKIP)
if len(sys.argv) != 2:
    sys.exit("usage: run_notebooks.py OUT_DIR")
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.abspath(sys.argv[1])
runs = os.path.join(out, "runs")
shutil.rmtree(runs, ignore_errors=True)
os.makedirs(runs)
env = dict(os.environ, SAMEBITS_NB_RUNS=runs)
failed, not_run = [], []
try:
    import samebits._samebits  # noqa: F401
    extension = True
except ImportError as e:
    extension = False
    print("the samebits extension is not importable here:", e)
for name in NOTEBOOKS:
    if name in NEEDS_EXTENSION and not extension:
        print(f"{name}: not run (it needs the samebits extension: build with the Python module, PYTHONPATH=<build>/python)")
        not_run.append(name)
        continue
    path = os.path.join(here, name)
    with open(path) as f:
        cells = json.load(f)["cells"]
    dirty = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and (c["outputs"] or c["execution_count"])]
    if dirty:
        failed.append(name)
        print(f"{name}: cells {dirty} hold outputs; commit notebooks without outputs "
              "(jupyter nbconvert --clear-output --inplace)")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                           "--ExecutePreprocessor.timeout=300", "--output-dir", out, path],
                          env=env, cwd=here, capture_output=True, text=True)
    print(f"{name}: exit {done.returncode} in {time.monotonic() - start:.1f} s")
    if done.returncode != 0:
        failed.append(name)
        print(done.stdout[-4000:], done.stderr[-8000:])
if not_run:
    print(f"skipped: {', '.join(not_run)} could not run")
sys.exit(1 if failed else SKIP if not_run else 0)
