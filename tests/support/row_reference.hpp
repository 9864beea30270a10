// The row references of the op tests: one row of LayerNorm, RMSNorm and attention computed
// plainly (a scalar loop per lane, canonical dots) from the ops/ formulas. The backends schedule
// the same formulas differently (lanes, vectors, warps, tiles); the tests require their bits to
// equal these. Not part of any computation.
#pragma once
#include <cstddef>

#include "samebits/core/ops/attention.hpp"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/core/ops/rmsnorm.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::test {

// LayerNorm, one row: Σx (32 lanes) → mean; Σ(x − mean)² (32 lanes, fma) → rstd; out.
inline void layernorm_row_forward(float* out /* (C) */, float* mean_out, float* rstd_out, const float* x /* (C) */,
                                  const float* w /* (C) */, const float* b /* (C) or null */, int C) {
  const float mean = ops::norm_mean(det::lane32_sum_ref(x, C), C);
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float d = x[i] - mean;
    s[i % det::kLanes] = det::fma_f32(d, d, s[i % det::kLanes]);
  }
  const float rstd = ops::norm_rstd(det::lane32_fold(s), C);
  for (int i = 0; i < C; ++i) {
    const float xhat = ops::layernorm_xhat(x[i], mean, rstd);
    out[i] = b ? ops::layernorm_out(xhat, w[i], b[i]) : ops::layernorm_out_nobias(xhat, w[i]);
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

// LayerNorm backward, one row (dinp only; dw and db are chains over tokens).
inline void layernorm_row_backward(float* dinp /* (C) */, const float* dout /* (C) */, const float* x /* (C) */,
                                   const float* w /* (C) */, float mean, float rstd, int C) {
  float s1[det::kLanes], s2[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s1[l] = s2[l] = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float dnorm = dout[i] * w[i];
    const float xhat = ops::layernorm_xhat(x[i], mean, rstd);
    s1[i % det::kLanes] = s1[i % det::kLanes] + dnorm;
    s2[i % det::kLanes] = det::fma_f32(dnorm, xhat, s2[i % det::kLanes]);
  }
  const float m1 = ops::norm_mean(det::lane32_fold(s1), C);
  const float m2 = ops::norm_mean(det::lane32_fold(s2), C);
  for (int i = 0; i < C; ++i)
    dinp[i] = ops::layernorm_dinp(dout[i] * w[i], ops::layernorm_xhat(x[i], mean, rstd), m1, m2, rstd);
}

// RMSNorm, one row, and its backward.
inline void rmsnorm_row_forward(float* out /* (C) */, float* rstd_out, const float* x /* (C) */,
                                const float* w /* (C) */, int C) {
  const float rstd = ops::norm_rstd(det::lane32_dot_ref(x, x, C), C);
  for (int i = 0; i < C; ++i) out[i] = ops::rmsnorm_out(ops::rmsnorm_xhat(x[i], rstd), w[i]);
  *rstd_out = rstd;
}

inline void rmsnorm_row_backward(float* dinp /* (C) */, const float* dout /* (C) */, const float* x /* (C) */,
                                 const float* w /* (C) */, float rstd, int C) {
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int i = 0; i < C; ++i)
    s[i % det::kLanes] = det::fma_f32(dout[i] * w[i], ops::rmsnorm_xhat(x[i], rstd), s[i % det::kLanes]);
  const float m = ops::norm_mean(det::lane32_fold(s), C);
  for (int i = 0; i < C; ++i) dinp[i] = ops::rmsnorm_dinp(dout[i] * w[i], ops::rmsnorm_xhat(x[i], rstd), m, rstd);
}

// Row t of one head: att row (T) gets the probabilities (0 beyond t), out (hs) the weighted sum.
inline void attention_row_forward(float* out /* (hs) */, float* att /* (T) */, const float* q /* (hs) */,
                                  const float* k /* (T, ld) */, const float* v /* (T, ld) */, ptrdiff_t ld, int t,
                                  int T, int hs) {
  const float scale = ops::attention_scale(hs);
  for (int j = 0; j <= t; ++j) att[j] = ops::attention_score(ops::canonical_dot(q, 1, k + j * ld, 1, hs, 0.0f), scale);
  const float m = ops::row_max(att, t + 1);
  const float den = ops::softmax_denominator(att, t + 1, m);
  for (int j = 0; j <= t; ++j) att[j] = ops::softmax_prob(ops::softmax_numerator(att[j], m), den);
  for (int j = t + 1; j < T; ++j) att[j] = 0.0f;
  for (int d = 0; d < hs; ++d) out[d] = ops::canonical_dot(att, 1, v + d, ld, t + 1, 0.0f);
}

// Row t of one head's d(scores): datt row (T) (0 beyond t) from the probabilities and dy.
inline void attention_row_dscores(float* datt /* (T) */, const float* att /* (T) */, const float* dy /* (hs) */,
                                  const float* v /* (T, ld) */, ptrdiff_t ld, int t, int T, int hs) {
  const float scale = ops::attention_scale(hs);
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int j = 0; j <= t; ++j) {
    datt[j] = ops::canonical_dot(dy, 1, v + j * ld, 1, hs, 0.0f);
    s[j % det::kLanes] = det::fma_f32(att[j], datt[j], s[j % det::kLanes]);
  }
  const float sum_p_dp = det::lane32_fold(s);
  for (int j = 0; j <= t; ++j) datt[j] = ops::attention_dscore(att[j], datt[j], sum_p_dp, scale);
  for (int j = t + 1; j < T; ++j) datt[j] = 0.0f;
}

}  // namespace sb::test
