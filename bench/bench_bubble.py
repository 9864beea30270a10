#!/usr/bin/python3
"""The pipeline bubble measured against (P - 1)/(m + P - 1) (docs/studies/parallel_costs.md): 1F1B and GPipe
at P = 2, 4 stages and m = 1, 2, 4, 8 micro-batches (leaves) a flush, DP 1.

For each layout it runs tests/tools/mpi_train_driver --bench under mpirun (P ranks) on a GPT of 8
blocks (128 wide, 4 heads, sequence 128, vocabulary 512, one sequence a leaf) for 4 steps and reads,
per rank, the wall time of its pipeline flushes in steps 2-4 and the part of it spent in the
schedule's send, recv and exchange calls (PipeGroup::times): the time the stage waited for a
neighbour or moved its message. A stage's measured bubble is blocked / flush; the table gives the
mean over the stages and the range. The formula assumes equal stages and free transfers; here the
first stage also embeds and the last runs the head and the loss, and on an oversubscribed machine
(more ranks than cores) a rank blocked in MPI polls a core that a computing rank could use, so the
wall times stretch and the figures are noisy: compare each row with the formula, not the runs with
each other.

Usage: bench/bench_bubble.py [DRIVER] [--stages 2,4] [--micro 1,2,4,8]
"""
import os
import re
import sys

from bench_layouts import run_driver

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = """[model]
vocab = 512
seq_len = 128
n_layer = 8
n_head = 4
n_embd = 128
[data]
source = synthetic
leaf_size = 1
leaves = {m}
[train]
steps = 4
warmup = 0
eval_every = 0
checkpoint_every = 0
[parallel]
pp = {p}
pp_schedule = {schedule}
[run]
threads = 1
progress = off
"""


def measure(driver, p, m, schedule):
    """Per stage (flush seconds, blocked seconds) of the timed steps, or the reason it failed."""
    run = run_driver(driver, CONFIG.format(p=p, m=m, schedule=schedule), p)
    if run.returncode != 0:
        return {"error": f"exit {run.returncode}"}
    stages = {}
    for stage, flush, blocked in re.findall(r"# pipe rank \d+ stage (\d+) flush ([\d.]+) blocked ([\d.]+)", run.stdout):
        stages[int(stage)] = (float(flush), float(blocked))
    return stages


def main(argv):
    driver = os.path.join(ROOT, "build", "release", "bin", "tests", "mpi_train_driver")
    stages, micro = [2, 4], [1, 2, 4, 8]
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--stages":
            stages = [int(x) for x in args.pop(0).split(",")]
        elif a == "--micro":
            micro = [int(x) for x in args.pop(0).split(",")]
        else:
            driver = a
    print("pipeline bubble: per stage blocked / flush wall time in steps 2-4, mean over stages [min, max]")
    print("| P | m | (P-1)/(m+P-1) | 1F1B measured | GPipe measured |")
    print("|---|---|---|---|---|")
    for p in stages:
        for m in micro:
            cells = []
            for schedule in ("1f1b", "gpipe"):
                got = measure(driver, p, m, schedule)
                if "error" in got or len(got) != p:
                    cells.append(f"not measured ({got.get('error', 'missing stages')})")
                    continue
                fractions = [blocked / flush for flush, blocked in got.values()]
                cells.append(f"{sum(fractions) / p:.3f} [{min(fractions):.3f}, {max(fractions):.3f}]")
            print(f"| {p} | {m} | {(p - 1) / (m + p - 1):.3f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
