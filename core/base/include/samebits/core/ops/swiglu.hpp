// SwiGLU (Shazeer 2020; Llama's MLP), host and device, one definition with a fixed operation order
// and samebits exp. A row of the fc output holds the gate's F values, then the up projection's F:
// out[j] = silu(gate[j])·up[j], silu(g) = g·σ(g), σ(g) = 1/(1 + exp(−g)). Bitwise equal on every
// backend.
#pragma once
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

// σ(g) = 1/(1 + exp(−g)): 0 once exp(−g) overflows, 1 once it underflows.
SB_HD float sigmoid(float g) { return 1.0f / (1.0f + det::exp(-g)); }

// y = (g·σ(g))·u.
SB_HD float swiglu_forward(float g, float u) { return (g * sigmoid(g)) * u; }

// d/dg: dy·u·σ·(1 + g·(1 − σ)), as (dy·u)·(σ·(1 + g·(1 − σ))); d/du: dy·(g·σ).
SB_HD float swiglu_backward_gate(float g, float u, float dy) {
  const float s = sigmoid(g);
  return (dy * u) * (s * (1.0f + g * (1.0f - s)));
}
SB_HD float swiglu_backward_up(float g, float dy) { return dy * (g * sigmoid(g)); }

}  // namespace sb::ops
