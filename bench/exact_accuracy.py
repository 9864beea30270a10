#!/usr/bin/python3
"""Per-product accuracy of the exact GEMM against fp64 (docs/studies/exact_gemm.md): at the default
model's and GPT-2 124M's GEMM shapes, samebits' canonical, vendor and exact products (through
tests/oracle exact_gemm_tool) and the exact definition emulated at other slice counts s (numpy
float64 on the truncated integers: the emulation's own error, < 2^-40 relative, is far below the
fp32 rounding it measures; at the shipped s it must equal samebits' exact output bit for bit).

Error of an element: |C - C64| / (|op(A)|·|op(B)|)_ij (normwise, the bound a dot product's error is
measured against); the table prints its median and maximum over the product.

usage: exact_accuracy.py --tool PATH/exact_gemm_tool [--out docs/studies/exact_gemm/accuracy.md]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracle"))
from exact_gemm_oracle import write_case  # noqa: E402  (the oracle's input format)


def operands(rng, kind, m, n, k):
    """op(A) (m, k) and op(B) (k, n) shaped like the model's products."""
    if kind == "forward":  # activations x weights
        return rng.standard_normal((m, k)).astype(np.float32), (0.02 * rng.standard_normal((k, n))).astype(np.float32)
    if kind == "head dX":  # dlogits (softmax - one-hot)/tokens, k = vocabulary, times W
        logits = rng.standard_normal((m, k))
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(m), rng.integers(0, k, m)] -= 1.0
        return (p / m).astype(np.float32), (0.02 * rng.standard_normal((k, n))).astype(np.float32)
    if kind == "weight grad":  # x^T (k = tokens) times dY
        return rng.standard_normal((m, k)).astype(np.float32), (1e-3 * rng.standard_normal((k, n))).astype(np.float32)
    raise ValueError(kind)


def samebits(tool, work, mode, A, B, prec):
    m, k = A.shape
    n = B.shape[1]
    path = os.path.join(work, "case.bin")
    write_case(path, m, n, k, 0, 0, 0, prec, A, B, np.zeros((m, n), np.float32))
    subprocess.run([tool, path, path + ".out", mode], check=True)
    return np.fromfile(path + ".out", dtype=np.float32).reshape(m, n)


def truncated(x, axis, s):
    """The definition's operands: x truncated to 6s bits below its row's (axis=1) or column's power-of-two scale."""
    top = np.abs(x).max(axis=axis, keepdims=True).astype(np.float64)
    E = np.where(top > 0, np.frexp(top)[1], 0)
    scale = np.ldexp(1.0, 6 * s - E)
    return np.trunc(x.astype(np.float64) * scale) / scale


def emulated(A, B, s):
    return (truncated(A, 1, s) @ truncated(B, 0, s)).astype(np.float32)


def error(C, exact, bound):
    e = np.abs(C.astype(np.float64) - exact) / np.maximum(bound, 1e-300)
    return float(np.median(e)), float(e.max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    rng = np.random.default_rng(2047)
    shapes = [("default fwd qkv", "forward", 512, 384, 128), ("default fwd mlp down", "forward", 512, 128, 512),
              ("default dW mlp", "weight grad", 128, 512, 512), ("124M fwd mlp up", "forward", 256, 3072, 768),
              ("124M fwd mlp down", "forward", 256, 768, 3072), ("124M dW qkv", "weight grad", 768, 2304, 256),
              ("124M head dX (k=V)", "head dX", 64, 96, 50257)]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, kind, m, n, k in shapes:
            A, B = operands(rng, kind, m, n, k)
            exact = A.astype(np.float64) @ B.astype(np.float64)
            bound = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
            row = {"name": f"{name} {m}x{n}x{k}"}
            row["canonical"] = error(samebits(args.tool, work, "canonical", A, B, 0), exact, bound)
            row["vendor"] = error(samebits(args.tool, work, "vendor", A, B, 0), exact, bound)
            ours = samebits(args.tool, work, "exact", A, B, 0)
            row["exact s=4"] = error(ours, exact, bound)
            emu4 = emulated(A, B, 4)
            # The float64 emulation rounds twice (to double, then to float): allow a last-bit tie.
            row["emulation agrees"] = int(np.sum(np.abs(emu4.view(np.int32) - ours.view(np.int32)) > 1))
            for s in (2, 3, 5):
                row[f"exact s={s}"] = error(emulated(A, B, s), exact, bound)
            rows.append(row)
            print(row, flush=True)
    cols = ["canonical", "vendor", "exact s=2", "exact s=3", "exact s=4", "exact s=5"]
    lines = ["| product (m×n×k) | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r['name']} | " + " | ".join(f"{r[c][0]:.1e} / {r[c][1]:.1e}" for c in cols) + " |")
    table = "\n".join(lines)
    print(table)
    bad = [r["name"] for r in rows if r["emulation agrees"]]
    if bad:
        sys.exit(f"the emulated definition at s=4 differs from samebits' exact GEMM by more than 1 ulp: {bad}")
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
