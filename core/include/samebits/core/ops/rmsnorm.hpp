// RMSNorm formulas (Zhang & Sennrich 2019), host and device: rstd = 1/√(lane32_dot(x, x)/C + eps)
// (rule 2), out = (x·rstd)·w; no bias. The gain gradient is a token-ascending chain (rule 3).
// Bitwise equal everywhere.
#pragma once
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::ops {

SB_HD float rmsnorm_xhat(float x, float rstd) { return x * rstd; }
SB_HD float rmsnorm_out(float xhat, float w) { return xhat * w; }

// dinp = (dnorm − xhat·mean(dnorm·xhat))·rstd with dnorm = dout·w.
SB_HD float rmsnorm_dinp(float dnorm, float xhat, float mean_dnorm_xhat, float rstd) {
  return (dnorm - xhat * mean_dnorm_xhat) * rstd;
}

SB_HD void rmsnorm_row_forward(float* out /* (C) */, float* rstd_out, const float* x /* (C) */,
                               const float* w /* (C) */, int C) {
  const float rstd = norm_rstd(det::lane32_dot_ref(x, x, C), C);
  for (int i = 0; i < C; ++i) out[i] = rmsnorm_out(rmsnorm_xhat(x[i], rstd), w[i]);
  *rstd_out = rstd;
}

SB_HD void rmsnorm_row_backward(float* dinp /* (C) */, const float* dout /* (C) */,
                                const float* x /* (C) */, const float* w /* (C) */, float rstd,
                                int C) {
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int i = 0; i < C; ++i)
    s[i % det::kLanes] = det::fma_f32(dout[i] * w[i], rmsnorm_xhat(x[i], rstd), s[i % det::kLanes]);
  const float m = norm_mean(det::lane32_fold(s), C);
  for (int i = 0; i < C; ++i) dinp[i] = rmsnorm_dinp(dout[i] * w[i], rmsnorm_xhat(x[i], rstd), m, rstd);
}

}  // namespace sb::ops
