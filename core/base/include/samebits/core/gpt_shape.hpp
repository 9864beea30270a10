// The GPT's shape, below every layer that needs it: its config ([model], docs/CONFIG.md) and the
// table of its named tensors inside the flat parameter buffer. Contract: the table is a pure
// function of the config, so every backend, layer and rank lays the parameters out the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/tensor.hpp"

namespace sb {

enum class NormKind { layernorm, rmsnorm };
// The blocks' MLP: GPT-2's GELU (fc → gelu → proj) or SwiGLU (fc gives the gate and the up halves;
// silu(gate)·up → proj: Llama's, ops/swiglu.hpp).
enum class MlpKind { gelu, swiglu };
// Positions: GPT-2's learned table (wpe) added to the token embedding, or rotary positions on q and
// k in every block (no wpe; ops/rope.hpp).
enum class PosKind { learned, rope };
// A Mixture-of-Experts block's router (ops/moe_router.hpp): softmax over the experts (GShard,
// Switch; a selected expert's gate is its probability) or a sigmoid per expert (DeepSeek-V3; the
// selected experts' scores normalised to sum 1).
enum class MoeRouter { softmax, sigmoid };

struct GPTConfig {
  int vocab = 256;
  int seq_len = 128;  // T: tokens per sequence; a leaf row holds seq_len + 1 tokens
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;  // C, a multiple of n_head
  NormKind norm = NormKind::layernorm;
  bool tied_head = true;  // lm_head.w is wte
  bool bias = true;       // biases of linear layers and LayerNorms (RMSNorm has none)
  MlpKind mlp = MlpKind::gelu;
  int ffn_dim = 0;  // F, the MLP's hidden width; 0: 4·n_embd
  PosKind pos = PosKind::learned;
  double rope_theta = 10000.0;  // rotary positions' base θ (rounded to fp32 where used)
  int n_kv_head = 0;            // key/value heads (grouped-query attention); 0: n_head
  bool qk_norm = false;         // RMSNorm on each q and k head before the rotation (Qwen3's)
  // Mixture-of-Experts (docs/CONTRACT.md): every moe_every-th block's MLP is moe_shared_experts
  // experts every token visits and moe_experts routed ones, moe_top_k of them a token's.
  int moe_experts = 0;  // 0: dense blocks only
  int moe_top_k = 2;
  int moe_shared_experts = 0;
  int moe_every = 1;    // blocks moe_every−1, 2·moe_every−1, … are MoE blocks
  int moe_ffn_dim = 0;  // an expert's hidden width; 0: ffn()
  MoeRouter moe_router = MoeRouter::softmax;
  double moe_aux_loss = 0.01;  // the Switch/GShard load-balancing loss's coefficient α (0: none)
  double moe_capacity = 0.0;   // capacity factor: an expert keeps ⌈factor·N·k/E⌉ tokens a leaf; 0: dropless
  // DeepSeek-V3's auxiliary-loss-free balancing: a per-expert bias added to the scores the top-k
  // compares, moved by ±moe_bias_rate after each step toward the mean load (0: none).
  double moe_bias_rate = 0.0;

