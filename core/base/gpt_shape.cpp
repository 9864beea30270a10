// The GPT's shape (gpt_shape.hpp): its config's validation (alone and under parallel.tp) and the
// tensor table, in flat-buffer order with GPT-2 initialisation. Pure functions of the config: every layer and every
// rank builds the same table.
#include "samebits/core/gpt_shape.hpp"

#include "samebits/det/error.hpp"
#include "samebits/det/hd.hpp"

namespace sb {

void GPTConfig::validate() const {
  SB_CHECK(vocab >= 2, "model.vocab=", vocab, " must be at least 2");
  SB_CHECK(seq_len >= 1, "model.seq_len=", seq_len, " must be at least 1");
  SB_CHECK(n_layer >= 1, "model.n_layer=", n_layer, " must be at least 1");
  SB_CHECK(n_head >= 1, "model.n_head=", n_head, " must be at least 1");
  SB_CHECK(n_embd >= 1 && n_embd % n_head == 0, "model.n_embd=", n_embd,
           " is not a positive multiple of model.n_head=", n_head, "; choose n_embd = k·n_head");
  SB_CHECK(ffn_dim >= 0, "model.ffn_dim=", ffn_dim, " must be positive, or 0 for 4·model.n_embd");
  if (pos == PosKind::rope) {
    SB_CHECK((n_embd / n_head) % 2 == 0,
             "model.pos=rope rotates pairs of a head's values: the head size model.n_embd/"
             "model.n_head=",
             n_embd / n_head, " must be even");
    SB_CHECK(rope_theta > 1.0 && rope_theta < 1e30, "model.rope_theta=", rope_theta, " must lie in (1, 1e30)");
  }
  if (moe_experts != 0) {
    SB_CHECK(moe_experts >= 1 && moe_experts <= 4096, "model.moe_experts=", moe_experts,
             " must lie in [1, 4096], or be 0 for dense blocks");
    SB_CHECK(moe_top_k >= 1 && moe_top_k <= moe_experts, "model.moe_top_k=", moe_top_k,
             " must lie in [1, model.moe_experts=", moe_experts, "]");
    SB_CHECK(moe_shared_experts >= 0 && moe_shared_experts <= 64, "model.moe_shared_experts=", moe_shared_experts,
             " must lie in [0, 64]");
    SB_CHECK(moe_every >= 1 && moe_every <= n_layer, "model.moe_every=", moe_every,
             " must lie in [1, model.n_layer=", n_layer, "] (an MoE block every moe_every blocks)");
    SB_CHECK(moe_ffn_dim >= 0, "model.moe_ffn_dim=", moe_ffn_dim, " must be positive, or 0 for model.ffn_dim's width");
    SB_CHECK(moe_aux_loss >= 0.0 && moe_aux_loss < 1e6, "model.moe_aux_loss=", moe_aux_loss,
             " must be zero (off) or a positive coefficient such as 0.01");
    SB_CHECK(moe_capacity == 0.0 || (moe_capacity >= 0.01 && moe_capacity <= 1e6), "model.moe_capacity=", moe_capacity,
             " must be 0 (dropless) or a capacity factor such as 1.25");
    SB_CHECK(moe_bias_rate >= 0.0 && moe_bias_rate <= 1.0, "model.moe_bias_rate=", moe_bias_rate,
             " must lie in [0, 1] (DeepSeek-V3 uses 0.001); 0: no auxiliary-loss-free bias");
  }
  SB_CHECK(n_kv_head >= 0 && n_kv_head <= n_head && n_head % kv_heads() == 0, "model.n_kv_head=", n_kv_head,
           " must divide model.n_head=", n_head, " (grouped-query attention shares a key/value head among n_head/",
           "n_kv_head query heads), or be 0 for one per query head");
}

void validate_tp(const GPTConfig& cfg, int64_t tp) {
  SB_CHECK(tp >= 1 && tp <= 4096, "config parallel.tp=", tp, " must be between 1 and 4096");
  SB_CHECK(cfg.n_head % tp == 0, "config model.n_head=", cfg.n_head, " is not divisible by parallel.tp=", tp,
           ": tensor parallelism splits the attention heads; choose parallel.tp dividing n_head");
  SB_CHECK(cfg.moe_experts == 0 || cfg.expert_ffn() % tp == 0, "config model.moe_ffn_dim=", cfg.expert_ffn(),
           cfg.moe_ffn_dim == 0 ? " (the MLP's width)" : "", " is not divisible by parallel.tp=", tp,
           ": tensor parallelism splits every expert's hidden width as the MLP's");
  SB_CHECK(cfg.kv_heads() % tp == 0, "config model.n_kv_head=", cfg.kv_heads(), " is not divisible by parallel.tp=", tp,
           ": tensor parallelism gives each rank whole key/value heads with their query heads; choose parallel.tp "
           "dividing n_kv_head");
  SB_CHECK(cfg.ffn() % tp == 0, "config model.ffn_dim=", cfg.ffn(), cfg.ffn_dim == 0 ? " (4·model.n_embd)" : "",
           " is not divisible by parallel.tp=", tp, ": tensor parallelism splits the MLP's hidden width");
  const int64_t part = (cfg.vocab + tp - 1) / tp;  // rows a rank holds (tp_layout.hpp)
  SB_CHECK(cfg.vocab > (tp - 1) * part, "config model.vocab=", cfg.vocab, " leaves the last of parallel.tp=", tp,
           " ranks no vocabulary row (each holds ", part,
           "): tensor parallelism splits the embedding and the LM head by vocabulary rows");
}

std::string_view to_string(ParamKind k) {
  switch (k) {
    case ParamKind::embedding: return "embedding";
    case ParamKind::matrix: return "matrix";
    case ParamKind::head: return "head";
    case ParamKind::norm: return "norm";
    case ParamKind::bias: return "bias";
    case ParamKind::router: return "router";
  }
  SB_FAIL("unknown parameter kind ", static_cast<int>(k));
}

int routed_expert_of(const std::string& name) {
  const size_t at = name.find(".moe.e");
  if (name.rfind("h.", 0) != 0 || at == std::string::npos) return -1;
  size_t end = at + 6;
  int n = 0;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') n = n * 10 + (name[end++] - '0');
  return end > at + 6 && end < name.size() && name[end] == '.' ? n : -1;
}

bool expert_shard_holds(const GPTConfig& cfg, ExpertShard ep, const std::string& name) {
  const int e = routed_expert_of(name);
  return e < 0 || ep.size == 1 || (e >= ep.first(cfg) && e < ep.first(cfg) + ep.count(cfg));
}

std::string moe_expert_name(const GPTConfig& cfg, int x) {
  return x < cfg.moe_shared_experts ? "s" + std::to_string(x) : "e" + std::to_string(x - cfg.moe_shared_experts);
}

std::vector<ParamView> gpt_param_layout(const GPTConfig& cfg) {
  cfg.validate();
  const int64_t V = cfg.vocab, T = cfg.seq_len, C = cfg.n_embd, F = cfg.ffn();
  const float std_w = 0.02f;
  const float std_proj = 0.02f / det::sqrt_f32(static_cast<float>(2 * cfg.n_layer));
  const bool norm_bias = cfg.bias && cfg.norm == NormKind::layernorm;
  std::vector<ParamView> out;
  size_t offset = 0;
  auto add = [&](std::string name, Shape shape, ParamKind kind, float init_std, float init_value) {
    const size_t n = static_cast<size_t>(shape_numel(shape));
    out.push_back(ParamView{std::move(name), std::move(shape), offset, n, kind, init_std, init_value});
    offset += (n + kParamAlign - 1) / kParamAlign * kParamAlign;
  };
  add("wte", {V, C}, ParamKind::embedding, std_w, 0.0f);
  if (cfg.pos == PosKind::learned) add("wpe", {T, C}, ParamKind::embedding, std_w, 0.0f);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    add(h + "ln1.w", {C}, ParamKind::norm, 0.0f, 1.0f);
    if (norm_bias) add(h + "ln1.b", {C}, ParamKind::bias, 0.0f, 0.0f);
    add(h + "attn.qkv.w", {cfg.qkv_rows(), C}, ParamKind::matrix, std_w, 0.0f);
    if (cfg.bias) add(h + "attn.qkv.b", {cfg.qkv_rows()}, ParamKind::bias, 0.0f, 0.0f);
    if (cfg.qk_norm) {
      add(h + "attn.q_norm.w", {cfg.head_dim()}, ParamKind::norm, 0.0f, 1.0f);
      add(h + "attn.k_norm.w", {cfg.head_dim()}, ParamKind::norm, 0.0f, 1.0f);
    }
    add(h + "attn.proj.w", {C, C}, ParamKind::matrix, std_proj, 0.0f);
    if (cfg.bias) add(h + "attn.proj.b", {C}, ParamKind::bias, 0.0f, 0.0f);
    add(h + "ln2.w", {C}, ParamKind::norm, 0.0f, 1.0f);
    if (norm_bias) add(h + "ln2.b", {C}, ParamKind::bias, 0.0f, 0.0f);
    const auto mlp = [&](const std::string& at, int64_t width) {
      add(at + "fc.w", {cfg.fc_blocks() * width, C}, ParamKind::matrix, std_w, 0.0f);
      if (cfg.bias) add(at + "fc.b", {cfg.fc_blocks() * width}, ParamKind::bias, 0.0f, 0.0f);
      add(at + "proj.w", {C, width}, ParamKind::matrix, std_proj, 0.0f);
      if (cfg.bias) add(at + "proj.b", {C}, ParamKind::bias, 0.0f, 0.0f);
    };
    if (!cfg.moe_block(l)) {
      mlp(h + "mlp.", F);
    } else {
      add(h + "moe.router.w", {cfg.moe_experts, C}, ParamKind::router, std_w, 0.0f);
      for (int x = 0; x < cfg.moe_shared_experts + cfg.moe_experts; ++x)
        mlp(h + "moe." + moe_expert_name(cfg, x) + ".", cfg.expert_ffn());
    }
  }
  add("lnf.w", {C}, ParamKind::norm, 0.0f, 1.0f);
  if (norm_bias) add("lnf.b", {C}, ParamKind::bias, 0.0f, 0.0f);
  if (!cfg.tied_head) add("lm_head.w", {V, C}, ParamKind::head, std_w, 0.0f);
  return out;
}

const ParamView* find_param(const std::vector<ParamView>& layout, const std::string& name) {
  for (const ParamView& p : layout) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string param_names(const std::vector<ParamView>& layout) {
  std::string out;
  for (const ParamView& p : layout) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace sb
