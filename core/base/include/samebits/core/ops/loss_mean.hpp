// reduce=native's mean loss of a leaf, host and device: the frameworks' float sum in token order,
// then one division. Bitwise one value on every backend (one thread, one order); the exact mean
// (rule 5) is det::ExactSum's.
#pragma once
#include <cstdint>

#include "samebits/det/hd.hpp"

namespace sb::ops {

// (Σ_n losses[n], n ascending from +0, in fp32) / N.  losses: (N).
SB_HD float native_loss_mean(const float* losses, int N) {
  float sum = 0.0f;
  for (int n = 0; n < N; ++n) sum += losses[n];
  return sum / static_cast<float>(N);
}

}  // namespace sb::ops
