// Causal multi-head attention formulas, host and device. Scores and weighted sums are canonical
// dots (rule 1) over the causal positions only; softmax uses the exact max (rule 6) and the
// 32-lane denominator (rule 2); Σ_j p_j·dp_j in the backward is a 32-lane fma row reduction.
// Per (b, h): q, k, v rows t at q + t·ld (ld = 3C), att and datt rows t at att + t·T.
//   forward   s[t][j]  = canonical_dot(q_t, k_j)·scale, j ≤ t;  p = softmax(s[t][0..t])
//             y[t][d]  = Σ_{j ≤ t} p[t][j]·v[j][d]     (chain over j ascending)
//   backward  dp[t][j] = canonical_dot(dy_t, v_j)
//             ds[t][j] = (p[t][j]·(dp[t][j] − Σ_i p[t][i]·dp[t][i]))·scale
//             dq[t][d] = Σ_{j ≤ t} ds[t][j]·k[j][d]   (j ascending)
//             dk[j][d] = Σ_{t ≥ j} ds[t][j]·q[t][d]   (t ascending: tokens, rule 3)
//             dv[j][d] = Σ_{t ≥ j} p[t][j]·dy[t][d]   (t ascending)
#pragma once
#include <cstddef>

#include "samebits/core/ops/matmul.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::ops {

// 1/√hs: one IEEE square root and one division.
SB_HD float attention_scale(int hs) { return 1.0f / det::sqrt_f32(static_cast<float>(hs)); }

SB_HD float attention_score(float dot, float scale) { return dot * scale; }

SB_HD float attention_dscore(float p, float dp, float sum_p_dp, float scale) {
  return (p * (dp - sum_p_dp)) * scale;
}

// Row t of one head: att row (T) gets the probabilities (0 beyond t), out (hs) the weighted sum.
SB_HD void attention_row_forward(float* out /* (hs) */, float* att /* (T) */,
                                 const float* q /* (hs) */, const float* k /* (T, ld) */,
                                 const float* v /* (T, ld) */, ptrdiff_t ld, int t, int T,
                                 int hs) {
  const float scale = attention_scale(hs);
  for (int j = 0; j <= t; ++j)
    att[j] = attention_score(canonical_dot(q, 1, k + j * ld, 1, hs, 0.0f), scale);
  const float m = row_max(att, t + 1);
  const float den = softmax_denominator(att, t + 1, m);
  for (int j = 0; j <= t; ++j) att[j] = softmax_prob(softmax_numerator(att[j], m), den);
  for (int j = t + 1; j < T; ++j) att[j] = 0.0f;
  for (int d = 0; d < hs; ++d) out[d] = canonical_dot(att, 1, v + d, ld, t + 1, 0.0f);
}

// Row t of one head's d(scores): datt row (T) (0 beyond t) from the probabilities and dy.
SB_HD void attention_row_dscores(float* datt /* (T) */, const float* att /* (T) */,
                                 const float* dy /* (hs) */, const float* v /* (T, ld) */,
                                 ptrdiff_t ld, int t, int T, int hs) {
  const float scale = attention_scale(hs);
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int j = 0; j <= t; ++j) {
    datt[j] = canonical_dot(dy, 1, v + j * ld, 1, hs, 0.0f);
    s[j % det::kLanes] = det::fma_f32(att[j], datt[j], s[j % det::kLanes]);
  }
  const float sum_p_dp = det::lane32_fold(s);
  for (int j = 0; j <= t; ++j) datt[j] = attention_dscore(att[j], datt[j], sum_p_dp, scale);
  for (int j = t + 1; j < T; ++j) datt[j] = 0.0f;
}

}  // namespace sb::ops
