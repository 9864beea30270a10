#!/usr/bin/env python3
"""The paths the docs name exist, and no file cites a design document outside this repository.

    check_doc_paths.py SOURCE_ROOT

1. Every path docs/ARCHITECTURE.md names (a word with a file extension or a slash, in backticks
   or prose) names something in SOURCE_ROOT: a path from the root (core/cpu/gemm.cpp, tests/support/),
   or the tail of one (det/block_wire.hpp, samebits/core/utf8.hpp), or a file's name
   (train_state.hpp). A placeholder such as core/cpu/<op>.cpp matches any file of its pattern.
2. No file of the tree (build folders and .git aside) names the design notes kept outside it.
Exit 0 when both hold; 1 with every violation named. Deterministic: a pure function of the tree.
"""
import fnmatch
import os
import re
import sys

CHECKED_DOCS = ["docs/ARCHITECTURE.md"]
OUTSIDE = ["DESIGN" + ".md", "DESIGN" + " §"]  # split so that this file does not name them
EXTENSIONS = "hpp|cpp|cu|cuh|h|c|md|py|cmake|json|ini|txt|toml|sh"
PATH = re.compile(r"(?<![\w./<>-])([\w.<>-]+(?:/[\w.<>-]+)*/?)")
SKIP_DIRS = {".git", "__pycache__"}


def tree(root):
    """Every file and folder under root, as paths relative to it ('/' separated; folders end in '/')."""
    paths = []
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not (prefix == "" and d.startswith("build")))
        paths += [prefix + d + "/" for d in dirs]
        paths += [prefix + f for f in sorted(files)]
    return paths


def named_paths(text, tops):
    """The words of text that look like paths: with a file extension, a trailing slash, or a first
    folder of the tree's root (so that prose such as PyTorch/fp64 or 0/1/2 is not taken for one)."""
    found = []
    for m in PATH.finditer(text):
        word = m.group(1).rstrip(".")
        if "/" not in word and not word.startswith(".") and re.search(r"\.(%s)$" % EXTENSIONS, word) is None:
            continue
        if word.startswith(".") and "/" not in word and len(word) > 1:
            found.append(word)  # dotfiles: .clang-format, .git-blame-ignore-revs
        elif re.search(r"\.(%s)$" % EXTENSIONS, word) or word.endswith("/") or word.split("/")[0] in tops:
            found.append(word)
    return found


def exists(word, paths, names):
    pattern = re.sub(r"<[^>]*>", "*", word)
    if "/" not in pattern.rstrip("/"):  # a file's or a folder's name alone
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)
    if not pattern.endswith("/") and any(p.endswith(("/" + pattern + "/")) or p == pattern + "/" for p in paths):
        return True  # a folder named without its trailing slash
    return any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, "*/" + pattern) for p in paths)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    paths = tree(root)
    names = {p.rstrip("/").rsplit("/", 1)[-1] + ("/" if p.endswith("/") else "") for p in paths}
    names |= {n.rstrip("/") for n in names}
    tops = {p.split("/")[0] for p in paths}
    errors = []
    for doc in CHECKED_DOCS:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                for word in named_paths(line, tops):
                    if not exists(word, paths, names):
                        errors.append(f"{doc}:{lineno}: names {word}, which is not in the tree")
    for rel in paths:
        if rel.endswith("/"):
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary files name nothing
        for lineno, line in enumerate(text.splitlines(), 1):
            for bad in OUTSIDE:
                if bad in line:
                    errors.append(f"{rel}:{lineno}: cites {bad.strip()}, a file outside this repository")
    for e in errors:
        print("check_doc_paths: " + e)
    if errors:
        print(f"check_doc_paths: {len(errors)} problem(s); name paths as they are in the tree")
        return 1
    print(f"check_doc_paths: every path of {', '.join(CHECKED_DOCS)} exists; no file cites outside notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
