"""Files of a current HDF5, both ways: h5py's PyPI wheel (which ships its own, newer HDF5: 2.0.0 in
December 2026) writes token files that `samebits data inspect` reads, and reads samebits' run files value
for value as Debian's h5py (the HDF5 samebits is built against) does.

  h5py_wheel.py --samebits BIN --venv DIR

A fresh venv at DIR (emptied first) gets `pip install h5py numpy`; exit 77 (skipped) when the
package index cannot be reached. Token files are written in four forms, each inspected: h5py's
defaults and a chunked dataset are read (the token count and range must be the ones written); the
newest format (libver='latest') and a gzip-compressed dataset are refused, exit 2, with the
message that says what a token file may be. Then a short run is trained, and every dataset and attribute of
its run file and checkpoints is hashed by both h5pys: the digests must be equal.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from fresh_venv import fresh_venv  # noqa: E402

WRITE_TOKENS = r'''
import sys, h5py, numpy as np
out = sys.argv[1]
ids = (np.arange(5000, dtype=np.int64) * 7919) % 50257
with h5py.File(out + "/default.h5", "w") as f:
    f.create_dataset("train/ids", data=ids.astype(np.uint16))
with h5py.File(out + "/latest.h5", "w", libver="latest") as f:
    f.create_dataset("train/ids", data=ids.astype(np.int32))
with h5py.File(out + "/chunked.h5", "w") as f:
    f.create_dataset("g/sub/ids", data=ids, chunks=(512,))
with h5py.File(out + "/gzip.h5", "w") as f:
    f.create_dataset("train/ids", data=ids, chunks=(512,), compression="gzip", shuffle=True)
print(h5py.version.hdf5_version, ids.min(), ids.max())
'''

# Every dataset's and attribute's bytes, hashed, keyed by file and path (the same on both sides).
DIGESTS = r'''
import hashlib, sys, h5py, numpy as np
def digest(value):
    a = np.asarray(value)
    if a.dtype.kind == "O":
        return hashlib.sha256(repr(a.tolist()).encode()).hexdigest()
    return a.dtype.str + str(a.shape) + hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
rows = []
for name in sys.argv[1:]:
    with h5py.File(name, "r") as f:
        def visit(path, obj):
            for k, v in sorted(obj.attrs.items()):
                rows.append(f"{name}:{path}@{k} {digest(v)}")
            if isinstance(obj, h5py.Dataset):
                rows.append(f"{name}:{path} {digest(obj[()])}")
        visit("/", f)
        f.visititems(visit)
print("\n".join(sorted(rows)))
'''


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samebits", required=True)
    ap.add_argument("--venv", required=True)
    args = ap.parse_args()
    python = fresh_venv(args.venv, ["h5py", "numpy"])
    if isinstance(python, int):
        return python
    with tempfile.TemporaryDirectory() as tmp:
        wrote = run([python, "-c", WRITE_TOKENS, tmp])
        if wrote.returncode != 0:
            print("FAIL: the wheel's h5py could not write token files:", wrote.stderr)
            return 1
        version, lo, hi = wrote.stdout.split()
        print("the wheel's HDF5:", version, "; Debian's h5py's:",
              run([sys.executable, "-c", "import h5py; print(h5py.version.hdf5_version)"]).stdout.strip())
        failures = 0
        # Read: h5py's defaults, contiguous or chunked. Refused, saying what a token file may be, and
        # before HDF5 decodes anything: what the structure walk does not read (docs/DATA.md).
        cases = (("default", "/train/ids", True), ("chunked", "/g/sub/ids", True),
                 ("latest", "/train/ids", False), ("gzip", "/train/ids", False))
        for name, dataset, readable in cases:
            got = run([args.samebits, "data", "inspect", f"{tmp}/{name}.h5:{dataset}", "--sample", "4"])
            fields = dict(line.split(":", 1) for line in got.stdout.splitlines() if ":" in line)
            if readable:
                ok = (got.returncode == 0 and fields.get("tokens", "").strip() == "5000"
                      and fields.get("token range", "").strip().startswith(f"{lo} .. {hi} "))
            else:
                ok = (got.returncode == 2 and f"{name}.h5" in got.stderr
                      and "a token file is read as HDF5 writes it by default" in got.stderr)
            print(f"{'ok' if ok else 'FAIL'}: samebits data inspect {name}.h5:{dataset} "
                  f"({'read' if readable else 'refused'} expected; exit {got.returncode})")
            if not ok:
                print(got.stdout, got.stderr)
                failures += 1
        out = os.path.join(tmp, "run.h5")
        trained = run([args.samebits, "train", os.path.join(os.path.dirname(__file__), "..", "..", "experiments",
                                                            "configs", "default.ini"),
                       "--train.steps", "4", "--train.warmup", "0", "--out", out,
                       "--train.checkpoint_every", "2", "--train.eval_every", "2"])
        if trained.returncode != 0:
            print("FAIL: samebits train:", trained.stdout, trained.stderr)
            return 1
        files = sorted(glob.glob(os.path.join(tmp, "run*")))
        files = [f for f in files if os.path.isfile(f) and f.endswith(".h5")] + \
                sorted(glob.glob(os.path.join(tmp, "run*", "**", "*.h5"), recursive=True))
        ours = run([sys.executable, "-c", DIGESTS] + files)
        theirs = run([python, "-c", DIGESTS] + files)
        if ours.returncode != 0 or theirs.returncode != 0:
            print("FAIL: reading the run file:", ours.stderr, theirs.stderr)
            return 1
        rows = ours.stdout.splitlines()
        same = ours.stdout == theirs.stdout
        print(f"{'ok' if same else 'FAIL'}: {len(files)} HDF5 files of the run, {len(rows)} datasets and "
              "attributes, the same digests under both h5pys")
        if not same:
            diff = set(rows) ^ set(theirs.stdout.splitlines())
            print("\n".join(sorted(diff)[:20]))
            failures += 1
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
