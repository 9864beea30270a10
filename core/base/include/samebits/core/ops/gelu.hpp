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

// GELU, erf form (PyTorch's approximate='none'): y = (0.5·x)·(1 + erf(x·(1/√2))), samebits erf.
constexpr float kInvSqrt2 = 0.7071067811865476f;    // 1/√2, rounded to fp32
constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1/√(2π), rounded to fp32
SB_HD float gelu_erf_forward(float x) { return (0.5f * x) * (1.0f + det::erf(x * kInvSqrt2)); }
// dx = dy·[0.5·(1 + erf(x/√2)) + x·(1/√(2π))·exp(−(0.5·x)·x)].
SB_HD float gelu_erf_backward(float x, float dy) {
  const float cdf = 0.5f * (1.0f + det::erf(x * kInvSqrt2));
  const float pdf = kInvSqrt2Pi * det::exp(-((0.5f * x) * x));
  return (cdf + x * pdf) * dy;
}

}  // namespace sb::ops