  int64_t ffn() const { return ffn_dim > 0 ? ffn_dim : 4 * int64_t{n_embd}; }
  int head_dim() const { return n_embd / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // Rows of attn.qkv.w: the n_head query heads, then the key and the value heads (head_dim each).
  int64_t qkv_rows() const { return int64_t{n_head + 2 * kv_heads()} * head_dim(); }
  // The attention's own shape beyond multi-head: a key/value head shared by several q heads, or
  // normed q and k heads.
  bool gqa() const { return kv_heads() != n_head; }
  bool moe_block(int layer) const { return moe_experts > 0 && layer % moe_every == moe_every - 1; }
  int64_t expert_ffn() const { return moe_ffn_dim > 0 ? moe_ffn_dim : ffn(); }
  // Rows of mlp.fc.w: F, or the gate's F and the up projection's F under SwiGLU.
  int64_t fc_blocks() const { return mlp == MlpKind::swiglu ? 2 : 1; }

  // Throws sb::Error naming the bad field, its value and what to do.
  void validate() const;
};

// Throws sb::Error naming the key when cfg cannot be split over `tp` tensor-parallel ranks
// (parallel.tp < 1, model.n_head or the MLP's width F not divisible by it, model.vocab leaving a rank
// no vocabulary row): the config's side of model/tp_layout.hpp.
void validate_tp(const GPTConfig& cfg, int64_t tp);

// What a tensor is, for the optimizers (Muon takes `matrix`, AdamW the rest) and the statistics.
enum class ParamKind { embedding, matrix, head, norm, bias, router };
std::string_view to_string(ParamKind k);

// One named tensor inside the flat parameter (and gradient) buffer.
struct ParamView {
  std::string name;  // "wte", "h.0.attn.qkv.w", "lnf.w", ...
  Shape shape;       // e.g. (3C, C) for h.L.attn.qkv.w
  size_t offset;     // first element in the flat buffers; a multiple of kParamAlign
  size_t numel;
  ParamKind kind;
  float init_std;  // normal(0, init_std) at init; 0: constant init_value
  float init_value;
};

// Flat-buffer offsets are multiples of this many floats (64 bytes); the gaps hold zeros, in the
// parameters and in every gradient.
constexpr size_t kParamAlign = 16;

// The tensors of a config, in flat-buffer order:
//   wte (V, C) · wpe (T, C) (learned positions only) · per layer L: h.L.ln1.w (C) [h.L.ln1.b (C)] · h.L.attn.qkv.w (3C,
//   C) [h.L.attn.qkv.b (3C)] (grouped-query: (Q, C) with Q = qkv_rows()) · h.L.attn.q_norm.w (hd) · h.L.attn.k_norm.w
//   (hd) (qk_norm only) · h.L.attn.proj.w (C, C) [h.L.attn.proj.b (C)] · h.L.ln2.w [h.L.ln2.b] · h.L.mlp.fc.w (F,
//   C) [h.L.mlp.fc.b (F)] (SwiGLU: (2F, C), the gate's rows then the up
//     projection's) · h.L.mlp.proj.w (C, F) [h.L.mlp.proj.b (C)], F = ffn() (4C by default)
//   · lnf.w [lnf.b] · lm_head.w (V, C) when untied. A Mixture-of-Experts block has, instead of mlp.*,
//   h.L.moe.router.w (E, C) and per expert (shared ones s0, s1, …, then routed e0, e1, …)
//   h.L.moe.X.fc.w (blocks·Fe, C) [.fc.b] · h.L.moe.X.proj.w (C, Fe) [.proj.b], Fe = expert_ffn(). [..]: with bias
//   (norm biases: LayerNorm only).
// GPT-2 initialisation: weights normal(0, 0.02), the residual projections (attn.proj.w,
// mlp.proj.w) normal(0, 0.02/√(2·n_layer)); norm gains 1, biases 0.
std::vector<ParamView> gpt_param_layout(const GPTConfig& cfg);

// Expert x of an MoE block as its tensors name it: s0, s1, … (shared), then e0, e1, … (routed).
std::string moe_expert_name(const GPTConfig& cfg, int x);

// Expert parallelism (parallel.ep, docs/DISTRIBUTED.md §12): the routed experts of every MoE block
// split into `size` contiguous ranges, rank r holding experts [r·E/size, (r+1)·E/size). The
// router, the shared experts and every dense tensor are held by every rank.
struct ExpertShard {
  int size = 1, rank = 0;
  int first(const GPTConfig& cfg) const { return int(cfg.moe_experts / size * rank); }  // its first routed expert
  int count(const GPTConfig& cfg) const { return int(cfg.moe_experts / size); }
};
// The routed expert whose tensor is `name` (h.L.moe.eN.…): N; −1 for any other tensor.
int routed_expert_of(const std::string& name);
// Whether rank ep.rank holds tensor `name`.
bool expert_shard_holds(const GPTConfig& cfg, ExpertShard ep, const std::string& name);

// The tensor called `name` in `layout`, or null.
const ParamView* find_param(const std::vector<ParamView>& layout, const std::string& name);
// The tensors' names, comma-separated (for error messages that list the valid names).
std::string param_names(const std::vector<ParamView>& layout);

}  // namespace sb
