// The tensor-parallel GPT layout (tp_layout.hpp): which block of each tensor a rank holds, and the
// copies between a full tensor and a shard. Index arithmetic only: no value is changed. The
// config's rule (validate_tp) sits below, in base/gpt_shape.cpp, where the config is checked.
#include "samebits/core/model/tp_layout.hpp"

#include <algorithm>
#include <string>

#include "samebits/core/pipe_group.hpp"
#include "samebits/det/block_wire.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// An expert's tensor of an MoE block: h.L.moe.<s|e><n>.<fc|proj>.<w|b>.
bool is_expert(const std::string& name) {
  const size_t at = name.find(".moe.");
  return at != std::string::npos && name.compare(at + 5, 6, "router") != 0;
}

TpSplit even(int64_t outer, int64_t whole, int64_t inner, int size) {
  return {true, outer, whole / size, inner, whole};
}

// The split of tensor p over `size` ranks (C = n_embd, V = vocab; the MLP's F = cfg.ffn() in
// cfg.fc_blocks() blocks of fc's rows: SwiGLU's gate and up halves split alike; every expert of an
// MoE block as the MLP with its Fe = cfg.expert_ffn(), the router whole). The attention's
// rows (qkv) and columns (proj) are blocks of G = kv_heads() heads, n_head/G + 2 and n_head/G of
// them (gpt_shape.hpp): each block splits alike, so a rank holds G/size key/value heads and the
// query heads that use them (three blocks of C and one of C under multi-head attention).
TpSplit split_of(const ParamView& p, const GPTConfig& cfg, int size) {
  if (size == 1) return {};
  const int64_t C = cfg.n_embd, V = cfg.vocab, F = cfg.ffn();
  const int64_t group = int64_t{cfg.kv_heads()} * cfg.head_dim(), q_blocks = cfg.n_head / cfg.kv_heads();
  if (ends_with(p.name, ".attn.qkv.w")) return even(q_blocks + 2, group, C, size);
  if (ends_with(p.name, ".attn.qkv.b")) return even(q_blocks + 2, group, 1, size);
  if (ends_with(p.name, ".attn.proj.w")) return even(C * q_blocks, group, 1, size);
  if (ends_with(p.name, ".mlp.fc.w")) return even(cfg.fc_blocks(), F, C, size);
  if (ends_with(p.name, ".mlp.fc.b")) return even(cfg.fc_blocks(), F, 1, size);
  if (ends_with(p.name, ".mlp.proj.w")) return even(C, F, 1, size);
  if (is_expert(p.name)) {
    const int64_t Fe = cfg.expert_ffn();
    if (ends_with(p.name, ".fc.w")) return even(cfg.fc_blocks(), Fe, C, size);
    if (ends_with(p.name, ".fc.b")) return even(cfg.fc_blocks(), Fe, 1, size);
    if (ends_with(p.name, ".proj.w")) return even(C, Fe, 1, size);
  }
  if (p.name == "wte" || p.name == "lm_head.w") return {true, 1, ceil_div(V, size), C, V};
  return {};
}

Shape local_shape(const ParamView& p, const TpSplit& s, int rank) {
  if (!s.sharded) return p.shape;
  Shape shape = p.shape;
  // The split dimension: the rows of qkv.w / fc.w / wte / lm_head.w and of the biases, the
  // columns of the projections.
  const bool columns = ends_with(p.name, ".attn.proj.w") || ends_with(p.name, ".mlp.proj.w") ||
                       (is_expert(p.name) && ends_with(p.name, ".proj.w"));
  int64_t& split = shape[columns ? 1 : 0];  // (its outer blocks ×) extent
  split = split / s.extent * s.rows(rank);
  return shape;
}

}  // namespace

TpLayout gpt_tp_layout(const GPTConfig& cfg, int size, int rank, int stages, int stage, ExpertShard ep) {
  validate_tp(cfg, size);
  SB_CHECK(rank >= 0 && rank < size, "tensor-parallel rank ", rank, " outside [0, ", size, ")");
  TpLayout t;
  t.size = size;
  t.rank = rank;
  constexpr size_t kSegment = size_t{det::kWireSegment} * det::kWireBlock;
  const auto next = [](size_t offset, size_t numel, size_t align) {
    return (offset + numel + align - 1) / align * align;
  };
  const bool split_experts = ep.size > 1;
  std::vector<ParamView> held;  // this rank's tensors in flat order: the shared ones, then its experts
  for (const ParamView& p : gpt_param_layout(cfg))
    if ((stages == 1 || stage_holds(cfg, stages, stage, p.name)) && !(split_experts && routed_expert_of(p.name) >= 0))
      held.push_back(p);
  const size_t shared = held.size();
  for (const ParamView& p : gpt_param_layout(cfg))
    if (split_experts && routed_expert_of(p.name) >= 0 && expert_shard_holds(cfg, ep, p.name) &&
        (stages == 1 || stage_holds(cfg, stages, stage, p.name)))
      held.push_back(p);
  size_t offset = 0, full_offset = 0;
  for (size_t i = 0; i < held.size(); ++i) {
    const ParamView& p = held[i];
    const TpSplit s = split_of(p, cfg, size);
    if (i == shared && i > 0) offset = next(offset, 0, kSegment);  // the routed experts' first segment
    ParamView f = p;                                               // one process: gpt_param_layout's offsets
    if (stages > 1 || split_experts) f.offset = full_offset;
    full_offset = next(full_offset, f.numel, kParamAlign);
    ParamView q = p;
    q.shape = local_shape(p, s, rank);
    q.numel = static_cast<size_t>(shape_numel(q.shape));
    q.offset = offset;
    const bool tied_copy = stages > 1 && cfg.tied_head && p.name == "wte";
    offset = next(offset, q.numel, tied_copy ? kSegment : kParamAlign);
    SB_CHECK(!s.sharded || s.numel(rank) == q.numel, "tensor-parallel split of ", p.name, " holds ", s.numel(rank),
             " elements, its shard ", q.numel);
    t.full.push_back(std::move(f));
    t.local.push_back(std::move(q));
    t.splits.push_back(s);
  }
  t.local_flat = offset;
  return t;
}

// Block o of rank r: rows(r)·inner elements at full[(o·extent + first(r))·inner] and at
// shard[o·rows(r)·inner].
void tp_take_shard(const TpSplit& s, int r, const float* full, float* shard) {
  if (!s.sharded) SB_FAIL("tp_take_shard of a replicated tensor");
  const size_t block = size_t(s.rows(r) * s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* from = full + size_t(o * s.extent + s.first(r)) * size_t(s.inner);
    std::copy(from, from + block, shard + size_t(o) * block);
  }
}

void tp_place_shard(const TpSplit& s, int r, const float* shard, float* full) {
  if (!s.sharded) SB_FAIL("tp_place_shard of a replicated tensor");
  const size_t block = size_t(s.rows(r) * s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* from = shard + size_t(o) * block;
    std::copy(from, from + block, full + size_t(o * s.extent + s.first(r)) * size_t(s.inner));
  }
}

}  // namespace sb
