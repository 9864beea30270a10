"""The package's API: statistics, tensors as NumPy views, errors as exceptions with the command
line's messages, the GIL released during a step, Ctrl-C between steps."""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import samebits
from conftest import SMALL, overrides_args, run_cli


def small_trainer(**extra):
    return samebits.Trainer(samebits.Config.from_ini(None, dict(SMALL, **extra)))


def test_step_statistics():
    trainer = small_trainer()
    stats = trainer.step()
    n = len(trainer.tensors)
    assert stats["step"] == 1 and trainer.steps_done == 1 and np.isfinite(stats["loss"])
    assert stats["tokens"] == 6 * 16 and len(stats["tensors"]) == n
    for key in ("grad_norm", "update_rms", "noise_scale", "leaf_sq_mean", "ortho_error"):
        assert stats["per_tensor"][key].shape == (n,) and stats["per_tensor"][key].dtype == np.float32
    assert stats["param_fingerprints"].dtype == np.uint64 and stats["param_fingerprints"].shape == (n,)
    assert trainer.last_stats["step"] == 1
    assert np.isnan(stats["val_loss"])
    for _ in range(5):
        stats = trainer.step()
    assert np.isfinite(stats["val_loss"])  # train.eval_every = 6
    assert trainer.evaluate() == stats["val_loss"]


def test_views_are_read_only_and_live():
    trainer = small_trainer()
    w = trainer.params["h.0.attn.qkv.w"]
    assert w.shape == (96, 32) and w.dtype == np.float32 and not w.flags.writeable
    with pytest.raises(ValueError):
        w[0, 0] = 1.0
    with pytest.raises(ValueError):
        w.setflags(write=True)
    before = w.copy()
    trainer.step()
    assert not np.array_equal(before, w)  # a view: it follows the trainer
    g = trainer.grads["h.0.attn.qkv.w"]
    assert not g.flags.writeable and np.any(g != 0)
    state = trainer.optimizer_state
    assert state["h.0.attn.qkv.w/momentum"].shape == (96, 32)
    assert any(k.endswith("/exp_avg") for k in state)


def test_a_view_outlives_its_trainer():
    # By design: the view's base owns a reference to the weights' memory, not to the trainer.
    trainer = small_trainer()
    trainer.step()
    w, g = trainer.params["wte"], trainer.grads["wte"]
    expected_w, expected_g = w.copy(), g.copy()
    trainer.close()
    with pytest.raises(samebits.Error, match="closed"):
        trainer.step()
    del trainer
    gc.collect()
    junk = [np.ones(w.size, np.float32) for _ in range(64)]  # reuse freed memory if it were freed
    assert np.array_equal(w, expected_w) and np.array_equal(g, expected_g) and len(junk) == 64


def ini_values(text):
    """{'section.key': value} of an INI text as samebits writes it ('key = value', 'key =' when empty)."""
    values, section = {}, None
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif line:
            name, _, value = line.partition(" =")
            values[f"{section}.{name}"] = value[1:]
    return values


def test_config_reads_every_key():
    given = {"optim.adam_betas": (0.8, 0.9), "train.snapshot_steps": [0, 5], "model.bias": False, "optim.lr": 0.0125,
             "run.out": "x.h5"}
    config = samebits.Config.from_ini(None, given)
    keys = samebits.Config.keys()
    written = ini_values(config.text)
    assert list(written) == keys and len(keys) > 60  # the registry's every key, in the text's order
    for key in keys:  # each read back as the text writes it
        assert config[key] == written[key], key
    # That one spelling is what the parser reads: every key given back gives the same config (an
    # empty value, which the command line cannot give, is the default's).
    assert samebits.Config.from_ini(None, {key: config[key] for key in keys if config[key]}) == config
    defaults = samebits.Config.from_ini(None)
    assert all(defaults[key] == "" for key in keys if not config[key])
    assert config["optim.adam_betas"] == "0.8, 0.9" and config["train.snapshot_steps"] == "0, 5"
    assert config["model.bias"] == "false" and config["optim.lr"] == "0.0125"
    assert config["data.path"] == "" and config["run.out"] == "x.h5"  # an empty value too
    with pytest.raises(samebits.Error, match="alias of optim.scale"):
        config["optim.adjust_lr_fn"]
    with pytest.raises(samebits.Error, match="unknown config key 'optim.lrr'"):
        config["optim.lrr"]
    assert config.replace({"optim.lr": 0.0125}) == config
    assert config.replace({"optim.lr": 0.02}).experiment_id != config.experiment_id


