"""Distributed from Python: `mpirun -np 3 python script.py` trains with the MPI communicator (no
mpi4py) and gets one process's bits; samebits.train under mpirun writes the one-process run file."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import samebits
from conftest import SMALL

SCRIPT = textwrap.dedent("""
    import json, sys, samebits
    overrides, out = json.loads(sys.argv[1]), sys.argv[2]
    world = samebits.world()
    config = samebits.Config.from_ini(None, overrides)
    trainer = samebits.Trainer(config)
    losses, prints = [], []
    while not trainer.finished:
        stats = trainer.step()
        losses.append(stats["loss"])
        prints.append([int(f) for f in stats["param_fingerprints"]])
    state = trainer.export_state()  # collective
    samebits.train(config, out=out + ".h5")
    if world["rank"] == 0:
        with open(out + ".json", "w") as f:
            json.dump({"world": world, "losses": [float(x).hex() for x in losses], "prints": prints,
                       "state_step": state.step}, f)
""")


def mpirun():
    path = shutil.which("mpirun")
    if not path:
        pytest.skip("no mpirun")
    cmd = [path, "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(tmp_path, name, ranks):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out = str(tmp_path / name)
    config = dict(SMALL, **{"data.leaves": 6})
    cmd = [sys.executable, str(script), json.dumps(config), out]
    if ranks:
        cmd = mpirun() + ["-np", str(ranks), "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS=1"] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out + ".json") as f:
        return json.load(f), out + ".h5"


def test_three_ranks_equal_one_process(tmp_path):
    alone, alone_run = run(tmp_path, "alone", 0)
    three, three_run = run(tmp_path, "three", 3)
    assert alone["world"]["size"] == 1 and three["world"]["size"] == 3
    assert three["world"]["communicator"].startswith("mpi")
    assert three["losses"] == alone["losses"] and three["prints"] == alone["prints"]
    assert three["state_step"] == alone["state_step"] == 12
    assert samebits.diff(alone_run, three_run)["identical"] is True
    assert samebits.open_run(three_run).info["world_size"] == 3


def test_an_error_on_one_rank_ends_the_job(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
        import samebits
        samebits.world()
        if samebits.world()["rank"] == 1:
            raise RuntimeError("rank 1 gives up")
        samebits.Trainer(samebits.Config.from_ini(None, {"train.steps": 2})).step()  # waits for rank 1
    """))
    done = subprocess.run(mpirun() + ["-np", "2", "-x", "PYTHONPATH", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "rank 1 gives up" in done.stderr, done.stderr
