"""One training run of a user's PyTorch program, for docs/TORCH.md's proofs, the tests
(python/tests/test_torch_deterministic*.py) and notebooks/torch_reproducible.ipynb (a process per
run, as a user runs it): a nanoGPT-style GPT (samebits.torch.nanogpt) or Hugging Face transformers'
GPT2LMHeadModel or LlamaForCausalLM (small configurations built here; no download), seeded random
token batches, torch.optim.AdamW and torch's clip_grad_norm_, recorded with samebits.torch.Recorder.

    python -m samebits.torch.example OUT.h5 --model nano|gpt2|llama --threads N --mode on|off
        [--steps S] [--rows R] [--leaves L --micro M] [--world W --rank R --store FILE] [--ddp]

--leaves L: samebits.torch.Leaves (leaf_size 1) over L rows a step, accumulated M rows a
micro-batch; without it one backward of the whole batch. --world W: gloo ranks sharing the leaves
(Leaves' exact all-reduce), or with --ddp torch's data-parallel mean (each rank's mean gradient
all-reduced in fp32). --mode on: the steps under samebits.torch.deterministic()."""
import argparse
import contextlib
import os
import subprocess
import sys

import torch
import torch.distributed as dist

VOCAB, SEQ = 512, 64


def build(name, width):
    """(model, loss of a batch (x, y)): the nanoGPT-style GPT, or transformers' GPT-2 or Llama."""
    torch.manual_seed(0)
    if name == "nano":
        from .nanogpt import GPT, GPTShape
        model = GPT(GPTShape(vocab=VOCAB, seq_len=SEQ, n_layer=2, n_head=4, n_embd=width))
        return model, lambda x, y: model(x, y)
    import transformers
    if name == "gpt2":
        config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=width, n_layer=2, n_head=4,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                                         eos_token_id=0)
        model = transformers.GPT2LMHeadModel(config)
    elif name == "llama":
        config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=width, intermediate_size=2 * width,
                                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                          max_position_embeddings=SEQ, bos_token_id=0, eos_token_id=0, pad_token_id=0)
        model = transformers.LlamaForCausalLM(config)
    else:
        raise SystemExit(f"samebits.torch.example: --model must be nano, gpt2 or llama, got {name!r}")
    # The loss of the next token at every position (the model shifts the labels by one).
    return model, lambda x, y: model(input_ids=x, labels=x).loss


def arguments():
    parser = argparse.ArgumentParser(prog="python -m samebits.torch.example")
    parser.add_argument("out", help="the run file to write (rank 0)")
    parser.add_argument("--model", default="nano", choices=["nano", "gpt2", "llama"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mode", default="on", choices=["on", "off"])
    parser.add_argument("--gemm", default="canonical", choices=["canonical", "exact"], help="deterministic(gemm=)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rows", type=int, default=4, help="rows of 64 tokens a step (without --leaves)")
    parser.add_argument("--leaves", type=int, default=0, help="samebits.torch.Leaves over this many rows a step")
    parser.add_argument("--micro", type=int, default=1, help="rows a micro-batch (with --leaves)")
    parser.add_argument("--world", type=int, default=1)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--store", default="", help="the gloo file rendezvous (--world > 1)")
    parser.add_argument("--ddp", action="store_true", help="torch's fp32 data-parallel mean instead of Leaves")
    parser.add_argument("--width", type=int, default=128)
    return parser.parse_args()


def run(out, *args, ranks=1, store=None, isa=None, samebits_isa=None):
    """`python -m samebits.torch.example OUT ARGS` on `ranks` gloo ranks (a file rendezvous at
    `store`), PyTorch's kernels on the SIMD path `isa` (ATEN_CPU_CAPABILITY) and samebits' per-ISA
    kernels on `samebits_isa` (SAMEBITS_ISA) when given; returns OUT (rank 0's run file). Raises
    RuntimeError with a rank's output when it fails."""
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    if isa:
        env["ATEN_CPU_CAPABILITY"] = isa
    if samebits_isa:
        env["SAMEBITS_ISA"] = samebits_isa
    extra = ["--world", str(ranks), "--store", store] if ranks > 1 else []
    procs = [subprocess.Popen([sys.executable, "-m", "samebits.torch.example", out, *args, *extra, "--rank", str(r)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(ranks)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, output in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"samebits.torch.example {out} {' '.join(args)}: exit {p.returncode}\n{output}")
    return out


def main():
    args = arguments()
    torch.set_num_threads(args.threads)
    from . import Leaves, Recorder, deterministic
    if args.world > 1:
        dist.init_process_group("gloo", init_method="file://" + args.store, rank=args.rank, world_size=args.world)
    mode = (lambda: deterministic(gemm=args.gemm)) if args.mode == "on" else contextlib.nullcontext
    # Built under the mode: its initialization (normal_, uniform_, Llama's rotary frequencies) on
    # samebits' math too, the same on every SIMD path.
    with mode():
        model, loss_of = build(args.model, args.width)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rows = args.leaves or args.rows
    leaves = Leaves(model.parameters(), leaf_size=1) if args.leaves and not args.ddp else None
    generator = torch.Generator().manual_seed(1)
    with mode(), Recorder(args.out, model, optimizer, experiment={"program": "example_" + args.model},
                          tokens_per_step=rows * SEQ, leaves=leaves) as recorder:
        for _ in range(args.steps):
            tokens = torch.randint(0, VOCAB, (rows, SEQ + 1), generator=generator)
            x, y = tokens[:, :-1], tokens[:, 1:]
            if leaves is not None:
                leaves.zero()
                for first in range(0, rows, args.micro):
                    part = slice(first, first + args.micro)
                    leaves.accumulate(lambda a, b: loss_of(a, b) * b.numel(), x[part], y[part])
                loss = leaves.reduce(y.numel())
            else:
                share = slice(rows * args.rank // args.world, rows * (args.rank + 1) // args.world)
                optimizer.zero_grad(set_to_none=True)
                loss = loss_of(x[share], y[share])
                loss.backward()
                if args.world > 1:
                    for p in model.parameters():
                        dist.all_reduce(p.grad)
                        p.grad /= args.world
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            recorder.step(loss)
    if args.world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
