// GELU, tanh form (Hendrycks & Gimpel 2016; GPT-2's), host and device, one definition with a
// fixed operation order and samebits tanh. Bitwise equal on every backend.
#pragma once
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π), rounded to fp32
constexpr float kGeluCubic = 0.044715f;

// u = √(2/π)·(x + 0.044715·x³), x³ = (x·x)·x.
SB_HD float gelu_inner(float x) { return kGeluScale * (x + kGeluCubic * ((x * x) * x)); }

// y = (0.5·x)·(1 + tanh(u)).
SB_HD float gelu_forward(float x) { return (0.5f * x) * (1.0f + det::tanh(gelu_inner(x))); }

// dx = dy·[0.5·(1 + t) + (0.5·x)·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)], t = tanh(u).
SB_HD float gelu_backward(float x, float dy) {
  const float t = det::tanh(gelu_inner(x));
  const float sech2 = 1.0f - t * t;
  const float du = kGeluScale * (1.0f + (3.0f * kGeluCubic) * (x * x));
  const float local = 0.5f * (1.0f + t) + ((0.5f * x) * sech2) * du;
  return local * dy;
}

}  // namespace sb::ops
