#!/usr/bin/python3
"""Per-rank memory and bytes on the wire per step of the GPT-2 124M shape at DP x TP x PP layouts,
against Megatron-LM's formulas (docs/studies/parallel_costs.md). Counts, not timings: the figures are
machine-independent.

For each layout it runs tests/tools/mpi_train_driver (--bench, under mpirun for more than one
rank) on the 124M shape (12 x 768, 12 heads, vocabulary 50257, sequence 1024, one sequence a leaf,
LEAVES leaves a step, Muon + AdamW in fp32, the synthetic language) for 2 steps and reads, per rank,
the model's weight, gradient and activation buffers (after the steps: every micro-batch slot a
pipeline schedule kept), the optimizer state and the bytes it received
from every collective and point-to-point message in step 2 (the mean over the ranks). Megatron's figures for the same model,
precision and optimizer state, rank 0 (the first pipeline stage):
  weights, gradients: 4 bytes per parameter of the rank's share, Psi / (TP PP) (the embedding and
    the head on the first and last stages only: Megatron-LM's model parallel split);
  optimizer state: 4 bytes per Muon matrix element and 8 per AdamW element of the share (/ DP with
    the distributed optimizer);
  activations: Korthikanti et al. 2022 (eq. 2, no sequence parallelism, no recomputation), per
    layer and micro-batch s b h (10 + 24/t + 5 a s / (h t)) bytes at 16 bits, doubled for fp32 and
    less the 3 s b h bytes of dropout masks that a model without dropout does not keep, for the L
    layers a first stage holds in flight under 1F1B (L / PP layers of PP micro-batches);
  received per step: the ring all-reduce of the gradient over DP, 2 (DP-1)/DP of 4 Psi/(TP PP); per
    micro-batch and layer four ring all-reduces of s b h fp32 over TP; the embedding's and the
    head's (two of s b h, three of s b for the loss); per micro-batch one activation and one
    gradient of s b h from the neighbouring stage; the tied embedding's gradient all-reduced between
    the first and last stage.
The pipeline bubble (P - 1)/(m + P - 1) is printed beside each PP layout (m: micro-batches a
pipeline runs per step); bench/bench_bubble.py measures it.

With --rss it measures peak RSS instead: `samebits train` on the 85 M command of bench_scale.py
(experiments/configs/default.ini at 12 x 768, 12 heads, sequence 256, vocabulary 256; 4 leaves of
one sequence, 2 steps, one thread a rank, the final checkpoint exported and written by rank 0) in
one process and at each layout under mpirun, each rank's peak RSS (its VmHWM, read by a wrapper
from getrusage of the rank it starts) against one process's, beside Megatron's formula for the
same shape (rank 0's weights, gradients, optimizer state and activations above, over one
process's). The machine's CPU is printed (the figures are bytes, but the allocator's are the
machine's).

With --ep it measures expert parallelism's all-to-all: `samebits train` on
experiments/configs/moe_tiny.ini (4 MoE blocks of 8 experts, top-2 and 1 shared expert, C = 128;
8 leaves of 4 sequences of 128 tokens, 2 steps, one thread a rank) at DP x EP layouts (EP inside
DP, Megatron's order), and reads rank 0's point-to-point bytes of step 2 (series/comm_bytes' send
column: at EP alone, the all-to-all and nothing else), beside Megatron's all-to-all volume of a
dropless token dispatcher under uniform routing: per MoE block and rank, the rank's N tokens' k rows
each to (E-1)/E other ranks, four times a step (dispatch and combine, forward and backward), C fp32
each — 4 N k C (E-1)/E x 4 bytes — plus the row counts sent before each forward dispatch. The
measured bytes follow the step's routing, so their ratio to the formula is rank 0's routing load
against a uniform one.

Usage: bench/bench_layouts.py [DRIVER] [--layouts 1x1x1,1x1x2,...] [--leaves N]
  (default: build/release/bin/tests/mpi_train_driver; the five layouts of issue 45 and 1x2x1, 2x2x1;
  4 leaves)
       bench/bench_layouts.py --rss [SAMEBITS] [--layouts 1x1x4,1x2x2,2x2x2]
  (default: build/release/bin/samebits)
       bench/bench_layouts.py --ep [SAMEBITS] [--layouts 2x2,4x4,4x2]  (DP x EP)
  (default: build/release/bin/samebits)
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT2 = {"L": 12, "H": 768, "A": 12, "V": 50257, "S": 1024}
L, H, A, V, S = GPT2["L"], GPT2["H"], GPT2["A"], GPT2["V"], GPT2["S"]
# The 85 M command (bench_scale.py's shape, 4 leaves of one sequence so that 2 x 2 x 2 splits them).
SHAPE_85M = {"L": 12, "H": 768, "A": 12, "V": 256, "S": 256}
ARGS_85M = ["--model.n_layer", "12", "--model.n_embd", "768", "--model.n_head", "12", "--model.seq_len", "256",
            "--data.leaves", "4", "--data.leaf_size", "1", "--train.warmup", "0", "--train.eval_every", "0",
            "--train.steps", "2", "--run.threads", "1", "--run.progress", "off"]
# Runs one rank's command and prints its peak RSS (bytes) to stderr: "# peak_rss rank R B".
RSS_WRAPPER = ("import os, resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
               "print('# peak_rss rank', os.environ.get('OMPI_COMM_WORLD_RANK', '0'), "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr); sys.exit(rc)")
CONFIG = """[model]
vocab = {V}
seq_len = {S}
n_layer = {L}
n_head = {A}
n_embd = {H}
[data]
source = synthetic
leaf_size = 1
leaves = {leaves}
[train]
steps = 2
warmup = 0
eval_every = 0
checkpoint_every = 0
[parallel]
tp = {tp}
{pp}
[run]
threads = 1
progress = off
"""


def first_stage(tp, pp, shape=GPT2):
    """(Muon matrix elements, AdamW elements) held by rank 0 under Megatron-LM's split: per layer the
    column-parallel qkv and fc (weights and biases) and the row-parallel proj and fc2 weights / TP,
    their biases and the norms replicated; the vocabulary-parallel wte / TP and the replicated wpe on
    the first stage, the final norm (and the tied head's copy of wte) on the last."""
    L, H, V, S = shape["L"], shape["H"], shape["V"], shape["S"]
    per_layer_matrix = (3 * H * H + H * H + 4 * H * H + 4 * H * H) / tp
    per_layer_other = (3 * H + 4 * H) / tp + 2 * H + 4 * H  # sharded biases; proj biases, two norms
    layers = L / pp
    other = layers * per_layer_other + V * H / tp + S * H
    if pp == 1:
        other += 2 * H
    return layers * per_layer_matrix, other


def megatron(dp, tp, pp, leaves, shape=GPT2):
    """Megatron-LM's bytes for rank 0 (first stage) and the bytes a rank receives per step, mean over
    the ranks."""
    L, H, A, V, S = shape["L"], shape["H"], shape["A"], shape["V"], shape["S"]
    matrix, other = first_stage(tp, pp, shape)
    share = matrix + other
    m = leaves / dp  # micro-batches of one sequence a pipeline runs
    sbh = S * H
    act = L * sbh * (2 * (10 + 24 / tp + 5 * A * S / (H * tp)) - 3)
    ring = lambda n, k: 2 * (k - 1) / k * n if k > 1 else 0.0  # noqa: E731
    received = ring(4 * share, dp)
    received += m * (L / pp) * 4 * ring(4 * sbh, tp)
    received += m * (2 * ring(4 * sbh, tp) + 3 * ring(4 * S, tp))
    received += m * 2 * 4 * sbh * (pp - 1) / pp  # the stages' activations and gradients, mean over ranks
    if pp > 1:
        received += ring(4 * V * H / tp, 2) * 2 / pp  # the embedding group: first and last stage
    return {"weights": 4 * share, "grads": 4 * share, "state": 4 * matrix + 8 * other, "activations": act,
            "received": received, "bubble": (pp - 1) / (m + pp - 1)}


def run_driver(driver, text, world):
    """mpi_train_driver --bench on the config `text`, one thread a rank, under mpirun for more than
    one rank (bench_bubble.py uses it too): the finished process."""
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as f:
        f.write(text)
    p = launch([driver, "--config", f.name, "--bench"], world)
    os.unlink(f.name)
    return p


def launch(cmd, world):
    """`cmd` on one thread a rank, under mpirun (oversubscribed; as root when root) for more than one
    rank: the finished process."""
    if world > 1:
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(world)] + cmd
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def measure(driver, dp, tp, pp, leaves):
    """The driver's per-rank figures for rank 0 and the mean received bytes, or the reason it failed."""
    text = CONFIG.format(V=V, S=S, L=L, A=A, H=H, leaves=leaves, tp=tp, pp=f"pp = {pp}" if pp > 1 else "")
    p = run_driver(driver, text, dp * tp * pp)
    if p.returncode != 0:
        lines = [x for x in (p.stderr + p.stdout).splitlines() if "error" in x]
        return {"error": lines[0] if lines else f"exit {p.returncode}"}
    out = p.stdout
    mem = re.search(r"# memory rank 0 weights (\d+) grads (\d+) activations (\d+)", out)
    state = re.search(r"# optimizer_state_bytes ((?:\d+ ?)+)", out)
    received = [int(x) for x in re.findall(r"# received rank \d+ total (\d+)", out)]
    return {"weights": int(mem[1]), "grads": int(mem[2]), "activations": int(mem[3]),
            "state": int(state[1].split()[0]), "received": sum(received) / len(received)}


