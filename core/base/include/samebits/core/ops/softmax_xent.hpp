// Fused softmax + cross-entropy formulas, host and device. Row statistics: max (rule 6) and the
// 32-lane denominator (rule 2, ops/softmax.hpp); the mean over rows is taken by the caller with an
// exact sum (rule 5). Bitwise equal on every backend.
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

}  // namespace sb::ops
