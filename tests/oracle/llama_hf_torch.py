"""The PyTorch side of llama_hf_oracle.py, run by the venv's python (torch and transformers from
PyPI):

  llama_hf_torch.py export CASES.json  for each case: the exported directory's loss over the
                                       validation windows against the recorded one; then a model
                                       of the same config with seeded random weights saved to the
                                       case's import_dir
  llama_hf_torch.py import CASES.json  for each case: the loss of import_dir's model over the
                                       one-batch training file against samebits' first step, and
                                       back_dir's tensors (samebits' export of its step 0) equal to
                                       import_dir's bit for bit

Losses in float64: relative error <= 1e-5. Prints one line per check; exit 1 when one fails.
"""
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.utils import logging as hf_logging

TOLERANCE = 1e-5


def windows(path, T, count):
    data = open(path, "rb").read()
    return torch.tensor([list(data[w * T:w * T + T + 1]) for w in range(count)], dtype=torch.long)


def mean_loss(model, tokens):
    with torch.no_grad():
        logits = model(tokens[:, :-1]).logits.double()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1)).item()


def check(label, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}")
    return ok


def load(directory):
    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float64, attn_implementation="eager").eval()


def main():
    mode, spec = sys.argv[1], sys.argv[2]
    hf_logging.disable_progress_bar()
    print(f"torch {torch.__version__}, transformers {__import__('transformers').__version__}")
    cases = json.load(open(spec))
    torch.manual_seed(0)
    good = True
    for c in cases:
        if mode == "export":
            model = load(c["export_dir"])
            got = mean_loss(model, windows(c["val"], c["T"], c["windows"]))
            rel = abs(got - c["val_loss"]) / abs(c["val_loss"])
            good &= check(f"{c['name']} export: {type(model).__name__} validation loss", rel <= TOLERANCE,
                          f"transformers {got:.9f}, samebits {c['val_loss']:.9f}, relative error {rel:.2e}")
            fresh = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(c["export_dir"]), dtype=torch.float32)
            with torch.no_grad():  # Llama's init leaves the norms at 1: give them values too
                for name, p in fresh.named_parameters():
                    if name.endswith("norm.weight"):
                        p.uniform_(0.5, 1.5)
            fresh.save_pretrained(c["import_dir"], safe_serialization=True)
        else:
            model = load(c["import_dir"])
            got = mean_loss(model, windows(c["batch"], c["T"], 4))
            rel = abs(got - c["first_loss"]) / abs(c["first_loss"])
            good &= check(f"{c['name']} import: first step's loss from transformers' weights", rel <= TOLERANCE,
                          f"transformers {got:.9f}, samebits {c['first_loss']:.9f}, relative error {rel:.2e}")
            ours, theirs = load_file(c["back_dir"] + "/model.safetensors"), load_file(c["import_dir"] + "/model.safetensors")
            theirs = {k: v for k, v in theirs.items() if not (k == "lm_head.weight" and k not in ours)}
            same = ours.keys() == theirs.keys() and all(torch.equal(ours[k].view(torch.int32), theirs[k].view(torch.int32))
                                                        for k in ours)
            good &= check(f"{c['name']} import: samebits' export of step 0 equals transformers' tensors", same,
                          f"{len(ours)} tensors, bitwise")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
