// llama_weights.hpp: the samebits ↔ Hugging Face Llama / Qwen3 name map. Every HF tensor is a
// selection of one samebits tensor's rows, its columns optionally renumbered: hf[r][c] =
// ours[rows[r]][cols[c]] (a vector as one column), so export gathers and import scatters the same
// map and each samebits element is one HF element.
#include "samebits/core/io/llama_weights.hpp"

#include "samebits/core/io/gpt_weights.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {
namespace {

struct Piece {
  std::string name;            // the HF name
  std::vector<int64_t> rows;   // samebits rows, in HF row order
  std::vector<int64_t> cols;   // samebits columns in HF column order; empty: a vector (one column)
  std::vector<int64_t> shape;  // HF shape
};

std::vector<int64_t> range(int64_t first, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// The samebits indices of `heads` heads of hd values in Llama's head order (HF head h' = g·Q + j
// is samebits head j·G + g, Q = n_head / G) — for the query heads; identity for G = n_head.
std::vector<int64_t> query_heads(const GPTConfig& cfg, int64_t first) {
  const int NH = cfg.n_head, G = cfg.kv_heads(), Q = NH / G, hd = cfg.head_dim();
  std::vector<int64_t> v;
  for (int h = 0; h < NH; ++h) {
    const int ours = (h % Q) * G + h / Q;
    for (int i = 0; i < hd; ++i) v.push_back(first + int64_t{ours} * hd + i);
  }
  return v;
}

Piece rows_piece(std::string name, std::vector<int64_t> rows, int64_t cols) {
  Piece p{std::move(name), std::move(rows), {}, {}};
  p.shape = {int64_t(p.rows.size())};
  if (cols > 0) p.cols = range(0, cols), p.shape.push_back(cols);
  return p;
}

// The HF pieces of samebits tensor `t`.
std::vector<Piece> pieces(const GPTConfig& cfg, const ParamView& t) {
  const int64_t C = cfg.n_embd, F = cfg.ffn(), hd = cfg.head_dim();
  const int64_t q = int64_t{cfg.n_head} * hd, kv = int64_t{cfg.kv_heads()} * hd;
  const bool matrix = t.shape.size() == 2;
  const int64_t cols = matrix ? t.shape[1] : 0;
  if (t.name == "wte") return {rows_piece("model.embed_tokens.weight", range(0, t.shape[0]), cols)};
  if (t.name == "lnf.w") return {rows_piece("model.norm.weight", range(0, C), 0)};
  if (t.name == "lm_head.w") return {rows_piece("lm_head.weight", range(0, t.shape[0]), cols)};
  const size_t dot = t.name.find('.', 2);
  SB_CHECK(t.name.rfind("h.", 0) == 0 && dot != std::string::npos, "tensor ", t.name,
           " has no Hugging Face Llama name");
  const std::string layer = "model.layers." + t.name.substr(2, dot - 2) + ".", part = t.name.substr(dot + 1);
  const std::string kind = matrix ? "weight" : "bias";
  if (part == "ln1.w") return {rows_piece(layer + "input_layernorm.weight", range(0, C), 0)};
  if (part == "ln2.w") return {rows_piece(layer + "post_attention_layernorm.weight", range(0, C), 0)};
  if (part == "attn.q_norm.w") return {rows_piece(layer + "self_attn.q_norm.weight", range(0, hd), 0)};
  if (part == "attn.k_norm.w") return {rows_piece(layer + "self_attn.k_norm.weight", range(0, hd), 0)};
  if (part == "attn.qkv.w" || part == "attn.qkv.b")
    return {rows_piece(layer + "self_attn.q_proj." + kind, query_heads(cfg, 0), cols),
            rows_piece(layer + "self_attn.k_proj." + kind, range(q, kv), cols),
            rows_piece(layer + "self_attn.v_proj." + kind, range(q + kv, kv), cols)};
  if (part == "attn.proj.w") {
    Piece p = rows_piece(layer + "self_attn.o_proj.weight", range(0, C), C);
    p.cols = query_heads(cfg, 0);
    return {p};
  }
  if (part == "attn.proj.b") return {rows_piece(layer + "self_attn.o_proj.bias", range(0, C), 0)};
  if (part == "mlp.fc.w" || part == "mlp.fc.b")
    return {rows_piece(layer + "mlp.gate_proj." + kind, range(0, F), cols),
            rows_piece(layer + "mlp.up_proj." + kind, range(F, F), cols)};
  if (part == "mlp.proj.w" || part == "mlp.proj.b")
    return {rows_piece(layer + "mlp.down_proj." + kind, range(0, C), cols)};
  SB_FAIL("tensor ", t.name, " has no Hugging Face Llama name");
}

// Element (r, c) of the piece in the samebits tensor t (row-major).
size_t source(const ParamView& t, const Piece& p, size_t r, size_t c) {
  const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
  return size_t(p.rows[r] * cols + (p.cols.empty() ? 0 : p.cols[c]));
}

std::string model_text(const GPTConfig& cfg) {
  return "model.vocab=" + std::to_string(cfg.vocab) + " n_layer=" + std::to_string(cfg.n_layer) +
         " n_embd=" + std::to_string(cfg.n_embd) + " n_head=" + std::to_string(cfg.n_head) +
         " n_kv_head=" + std::to_string(cfg.kv_heads()) + " ffn_dim=" + std::to_string(cfg.ffn());
}

size_t flat_size(const std::vector<ParamView>& layout) {
  size_t n = 0;
  for (const ParamView& p : layout) n = std::max(n, p.offset + (p.numel + kParamAlign - 1) / kParamAlign * kParamAlign);
  return n;
}

}  // namespace

std::string llama_mismatch(const GPTConfig& cfg) {
  std::string why;
  if (cfg.norm != NormKind::rmsnorm) why += "model.norm=layernorm (Llama has RMSNorm); ";
  if (cfg.mlp != MlpKind::swiglu) why += "model.mlp=gelu (Llama's MLP is SwiGLU); ";
  if (cfg.pos != PosKind::rope) why += "model.pos=learned (Llama has rotary positions); ";
  if (cfg.qk_norm && cfg.bias) why += "model.bias=true with model.qk_norm (Qwen3's MLP has no biases); ";
  if (cfg.moe_experts > 0) why += "model.moe_experts (LlamaForCausalLM is dense); ";
  if (!why.empty()) why.resize(why.size() - 2);
  return why;
}

std::vector<SafeTensor> llama_tensors(const GPTConfig& cfg, std::span<const float> flat) {
  const std::string why = llama_mismatch(cfg);
  SB_CHECK(why.empty(), "the model is not Llama-shaped: ", why, "; export it with --format safetensors");
  std::vector<SafeTensor> out;
  for (const ParamView& t : gpt_param_layout(cfg)) {
    SB_CHECK(t.offset + t.numel <= flat.size(), "tensor ", t.name, " lies outside the parameter buffer of ",
             flat.size(), " values");
    const float* src = flat.data() + t.offset;
    for (const Piece& p : pieces(cfg, t)) {
      SafeTensor s{p.name, p.shape, {}};
      const size_t ncols = p.cols.empty() ? 1 : p.cols.size();
      s.data.resize(p.rows.size() * ncols);
      for (size_t r = 0; r < p.rows.size(); ++r)
        for (size_t c = 0; c < ncols; ++c) s.data[r * ncols + c] = src[source(t, p, r, c)];
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string hf_llama_config_json(const GPTConfig& cfg) {
  const std::string why = llama_mismatch(cfg);
  SB_CHECK(why.empty(), "the model is not Llama-shaped: ", why, "; export it with --format safetensors");
  const auto n = [](int64_t v) { return std::to_string(v); };
  char theta[32];
  std::snprintf(theta, sizeof theta, "%.17g", cfg.rope_theta);
  const bool qwen = cfg.qk_norm;
  std::string s = std::string("{\n  \"architectures\": [\"") + (qwen ? "Qwen3ForCausalLM" : "LlamaForCausalLM") +
                  "\"],\n  \"model_type\": \"" + (qwen ? "qwen3" : "llama") + "\",\n";
  s += "  \"vocab_size\": " + n(cfg.vocab) + ",\n  \"hidden_size\": " + n(cfg.n_embd) +
       ",\n  \"intermediate_size\": " + n(cfg.ffn()) + ",\n  \"num_hidden_layers\": " + n(cfg.n_layer) +
       ",\n  \"num_attention_heads\": " + n(cfg.n_head) + ",\n  \"num_key_value_heads\": " + n(cfg.kv_heads()) +
       ",\n  \"head_dim\": " + n(cfg.head_dim()) + ",\n  \"max_position_embeddings\": " + n(cfg.seq_len) + ",\n";
  s += "  \"hidden_act\": \"silu\",\n  \"rms_norm_eps\": 1e-05,\n  \"rope_theta\": " + std::string(theta) +
       ",\n  \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": " + theta + "},\n";
  s += std::string("  \"attention_bias\": ") + (cfg.bias ? "true" : "false") + ",\n";
  if (!qwen) s += std::string("  \"mlp_bias\": ") + (cfg.bias ? "true" : "false") + ",\n";
  if (qwen) s += "  \"use_sliding_window\": false,\n";
  s += "  \"attention_dropout\": 0.0,\n  \"initializer_range\": 0.02,\n";
  s += std::string("  \"tie_word_embeddings\": ") + (cfg.tied_head ? "true" : "false") +
       ",\n  \"use_cache\": true,\n  \"torch_dtype\": \"float32\"\n}\n";
  return s;
}

bool has_llama_names(const SafetensorsHeader& header) {
  return std::any_of(header.tensors.begin(), header.tensors.end(),
                     [](const SafeTensorEntry& e) { return e.name == "model.embed_tokens.weight"; });
}

std::vector<float> read_llama_weights(const std::string& file, const SafetensorsHeader& header, const GPTConfig& cfg) {
  const std::string why = llama_mismatch(cfg);
  SB_CHECK(why.empty(), file,
           ": holds Hugging Face Llama names (model.embed_tokens.weight), but the model is not "
           "Llama-shaped: ",
           why);
  std::map<std::string, const SafeTensorEntry*> by_name;
  for (const SafeTensorEntry& e : header.tensors) by_name.emplace(e.name, &e);
  const std::vector<ParamView> layout = gpt_param_layout(cfg);
  std::vector<float> flat(flat_size(layout), 0.0f);
  for (const ParamView& t : layout) {
    float* dst = flat.data() + t.offset;
    for (const Piece& p : pieces(cfg, t)) {
      const auto it = by_name.find(p.name);
      SB_CHECK(it != by_name.end(), file, ": has no tensor '", p.name, "', which this model (", model_text(cfg),
               ") needs with shape ", shape_text(p.shape));
      const std::vector<float> values = read_weight(file, header, *it->second, p.shape, model_text(cfg));
      const size_t ncols = p.cols.empty() ? 1 : p.cols.size();
      for (size_t i = 0; i < values.size(); ++i) dst[source(t, p, i / ncols, i % ncols)] = values[i];
      by_name.erase(it);
    }
  }
  if (const auto head = by_name.find("lm_head.weight"); head != by_name.end() && cfg.tied_head) {
    const ParamView& wte = layout.front();
    const std::vector<int64_t> want{wte.shape[0], wte.shape[1]};
    SB_CHECK(head->second->shape == want && head->second->dtype == "F32", file, ": tensor 'lm_head.weight' has shape ",
             shape_text(head->second->shape), " but the tied head needs ", shape_text(want), " in F32");
    const std::vector<float> values = read_safetensor(file, header, *head->second);
    SB_CHECK(std::memcmp(values.data(), flat.data() + wte.offset, wte.numel * sizeof(float)) == 0, file,
             ": tensor 'lm_head.weight' differs from the token embedding, but this model's head is tied to it "
             "(model.tied_head=true)");
    by_name.erase(head);
  }
  if (!by_name.empty()) {
    SB_FAIL(file, ": tensor '", escape_untrusted(by_name.begin()->second->name), "' is not a weight of this model (",
            model_text(cfg), ")", by_name.size() > 1 ? " (and " + std::to_string(by_name.size() - 1) + " more)" : "");
  }
  return flat;
}

}  // namespace sb::io