def cpu_name():
    """The machine's CPU as /proc/cpuinfo names it: model name, family and model numbers."""
    try:
        lines = open("/proc/cpuinfo").read().splitlines()
    except OSError:
        return "unknown CPU"
    field = lambda key: next((x.split(":", 1)[1].strip() for x in lines if x.split(":")[0].strip() == key), "?")  # noqa: E731
    return f"{field('model name')} (family {field('cpu family')} model {field('model')}), {os.cpu_count()} cores"


def peak_rss(samebits, dp, tp, pp):
    """Each rank's peak RSS (bytes) of the 85 M command at a layout, or the reason it failed."""
    world = dp * tp * pp
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [samebits, "train", os.path.join(ROOT, "experiments", "configs", "default.ini"), *ARGS_85M,
               "--parallel.tp", str(tp), "--parallel.pp", str(pp), "--out", os.path.join(tmp, "r.h5")]
        p = launch([sys.executable, "-c", RSS_WRAPPER] + cmd, world)
    if p.returncode != 0:
        lines = [x for x in (p.stderr + p.stdout).splitlines() if "error" in x]
        return {"error": lines[0] if lines else f"exit {p.returncode}"}
    rss = {int(r): int(b) for r, b in re.findall(r"# peak_rss rank (\d+) (\d+)", p.stderr)}
    return {"ranks": [rss[r] for r in sorted(rss)]}


