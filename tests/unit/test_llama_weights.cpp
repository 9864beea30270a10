// The Hugging Face Llama / Qwen3 naming (core/io/llama_weights.hpp): import of export is the
// identity on the flat buffer (memcmp) for grouped-query, QK-norm, untied and biased models; the
// HF tensors have Llama's names and shapes, q_proj's heads in Llama's grouping (checked element by
// element against the rule), config.json names the architecture; bad files and non-Llama models
// get one error naming the file, tensor or key.
#include <doctest/doctest.h>

#include <cstring>
#include <map>

#include "integration/test_cli_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/llama_weights.hpp"
#include "samebits/core/io/safetensors.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"

namespace {

using namespace sb;
using sbt::TempDir;

GPTConfig llama_tiny(int n_kv_head, bool qk_norm, bool tied, bool bias) {
  GPTConfig c;
  c.vocab = 37, c.seq_len = 8, c.n_layer = 2, c.n_head = 6, c.n_embd = 24;
  c.norm = NormKind::rmsnorm, c.mlp = MlpKind::swiglu, c.ffn_dim = 40, c.pos = PosKind::rope;
  c.n_kv_head = n_kv_head, c.qk_norm = qk_norm, c.tied_head = tied, c.bias = bias;
  return c;
}

// A flat buffer with a distinct value in every element of every tensor (gains and biases too), zero gaps.
std::vector<float> seeded_flat(const GPTConfig& cfg) {
  auto be = make_cpu_backend();
  const GPT model(cfg, 1, *be);
  std::vector<float> w(model.flat_size(), 0.0f);
  for (const ParamView& p : model.params())
    for (size_t i = 0; i < p.numel; ++i) w[p.offset + i] = float(p.offset + i) * 0.5f + 1.0f;
  return w;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("Llama weights: import of export is the identity; names, shapes and the query heads' grouping") {
  TempDir dir;
  struct Variant {
    int kv;
    bool qk_norm, tied, bias;
  };
  for (const Variant v : {Variant{2, false, true, false}, Variant{3, true, false, false},
                          Variant{0, false, false, true}, Variant{1, true, true, false}}) {
    const GPTConfig cfg = llama_tiny(v.kv, v.qk_norm, v.tied, v.bias);
    CAPTURE(v.kv);
    CAPTURE(v.qk_norm);
    REQUIRE(io::hf_naming(cfg) == io::WeightsNaming::hf_llama);
    const std::vector<float> flat = seeded_flat(cfg);
    const auto tensors = io::gpt_tensors(cfg, flat, io::WeightsNaming::hf_llama);
    std::map<std::string, const io::SafeTensor*> by;
    for (const io::SafeTensor& t : tensors) by[t.name] = &t;
    const int64_t C = 24, hd = 4, G = cfg.kv_heads(), Q = 6 / G;
    REQUIRE(by.count("model.layers.1.self_attn.q_proj.weight"));
    CHECK(by["model.layers.1.self_attn.q_proj.weight"]->shape == std::vector<int64_t>{6 * hd, C});
    CHECK(by["model.layers.1.self_attn.k_proj.weight"]->shape == std::vector<int64_t>{G * hd, C});
    CHECK(by["model.layers.0.mlp.gate_proj.weight"]->shape == std::vector<int64_t>{40, C});
    CHECK(by["model.layers.0.mlp.down_proj.weight"]->shape == std::vector<int64_t>{C, 40});
    CHECK(by.count("lm_head.weight") == size_t(!v.tied));
    CHECK(by.count("model.layers.0.self_attn.q_norm.weight") == size_t(v.qk_norm));
    CHECK(by.count("model.layers.0.self_attn.q_proj.bias") == size_t(v.bias));
    CHECK(by.count("model.layers.0.mlp.up_proj.bias") == size_t(v.bias));
    // HF query head h' = g·Q + j is samebits head j·G + g: row h'·hd + i of q_proj, column of o_proj.
    const ParamView& qkv = *find_param(gpt_param_layout(cfg), "h.1.attn.qkv.w");
    const ParamView& proj = *find_param(gpt_param_layout(cfg), "h.1.attn.proj.w");
    bool rows_ok = true, cols_ok = true;
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t i = 0; i < hd; ++i)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t ours = ((h % Q) * G + h / Q) * hd + i;
          rows_ok = rows_ok && by["model.layers.1.self_attn.q_proj.weight"]->data[size_t((h * hd + i) * C + c)] ==
                                   flat[qkv.offset + size_t(ours * C + c)];
          cols_ok = cols_ok && by["model.layers.1.self_attn.o_proj.weight"]->data[size_t(c * C + h * hd + i)] ==
                                   flat[proj.offset + size_t(c * C + ours)];
        }
    CHECK(rows_ok);
    CHECK(cols_ok);
    const std::string path = dir / ("l" + std::to_string(v.kv) + ".safetensors");
    io::write_safetensors(path, tensors);
    const std::vector<float> back = io::read_gpt_weights(path, cfg);
    REQUIRE(back.size() == flat.size());
    CHECK(std::memcmp(back.data(), flat.data(), flat.size() * sizeof(float)) == 0);
    const std::string json = io::hf_config_json(cfg);
    CHECK(has(json, v.qk_norm ? "\"Qwen3ForCausalLM\"" : "\"LlamaForCausalLM\""));
    CHECK(has(json, "\"num_key_value_heads\": " + std::to_string(G)));
    CHECK(has(json, std::string("\"tie_word_embeddings\": ") + (v.tied ? "true" : "false")));
  }
}

