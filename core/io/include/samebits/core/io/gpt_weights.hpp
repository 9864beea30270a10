// The GPT's weights as safetensors (docs/EXPORT.md), in two namings: samebits' own (the tensor
// table's names and shapes: wte (V, C), h.0.attn.qkv.w (3C, C), …) and Hugging Face's
// GPT2LMHeadModel (transformer.wte.weight, transformer.h.0.attn.c_attn.weight stored [in, out]
// as HF's Conv1D, no lm_head.weight: the head is tied). Contract: export and import copy values
// bit for bit (a transpose moves values, it changes none), so import ∘ export is the identity on
// the flat parameter buffer. Importing checks every name and shape against the model config and
// refuses non-finite values, with one sb::Error naming the file and the tensor.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/io/safetensors.hpp"

namespace sb::io {

enum class WeightsNaming { samebits, hf_gpt2, hf_llama };

// The Hugging Face naming of cfg: Llama's (llama_weights.hpp) when it is Llama-shaped, else GPT-2's.
WeightsNaming hf_naming(const GPTConfig& cfg);

// config.json of the Hugging Face directory of cfg in its hf_naming.
std::string hf_config_json(const GPTConfig& cfg);

// Why `cfg` is not GPT-2-shaped ("" when it is): GPT2LMHeadModel has LayerNorm, biases and a tied
// head (its GELU is the tanh form samebits uses, its LayerNorm ε is samebits' 1e-5).
std::string gpt2_mismatch(const GPTConfig& cfg);

// The tensors of `flat` (flat_size, the layout of cfg) under `naming`, in layout order.
std::vector<SafeTensor> gpt_tensors(const GPTConfig& cfg, std::span<const float> flat, WeightsNaming naming);

// config.json of a Hugging Face GPT-2 directory for cfg (which must be GPT-2-shaped): vocab_size,
// n_positions = seq_len, n_embd, n_layer, n_head, activation_function gelu_new, layer_norm_epsilon
// 1e-5, dropout 0, tied embeddings.
std::string hf_gpt2_config_json(const GPTConfig& cfg);

// The weights file a train.init path names: the path itself, or DIR/model.safetensors when it
// is a directory (a Hugging Face model directory).
std::string init_weights_file(const std::string& path);

// XXH3-64 of the file's bytes as 16 lowercase hex digits: train.init's identity in the experiment.
std::string file_digest(const std::string& path);

// The values of tensor e of `file`, refused with one error naming the file and the tensor unless
// its dtype is F32, its shape `want` (the message names the model by `model`) and every value finite.
std::vector<float> read_weight(const std::string& file, const SafetensorsHeader& header, const SafeTensorEntry& e,
                               const std::vector<int64_t>& want, const std::string& model);

// The flat parameter buffer (flat_size, zero gaps) for cfg from a safetensors file in any naming
// (Llama's when it has model.embed_tokens.weight, read_llama_weights; samebits' when it has a
// tensor "wte"; else Hugging Face's GPT-2, with or without the "transformer." prefix). Every tensor of the model must
// be there with its shape and F32 values, all finite; other tensors are errors, except HF's attention-mask buffers
// (h.N.attn.bias, h.N.attn.masked_bias) and an lm_head.weight equal to the embedding.
std::vector<float> read_gpt_weights(const std::string& file, const GPTConfig& cfg);

// The initial weights a config names (train.init) for TrainerOptions::initial_weights: the file
// of init_weights_file(train.init), refused unless its content hash equals train.init_digest (the
// file changed since the experiment was defined, or another file is at its path), read by
// read_gpt_weights. Empty when train.init is empty.
std::vector<float> load_initial_weights(const Config& config);

}  // namespace sb::io
