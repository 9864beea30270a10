#!/usr/bin/python3
"""Integer oracle of samebits' exact GEMM (numerics.gemm = exact, docs/CONTRACT.md "The exact GEMM"):
recomputes C = op(A)·op(B) [+ C] from the definition in Python integers, independently of
samebits' slicing code, and requires every output bit for bit (exit 1 on the first mismatch).

The definition, as written here:
  1. operands rounded to the GEMM precision (bf16, fp16: round to nearest even; fp32: unchanged);
  2. E_i: the least E with |x| < 2^E over the finite values of row i of op(A) (0 for a zero row);
     F_j the same over column j of op(B);
  3. X_ip = sign(x)·floor(|x|·2^(6s - E_i)) (the value truncated to 6s bits below 2^E_i), Y_pj
     likewise with F_j; s = 4 for fp32, 2 for bf16 and fp16;
  4. C_ij = RNE_fp32( (sum_p X_ip·Y_pj) · 2^(E_i + F_j - 12s) ), subnormals kept, overflow to Inf,
     an exact zero to +0; NaN when row i of op(A) or column j of op(B) holds a NaN or an Inf;
  5. accumulating: C_ij <- fp32(C_ij + that value), one float32 addition.

Cases: random shapes (tile edges, both transpositions), rows spanning ~80 binades, subnormals,
zero rows, single huge elements beside tiny ones, ties at the rounding point, results that
overflow or underflow, Inf/NaN, k = 50257 (the GPT-2 vocabulary), accumulation into C; each run
on every instruction-set path this CPU has (SAMEBITS_ISA), on 1 and 4 threads (a few tiles with a
long k are cut into parts of k across the threads). Exit 77 (skipped) without numpy.

usage: exact_gemm_oracle.py --tool PATH/exact_gemm_tool [--workdir DIR]
"""
import argparse
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed for", sys.executable)
    sys.exit(77)

SLICES = {0: 4, 1: 2, 2: 2}  # fp32, bf16, fp16
NAMES = {0: "fp32", 1: "bf16", 2: "fp16"}


def round_operand(x, prec):
    """x: float32 array, rounded to the GEMM precision (bf16/fp16 round to nearest even)."""
    if prec == 0:
        return x
    if prec == 2:
        return x.astype(np.float16).astype(np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    nan = np.isnan(x)
    rounded[nan] = u[nan] | 0x400000
    return rounded.astype(np.uint32).view(np.float32)


def scale_exponent(values):
    """Least E with |v| < 2^E over the finite values (0 when all are zero)."""
    finite = [abs(float(v)) for v in values if math.isfinite(float(v))]
    top = max(finite, default=0.0)
    return 0 if top == 0.0 else math.frexp(top)[1]


def integer_operand(v, E, s):
    """sign(v)·floor(|v|·2^(6s-E)) for finite v, exactly (v is a float32 value held in a double)."""
    mant, ex = math.frexp(abs(float(v)))  # |v| = mant·2^ex, mant in [0.5, 1)
    M = int(mant * (1 << 53))  # exact: a float32 significand has 24 bits
    shift = ex - 53 + 6 * s - E
    mag = M << shift if shift >= 0 else M >> -shift
    return -mag if v < 0 else mag


def round_to_f32(S, q):
    """S·2^q rounded to nearest even in float32 (subnormals, overflow to Inf, +0 for 0)."""
    if S == 0:
        return np.float32(0.0)
    u = abs(S)
    lead = u.bit_length() - 1 + q
    if lead > 127:
        return np.float32(-np.inf if S < 0 else np.inf)
    low = max(lead - 23, -149)
    shift = low - q
    if shift <= 0:
        kept = u << -shift
    else:
        kept, rest = divmod(u, 1 << shift)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and kept % 2 == 1):
            kept += 1
    with np.errstate(over="ignore"):
        value = np.float32(math.ldexp(kept, low)) if kept * 2.0**low < 2.0**128 else np.float32(np.inf)
    return -value if S < 0 else value


def oracle(m, n, k, opA, opB, c0, accumulate, prec):
    s = SLICES[prec]
    A = round_operand(opA, prec)
    B = round_operand(opB, prec)
    rows = [(scale_exponent(A[i]), not np.all(np.isfinite(A[i]))) for i in range(m)]
    cols = [(scale_exponent(B[:, j]), not np.all(np.isfinite(B[:, j]))) for j in range(n)]
    X = [[integer_operand(v, rows[i][0], s) if math.isfinite(float(v)) else 0 for v in A[i]] for i in range(m)]
    Y = [[integer_operand(v, cols[j][0], s) if math.isfinite(float(v)) else 0 for v in B[:, j]] for j in range(n)]
    C = np.empty((m, n), dtype=np.float32)
    for i in range(m):
        for j in range(n):
            if rows[i][1] or cols[j][1]:
                value = np.float32(np.nan)
            else:
                S = sum(x * y for x, y in zip(X[i], Y[j]))
                value = round_to_f32(S, rows[i][0] + cols[j][0] - 12 * s)
            C[i, j] = np.float32(c0[i, j] + value) if accumulate else value
    return C


def write_case(path, m, n, k, ta, tb, accumulate, prec, opA, opB, c0):
    stored_a = opA.T if ta else opA  # op(A) = stored^T when ta
    stored_b = opB.T if tb else opB
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", m, n, k, ta, tb, accumulate, prec))
        for x in (stored_a, stored_b, c0):
            f.write(np.ascontiguousarray(x, dtype=np.float32).tobytes())


