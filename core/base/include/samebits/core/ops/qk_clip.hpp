// QK-clip's per-element formulas (MuonClip, Kimi Team 2025, "Kimi K2: Open Agentic
// Intelligence", arXiv:2507.20534 §2.1), host and device, one definition. The logit is the
// forward pass's own (ops::attention_score): fl32(canonical_dot(q_t, k_j)·scale). A max is
// taken over ordered keys, so it is one value in any order (±0 and NaN included). The backends
// (Backend::qk_max_keys, qk_clip_scale) only schedule these.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/core/ops/attention.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::ops {

// One attention logit of a head: q, k (hs) of the same head.
SB_HD float qk_logit(const float* q, const float* k, int hs, float scale) {
  return attention_score(canonical_dot(q, 1, k, 1, hs, 0.0f), scale);
}

// A key that orders floats as the number line (−0 below +0, every NaN above +Inf): the max of
// keys over any partition, in any order, is one key.
SB_HD int32_t logit_key(float x) {
  if (x != x) return INT32_MAX;
  const int32_t i = static_cast<int32_t>(det::bits_of(x));
  return i >= 0 ? i : i ^ INT32_MAX;
}
// The key of −Inf: no logit seen yet (every max starts here).
SB_HD int32_t no_logit_key() { return logit_key(det::float_of_bits(0xff800000u)); }

// The largest key of token t's causal logits in one head: max over j ≤ t of
// logit_key(qk_logit(q, k0 + j·ld)). q: (hs) the head's query of token t; k0: the head's key of
// token 0, keys ld floats apart (3C in the fused qkv rows).
SB_HD int32_t qk_row_max_key(const float* q, const float* k0, ptrdiff_t ld, int t, int hs, float scale) {
  int32_t best = no_logit_key();
  for (int j = 0; j <= t; ++j) {
    const int32_t key = logit_key(qk_logit(q, k0 + j * ld, hs, scale));
    best = key > best ? key : best;
  }
  return best;
}

SB_HD float logit_of_key(int32_t key) {
  if (key == INT32_MAX) return det::float_of_bits(0x7fc00000u);
  return det::float_of_bits(static_cast<uint32_t>(key >= 0 ? key : key ^ INT32_MAX));
}

// W ← fl32(W·factor) on the rows of W_q and W_k (and their biases) of a clipped head.
SB_HD float qk_clip_apply(float w, float factor) { return w * factor; }

}  // namespace sb::ops
