// The GPT's weights in Hugging Face's Llama naming (docs/EXPORT.md): LlamaForCausalLM, or
// Qwen3ForCausalLM under model.qk_norm (its q_norm and k_norm). model.embed_tokens.weight,
// model.layers.N.self_attn.{q,k,v,o}_proj.weight, mlp.{gate,up,down}_proj.weight,
// input_layernorm / post_attention_layernorm / model.norm weights, lm_head.weight when untied; all
// stored (out, in) as samebits does. attn.qkv.w splits into q_proj, k_proj and v_proj rows and
// mlp.fc.w into gate_proj and up_proj rows; the query heads are renumbered from samebits' grouping
// (query head j·G + g uses key/value head g, gpt_shape.hpp) to Llama's (query head g·n_head/G + j),
// in q_proj's rows and o_proj's columns. Contract: values are moved, never changed, so import ∘
// export is the identity on the flat parameter buffer.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/io/safetensors.hpp"

namespace sb::io {

// Why `cfg` is not Llama-shaped ("" when it is): RMSNorm, a SwiGLU MLP and rotary positions (and,
// under qk_norm, Qwen3's MLP without biases).
std::string llama_mismatch(const GPTConfig& cfg);

// The tensors of `flat` (the layout of cfg) under Llama's names, in layout order.
std::vector<SafeTensor> llama_tensors(const GPTConfig& cfg, std::span<const float> flat);

// config.json of the Hugging Face directory: LlamaConfig (Qwen3Config under qk_norm) with
// rms_norm_eps 1e-5, rope_theta, num_key_value_heads, head_dim, attention_bias and mlp_bias =
// model.bias, max_position_embeddings = seq_len, tie_word_embeddings = model.tied_head.
std::string hf_llama_config_json(const GPTConfig& cfg);

// True when the header's names are Llama's (it has model.embed_tokens.weight).
bool has_llama_names(const SafetensorsHeader& header);

// The flat parameter buffer of cfg from a file in Llama's naming: every tensor there with its
// shape and finite F32 values, no other tensor but an lm_head.weight equal to a tied embedding.
std::vector<float> read_llama_weights(const std::string& file, const SafetensorsHeader& header, const GPTConfig& cfg);

}  // namespace sb::io
