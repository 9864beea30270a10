"""The transformers peer of bench/peers_llama.py: LlamaForCausalLM at experiments/configs/llama_124m.ini's
shape (12 x 768, 12 query heads, 4 key/value heads, SwiGLU 2048, RMSNorm, rotary positions θ 10000, no biases, tied
head, vocabulary 50257), trained with torch.optim.AdamW on random tokens, timed per step. Run by the venv's python
(transformers from PyPI). A step is zero_grad, forward with labels (transformers' shifted cross-entropy), backward,
the global-norm clip at 1.0 and the optimizer step; the batches are drawn before the clock starts. Prints one JSON
line: wall and process-CPU seconds per step, the losses, torch's and transformers' versions and torch's BLAS.

  peers_llama_torch.py --seq 256 --batch 8 --threads 1 --steps 4
"""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
for name, default in [("seq", 256), ("batch", 8), ("threads", 1), ("steps", 4)]:
    p.add_argument(f"--{name}", type=int, default=default)
a = p.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(a.threads)  # before torch loads its BLAS and OpenMP
import torch  # noqa: E402
import transformers  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(1)
config = transformers.LlamaConfig(vocab_size=50257, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                                  num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=a.seq,
                                  rms_norm_eps=1e-5, rope_theta=10000.0, attention_bias=False, mlp_bias=False,
                                  tie_word_embeddings=True)
model = transformers.LlamaForCausalLM(config).float()
model.config._attn_implementation = "eager"
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
batches = [torch.randint(0, 50257, (a.batch, a.seq + 1)) for _ in range(a.steps)]
wall, cpu, losses = [], [], []
for x in batches:
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=x[:, :-1], labels=x[:, :-1]).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    wall.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
    losses.append(loss.item())
blas = [f for f in torch.__config__.show().replace(",", " ").split() if f.startswith("BLAS_INFO=")]
print(json.dumps({"wall": wall, "cpu": cpu, "losses": losses, "threads": torch.get_num_threads(),
                  "torch": torch.__version__, "transformers": transformers.__version__,
                  "mkl": torch.backends.mkl.is_available(), "blas": blas[0][len("BLAS_INFO="):] if blas else "unknown"}))
