// gpt_weights.hpp: the samebits ↔ Hugging Face GPT-2 name map, the Conv1D transposes, and the
// checked import of a safetensors file into the flat parameter buffer.
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/llama_weights.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {
namespace {

// GPT2LMHeadModel's name of a samebits tensor (without "transformer."), and whether its values are
// stored transposed: HF's Conv1D keeps a linear layer's weight as [in, out], samebits as (out, in).
struct HfName {
  std::string name;
  bool transposed = false;
};

HfName hf_name(const std::string& name) {
  static const std::map<std::string, HfName> kTop = {
      {"wte", {"wte.weight"}}, {"wpe", {"wpe.weight"}}, {"lnf.w", {"ln_f.weight"}}, {"lnf.b", {"ln_f.bias"}}};
  static const std::map<std::string, HfName> kBlock = {{"ln1.w", {"ln_1.weight"}},
                                                       {"ln1.b", {"ln_1.bias"}},
                                                       {"attn.qkv.w", {"attn.c_attn.weight", true}},
                                                       {"attn.qkv.b", {"attn.c_attn.bias"}},
                                                       {"attn.proj.w", {"attn.c_proj.weight", true}},
                                                       {"attn.proj.b", {"attn.c_proj.bias"}},
                                                       {"ln2.w", {"ln_2.weight"}},
                                                       {"ln2.b", {"ln_2.bias"}},
                                                       {"mlp.fc.w", {"mlp.c_fc.weight", true}},
                                                       {"mlp.fc.b", {"mlp.c_fc.bias"}},
                                                       {"mlp.proj.w", {"mlp.c_proj.weight", true}},
                                                       {"mlp.proj.b", {"mlp.c_proj.bias"}}};
  if (const auto it = kTop.find(name); it != kTop.end()) return it->second;
  if (name.rfind("h.", 0) == 0) {
    const std::size_t dot = name.find('.', 2);
    if (dot != std::string::npos) {
      if (const auto it = kBlock.find(name.substr(dot + 1)); it != kBlock.end()) {
        return {name.substr(0, dot + 1) + it->second.name, it->second.transposed};
      }
    }
  }
  SB_FAIL("tensor ", name, " has no Hugging Face GPT-2 name (the model is not GPT-2-shaped)");
}

// The file's shape of a tensor under a naming: rank 1 as [n], rank 2 as (rows, cols) or, for a
// transposed HF weight, [cols, rows].
std::vector<int64_t> file_shape(const ParamView& p, bool transposed) {
  if (p.shape.size() == 1) return {p.shape[0]};
  return transposed ? std::vector<int64_t>{p.shape[1], p.shape[0]} : std::vector<int64_t>{p.shape[0], p.shape[1]};
}

// dst (cols, rows) ← transpose of src (rows, cols).
void transpose(const float* src, float* dst, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

// HF's causal-mask buffers that older GPT-2 checkpoints carry beside the weights: not parameters.
bool is_hf_buffer(const std::string& name) {
  const auto ends = [&](const std::string& tail) {
    return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name.rfind("h.", 0) == 0 && (ends(".attn.bias") || ends(".attn.masked_bias"));
}

std::string model_text(const GPTConfig& cfg) {
  return "model.vocab=" + std::to_string(cfg.vocab) + " seq_len=" + std::to_string(cfg.seq_len) +
         " n_layer=" + std::to_string(cfg.n_layer) + " n_embd=" + std::to_string(cfg.n_embd);
}

}  // namespace

std::string gpt2_mismatch(const GPTConfig& cfg) {
  std::string why;
  if (cfg.norm != NormKind::layernorm) why += "model.norm=rmsnorm (GPT-2 has LayerNorm); ";
  if (!cfg.bias) why += "model.bias=false (GPT-2 has biases); ";
  if (!cfg.tied_head) why += "model.tied_head=false (GPT-2's head is the token embedding); ";
  if (cfg.mlp != MlpKind::gelu) why += "model.mlp=swiglu (GPT-2's MLP is GELU); ";
  if (cfg.pos != PosKind::learned) why += "model.pos=rope (GPT-2 learns its positions); ";
  if (cfg.ffn() != 4 * int64_t{cfg.n_embd}) why += "model.ffn_dim other than 4·model.n_embd (GPT-2's); ";
  if (cfg.gqa()) why += "model.n_kv_head (GPT-2's heads each have their keys and values); ";
  if (cfg.qk_norm) why += "model.qk_norm (GPT-2 does not norm its heads); ";
  if (cfg.moe_experts > 0) why += "model.moe_experts (GPT-2 is dense); ";
  if (!why.empty()) why.resize(why.size() - 2);
  return why;
}

WeightsNaming hf_naming(const GPTConfig& cfg) {
  return llama_mismatch(cfg).empty() ? WeightsNaming::hf_llama : WeightsNaming::hf_gpt2;
}

std::string hf_config_json(const GPTConfig& cfg) {
  return hf_naming(cfg) == WeightsNaming::hf_llama ? hf_llama_config_json(cfg) : hf_gpt2_config_json(cfg);
}

std::vector<SafeTensor> gpt_tensors(const GPTConfig& cfg, std::span<const float> flat, WeightsNaming naming) {
  if (naming == WeightsNaming::hf_llama) return llama_tensors(cfg, flat);
  const std::vector<ParamView> layout = gpt_param_layout(cfg);
  if (naming == WeightsNaming::hf_gpt2) {
    const std::string why = gpt2_mismatch(cfg);
    SB_CHECK(why.empty(), "the model is not GPT-2-shaped: ", why, "; export it with --format safetensors");
  }
  std::vector<SafeTensor> out;
  for (const ParamView& p : layout) {
    SB_CHECK(p.offset + p.numel <= flat.size(), "tensor ", p.name, " lies outside the parameter buffer of ",
             flat.size(), " values");
    const float* src = flat.data() + p.offset;
    SafeTensor t;
    const HfName hf = naming == WeightsNaming::hf_gpt2 ? hf_name(p.name) : HfName{p.name};
    t.name = naming == WeightsNaming::hf_gpt2 ? "transformer." + hf.name : p.name;
    t.shape = file_shape(p, hf.transposed);
    t.data.resize(p.numel);
    if (hf.transposed) transpose(src, t.data.data(), p.shape[0], p.shape[1]);
    else std::memcpy(t.data.data(), src, p.numel * sizeof(float));
    out.push_back(std::move(t));
  }
  return out;
}

std::string hf_gpt2_config_json(const GPTConfig& cfg) {
  const std::string why = gpt2_mismatch(cfg);
  SB_CHECK(why.empty(), "the model is not GPT-2-shaped: ", why, "; export it with --format safetensors");
  const auto n = [](int v) { return std::to_string(v); };
  std::string s = "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n";
  s += "  \"vocab_size\": " + n(cfg.vocab) + ",\n  \"n_positions\": " + n(cfg.seq_len) +
       ",\n  \"n_ctx\": " + n(cfg.seq_len) + ",\n  \"n_embd\": " + n(cfg.n_embd) +
       ",\n  \"n_layer\": " + n(cfg.n_layer) + ",\n  \"n_head\": " + n(cfg.n_head) + ",\n  \"n_inner\": null,\n";
  s += "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
       "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
       "  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
       "  \"reorder_and_upcast_attn\": false,\n  \"initializer_range\": 0.02,\n"
       "  \"tie_word_embeddings\": true,\n  \"use_cache\": true,\n  \"torch_dtype\": \"float32\"";
  if (cfg.vocab == 50257) s += ",\n  \"bos_token_id\": 50256,\n  \"eos_token_id\": 50256";  // GPT-2's <|endoftext|>
  return s + "\n}\n";
}

std::string init_weights_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return (std::filesystem::path(path) / "model.safetensors").string();
  return path;
}

std::string file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SB_CHECK(in.good(), "cannot open '", path, "' for reading");
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  SB_CHECK(state && XXH3_64bits_reset(state.get()) == XXH_OK, "XXH3 state allocation failed");
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) XXH3_64bits_update(state.get(), buf.data(), std::size_t(in.gcount()));
  }
  SB_CHECK(in.eof(), "reading '", path, "' failed");
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, uint64_t(XXH3_64bits_digest(state.get())));
  return text;
}

