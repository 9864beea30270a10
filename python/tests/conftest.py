"""Shared fixtures of the samebits package's tests: the repository, the `samebits` binary the
package is compared with ($SAMEBITS_BIN, set by CTest), and small configurations."""
import os
import subprocess

import pytest

# The checkout: $SAMEBITS_SOURCE_DIR when the tests run from a copy (python/tests/run_venv.py).
ROOT = os.environ.get("SAMEBITS_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_INI = os.path.join(ROOT, "experiments", "configs", "default.ini")
# A small model: a few seconds for every test that trains.
SMALL = {"model.vocab": 64, "model.seq_len": 16, "model.n_layer": 2, "model.n_head": 2, "model.n_embd": 32,
         "data.leaf_size": 1, "data.leaves": 6, "train.steps": 12, "train.warmup": 0, "train.eval_every": 6,
         "train.checkpoint_every": 0, "run.threads": 1, "run.progress": "off"}


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("SAMEBITS_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("SAMEBITS_BIN (the samebits binary to compare with) is not set")
    return path


def run_cli(cli, *args, check=True):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"samebits {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done


def overrides_args(overrides):
    """{'a.b': v} as command-line tokens, as samebits.Config writes them."""
    out = []
    for k, v in overrides.items():
        text = ("true" if v else "false") if isinstance(v, bool) else ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
        out.append(f"--{k}={text}")
    return out
