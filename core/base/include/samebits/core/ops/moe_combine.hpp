// A Mixture-of-Experts block's rows (backend_op_list.hpp: moe_gather, moe_scatter_add, moe_combine),
// host and device. The experts' rows are the tokens each expert takes, grouped by expert in
// ascending expert index (shared experts first), a group's tokens in position order; token t's
// J slots name its rows in ascending expert index (row −1: a slot a capacity limit dropped) with
// their gates (1 for a shared expert). Combining a token's expert outputs is one fp32 chain from +0
// over its slots in that order, fma(gate, y, acc); its input gradient adds its rows' gradients to
// the router's in the same order; so no layout, thread or rank that computes a row can change a bit.
#pragma once
#include <cstdint>

#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

// The combine chain's step: acc + gate·y, rounded once.
SB_HD float moe_combine_step(float acc, float gate, float y) { return det::fma_f32(gate, y, acc); }

// The input gradient's step: acc + the row's gradient (one addition).
SB_HD float moe_scatter_step(float acc, float dx) { return acc + dx; }

// A row's output gradient: gate·dout.
SB_HD float moe_row_gradient(float gate, float dout) { return gate * dout; }

// A gate's gradient: the canonical dot of the token's output gradient and the expert's row (C).
SB_HD float moe_gate_gradient(const float* dout, const float* y, int C) {
  return canonical_dot(dout, 1, y, 1, C, 0.0f);
}

}  // namespace sb::ops
