"""samebits.torch.deterministic on models nobody wrote for samebits: Hugging Face transformers'
GPT2LMHeadModel and LlamaForCausalLM (RoPE, SwiGLU, grouped-query attention, RMSNorm; small
configurations built in samebits.torch.example, no download), trained 20 steps with torch.optim.AdamW,
IDENTICAL under `samebits diff` on 1, 2 and 4 threads, on PyTorch's scalar, AVX2 and AVX-512 paths,
with 1 or 4 leaves per micro-batch and on 1, 2 and 3 gloo ranks; without the mode the SIMD pair,
the thread pair (GPT-2) and torch's data-parallel mean differ. Runs
where transformers is installed: run_venv.py's --transformers venv (Debian's torch, in the default
suite) and its --torch venv (the newest torch, labelled slow)."""
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_torch_deterministic import programs  # noqa: E402


@pytest.mark.parametrize("model", ["gpt2", "llama"])
def test_transformers_model_same_bits_on_threads_leaves_and_ranks(cli, tmp_path, model):
    programs(cli, tmp_path, model)
