// The tensor-parallel GPT layout (tp_layout.hpp): which block of each tensor a rank holds, and the
// copies between a full tensor and a shard. Index arithmetic only: no value is changed.
#include "samebits/core/tp_layout.hpp"

#include <algorithm>
#include <string>

#include "samebits/det/error.hpp"

namespace sb {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// The split of tensor p over `size` ranks (C = n_embd).
TpSplit split_of(const ParamView& p, int64_t C, int size) {
  if (size == 1) return {};
  if (ends_with(p.name, ".attn.qkv.w")) return {true, 3, C / size, C};
  if (ends_with(p.name, ".attn.qkv.b")) return {true, 3, C / size, 1};
  if (ends_with(p.name, ".attn.proj.w")) return {true, C, C / size, 1};
  if (ends_with(p.name, ".mlp.fc.w")) return {true, 1, 4 * C / size, C};
  if (ends_with(p.name, ".mlp.fc.b")) return {true, 1, 4 * C / size, 1};
  if (ends_with(p.name, ".mlp.proj.w")) return {true, C, 4 * C / size, 1};
  return {};
}

Shape local_shape(const ParamView& p, const TpSplit& s, int size) {
  if (!s.sharded) return p.shape;
  Shape shape = p.shape;
  // The split dimension: the rows of qkv.w / fc.w and of the biases, the columns of the projections.
  const bool columns = ends_with(p.name, ".attn.proj.w") || ends_with(p.name, ".mlp.proj.w");
  shape[columns ? 1 : 0] /= size;
  return shape;
}

}  // namespace

void validate_tp(const GPTConfig& cfg, int64_t tp) {
  SB_CHECK(tp >= 1 && tp <= 4096, "config parallel.tp=", tp, " must be between 1 and 4096");
  SB_CHECK(cfg.n_head % tp == 0, "config model.n_head=", cfg.n_head, " is not divisible by parallel.tp=", tp,
           ": tensor parallelism splits the attention heads; choose parallel.tp dividing n_head");
  SB_CHECK((4 * int64_t{cfg.n_embd}) % tp == 0, "config 4·model.n_embd=", 4 * int64_t{cfg.n_embd},
           " is not divisible by parallel.tp=", tp, ": tensor parallelism splits the MLP's 4C dimension");
}

TpLayout gpt_tp_layout(const GPTConfig& cfg, int size, int rank) {
  validate_tp(cfg, size);
  SB_CHECK(rank >= 0 && rank < size, "tensor-parallel rank ", rank, " outside [0, ", size, ")");
  TpLayout t;
  t.size = size;
  t.rank = rank;
  t.full = gpt_param_layout(cfg);
  size_t offset = 0;
  for (const ParamView& p : t.full) {
    const TpSplit s = split_of(p, cfg.n_embd, size);
    ParamView q = p;
    q.shape = local_shape(p, s, size);
    q.numel = static_cast<size_t>(shape_numel(q.shape));
    q.offset = offset;
    offset += (q.numel + kParamAlign - 1) / kParamAlign * kParamAlign;
    SB_CHECK(!s.sharded || size_t(s.outer * s.part * s.inner) == q.numel, "tensor-parallel split of ", p.name,
             " holds ", s.outer * s.part * s.inner, " elements, its shard ", q.numel);
    t.local.push_back(std::move(q));
    t.splits.push_back(s);
  }
  t.local_flat = offset;
  return t;
}

void tp_take_shard(const TpSplit& s, int size, int r, const float* full, float* shard) {
  if (!s.sharded) SB_FAIL("tp_take_shard of a replicated tensor");
  const size_t pi = size_t(s.part * s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* from = full + (size_t(o) * size_t(size) + size_t(r)) * pi;
    std::copy(from, from + pi, shard + size_t(o) * pi);
  }
}

void tp_place_shard(const TpSplit& s, int size, int r, const float* shard, float* full) {
  if (!s.sharded) SB_FAIL("tp_place_shard of a replicated tensor");
  const size_t pi = size_t(s.part * s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* from = shard + size_t(o) * pi;
    std::copy(from, from + pi, full + (size_t(o) * size_t(size) + size_t(r)) * pi);
  }
}

}  // namespace sb
