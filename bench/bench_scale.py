#!/usr/bin/python3
"""The scale benchmark of the run store (docs/PERFORMANCE.md, "Scale"): trains the 85 M-parameter
shape for 3 steps with a checkpoint after every step and snapshots at 0 and 2, and reports, from one
run:

- (wall time - time in steps) / time in steps: start-up, commits and the final write against the
  steps themselves (target <= 0.10);
- bytes written / bytes of the finished run (run file + store): what the commits rewrote (<= 1.5);
- peak RSS / parameter (<= 48 B for fp32 Muon training);
- the command's user and system CPU time, and the huge pages its big buffers got (the run file's
  environment record, docs/FORMAT.md).

Usage: bench/bench_scale.py [SAMEBITS] [--steps N] [extra --section.key value ...]
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = ["--model.n_layer", "12", "--model.n_embd", "768", "--model.n_head", "12", "--model.seq_len", "256",
         "--data.leaves", "2", "--data.leaf_size", "1", "--train.warmup", "0", "--train.eval_every", "0",
         "--train.checkpoint_every", "1", "--train.snapshot_steps", "0,2", "--run.progress", "off"]


def main(argv):
    binary = os.path.join(ROOT, "build", "release", "bin", "samebits")
    steps = "3"
    extra = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--steps":
            steps = args.pop(0)
        elif a.startswith("--"):
            extra += [a, args.pop(0)]
        else:
            binary = a
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r85.h5")
        cmd = [binary, "train", os.path.join(ROOT, "experiments", "configs", "default.ini"), *SHAPE,
               "--train.steps", steps, "--out", out, *extra]
        start = time.monotonic()
        log = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - start
        if log.returncode != 0:
            sys.exit("bench_scale: samebits failed:\n" + log.stdout + log.stderr)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss = usage.ru_maxrss * 1024
        written = None
        for line in log.stdout.splitlines():
            if "MB written to the run file and its store" in line:
                written = float(line.split(";")[-1].split("MB")[0]) * 1e6
        store = os.path.join(tmp, "r85.store")
        final = os.path.getsize(out) + sum(os.path.getsize(os.path.join(store, f)) for f in os.listdir(store))
        with h5py.File(out, "r") as f:
            in_steps = float(f["timing/step_seconds"][:].sum())
            params = int(f["tensors/numel"][:].sum())
            env = f.attrs.get("environment", b"")
            env = env.decode() if isinstance(env, bytes) else str(env)
            huge = next((l.split(": ", 1)[1] for l in env.splitlines() if l.startswith("Host memory: ")), "")
    cpu = open("/proc/cpuinfo").read()
    model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("model name")), "?")
    simd = "AVX-512" if " avx512f" in cpu else "AVX2" if " avx2" in cpu else "SSE"
    family = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("cpu family")), "?")
    print(f"bench_scale: 85 M shape ({params} parameters), {steps} steps, checkpoint every step, snapshots 0 and 2")
    print(f"machine: {model} (family {family}), {os.cpu_count()} cores, {simd}; load average {os.getloadavg()[0]:.2f}")
    print(f"| figure | target | measured |")
    print(f"|---|---|---|")
    print(f"| (wall - steps) / steps ({wall:.1f} s wall, {in_steps:.1f} s in steps) | <= 0.10 | {(wall - in_steps) / in_steps:.2f} |")
    if written is not None:
        print(f"| bytes written / final bytes ({written / 1e6:.0f} MB / {final / 1e6:.0f} MB) | <= 1.5 | {written / final:.2f} |")
    print(f"| peak RSS / parameter ({rss / 2**30:.2f} GiB) | <= 48 B | {rss / params:.1f} B |")
    print(f"| user / system CPU time of the command | reported | {usage.ru_utime:.1f} s / {usage.ru_stime:.1f} s |")
    if huge:
        print(f"| huge pages (the run file's environment record) | reported | {huge} |")


if __name__ == "__main__":
    main(sys.argv[1:])
