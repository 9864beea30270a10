// LayerNorm formulas (Ba et al. 2016), host and device. Row statistics in the 32-lane form
// (rule 2): mean = lane32_sum(x)/C, var = lane32_dot(d, d)/C with d = x − mean; the gain and bias
// gradients are token-ascending chains (rule 3) taken by the backends. Bitwise equal everywhere.
#pragma once
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::ops {

constexpr float kNormEps = 1e-5f;

SB_HD float norm_mean(float sum, int C) { return sum / static_cast<float>(C); }
// 1/√(sumsq/C + eps): one division, IEEE square root, one division.
SB_HD float norm_rstd(float sumsq, int C) {
  return 1.0f / det::sqrt_f32(sumsq / static_cast<float>(C) + kNormEps);
}

SB_HD float layernorm_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }
SB_HD float layernorm_out(float xhat, float w, float b) { return xhat * w + b; }
SB_HD float layernorm_out_nobias(float xhat, float w) { return xhat * w; }

// dinp = ((dnorm − mean(dnorm)) − xhat·mean(dnorm·xhat))·rstd with dnorm = dout·w; the two means
// are 32-lane sums divided by C (norm_mean).
SB_HD float layernorm_dinp(float dnorm, float xhat, float mean_dnorm, float mean_dnorm_xhat,
                           float rstd) {
  return ((dnorm - mean_dnorm) - xhat * mean_dnorm_xhat) * rstd;
}

// A norm gain's gradient, one more token (rule 3: chain over tokens ascending from +0):
// dw ← fma(dout, xhat, dw).
SB_HD float norm_gain_grad_step(float acc, float dout, float xhat) {
  return det::fma_f32(dout, xhat, acc);
}

// The reference row forward: Σx (32 lanes) → mean; Σ(x − mean)² (32 lanes, fma) → rstd; out.
SB_HD void layernorm_row_forward(float* out /* (C) */, float* mean_out, float* rstd_out,
                                 const float* x /* (C) */, const float* w /* (C) */,
                                 const float* b /* (C) or null */, int C) {
  const float mean = norm_mean(det::lane32_sum_ref(x, C), C);
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float d = x[i] - mean;
    s[i % det::kLanes] = det::fma_f32(d, d, s[i % det::kLanes]);
  }
  const float rstd = norm_rstd(det::lane32_fold(s), C);
  for (int i = 0; i < C; ++i) {
    const float xhat = layernorm_xhat(x[i], mean, rstd);
    out[i] = b ? layernorm_out(xhat, w[i], b[i]) : layernorm_out_nobias(xhat, w[i]);
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

// The reference row backward (dinp only; dw and db are chains over tokens).
SB_HD void layernorm_row_backward(float* dinp /* (C) */, const float* dout /* (C) */,
                                  const float* x /* (C) */, const float* w /* (C) */, float mean,
                                  float rstd, int C) {
  float s1[det::kLanes], s2[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s1[l] = s2[l] = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float dnorm = dout[i] * w[i];
    const float xhat = layernorm_xhat(x[i], mean, rstd);
    s1[i % det::kLanes] = s1[i % det::kLanes] + dnorm;
    s2[i % det::kLanes] = det::fma_f32(dnorm, xhat, s2[i % det::kLanes]);
  }
  const float m1 = norm_mean(det::lane32_fold(s1), C);
  const float m2 = norm_mean(det::lane32_fold(s2), C);
  for (int i = 0; i < C; ++i)
    dinp[i] = layernorm_dinp(dout[i] * w[i], layernorm_xhat(x[i], mean, rstd), m1, m2, rstd);
}

}  // namespace sb::ops