def wide(rng, shape, binades):
    x = rng.uniform(-1.0, 1.0, size=shape) * np.exp2(rng.integers(-binades, binades + 1, size=shape))
    return x.astype(np.float32)


def cases(rng):
    """(name, m, n, k, op(A), op(B), C0, prec) tuples."""
    out = []
    for prec in (0, 1, 2):
        for m, n, k in ((1, 1, 1), (9, 33, 7), (17, 40, 130), (8, 32, 64)):
            binades = 40 if prec != 2 else 6
            out.append(("random", m, n, k, wide(rng, (m, k), binades), wide(rng, (k, n), binades),
                        rng.uniform(-1, 1, (m, n)).astype(np.float32), prec))
    # One huge element beside tiny ones in every row; a zero row; subnormal rows; exact cancellation.
    m, n, k = 6, 35, 50
    A = wide(rng, (m, k), 20)
    A[:, 0] = np.float32(3.0e30)
    A[1] = 0.0
    A[2] = (rng.integers(-2**20, 2**20, k) * np.float32(2.0**-149)).astype(np.float32)
    A[3, : k // 2] = 1.0
    A[3, k // 2:] = -1.0
    B = wide(rng, (k, n), 30)
    B[:, 3] = (rng.integers(-100, 100, k) * np.float32(2.0**-149)).astype(np.float32)
    B[:, 4] = 1.0
    out.append(("adversarial", m, n, k, A, B, np.zeros((m, n), np.float32), 0))
    # Products that overflow and underflow fp32, and ties at the rounding point.
    A = np.full((3, 4), 2.0**100, np.float32)
    A[1] = 2.0**-100
    A[2] = np.float32(1.0 + 2.0**-23)
    B = np.full((4, 5), 2.0**60, np.float32)
    B[:, 1] = 2.0**-80
    B[:, 2] = np.float32(1.0 + 2.0**-23)
    B[:, 3] = np.float32(0.5 + 2.0**-24)
    out.append(("range and ties", 3, 5, 4, A, B, np.zeros((3, 5), np.float32), 0))
    # Inf and NaN reach only their rows and columns.
    A = wide(rng, (5, 9), 5)
    A[1, 3] = np.inf
    B = wide(rng, (9, 7), 5)
    B[2, 4] = np.nan
    out.append(("inf and nan", 5, 7, 9, A, B, np.zeros((5, 7), np.float32), 0))
    # k = 50257 (the GPT-2 vocabulary), rows spanning 60 binades.
    k = 50257
    out.append(("k=50257", 3, 5, k, wide(rng, (3, k), 30), wide(rng, (k, 5), 30),
                rng.uniform(-1, 1, (3, 5)).astype(np.float32), 0))
    out.append(("k=50257 bf16", 2, 3, k, wide(rng, (2, k), 30), wide(rng, (k, 3), 30),
                rng.uniform(-1, 1, (2, 3)).astype(np.float32), 1))
    return out


def isas_here(tool, workdir):
    """The SAMEBITS_ISA paths the tool runs here (a missing one exits 2)."""
    probe = os.path.join(workdir, "probe.bin")
    write_case(probe, 1, 1, 1, 0, 0, 0, 0, np.ones((1, 1), np.float32), np.ones((1, 1), np.float32),
               np.zeros((1, 1), np.float32))
    here = []
    for isa in ("scalar", "avx2", "avx512", "onednn", "amx"):
        env = dict(os.environ, SAMEBITS_ISA=isa)
        r = subprocess.run([tool, probe, probe + ".out"], env=env, capture_output=True, text=True)
        if r.returncode == 0:
            here.append(isa)
        elif r.returncode != 2 or "SAMEBITS_ISA" not in r.stderr:
            sys.exit(f"exact_gemm_tool under SAMEBITS_ISA={isa}: exit {r.returncode}, {r.stderr}")
    return here


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    rng = np.random.default_rng(47)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        isas = isas_here(args.tool, work)
        print("instruction-set paths here:", ", ".join(isas))
        checked = 0
        for index, (name, m, n, k, A, B, c0, prec) in enumerate(cases(rng)):
            ta, tb, accumulate = index % 2, (index // 2) % 2, index % 3 == 0
            path = os.path.join(work, f"case{index}.bin")
            write_case(path, m, n, k, ta, tb, int(accumulate), prec, A, B, c0)
            want = oracle(m, n, k, A, B, c0, accumulate, prec)
            for isa, threads in [(isa, t) for isa in isas for t in (1, 4)]:
                env = dict(os.environ, SAMEBITS_ISA=isa, OMP_NUM_THREADS=str(threads))
                r = subprocess.run([args.tool, path, path + ".out"], env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{name}: exact_gemm_tool failed under {isa}, {threads} threads: {r.stderr}")
                got = np.fromfile(path + ".out", dtype=np.float32).reshape(m, n)
                diff = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
                if len(diff):
                    i, j = diff[0]
                    sys.exit(f"FAIL {name} ({NAMES[prec]}, m={m} n={n} k={k} ta={ta} tb={tb} "
                             f"accumulate={accumulate}, {isa}, {threads} threads): C[{i}][{j}] = {got[i, j]!r} "
                             f"(0x{got.view(np.uint32)[i, j]:08x}), oracle {want[i, j]!r} "
                             f"(0x{want.view(np.uint32)[i, j]:08x}); {len(diff)} elements differ")
                checked += m * n
            print(f"ok {name:16s} {NAMES[prec]} m={m} n={n} k={k} ta={ta} tb={tb} accumulate={accumulate}")
        print(f"exact GEMM oracle: {checked} elements bit for bit on {len(isas)} paths")


if __name__ == "__main__":
    main()
