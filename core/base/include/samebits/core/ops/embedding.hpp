// Token + position embedding formulas, host and device. Forward: one addition per element.
// Backward: dwte rows accumulate their tokens' gradients in token order (n ascending, no races:
// backends parallelise over vocabulary rows or channels, never over tokens sharing a row);
// dwpe[t] is the chain over the leaf's sequences b ascending from +0 (rule 3).
#pragma once
#include "samebits/det/hd.hpp"

namespace sb::ops {

SB_HD float embedding_out(float wte, float wpe) { return wte + wpe; }

// One more token's gradient into an embedding-gradient element.
SB_HD float embedding_grad_step(float acc, float dout) { return acc + dout; }

}  // namespace sb::ops