std::vector<float> read_weight(const std::string& file, const SafetensorsHeader& header, const SafeTensorEntry& e,
                               const std::vector<int64_t>& want, const std::string& model) {
  SB_CHECK(e.dtype == "F32", file, ": tensor '", escape_untrusted(e.name), "' has dtype ", escape_untrusted(e.dtype),
           "; samebits reads F32 only (convert it, e.g. torch: t.float())");
  SB_CHECK(e.shape == want, file, ": tensor '", escape_untrusted(e.name), "' has shape ", shape_text(e.shape),
           " but this model (", model, ") needs ", shape_text(want));
  std::vector<float> values = read_safetensor(file, header, e);
  for (std::size_t i = 0; i < values.size(); ++i) {
    SB_CHECK(std::isfinite(values[i]), file, ": tensor '", escape_untrusted(e.name), "' holds a non-finite value (",
             values[i], ") at element ", i);
  }
  return values;
}

std::vector<float> read_gpt_weights(const std::string& file, const GPTConfig& cfg) {
  const SafetensorsHeader header = read_safetensors_header(file);
  if (has_llama_names(header)) return read_llama_weights(file, header, cfg);
  bool samebits_names = false;
  for (const SafeTensorEntry& e : header.tensors) samebits_names = samebits_names || e.name == "wte";
  const WeightsNaming naming = samebits_names ? WeightsNaming::samebits : WeightsNaming::hf_gpt2;
  if (naming == WeightsNaming::hf_gpt2) {
    const std::string why = gpt2_mismatch(cfg);
    SB_CHECK(why.empty(), file,
             ": holds Hugging Face GPT-2 names (it has no tensor 'wte'), but the model is not "
             "GPT-2-shaped: ",
             why);
  }
  // The file's entries by name (HF names without their optional "transformer." prefix).
  std::map<std::string, const SafeTensorEntry*> by_name;
  const SafeTensorEntry* lm_head = nullptr;
  for (const SafeTensorEntry& e : header.tensors) {
    std::string key = e.name;
    if (naming == WeightsNaming::hf_gpt2) {
      if (key.rfind("transformer.", 0) == 0) key = key.substr(12);
      if (key == "lm_head.weight") {
        lm_head = &e;
        continue;
      }
      if (is_hf_buffer(key)) continue;
    }
    SB_CHECK(by_name.emplace(key, &e).second, file, ": tensor '", escape_untrusted(e.name),
             "' appears twice (with and without the transformer. prefix)");
  }
  const std::vector<ParamView> layout = gpt_param_layout(cfg);
  std::size_t flat_size = 0;
  for (const ParamView& p : layout)
    flat_size = std::max(flat_size, p.offset + (p.numel + kParamAlign - 1) / kParamAlign * kParamAlign);
  std::vector<float> flat(flat_size, 0.0f);
  for (const ParamView& p : layout) {
    const HfName hf = naming == WeightsNaming::hf_gpt2 ? hf_name(p.name) : HfName{p.name};
    const std::string shown = naming == WeightsNaming::hf_gpt2 ? "transformer." + hf.name : p.name;
    const auto it = by_name.find(hf.name);
    SB_CHECK(it != by_name.end(), file, ": has no tensor '", shown, "', which this model (", model_text(cfg),
             ") needs with shape ", shape_text(file_shape(p, hf.transposed)));
    const std::vector<float> values =
        read_weight(file, header, *it->second, file_shape(p, hf.transposed), model_text(cfg));
    float* dst = flat.data() + p.offset;
    if (hf.transposed) transpose(values.data(), dst, p.shape[1], p.shape[0]);
    else std::memcpy(dst, values.data(), values.size() * sizeof(float));
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    SB_FAIL(file, ": tensor '", escape_untrusted(by_name.begin()->second->name), "' is not a weight of this model (",
            model_text(cfg), ")", by_name.size() > 1 ? " (and " + std::to_string(by_name.size() - 1) + " more)" : "");
  }
  if (lm_head != nullptr) {
    const ParamView& wte = layout.front();
    const std::vector<int64_t> want{wte.shape[0], wte.shape[1]};
    SB_CHECK(lm_head->shape == want, file, ": tensor '", escape_untrusted(lm_head->name), "' has shape ",
             shape_text(lm_head->shape), " but the tied head needs ", shape_text(want));
    const std::vector<float> head = read_safetensor(file, header, *lm_head);
    SB_CHECK(std::memcmp(head.data(), flat.data() + wte.offset, wte.numel * sizeof(float)) == 0, file, ": tensor '",
             escape_untrusted(lm_head->name), "' differs from the token embedding, but GPT-2's head is tied to it");
  }
  return flat;
}

std::vector<float> load_initial_weights(const Config& config) {
  if (config.train.init.empty()) return {};
  const std::string file = init_weights_file(config.train.init);
  const std::string digest = file_digest(file);
  SB_CHECK(digest == config.train.init_digest, "config train.init='", escape_untrusted(config.train.init),
           "': ", escape_untrusted(file), " has content hash ", digest,
           " but the experiment was defined with "
           "train.init_digest=",
           config.train.init_digest, " (the file changed since, or another file is at its path)");
  return read_gpt_weights(file, config.model);
}

}  // namespace sb::io