def rss_main(samebits, layouts):
    """The peak-RSS table (--rss)."""
    print(f"Peak RSS per rank, the 85 M command (12 x 768, 12 heads, vocabulary 256, sequence 256; 4 leaves of "
          f"one sequence, 2 steps, the final checkpoint written by rank 0); CPU: {cpu_name()}")
    one = peak_rss(samebits, 1, 1, 1)
    if "error" in one:
        print(f"one process failed: {one['error']}")
        return 1
    base = one["ranks"][0]
    meg = lambda dp, tp, pp: sum(megatron(dp, tp, pp, 4, SHAPE_85M)[c]  # noqa: E731
                                 for c in ("weights", "grads", "state", "activations"))
    print(f"one process: {base / 1e6:.1f} MB (Megatron's formula: {meg(1, 1, 1) / 1e6:.1f} MB)")
    print("| DP x TP x PP | peak RSS per rank, MB (rank order) | / one process: max (rank 0, others' max) | "
          "Megatron's rank 0, MB / its one process |")
    print("|---|---|---|---|")
    for layout in layouts.split(","):
        dp, tp, pp = (int(x) for x in layout.split("x"))
        got = peak_rss(samebits, dp, tp, pp)
        formula = f"{meg(dp, tp, pp) / 1e6:.1f} ({meg(dp, tp, pp) / meg(1, 1, 1):.2f})"
        if "error" in got:
            print(f"| {dp} x {tp} x {pp} | not measured: {got['error']} | — | {formula} |", flush=True)
            continue
        r = got["ranks"]
        cells = " / ".join(f"{b / 1e6:.0f}" for b in r)
        ratios = f"**{max(r) / base:.2f}** ({r[0] / base:.2f}, {max(r[1:]) / base:.2f})"
        print(f"| {dp} x {tp} x {pp} | {cells} | {ratios} | {formula} |", flush=True)
    return 0