TEST_CASE("Llama weights: a tied lm_head equal to the embedding is accepted; bad files and models named") {
  TempDir dir;
  const GPTConfig cfg = llama_tiny(2, false, true, false);
  const std::vector<float> flat = seeded_flat(cfg);
  auto tensors = io::gpt_tensors(cfg, flat, io::WeightsNaming::hf_llama);
  io::SafeTensor head = tensors.front();  // model.embed_tokens.weight
  head.name = "lm_head.weight";
  tensors.push_back(head);
  const std::string tied = dir / "tied.safetensors";
  io::write_safetensors(tied, tensors);
  const std::vector<float> back = io::read_gpt_weights(tied, cfg);
  CHECK(std::memcmp(back.data(), flat.data(), flat.size() * sizeof(float)) == 0);

  tensors.back().data[3] += 1.0f;
  const std::string differs = dir / "differs.safetensors";
  io::write_safetensors(differs, tensors);
  CHECK(has(sbt::error_of([&] { io::read_gpt_weights(differs, cfg); }), "'lm_head.weight' differs from the token"));

  tensors.pop_back();
  io::SafeTensor& k_proj = tensors[3];  // (2·4, 24): k_proj of layer 0
  REQUIRE(k_proj.name == "model.layers.0.self_attn.k_proj.weight");
  k_proj.shape = {k_proj.shape[1], k_proj.shape[0]};
  const std::string shape = dir / "shape.safetensors";
  io::write_safetensors(shape, tensors);
  const std::string e = sbt::error_of([&] { io::read_gpt_weights(shape, cfg); });
  CHECK(has(e, shape));
  CHECK(has(e, "'model.layers.0.self_attn.k_proj.weight' has shape [24, 8] but this model"));

  tensors.erase(tensors.begin() + 3);
  const std::string missing = dir / "missing.safetensors";
  io::write_safetensors(missing, tensors);
  CHECK(has(sbt::error_of([&] { io::read_gpt_weights(missing, cfg); }), "has no tensor 'model.layers.0."));

  GPTConfig gpt2 = cfg;
  gpt2.norm = NormKind::layernorm, gpt2.mlp = MlpKind::gelu;
  CHECK(has(sbt::error_of([&] { io::read_gpt_weights(tied, gpt2); }), "model.norm=layernorm (Llama has RMSNorm)"));
  CHECK(io::hf_naming(gpt2) == io::WeightsNaming::hf_gpt2);
  CHECK(has(io::gpt2_mismatch(cfg), "model.n_kv_head"));
  GPTConfig qwen_bias = llama_tiny(2, true, true, true);
  CHECK(has(io::llama_mismatch(qwen_bias), "Qwen3's MLP has no biases"));
}
