#!/usr/bin/python3
"""The seed's three Muon / AdamW claims (docs/PERFORMANCE.md) measured as ratios with `samebits
train`, side by side in one run: step time at 32 768 tokens a step, peak memory (VmHWM) of a 25 M
model, and bytes on the wire per step under ZeRO-1 (--distributed-optimizer). Timings vary with the
machine and its load; the byte counts and the runs' bits do not.

Step time: the default model with 64 leaves (64 x 4 x 128 = 32 768 tokens a step, so Newton-Schulz is
amortized over many tokens), 4 steps a run, runs alternating Muon and AdamW, PAIRS pairs, the first
of a pair swapping; a run's figure is the median of its steps after the first; the ratio is the
median of the pairs' Muon / AdamW (it cancels load that drifts slower than a pair). Beside it the
same ratio of each run's CPU time (user + system of the whole process, start-up included), which other
processes on a shared machine disturb less than the wall.
Peak memory: /usr/bin/time's maximum resident set (VmHWM) of one process per optimizer, an 8 x 512
model (25.3 M parameters, vocabulary 256, 2 leaves a step, 2 steps), alternating; the median of
the pairs' ratios.
Bytes: rank 0's series/comm_bytes (payload bytes it passed to every collective; the exact
reduce-scatter's wire follows the values' block ranges), mean per step over 5 steps, default model,
one thread a rank under mpirun, with --distributed-optimizer and without.

Usage: bench/bench_seed.py [SAMEBITS] [--pairs N] [--ranks 2,4]
  (default SAMEBITS: build/dev/bin/samebits, then build/release/bin/samebits)
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "experiments/configs/default.ini")
COMMON = ["--train.warmup", "0", "--train.checkpoint_every", "0", "--train.eval_every", "0"]
STEP_ARGS = ["--data.leaves", "64", "--train.steps", "4"]
MEM_ARGS = ["--model.n_layer", "8", "--model.n_embd", "512", "--model.n_head", "8", "--data.leaves", "2",
            "--train.steps", "2"]


def train(samebits, optim, out, extra, launch=None, time_file=None):
    cmd = [samebits, "train", CONFIG, "--optim.name", optim, "--out", out] + COMMON + extra
    if launch:
        cmd = launch + cmd
    if time_file:
        cmd = ["/usr/bin/time", "-o", time_file, "-f", "%M"] + cmd
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return cmd, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def show(cmd, work):
    short = {CONFIG: os.path.relpath(CONFIG, ROOT), cmd[cmd.index("train") - 1]: "samebits"}
    temp = {True: "RUN.h5", False: "PEAK"}
    return " ".join(temp[c.endswith(".h5")] if c.startswith(work) else short.get(c, c) for c in cmd)


def step_times(samebits, pairs, work):
    runs, cpu = {"muon": [], "adamw": []}, {"muon": [], "adamw": []}
    for i in range(pairs):
        order = ("muon", "adamw") if i % 2 == 0 else ("adamw", "muon")
        for o in order:
            out = os.path.join(work, f"s_{o}_{i}.h5")
            cmd, seconds = train(samebits, o, out, STEP_ARGS)
            cpu[o].append(seconds)
            with h5py.File(out, "r") as f:
                runs[o].append(statistics.median(f["timing/step_seconds"][1:]))
    return runs, cpu, cmd


def peak_memory(samebits, pairs, work):
    runs = {"muon": [], "adamw": []}
    for i in range(pairs):
        order = ("muon", "adamw") if i % 2 == 0 else ("adamw", "muon")
        for o in order:
            tf = os.path.join(work, f"m_{o}_{i}.time")
            cmd, _ = train(samebits, o, os.path.join(work, f"m_{o}_{i}.h5"), MEM_ARGS, time_file=tf)
            with open(tf) as f:
                runs[o].append(int(f.read().split()[-1]) * 1024)
    return statistics.median(runs["muon"]), statistics.median(runs["adamw"]), runs, cmd


def wire_bytes(samebits, ranks, distributed, work):
    launch = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", str(ranks)]
    extra = ["--run.threads", "1", "--train.steps", "5"] + (["--distributed-optimizer"] if distributed else [])
    per = {}
    for o in ("muon", "adamw"):
        out = os.path.join(work, f"b_{o}_{ranks}_{int(distributed)}.h5")
        cmd, _ = train(samebits, o, out, extra, launch=launch)
        with h5py.File(out, "r") as f:
            per[o] = f["series/comm_bytes"][:].sum(axis=1).mean()
    return per["muon"], per["adamw"], cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("samebits", nargs="?")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--ranks", default="2,4")
    args = ap.parse_args()
    samebits = args.samebits or next(
        (p for p in (os.path.join(ROOT, d, "bin/samebits") for d in ("build/dev", "build/release"))
         if os.access(p, os.X_OK)),
        None)
    if samebits is None:
        sys.exit("bench_seed.py: no samebits binary; pass its path")
    info = {}
    for ln in open("/proc/cpuinfo"):
        key, _, value = ln.partition(":")
        info.setdefault(key.strip(), value.strip())
    print(f"CPU: {info.get('model name')} (family {info.get('cpu family')}, model {info.get('model')}), "
          f"{os.cpu_count()} hardware threads; load {os.getloadavg()[0]:.2f}")
    rows = []
    work = tempfile.mkdtemp()
    try:
        wall, cpu, cmd = step_times(samebits, args.pairs, work)
        for name, runs, unit in (("step time (wall)", wall, "s"), ("CPU time of the run", cpu, "s CPU")):
            spread = [mu / ad for mu, ad in zip(runs["muon"], runs["adamw"])]
            m, a = statistics.median(runs["muon"]), statistics.median(runs["adamw"])
            rows.append((f"Muon / AdamW {name}, 32 768 tokens", f"{m:.3f} {unit}", f"{a:.3f} {unit}",
                         statistics.median(spread), 1 / 0.98, spread, cmd))
        m, a, runs, cmd = peak_memory(samebits, args.pairs, work)
        spread = [mu / ad for mu, ad in zip(runs["muon"], runs["adamw"])]
        rows.append(("Muon / AdamW peak memory, 25.3 M", f"{m / 2**20:.0f} MiB", f"{a / 2**20:.0f} MiB",
                     statistics.median(spread), 0.88, spread, cmd))
        for ranks in (int(r) for r in args.ranks.split(",")):
            for dist in (True, False):
                m, a, cmd = wire_bytes(samebits, ranks, dist, work)
                name = f"Muon / AdamW bytes per step, {ranks} ranks, " + ("ZeRO-1" if dist else "all-reduce")
                rows.append((name, f"{m:.0f} B", f"{a:.0f} B", m / a, 0.92 if dist else None, [], cmd))
    finally:
        shutil.rmtree(work)
    print("\n| figure | Muon (median) | AdamW (median) | Muon / AdamW | seed | pairs' range |")
    print("|---|---|---|---|---|---|")
    for name, mu, ad, ratio, seed, spread, _ in rows:
        rng = f"{min(spread):.3f}-{max(spread):.3f}" if spread else "(counts)"
        print(f"| {name} | {mu} | {ad} | **{ratio:.3f}** | {f'{seed:.3f}' if seed else '—'} | {rng} |")
    print("\nCommands (the last run of each row):")
    for name, *_, cmd in rows:
        print(f"  {name}: OMP_WAIT_POLICY=passive {show(cmd, work)}")


if __name__ == "__main__":
    main()