def ep_bytes(samebits, dp, ep):
    """Rank 0's point-to-point bytes in step 2 of moe_tiny.ini at DP x EP, or the reason it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.h5")
        cmd = [samebits, "train", os.path.join(ROOT, "experiments", "configs", "moe_tiny.ini"), "--train.steps", "2",
               "--train.warmup", "0", "--train.eval_every", "0", "--run.threads", "1", "--run.progress", "off",
               "--parallel.ep", str(ep), "--out", out]
        p = launch(cmd, dp)
        if p.returncode != 0:
            lines = [x for x in (p.stderr + p.stdout).splitlines() if "error" in x]
            return {"error": lines[0] if lines else f"exit {p.returncode}"}
        code = ("import h5py, sys; f = h5py.File(sys.argv[1], 'r'); d = f['series/comm_bytes']; "
                "cols = bytes(d.attrs['columns']).decode().split(chr(10)); print(int(d[1][cols.index('send')]))")
        sent = subprocess.run(["/usr/bin/python3", "-c", code, out], capture_output=True, text=True)
    if sent.returncode != 0:
        return {"error": sent.stderr.strip().splitlines()[-1] if sent.stderr.strip() else "h5py failed"}
    return {"send": int(sent.stdout)}


def ep_main(samebits, layouts):
    """The all-to-all table (--ep)."""
    blocks, experts, k, c, tokens = 4, 8, 2, 128, 8 * 4 * 128  # moe_tiny.ini: a step's tokens
    print(f"Expert parallelism's all-to-all, moe_tiny.ini ({blocks} MoE blocks of {experts} experts, top-{k}, "
          f"C = {c}; {tokens} tokens a step), rank 0's bytes in step 2; CPU: {cpu_name()}")
    print("| DP x EP | measured, MB | Megatron's 4 N k C (E-1)/E x 4 B, uniform routing, MB | measured / formula |")
    print("|---|---|---|---|")
    for layout in layouts.split(","):
        dp, ep = (int(x) for x in layout.split("x"))
        n = tokens // dp  # rank 0's tokens a step
        header = blocks * (8 // dp) * (ep - 1) * (experts // ep + 1) * 8  # row counts before each leaf's dispatch
        formula = blocks * 4 * n * k * c * 4 * (ep - 1) / ep + header
        got = ep_bytes(samebits, dp, ep)
        if "error" in got:
            print(f"| {dp} x {ep} | not measured: {got['error']} | {formula / 1e6:.3f} | — |", flush=True)
            continue
        print(f"| {dp} x {ep} | {got['send'] / 1e6:.3f} | {formula / 1e6:.3f} | {got['send'] / formula:.3f} |",
              flush=True)
    return 0


def samebits_mode(args, layouts):
    """The SAMEBITS binary and --layouts of the --rss and --ep modes (args: after the mode)."""
    samebits = os.path.join(ROOT, "build", "release", "bin", "samebits")
    args = list(args)
    while args:
        a = args.pop(0)
        if a == "--layouts":
            layouts = args.pop(0)
        else:
            samebits = a
    return samebits, layouts


def main(argv):
    if argv[:1] == ["--ep"]:
        return ep_main(*samebits_mode(argv[1:], "2x2,4x4,4x2"))
    if argv[:1] == ["--rss"]:
        return rss_main(*samebits_mode(argv[1:], "1x1x4,1x2x2,2x2x2"))
    driver = os.path.join(ROOT, "build", "release", "bin", "tests", "mpi_train_driver")
    layouts, leaves = "1x1x1,1x2x1,2x2x1,1x1x2,1x1x4,1x2x2,2x2x2", 4
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--layouts":
            layouts = args.pop(0)
        elif a == "--leaves":
            leaves = int(args.pop(0))
        else:
            driver = a
    cols = ("weights", "grads", "state", "activations", "received")
    print(f"GPT-2 124M shape ({L} x {H}, {A} heads, vocabulary {V}, sequence {S}), {leaves} leaves of one "
          "sequence a step, Muon + AdamW fp32; rank 0, MB (10^6 bytes): samebits / Megatron (ratio)")
    print("| DP x TP x PP | " + " | ".join(cols) + " per step | bubble (P-1)/(m+P-1) |")
    print("|---|" + "---|" * (len(cols) + 1))
    for layout in layouts.split(","):
        dp, tp, pp = (int(x) for x in layout.split("x"))
        meg = megatron(dp, tp, pp, leaves)
        ours = measure(driver, dp, tp, pp, leaves)
        if "error" in ours:
            cells = [f"— / {meg[c] / 1e6:.1f}" for c in cols]
            cells[-1] += f" (not measured: {ours['error']})"
        else:
            cells = [f"{ours[c] / 1e6:.1f} / {meg[c] / 1e6:.1f} ({ours[c] / meg[c]:.2f})" if meg[c] else
                     f"{ours[c] / 1e6:.1f} / 0" for c in cols]
        bubble = f"{meg['bubble']:.3f}" if pp > 1 else "—"
        print(f"| {dp} x {tp} x {pp} | " + " | ".join(cells) + f" | {bubble} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
