"""The contract from Python: the same bits as the command line (a Python-driven 50-step default
run, a Python-written run file, a perturbation, a state round trip)."""
import os

import numpy as np
import pytest

import samebits
from conftest import DEFAULT_INI, SMALL, overrides_args, run_cli


def fp_hex(value):
    return format(int(value), "016x")


def test_default_50_steps_match_the_reference_and_the_cli(cli, tmp_path):
    config = samebits.Config.from_ini(DEFAULT_INI, {"train.steps": 50, "run.progress": "off"})
    trainer = samebits.Trainer(config)
    losses, wte = [], None
    while not trainer.finished:
        stats = trainer.step()
        losses.append(stats["loss"])
    wte = stats["param_fingerprints"][0]
    assert stats["tensors"][0] == "wte"
    assert f"{losses[-1]:.6f}" == "4.675173"
    assert fp_hex(wte) == "4a1fa28d67932ad3"
    assert fp_hex(trainer.param_fingerprints()["wte"]) == "4a1fa28d67932ad3"
    assert samebits.fingerprint(trainer.params["wte"]) == wte
    # The CLI's run of the same config: every loss and fingerprint bitwise equal.
    out = str(tmp_path / "cli.h5")
    run_cli(cli, "train", DEFAULT_INI, "--train.steps", "50", "--run.progress=off", "--out", out)
    run = samebits.open_run(out)
    assert np.array_equal(np.asarray(losses, dtype=np.float32).view(np.uint32), run.series("loss").view(np.uint32))
    assert run.series("param_fingerprint")[49, 0] == wte


def test_python_written_run_file_is_identical_to_the_cli(cli, tmp_path):
    config = samebits.Config.from_ini(None, dict(SMALL, **{"train.snapshot_steps": [0, 6, 12]}))
    py_out, cli_out = str(tmp_path / "py.h5"), str(tmp_path / "cli.h5")
    result = samebits.train(config, out=py_out)
    assert result["steps_done"] == 12 and result["path"] == py_out
    run_cli(cli, "train", *overrides_args(dict(SMALL, **{"train.snapshot_steps": [0, 6, 12]})), "--out", cli_out)
    assert run_cli(cli, "diff", py_out, cli_out, check=False).returncode == 0  # IDENTICAL
    report = samebits.diff(py_out, cli_out)
    assert report["identical"] is True
    # open_run reads what h5py reads, through the CLI's checked reader.
    run = samebits.open_run(py_out)
    assert run.steps == 12 and run.info["status"] == "finished" and run.snapshot_steps == [0, 6, 12]
    assert run.config == config.replace({"run.out": py_out})
    h5py = pytest.importorskip("h5py")
    with h5py.File(py_out, "r") as f:
        assert np.array_equal(f["series/loss"][()], run.series("series/loss"))
        assert np.array_equal(f["series/per_tensor/grad_norm"][()], run.series("per_tensor/grad_norm"))


def test_perturbation_from_python_equals_the_cli_perturb_run(cli, tmp_path):
    target = {"perturb.tensor": "h.1.mlp.fc.w", "perturb.index": 17, "perturb.ulps": -3, "perturb.step": 4}
    cli_out = str(tmp_path / "perturbed.h5")
    run_cli(cli, "train", *overrides_args(dict(SMALL, **target)), "--out", cli_out)
    run = samebits.open_run(cli_out)
    trainer = samebits.Trainer(samebits.Config.from_ini(None, SMALL))
    losses, prints = [], []
    for step in range(12):
        if step == 4:
            moved = trainer.perturb("h.1.mlp.fc.w", 17, -3)
            assert moved["before"] != moved["after"]
        stats = trainer.step()
        losses.append(stats["loss"])
        prints.append(stats["param_fingerprints"])
    assert np.array_equal(np.asarray(losses, np.float32).view(np.uint32), run.series("loss").view(np.uint32))
    assert np.array_equal(np.stack(prints), run.series("param_fingerprint"))
    # ... and the unperturbed run differs from step 5 on.
    plain = samebits.Trainer(samebits.Config.from_ini(None, SMALL))
    plain_prints = [plain.step()["param_fingerprints"] for _ in range(5)]
    assert np.array_equal(plain_prints[3], prints[3]) and not np.array_equal(plain_prints[4], prints[4])


def test_export_state_and_from_state_continue_bitwise():
    config = samebits.Config.from_ini(None, SMALL)
    whole = samebits.Trainer(config)
    expected = [whole.step()["param_fingerprints"] for _ in range(12)]
    first = samebits.Trainer(config, micro_leaves=2)
    for _ in range(5):
        first.step()
    state = first.export_state()
    assert state.step == 5 and state.experiment_id == config.experiment_id
    assert np.array_equal(state.params["wte"], first.params["wte"])
    second = samebits.Trainer.from_state(config, state, micro_leaves=1)
    rest = [second.step()["param_fingerprints"] for _ in range(7)]
    assert all(np.array_equal(a, b) for a, b in zip(expected[5:], rest))


def test_thread_count_does_not_move_a_bit():
    prints = []
    for threads in (1, 2, 3):
        trainer = samebits.Trainer(samebits.Config.from_ini(None, dict(SMALL, **{"run.threads": threads})))
        prints.append([trainer.step()["param_fingerprints"] for _ in range(3)])
    assert all(np.array_equal(np.stack(p), np.stack(prints[0])) for p in prints)
