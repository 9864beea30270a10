// The batch gradient from the rule-4 accumulator, host and device: the exact sum of the leaves'
// gradients rounded once to fp32 (by the accumulator), then divided by the number of leaves in
// one IEEE division (exact when it is a power of two).
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

SB_HD float batch_gradient(float rounded_leaf_sum, float leaves) { return rounded_leaf_sum / leaves; }

}  // namespace sb::ops
