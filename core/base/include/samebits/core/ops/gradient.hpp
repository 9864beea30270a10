// The batch gradient from the rule-4 accumulator, host and device: the exact sum of the leaves'
// gradients rounded once to fp32 (by the accumulator), then divided by the number of leaves in
// one IEEE division (exact when it is a power of two). Under numerics.leaf_sum=native the sum is
// fp32 additions in leaf order instead (ops/residual.hpp's addition), as frameworks accumulate gradients.
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

// The batch gradient's element: the rounded leaf sum over the divisor (the leaves, times the loss
// scale when one is used).
SB_HD float leaf_mean(float rounded_leaf_sum, float divisor) { return rounded_leaf_sum / divisor; }

}  // namespace sb::ops
