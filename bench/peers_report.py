#!/usr/bin/python3
"""bench/peers' report: reads the measurements listed in the manifest (one line each: shape,
threads, peer, optimizer, status, log file or the reason it is missing), takes each run's step
times (samebits: the run file's timing/step_seconds; PyTorch: its JSON line; llm.c: its
"step N: ... (took X ms)" lines), the median over the steps after the first, the process's
CPU / (wall x threads) from /usr/bin/time (how much of its cores it got), and writes
OUT/peers.json and OUT/peers.md with the ratios samebits / peer against issue 29's targets.
A measurement made under several OpenMP wait policies (bench/peers --wait-policies) is one row per
policy; each ratio compares each peer's fastest row and names the policies it compared.
Usage: peers_report.py MANIFEST OUT MACHINE LOAD_BEFORE LOAD_AFTER LLMC_BUILD COMMAND"""
import datetime
import json
import re
import statistics
import sys

manifest, out, machine, load0, load1, llmc_build, command = sys.argv[1:8]
TOKENS = {"default": 4096, "124m": 2048}
SHAPES = {"default": "default (4 x 128, 4 heads, context 128, vocab 256, 4096 tokens a step)",
          "124m": "GPT-2 124M (12 x 768, 12 heads, context 256, vocab 50257, 2048 tokens a step)"}


def check_core(text):
    """The core name bench_blas_check printed (bench/native-blas's float64 check)."""
    m = re.search(r'\{"openblas_core": "([^"]*)"', text)
    return m.group(1) if m else "unknown"


def measure(peer, log):
    """Step seconds and the OpenBLAS core of one run."""
    text = open(log, errors="replace").read()
    if peer == "samebits":
        import h5py
        with h5py.File(log[:-4] + ".h5", "r") as f:
            seconds = [float(x) for x in f["timing/step_seconds"][:]]
        return seconds, check_core(text)
    if peer == "pytorch":
        line = [x for x in text.splitlines() if x.startswith('{"peer": "pytorch"')][-1]
        r = json.loads(line)
        return r["step_seconds"], r["openblas_core"]
    seconds = [float(x) / 1000 for x in re.findall(r"^step \d+: train loss \S+ \(took ([0-9.]+) ms\)", text, re.M)]
    return seconds, f"none (llm.c's CPU code calls no BLAS; native check: {check_core(text)})"


rows = []
for line in open(manifest):
    shape, threads, peer, opt, policy, status, rest = line.rstrip("\n").split("\t")
    row = {"shape": shape, "threads": int(threads), "peer": peer, "optimizer": opt, "wait_policy": policy,
           "status": status}
    if status == "ok":
        try:
            seconds, core = measure(peer, rest)
            if len(seconds) < 2:
                raise ValueError(f"{len(seconds)} step times")
            med = statistics.median(seconds[1:])
            row.update(step_seconds=seconds, median_step_s=med, tokens_per_s=TOKENS[shape] / med,
                       openblas_core=core)
            m = re.search(r"peers-time wall ([0-9.]+) user ([0-9.]+) system ([0-9.]+)", open(rest).read())
            if m:  # the whole process (start-up included): how much of its threads' cores it got
                wall, cpu = float(m.group(1)), float(m.group(2)) + float(m.group(3))
                row.update(process_wall_s=wall, process_cpu_s=cpu, cpu_share=cpu / (wall * int(threads)))
        except (OSError, ValueError, KeyError, IndexError) as e:
            row.update(status="failed", reason=f"no step times: {e}")
    elif status == "failed":
        row["reason"] = "exit status not 0: " + " ".join(open(rest, errors="replace").read().split()[-30:])
    else:
        row["reason"] = rest
    rows.append(row)

by = {}  # (shape, threads, peer, optimizer) -> its fastest ok row, else its first row
for r in rows:
    key = (r["shape"], r["threads"], r["peer"], r["optimizer"])
    best = by.get(key)
    if best is None or (r["status"] == "ok" and (best["status"] != "ok" or r["median_step_s"] < best["median_step_s"])):
        by[key] = r
ratios = []
for (shape, th, peer, opt), r in sorted(by.items()):
    if peer == "samebits":
        continue
    if shape == "default":
        target, goal = 1.3, None
    elif peer == "pytorch":
        target, goal = 1.0, 1.3
    else:
        target, goal = 4.0, None
    s = by.get((shape, th, "samebits", opt))
    x = {"figure": f"samebits / {peer} tokens/s, {shape}, {opt}, {th} thread{'s' if th > 1 else ''}",
         "target": f">= {target}" + (f" (goal {goal})" if goal else "")}
    if s and s["status"] == "ok" and r["status"] == "ok":
        v = s["tokens_per_s"] / r["tokens_per_s"]
        x.update(value=v, met=v >= target, wait_policies=f"samebits {s['wait_policy']}, {peer} {r['wait_policy']}")
    else:
        who = peer if r["status"] != "ok" else "samebits"
        x.update(value=None, met=None, note=f"{who} {(r if who == peer else s or {}).get('status', 'MISSING')}")
    ratios.append(x)

result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "command": command,
          "machine": machine, "loadavg_before": load0, "loadavg_after": load1, "llmc_build": llmc_build,
          "shapes": SHAPES, "measurements": rows, "ratios": ratios}
json.dump(result, open(f"{out}/peers.json", "w"), indent=1)
lines = [f"{command} — {result['date']} — {machine} — load average {load0} before, {load1} after", ""]
if llmc_build:
    lines += [f"llm.c built by its Makefile: `{llmc_build}`", ""]
lines += ["| shape | optimizer | threads | peer | OpenMP wait policy | median step (s) | tokens/s | "
          "steps (first left out) | process CPU / (wall x threads) | OpenBLAS core |",
          "|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    if r["status"] == "ok":
        share = f"{r['cpu_share']:.2f} ({r['process_cpu_s']:.0f} / {r['process_wall_s']:.0f} s)" if "cpu_share" in r else ""
        lines.append(f"| {r['shape']} | {r['optimizer']} | {r['threads']} | {r['peer']} | {r['wait_policy']} | "
                     f"{r['median_step_s']:.3f} | "
                     f"{r['tokens_per_s']:.0f} | {len(r['step_seconds'])} | {share} | {r['openblas_core']} |")
    else:
        lines.append(f"| {r['shape']} | {r['optimizer']} | {r['threads']} | {r['peer']} | {r['wait_policy']} | "
                     f"**{r['status']}** | | | | {r['reason']} |")
lines += ["", "| ratio (each peer's fastest row) | target | measured | met | wait policies compared |",
          "|---|---|---|---|---|"]
for x in ratios:
    if x["value"] is None:
        lines.append(f"| {x['figure']} | {x['target']} | | **not measured: {x['note']}** | |")
    else:
        lines.append(f"| {x['figure']} | {x['target']} | {x['value']:.2f} | {'yes' if x['met'] else '**no**'} | "
                     f"{x['wait_policies']} |")
lines += ["", "Shapes: " + "; ".join(f"{k}: {v}" for k, v in SHAPES.items()) + "."]
open(f"{out}/peers.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
