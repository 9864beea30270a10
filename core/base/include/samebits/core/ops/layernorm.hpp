// LayerNorm formulas (Ba et al. 2016), host and device. Row statistics in the 32-lane form
// (rule 2): mean = lane32_sum(x)/C, var = lane32_dot(d, d)/C with d = x − mean; the gain and bias
// gradients are token-ascending chains (rule 3) taken by the backends. Bitwise equal everywhere.
#pragma once
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::ops {

constexpr float kNormEps = 1e-5f;

SB_HD float norm_mean(float sum, int C) { return sum / static_cast<float>(C); }
// 1/√(sumsq/C + eps): one division, IEEE square root, one division. samebits' models use
// kNormEps; a PyTorch program's LayerNorm (samebits.torch.deterministic) passes its own eps.
SB_HD float norm_rstd(float sumsq, int C, float eps = kNormEps) {
  return 1.0f / det::sqrt_f32(sumsq / static_cast<float>(C) + eps);
}

SB_HD float layernorm_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }
SB_HD float layernorm_out(float xhat, float w, float b) { return xhat * w + b; }
SB_HD float layernorm_out_nobias(float xhat, float w) { return xhat * w; }

// dinp = ((dnorm − mean(dnorm)) − xhat·mean(dnorm·xhat))·rstd with dnorm = dout·w; the two means
// are 32-lane sums divided by C (norm_mean).
SB_HD float layernorm_dinp(float dnorm, float xhat, float mean_dnorm, float mean_dnorm_xhat, float rstd) {
  return ((dnorm - mean_dnorm) - xhat * mean_dnorm_xhat) * rstd;
}

// A norm gain's gradient, one more token (rule 3: chain over tokens ascending from +0):
// dw ← fma(dout, xhat, dw).
SB_HD float norm_gain_grad_step(float acc, float dout, float xhat) { return det::fma_f32(dout, xhat, acc); }

}  // namespace sb::ops
