#!/usr/bin/python3
"""Smoke test of bench/peers' two Python parts (docs/PERFORMANCE.md §Peers side by side):
bench/peers_torch.py trains a tiny GPT for 3 steps with each optimizer (AdamW also under bf16
autocast) and prints its JSON line;
bench/peers_report.py turns a manifest (a samebits run file, that PyTorch line, an llm.c log and
a MISSING peer) into peers.json / peers.md, with the missing peer's ratio not measured and never
passed; a measurement made under two OpenMP wait policies is compared by its faster row. Exit 77 (skipped) when /usr/bin/python3 lacks torch or h5py."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import torch  # noqa: F401
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
tiny = ["--layers", "1", "--width", "32", "--heads", "2", "--vocab", "64", "--seq", "16", "--batch", "2",
        "--steps", "3", "--threads", "1"]
with tempfile.TemporaryDirectory() as work:
    for opt, autocast in (("adamw", "bf16"), ("adamw", "off"), ("muon", "off")):
        out = subprocess.run([sys.executable, f"{root}/bench/peers_torch.py", *tiny, "--optimizer", opt,
                              "--autocast", autocast], check=True, capture_output=True, text=True).stdout
        r = json.loads(out.splitlines()[-1])
        assert r["optimizer"] == opt and len(r["step_seconds"]) == 3 and r["tokens_per_step"] == 32, r
        assert r["autocast"] == autocast, r
        assert all(x == x for x in r["loss"]), r  # no NaN
    open(f"{work}/pt.log", "w").write('{"openblas_core": "Zen", "ok": true}\n' + out)
    with h5py.File(f"{work}/sb.h5", "w") as f:  # what the samebits run file holds for the report
        f["timing/step_seconds"] = [9.0, 1.0, 1.0]
    open(f"{work}/sb.log", "w").write('{"openblas_core": "Zen", "ok": true}\n')
    with h5py.File(f"{work}/sb-slow.h5", "w") as f:  # the same run under another wait policy, slower
        f["timing/step_seconds"] = [9.0, 2.0, 2.0]
    open(f"{work}/sb-slow.log", "w").write('{"openblas_core": "Zen", "ok": true}\n')
    open(f"{work}/llmc.log", "w").write("peers-time wall 20.0 user 30.0 system 2.0\n"
                                        "step 0: train loss 11.0 (took 9000.0 ms)\n"
                                        "step 1: train loss 10.9 (took 4000.0 ms)\n"
                                        "step 2: train loss 10.8 (took 4000.0 ms)\n")
    rows = [("124m", 1, "samebits", "muon", "passive", "ok", f"{work}/sb.log"),
            ("124m", 1, "pytorch", "muon", "passive", "ok", f"{work}/pt.log"),
            ("124m", 1, "samebits", "adamw", "passive", "ok", f"{work}/sb.log"),
            ("124m", 1, "llm.c", "adamw", "passive", "ok", f"{work}/llmc.log"),
            ("124m", 1, "pytorch", "adamw", "-", "MISSING", "no torch"),
            ("124m", 2, "samebits", "adamw", "passive", "ok", f"{work}/sb-slow.log"),
            ("124m", 2, "samebits", "adamw", "default", "ok", f"{work}/sb.log"),
            ("124m", 2, "llm.c", "adamw", "passive", "ok", f"{work}/llmc.log")]
    open(f"{work}/manifest.tsv", "w").write("".join("\t".join(map(str, x)) + "\n" for x in rows))
    subprocess.run([sys.executable, f"{root}/bench/peers_report.py", f"{work}/manifest.tsv", work, "test machine",
                    "0 0 0", "0 0 0", "", "bench/peers (test)"], check=True, capture_output=True)
    result = json.load(open(f"{work}/peers.json"))
    ratios = {x["figure"]: x for x in result["ratios"]}
    llmc = ratios["samebits / llm.c tokens/s, 124m, adamw, 1 thread"]
    assert abs(llmc["value"] - 4.0) < 1e-12 and llmc["met"] is True, llmc  # 4 s / 1 s, first step left out
    row = [x for x in result["measurements"] if x["peer"] == "llm.c"][0]
    assert abs(row["cpu_share"] - 1.6) < 1e-12, row  # (30 + 2) / (20 x 1)
    two = ratios["samebits / llm.c tokens/s, 124m, adamw, 2 threads"]  # samebits' faster row: default
    assert abs(two["value"] - 4.0) < 1e-12 and two["wait_policies"] == "samebits default, llm.c passive", two
    gone = ratios["samebits / pytorch tokens/s, 124m, adamw, 1 thread"]
    assert gone["value"] is None and gone["met"] is None, gone
    assert ratios["samebits / pytorch tokens/s, 124m, muon, 1 thread"]["value"] > 0
    md = open(f"{work}/peers.md").read()
    assert "**MISSING**" in md and "not measured: pytorch MISSING" in md, md
print("bench/peers smoke test: ok")
