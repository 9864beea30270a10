// Tensor-parallel layout of the GPT (docs/DISTRIBUTED.md §10), Megatron-style: attention heads and
// the MLP's hidden dimension split across a group of `size` ranks, the token embedding and the LM head
// split by vocabulary rows; position embedding, norms and the row-parallel biases replicated. Each
// sharded tensor is viewed as (outer, extent, inner) with extent = size·part, and rank r holds the
// block [:, r·part : (r+1)·part, :] (outer-major, contiguous in its local tensor):
//   attn.qkv.w (3C, C) = (3, C, C): each of q, k, v split by heads; attn.qkv.b (3, C, 1)
//   attn.proj.w (C, C) = (C, C, 1): columns (its k) split by heads
//   mlp.fc.w (F, C) = (1, F, C) (SwiGLU: (2F, C) = (2, F, C), gate and up split alike);
//   mlp.fc.b likewise (·, F, 1); mlp.proj.w (C, F) = (C, F, 1)  (F = ffn(), 4C by default)
//   wte, lm_head.w (V, C) = (1, V, C): vocabulary rows, part = ⌈V / size⌉, the last rank's block
//   cut at V (V need not divide: GPT-2's 50257 is prime to every group size but 1)
// Pure functions of (config, size, rank): every rank derives every rank's layout.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "samebits/core/gpt_shape.hpp"

namespace sb {

struct TpSplit {
  bool sharded = false;                    // false: every rank holds the whole tensor
  int64_t outer = 1, part = 0, inner = 1;  // sharded: full = (outer, extent, inner)
  int64_t extent = 0;                      // size·part, or less (then outer = 1): the last block is cut
  // Rows [first(r), first(r) + rows(r)) of the split dimension are rank r's.
  int64_t first(int r) const { return int64_t(r) * part; }
  int64_t rows(int r) const { return std::max<int64_t>(0, std::min(part, extent - first(r))); }
  size_t numel(int r) const { return size_t(outer * rows(r) * inner); }  // rank r's shard
};

struct TpLayout {
  int size = 1, rank = 0;
  std::vector<ParamView> full;   // gpt_param_layout(cfg)
  std::vector<ParamView> local;  // the same names, this rank's shapes and flat offsets
  std::vector<TpSplit> splits;   // (tensors)
  size_t local_flat = 0;         // length of this rank's flat buffers
};

// The layout of rank `rank` of `size` (validate_tp's refusals first). On pipeline stage `stage`
// of `stages` > 1, the tensors the stage holds (stage_holds) only, in the same order: `full` their
// whole shapes at offsets of a flat buffer of them alone, `local` this rank's shards; a tied wte
// (first and last stage) is padded to a whole wire segment (det::kWireSegment · det::kWireBlock
// elements), so that the two stages' accumulators agree on the segments that hold it. Under expert
// parallelism (ep.size > 1) the tensors rank ep.rank holds (expert_shard_holds): every other
// tensor first, in model order, then its routed experts' in model order, the first of them at a
// whole wire segment, so that the expert-parallel group's accumulators agree on the segments of
// the tensors they share (its exact all-reduce of that prefix).
TpLayout gpt_tp_layout(const GPTConfig& cfg, int size, int rank, int stages = 1, int stage = 0, ExpertShard ep = {});

// Index of element j of rank r's shard within the full tensor (j < s.numel(r)).
inline size_t tp_full_index(const TpSplit& s, int r, size_t j) {
  if (!s.sharded) return j;
  const size_t block = size_t(s.rows(r) * s.inner);
  const size_t o = j / block, rest = j % block;
  return (o * size_t(s.extent) + size_t(s.first(r))) * size_t(s.inner) + rest;
}
// shard (outer·part·inner) ← rank r's block of full; full ← shard placed as rank r's block.
void tp_take_shard(const TpSplit& s, int r, const float* full, float* shard);
void tp_place_shard(const TpSplit& s, int r, const float* shard, float* full);

}  // namespace sb
