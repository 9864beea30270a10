"""test_ops_callers: every formula of core/base/include/samebits/core/ops/ is called by both backends.

A formula (an SB_HD, inline or constexpr function of ops/*.hpp) counts as called by a backend when
core/cpu (or core/cuda) names it outside comments, or names a formula whose body calls it. A formula
that one backend calls and the other does not means that backend restates the arithmetic; one that
no part of core calls is dead or a reference: both fail unless listed below with the reason. An
entry that no longer applies fails too. Run: python3 check_ops_callers.py SOURCE_DIR.
"""
import glob
import os
import re
import sys

OPS = "core/base/include/samebits/core/ops"
NOT_FORMULAS = {"gemm_problem.hpp"}  # a description of a product, no arithmetic

# The definitions the tests hold the backends' kernels to; no backend calls them as written.
REFERENCES = {
    "canonical_dot_rounded": "rule 1's chain; the tiled GEMM kernels are tested against it",
    "softmax_denominator": "rule 2's row denominator, a test reference (xent_row_forward)",
    "xent_row_forward": "the unsplit row the fused and the vocabulary-parallel kernels must equal",
}
# Formulas one backend calls and the other computes in another form with the same bits.
ONE_SIDED = {
    "row_max": "cpu; the max is exact in any order: CUDA folds ops::exact_max across a warp",
    "row_max_continue": "cpu; the max is exact in any order: CUDA folds ops::exact_max across a warp",
    "line_code": "cpu; the exact GEMM's k-split scale codes (CUDA has no k-split)",
    "code_exponent": "cpu; the exact GEMM's k-split scale codes (CUDA has no k-split)",
    "code_nonfinite": "cpu; the exact GEMM's k-split scale codes (CUDA has no k-split)",
    "int16_digits": "cpu; its kernels' int16 digits (CUDA's int8 tensor cores take int8_digits)",
    "bf16_pair_dot": "cuda; the CPU runs the same chain on packed pairs (bf16_pair_operand, bf16_pair_fma)",
}


def strip_comments(text):
    return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def sources(root, folder):
    pattern = os.path.join(root, folder, "**", "*")
    return [f for f in glob.glob(pattern, recursive=True) if re.search(r"\.(cpp|hpp|cu|cuh)$", f)]


def formulas(root):
    bodies = {}
    for path in sorted(glob.glob(os.path.join(root, OPS, "*.hpp"))):
        if os.path.basename(path) in NOT_FORMULAS:
            continue
        text = strip_comments(open(path, encoding="utf-8").read())
        heads = list(re.finditer(r"^(?:SB_HD|inline|constexpr)[^\n;{=]*?\b(\w+)\(", text, re.M))
        for i, head in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            bodies[head.group(1)] = text[head.end() : end]
    return bodies


def called(bodies, text):
    named = {n for n in bodies if re.search(r"\b" + n + r"\s*[(<]", text)}
    todo = list(named)
    while todo:
        for n in called_directly(bodies, bodies[todo.pop()]) - named:
            named.add(n)
            todo.append(n)
    return named


def called_directly(bodies, text):
    return {n for n in bodies if re.search(r"\b" + n + r"\s*[(<]", text)}


def main(root):
    bodies = formulas(root)
    parts = {"cpu": ["core/cpu"], "cuda": ["core/cuda"]}
    parts["rest"] = ["core/base", "core/model", "core/optim", "core/parallel", "core/train"]
    used = {}
    for part, folders in parts.items():
        files = [f for d in folders for f in sources(root, d) if OPS not in f]
        used[part] = called(bodies, " ".join(strip_comments(open(f, encoding="utf-8").read()) for f in files))
    failures = []
    for name in sorted(bodies):
        cpu, cuda, rest = (name in used[p] for p in ("cpu", "cuda", "rest"))
        if cpu != cuda and name not in ONE_SIDED:
            side = "core/cpu" if cpu else "core/cuda"
            failures.append(f"ops::{name} is called by {side} only: the other backend restates its arithmetic")
        if not (cpu or cuda or rest) and name not in REFERENCES:
            failures.append(f"ops::{name} has no caller in core: call it from both backends, or list it as a reference")
    for name in ONE_SIDED:
        if name not in bodies or (name in used["cpu"]) == (name in used["cuda"]):
            failures.append(f"ONE_SIDED lists ops::{name}, which is not one-sided: remove the entry")
    for name in REFERENCES:
        if name not in bodies or any(name in used[p] for p in used):
            failures.append(f"REFERENCES lists ops::{name}, which core calls (or which is gone): remove the entry")
    for line in failures:
        print(line)
    print(f"{len(bodies)} formulas, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
