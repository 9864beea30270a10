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

}  // namespace sb::ops
