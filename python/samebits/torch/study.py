"""Pairs of configurations of one PyTorch program (samebits.torch.nanogpt's GPT) recorded with the
Recorder and compared with `samebits diff` and `samebits trace`: the logic of
notebooks/torch_divergence.ipynb and docs/TORCH.md's findings. Each configuration trains in its own
process (`python -m samebits.torch.study OUT.h5 --threads 2 …`; under --world 2, two ranks of
torch.distributed over gloo on this host), so that thread counts and determinism flags are its own.

    rows = [compare(runs_dir, "1 vs 2 threads", {"threads": 1}, {"threads": 2}), ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from .nanogpt import GPT, GPTShape, batches
from .recorder import Recorder

STEPS, BATCH, TRACE_STEP = 4, 8, 1


def train(out, threads=1, deterministic=False, autocast=None, optimizer="adamw", world=1, rank=0, steps=STEPS,
          trace_steps=(TRACE_STEP,), shape=GPTShape()):
    """One configuration's run (this process is rank `rank` of `world`)."""
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)
    model = GPT(shape)
    wrapped = model
    if world > 1:
        wrapped = torch.nn.parallel.DistributedDataParallel(model)
    if optimizer == "muon":
        from .muon import Muon
        hidden = set(id(p) for p in model.hidden_matrices())
        others = [p for p in model.parameters() if id(p) not in hidden]
        opts = [Muon(model.hidden_matrices(), lr=0.02, weight_decay=0.01), torch.optim.AdamW(others, lr=3e-3)]
    else:
        opts = [torch.optim.AdamW(model.parameters(), lr=3e-3)]
    declared = {"model": "nanogpt", "shape": list(vars(shape).values()), "batch": BATCH, "optimizer": optimizer,
                "steps": steps}
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if autocast == "bf16" else None
    both = _Both(opts)
    with Recorder(out, wrapped, both, experiment=declared, trace_steps=trace_steps,
                  tokens_per_step=BATCH * shape.seq_len) as rec:
        for x, y in batches(shape, BATCH, steps, rank=rank, world=world):
            if cast is not None:
                with cast:
                    loss = wrapped(x, y)
            else:
                loss = wrapped(x, y)
            loss.backward()
            both.step()
            rec.step(loss)
            both.zero_grad()


class _Both(torch.optim.Optimizer):
    """Several optimizers as one (their groups, state and step), for the Recorder and its trace."""

    def __init__(self, optimizers):  # noqa: super().__init__ is not called: the groups are the parts'
        self.optimizers = optimizers
        self.param_groups = [g for o in optimizers for g in o.param_groups]
        self.state = {p: s for o in optimizers for p, s in o.state.items()}
        self.defaults = {}

    def step(self, closure=None):
        for o in self.optimizers:
            o.step()
        self.state = {p: s for o in self.optimizers for p, s in o.state.items()}

    def zero_grad(self, set_to_none=False):
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)


def _rank(rank, world, init, out, options):
    torch.distributed.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    try:
        train(out, world=world, rank=rank, **options)
    finally:
        torch.distributed.destroy_process_group()


def run(out, **options):
    """`train` in a fresh process (world > 1: that many gloo ranks)."""
    done = subprocess.run([sys.executable, "-m", "samebits.torch.study", out, "--options", json.dumps(options)],
                          capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    if done.returncode != 0:
        raise RuntimeError(f"samebits.torch.study {out} {options}: exit {done.returncode}\n{done.stderr[-4000:]}")


def _cli():
    from ..analysis.produce import samebits_binary
    return samebits_binary()


def compare(runs, name, a, b, trace_step=TRACE_STEP):
    """Trains configurations a and b (dicts of train's options) into `runs` and compares them: the
    pair's name, `samebits diff --json`'s first divergent step and differing tensors, and
    `samebits trace --step` (the first divergent step, or trace_step)'s origin and alignment lines."""
    pa, pb = (os.path.join(runs, f"{name.replace(' ', '_')}_{side}.h5") for side in ("a", "b"))
    for path, options in ((pa, a), (pb, b)):
        for p in (path, path[:-3] + ".trace.h5"):
            if os.path.exists(p):
                os.remove(p)
        shutil.rmtree(path[:-3] + ".store", ignore_errors=True)
        run(path, **options)
    cli = _cli()
    diff = subprocess.run([cli, "diff", pa, pb, "--json"], capture_output=True, text=True)
    report = json.loads(diff.stdout) if diff.stdout.strip().startswith("{") else {}
    first = report.get("first_divergent_step") or 0
    trace = subprocess.run([cli, "trace", pa, pb, "--step", str(trace_step)], capture_output=True, text=True)
    lines = trace.stdout.splitlines()
    pick = [ln.strip() for ln in lines if ln.startswith(("origin:", "every", "alignment:", "the op sequences"))]
    pick += [ln.strip() for ln in lines if "written" in ln or ln.strip().startswith("its inputs")][:2]
    return {"pair": name, "diff_exit": diff.returncode, "first_divergent_step": first,
            "differing_tensors": report.get("divergent_params", [])[:4], "trace_exit": trace.returncode,
            "trace": pick or [trace.stderr.strip()[:300]], "a": pa, "b": pb}


PAIRS = [
    ("1 vs 2 threads", {"threads": 1}, {"threads": 2}),
    ("deterministic algorithms on vs off", {"deterministic": True}, {"deterministic": False}),
    ("DDP gloo 2 ranks vs 1 process", {"world": 1}, {"world": 2}),
    ("fp32 vs bf16 autocast", {}, {"autocast": "bf16"}),
    ("AdamW vs samebits.torch.Muon", {}, {"optimizer": "muon"}),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--options", default="{}", help="train's keyword arguments as JSON")
    args = p.parse_args()
    options = json.loads(args.options)
    world = int(options.pop("world", 1))
    if world == 1:
        train(args.out, **options)
        return
    with tempfile.TemporaryDirectory() as tmp:
        torch.multiprocessing.spawn(_rank, args=(world, os.path.join(tmp, "init"), args.out, options), nprocs=world)


if __name__ == "__main__":
    main()