# Bad configurations and run files: samebits.Error carrying exactly the CLI's message.
BAD_CONFIGS = [
    {"optim.lrr": 0.01},                      # unknown key, with the closest known one
    {"train.steps": "many"},                  # wrong type
    {"model.n_embd": 100, "model.n_head": 3},  # not divisible
    {"optim.name": "sgd"},                     # not a choice
    {"train.precision": "fp8"},                # not a choice
    {"data.leaves": 0},                        # out of range
    {"perturb.tensor": "h.9.mlp.fc.w"},        # no such tensor
    {"optim.adam_betas": "0.9"},               # two numbers expected
    {"nosection": 1},                          # not section.key
]


def cli_message(done, command):
    prefix = f"samebits {command}: error: "
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and line.startswith(prefix), done.stderr
    return line[len(prefix):]


@pytest.mark.parametrize("overrides", BAD_CONFIGS, ids=lambda o: ",".join(o))
def test_bad_config_raises_the_cli_message(cli, overrides):
    with pytest.raises(samebits.Error) as e:
        samebits.Config.from_ini(None, overrides)
    done = run_cli(cli, "train", *overrides_args(overrides), "--print-config", check=False)
    assert str(e.value) == cli_message(done, "train")


def test_bad_ini_files_raise_the_cli_message(cli, tmp_path):
    broken = tmp_path / "broken.ini"
    broken.write_text("[model]\nn_layer 4\n")
    for path in (str(broken), str(tmp_path / "missing.ini")):
        with pytest.raises(samebits.Error) as e:
            samebits.Config.from_ini(path)
        assert str(e.value) == cli_message(run_cli(cli, "train", path, "--print-config", check=False), "train")


def test_bad_run_files_raise_the_cli_message(cli, tmp_path):
    good = tmp_path / "good.h5"
    samebits.train(samebits.Config.from_ini(None, dict(SMALL, **{"train.steps": 2})), out=str(good))
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"\x89HDF\r\n\x1a\n" + os.urandom(4000))
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    for path in (garbage, truncated, tmp_path / "missing.h5"):
        with pytest.raises(samebits.Error) as e:
            samebits.open_run(str(path))
        assert str(e.value) == cli_message(run_cli(cli, "inspect", str(path), check=False), "inspect")
    with pytest.raises(samebits.Error, match="no series column 'los'"):
        samebits.open_run(str(good)).series("los")


def test_trainer_errors_are_exceptions():
    trainer = small_trainer()
    with pytest.raises(samebits.Error, match="h.9"):
        trainer.perturb("h.9.mlp.fc.w", 0, 1)
    with pytest.raises(samebits.Error):
        trainer.perturb("wte", 10**9, 1)


def test_the_gil_is_released_during_a_step():
    # With forced switches off (a switch interval of 1000 s), this thread gets the GIL back only
    # when the stepping thread lets it go. It sees the flag raised before the step and lowered
    # after it still up exactly when the step let the GIL go; a step that held it would be seen
    # only once it had ended. No clock decides.
    trainer = small_trainer()
    inside = [False]

    def step():
        inside[0] = True
        trainer.step()
        inside[0] = False

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        thread = threading.Thread(target=step)
        thread.start()  # returns once this thread holds the GIL again
        seen_inside = inside[0]
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert seen_inside and not inside[0] and trainer.steps_done == 1


def test_ctrl_c_interrupts_between_steps(tmp_path):
    script = textwrap.dedent(f"""
        import sys, samebits
        t = samebits.Trainer(samebits.Config.from_ini(None, {dict(SMALL, **{"train.steps": 100000, "model.n_embd": 64})!r}))
        t.step()
        print("ready", flush=True)
        try:
            while True:
                t.step()
        except KeyboardInterrupt:
            assert t.last_stats["step"] == t.steps_done, (t.last_stats["step"], t.steps_done)
            t.step()  # the trainer is at a step boundary and goes on
            print("interrupted after", t.steps_done - 1, flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ))
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0 and out.startswith("interrupted after"), out


def test_samebits_nb_is_an_alias_of_samebits_analysis():
    pytest.importorskip("h5py")
    pytest.importorskip("matplotlib")
    with pytest.warns(DeprecationWarning):
        import samebits_nb
    import samebits.analysis
    assert samebits_nb.load_run is samebits.analysis.load_run
    from samebits_nb import runfile
    assert runfile is samebits.analysis.runfile
