#!/usr/bin/env python3
"""The layers of samebits, checked against the build (docs/ARCHITECTURE.md, "Layers").

    check_layers.py PARTS.json

PARTS.json (written by tests/unit/extra.cmake) names, for each part, its static library, its own
include directory and the include directories its sources are compiled with. The order below is
the specification; the build must agree with it in three ways, for every part P and every part Q
that P may not use (Q above P, or a sibling of P):
  1. Q's include directory is not among P's include directories;
  2. so an `#include` of a header of Q, preprocessed with P's include directories, fails, while
     one of P's own headers preprocesses (the control that the probe itself works);
  3. no symbol P's archive needs is defined only in Q's archive (a hand-written declaration of a
     higher part's function would pass 1 and 2 and fail here).
Exit 0 when all hold; 1 with every violation named.
"""
import json
import os
import subprocess
import sys
import tempfile

# rank: a part may use the parts of lower rank only (equal rank = siblings, which may not).
RANK = {
    "determinism": 0,
    "datasets": 1,
    "base": 2,
    "cpu": 3,
    "cuda": 3,
    "model": 4,
    "optim": 5,
    "parallel": 6,
    "io": 7,
    "train": 8,
}


def forbidden(p, q):
    return q != p and RANK[q] >= RANK[p]


def first_header(include_dir):
    for root, _, files in sorted(os.walk(include_dir)):
        for f in sorted(files):
            if f.endswith(".hpp"):
                return os.path.relpath(os.path.join(root, f), include_dir)
    return None


def preprocesses(cxx, include_dirs, header):
    cmd = [cxx, "-std=c++20", "-E", "-x", "c++", "-o", os.devnull, "-"]
    cmd[1:1] = ["-I" + d for d in include_dirs]
    r = subprocess.run(cmd, input=f'#include "{header}"\n', text=True, capture_output=True)
    return r.returncode == 0, r.stderr


def symbols(nm, archive):
    """(defined, undefined) symbol names of a static library."""
    out = subprocess.run([nm, "-A", archive], text=True, capture_output=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRWVuGSCi":  # global definitions (W, V: weak; u: unique)
            defined.add(name)
    return defined, undefined - defined


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), text=True, capture_output=True)
    return r.stdout.splitlines() if r.returncode == 0 else list(names)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    cxx, nm, parts = spec["cxx"], spec["nm"], spec["parts"]
    unknown = sorted(set(parts) - set(RANK))
    if unknown:
        print(f"check_layers: parts without a rank here: {unknown} (add them to RANK and to "
              "docs/ARCHITECTURE.md)")
        return 1
    errors = []
    syms = {p: symbols(nm, parts[p]["archive"]) for p in parts if parts[p]["archive"]}
    checked = 0
    for p, part in sorted(parts.items(), key=lambda kv: RANK[kv[0]]):
        dirs = [d for d in part["include_dirs"].split(";") if d]
        own = first_header(part["include"]) if part["include"] else None
        if own:
            ok, err = preprocesses(cxx, dirs, own)
            if not ok:
                errors.append(f"{p}: its own header {own} does not preprocess with its include "
                              f"directories (the probe is broken):\n{err}")
        for q, other in parts.items():
            if not forbidden(p, q):
                continue
            checked += 1
            if other["include"] and os.path.realpath(other["include"]) in map(os.path.realpath, dirs):
                errors.append(f"{p} sees the include directory of {q} ({other['include']})")
            header = first_header(other["include"]) if other["include"] else None
            if header:
                ok, _ = preprocesses(cxx, dirs, header)
                if ok:
                    errors.append(f"{p} can include {q}'s header {header}")
            if p in syms and q in syms:
                below = set()
                for r in parts:
                    if r == p or not forbidden(p, r):
                        below |= syms.get(r, (set(), set()))[0]
                needed = sorted((syms[p][1] & syms[q][0]) - below)
                if needed:
                    shown = demangle(needed[:8])
                    errors.append(f"{p} needs symbols defined only in {q}: " + "; ".join(shown)
                                  + (f" (and {len(needed) - 8} more)" if len(needed) > 8 else ""))
    for e in errors:
        print("check_layers: " + e)
    if errors:
        return 1
    print(f"check_layers: {len(parts)} parts, {checked} forbidden pairs, no back-edge "
          "(include directories, headers, symbols)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
