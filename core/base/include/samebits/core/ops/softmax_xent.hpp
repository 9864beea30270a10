// Fused softmax + cross-entropy formulas, host and device. Row statistics: max (rule 6) and the
// 32-lane denominator (rule 2, ops/softmax.hpp); the mean over rows is taken by the caller with an
// exact sum (rule 5). Bitwise equal on every backend, and under the vocabulary-parallel split
// (the xent_shard_* pieces below): the same max, the same lane chains, the same loss.
#pragma once
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

// −log softmax(logits)[target] = log(den) − (logit_target − max).
SB_HD float xent_loss(float logit_target, float max, float denominator) {
  return det::log(denominator) - (logit_target - max);
}

// d(mean loss over n_rows)/d logit, times loss_scale:
// ((exp(logit − max) / den − [is target]) / n_rows) · loss_scale.
SB_HD float xent_dlogit(float logit, float max, float denominator, bool is_target, float n_rows, float loss_scale) {
  const float p = softmax_prob(softmax_numerator(logit, max), denominator);
  const float d = is_target ? p - 1.0f : p;
  return (d / n_rows) * loss_scale;
}

// The reference row: stats and loss of one row of V logits.
SB_HD float xent_row_forward(float* stats /* (2): max, den */, const float* logits /* (V) */, int target, int V) {
  const float m = row_max(logits, V);
  const float den = softmax_denominator(logits, V, m);
  stats[0] = m;
  stats[1] = den;
  return xent_loss(logits[target], m, den);
}

// ---- the vocabulary-parallel split (docs/DISTRIBUTED.md §10) ------------------------------------
// A rank holding columns [first, first + n) of a row continues the row's statistics over them; the
// ranks run in column order, each passing its result to the next. The max is exact in any order
// (rule 6). The denominator's lane l is the chain over the row's columns ≡ l (mod 32) ascending
// (rule 2), so each rank continues the 32 lane partials over its columns by their *global* index
// (det::lane32_continue) and the last folds them: the whole row's lane32 sum, bit for bit, wherever
// the vocabulary is cut. The target logit is copied, by the rank holding it. So xent_shard_loss on
// the last rank is xent_row_forward of the unsplit row: the same max, denominator and loss bits.

// A row's record passed from rank to rank: the 32 lane partials, then the target logit.
constexpr int kXentPart = det::kLanes + 1;

// max continued over x[0 .. n-1] (row_max is this from -inf).
SB_HD float row_max_continue(float m, const float* x, int n) {
  for (int i = 0; i < n; ++i) m = exact_max(m, x[i]);
  return m;
}

// A rank's part of a row's record (kXentPart) over the row's columns first … first+n-1 (x = those
// logits): part[l] ← xent_shard_lane(part[l], …, l) for every lane l, and xent_shard_target.
// Lane `lane`'s partial s of the row's denominator continued over those columns: the columns whose
// global index is ≡ lane (mod 32), ascending.
SB_HD float xent_shard_lane(float s, const float* x, int n, int first, float max, int lane) {
  for (int v = ((lane - first) % det::kLanes + det::kLanes) % det::kLanes; v < n; v += det::kLanes)
    s = s + softmax_numerator(x[v], max);
  return s;
}

// The target logit into the record (kXentPart), by the rank holding it: target is the target's
// column relative to first (this rank holds it when 0 <= target < n).
SB_HD void xent_shard_target(float* part, const float* x, int n, int target) {
  if (target >= 0 && target < n) part[det::kLanes] = x[target];
}

// The loss of a completed record, with stats (2): max, denominator — xent_row_forward's bits.
SB_HD float xent_shard_loss_row(float* stats, const float* part, float max) {
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = part[l];
  const float den = det::lane32_fold(s);
  stats[0] = max;
  stats[1] = den;
  return xent_loss(part[det::kLanes], max, den);
}

}  // namespace sb::ops
