"""samebits.torch.Recorder: a PyTorch loop recorded twice diffs identical; one weight of fc2 moved
1 ULP after step 3 diverges at step 4 with the tensor named, and `samebits trace --step 4` names
fc2 and the op that first reads it; the run file is samebits' (open_run, h5py, samebits inspect); a
step without a trace is refused clearly."""
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import samebits  # noqa: E402
from samebits.torch import Recorder  # noqa: E402

from conftest import run_cli  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 24)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(24, 6)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def train(path, steps=6, perturb_after=None, trace_steps=(), snapshot_steps=()):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(1)
    with Recorder(path, model, opt, experiment={"lr": 1e-2, "model": "Net"}, trace_steps=trace_steps,
                  snapshot_steps=snapshot_steps) as rec:
        for step in range(1, steps + 1):
            x, y = torch.randn(16, 12, generator=data), torch.randn(16, 6, generator=data)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            rec.step(loss)
            opt.zero_grad()
            if step == perturb_after:
                with torch.no_grad():
                    model.fc2.weight.view(torch.int32)[2, 3] += 1  # one weight, 1 ULP
    return model


def test_recorded_twice_is_identical(cli, tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    train(a, snapshot_steps=(0, 6))
    train(b, snapshot_steps=(0, 6))
    assert run_cli(cli, "diff", a, b, check=False).returncode == 0
    run = samebits.open_run(a)
    assert run.steps == 6 and run.info["status"] == "finished"
    assert [name for name, _ in run.tensors] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert run.info["backend"].startswith("torch ")
    # The fingerprints are det::fingerprint of the raw bits, as samebits' own runs record them.
    model = train(str(tmp_path / "c.h5"))
    assert run.series("param_fingerprint")[5, 2] == samebits.fingerprint(model.fc2.weight.detach().numpy())
    assert run.snapshot_steps == [0, 6]
    assert np.isfinite(run.series("per_tensor/grad_norm")).all()
    h5py = pytest.importorskip("h5py")
    with h5py.File(a, "r") as f:
        assert f["series/loss"].shape == (6,)
    # samebits.analysis reads it unchanged: its series and its comparison with the other run.
    from samebits import analysis
    ra, rb = analysis.load_run(a), analysis.load_run(b)
    assert np.array_equal(ra["loss"], run.series("loss"))
    assert analysis.compare_runs(ra, rb).first_divergent_step is None
    # samebits inspect describes the PyTorch run: the declared experiment, torch's configuration.
    text = run_cli(cli, "inspect", a).stdout
    assert "not usable" not in text and "older samebits" not in text
    assert f"experiment   {run.info['experiment_id']}  (PyTorch program recorded by samebits.torch.Recorder: " \
           "model Net, optimizer AdamW, 4 tensors)" in text
    assert "\ndeclared     lr = 0.01; model = Net\n" in text
    assert f"\nexecution    torch {torch.__version__} cpu, parameters torch.float32, autocast off" in text
    assert f"\nenvironment  torch: {torch.__version__}\n" in text


def test_one_ulp_in_fc2_after_step_3_diverges_at_step_4_and_trace_names_fc2(cli, tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    train(a, trace_steps=(4,))
    train(b, perturb_after=3, trace_steps=(4,))
    done = run_cli(cli, "diff", a, b, "--json", check=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["first_divergent_step"] == 4
    assert "fc2.weight" in done.stdout
    done = run_cli(cli, "trace", a, b, "--step", "4", check=False)
    assert done.returncode == 1, done.stderr
    origin = [line for line in done.stdout.splitlines() if line.startswith("origin:")]
    assert origin and "fc2 forward" in origin[0] and "aten." in origin[0], done.stdout
    assert "outside the traced ops" in done.stdout


def test_a_step_without_a_trace_is_refused_clearly(cli, tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    train(a, steps=3, trace_steps=(2,))
    train(b, steps=3, trace_steps=(2,))
    assert run_cli(cli, "trace", a, b, "--step", "2", check=False).returncode == 0
    done = run_cli(cli, "trace", a, b, "--step", "3", check=False)
    assert done.returncode == 2
    assert "cannot be replayed" in done.stderr and "trace_steps=(3,)" in done.stderr


def test_ddp_two_ranks_against_one_process_align_and_name_an_origin(cli, tmp_path):
    """DDP over gloo with 2 ranks against 1 process: streams of different lengths (each rank
    computes half the batch), aligned; the ops only one runs listed; an origin named."""
    from samebits.torch import study
    row = study.compare(str(tmp_path), "ddp", {"world": 1}, {"world": 2})
    assert row["diff_exit"] == 1 and row["first_divergent_step"] == 1
    assert row["trace_exit"] == 1
    alignment = [line for line in row["trace"] if line.startswith("alignment:")]
    assert alignment and "only in A (dropped)" in alignment[0] and not alignment[0].endswith("0 only in B (inserted)")
    assert any(line.startswith("origin: op") and "aten." in line for line in row["trace"])
