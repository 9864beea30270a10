// The elementwise functions and row/column reductions of samebits.torch.deterministic's table
// (docs/TORCH.md), host and device, one definition: each function's value and gradient on
// samebits' own math (det/math.hpp, ops/gelu.hpp, ops/swiglu.hpp), each reduction's start and step.
// The CPU's loops (core/cpu/pointwise.cpp, reduce_middle.cpp) and the GPU's (core/cuda/torch_ops.cu)
// run these, so a CUDA tensor gets a CPU tensor's bits.
#pragma once
#include <cstdint>
#include <type_traits>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/gelu.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "samebits/core/ops/swiglu.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

enum class Pointwise : uint8_t { exp, log, tanh, sigmoid, silu, gelu_tanh, gelu_erf, sin, cos, erf };

template <Pointwise F>
SB_HD float pointwise_value(float x) {
  if constexpr (F == Pointwise::exp) {
    return det::exp(x);
  } else if constexpr (F == Pointwise::log) {
    return det::log(x);
  } else if constexpr (F == Pointwise::tanh) {
    return det::tanh(x);
  } else if constexpr (F == Pointwise::sigmoid) {
    return sigmoid(x);
  } else if constexpr (F == Pointwise::silu) {
    return x * sigmoid(x);
  } else if constexpr (F == Pointwise::gelu_tanh) {
    return gelu_forward(x);
  } else if constexpr (F == Pointwise::gelu_erf) {
    return gelu_erf_forward(x);
  } else if constexpr (F == Pointwise::sin) {
    return det::sin(x);
  } else if constexpr (F == Pointwise::cos) {
    return det::cos(x);
  } else {
    static_assert(F == Pointwise::erf, "pointwise_value: a function without a formula");
    return det::erf(x);
  }
}

// dinp = f'·dy, from the output (tanh, sigmoid: at = y) or the input (silu, gelu: at = x); the
// other functions have no formula here (a compile error).
template <Pointwise F>
SB_HD float pointwise_grad(float dy, float at) {
  if constexpr (F == Pointwise::tanh) {
    return dy * (1.0f - at * at);
  } else if constexpr (F == Pointwise::sigmoid) {
    return dy * (at * (1.0f - at));
  } else if constexpr (F == Pointwise::silu) {
    const float s = sigmoid(at);
    return dy * (s * (1.0f + at * (1.0f - s)));
  } else if constexpr (F == Pointwise::gelu_tanh) {
    return gelu_backward(at, dy);
  } else {
    static_assert(F == Pointwise::gelu_erf, "pointwise_grad: a function without a gradient formula");
    return gelu_erf_backward(at, dy);
  }
}

// v(std::integral_constant<Pointwise, f>{}): a function chosen at run time as a template argument
// (host side; the CPU's and the GPU's loops are instantiated per function).
template <class V>
void with_pointwise(Pointwise f, V&& v) {
  using P = Pointwise;
  switch (f) {
    case P::exp: return v(std::integral_constant<P, P::exp>{});
    case P::log: return v(std::integral_constant<P, P::log>{});
    case P::tanh: return v(std::integral_constant<P, P::tanh>{});
    case P::sigmoid: return v(std::integral_constant<P, P::sigmoid>{});
    case P::silu: return v(std::integral_constant<P, P::silu>{});
    case P::gelu_tanh: return v(std::integral_constant<P, P::gelu_tanh>{});
    case P::gelu_erf: return v(std::integral_constant<P, P::gelu_erf>{});
    case P::sin: return v(std::integral_constant<P, P::sin>{});
    case P::cos: return v(std::integral_constant<P, P::cos>{});
    case P::erf: return v(std::integral_constant<P, P::erf>{});
  }
  SB_FAIL("pointwise: unknown function");
}

// with_pointwise for the functions pointwise_grad has a formula for; the others are an sb::Error.
template <class V>
void with_pointwise_grad(Pointwise f, V&& v) {
  constexpr auto has_grad = [](Pointwise g) {
    return g == Pointwise::tanh || g == Pointwise::sigmoid || g == Pointwise::silu || g == Pointwise::gelu_tanh ||
           g == Pointwise::gelu_erf;
  };
  SB_CHECK(has_grad(f), "pointwise_backward: no gradient formula for this function");
  with_pointwise(f, [&](auto fn) {
    if constexpr (has_grad(decltype(fn)::value)) v(fn);
  });
}

// A reduction's fold: sum (Σ x), sumsq (Σ x², one fma per element), abssum (Σ |x|), max and absmax
// (the exact max, rule 6: any order).
enum class Reduction : uint8_t { sum, sumsq, abssum, max, absmax };

SB_HD float reduction_start(Reduction r) { return r == Reduction::max ? det::float_of_bits(0xff800000u) : 0.0f; }

SB_HD float reduction_step(Reduction r, float acc, float x) {
  switch (r) {
    case Reduction::sum: return acc + x;
    case Reduction::sumsq: return det::fma_f32(x, x, acc);
    case Reduction::abssum: return acc + det::float_of_bits(abs_bits(x));
    case Reduction::max: return exact_max(acc, x);
    case Reduction::absmax: return exact_max(acc, det::float_of_bits(abs_bits(x)));
  }
  return acc;
}

// Whether a row (the innermost block) reduces in the 32-lane form (rule 2): the sums; the max
// folds in any order.
SB_HD constexpr bool reduction_in_lanes(Reduction r) {
  return r == Reduction::sum || r == Reduction::sumsq || r == Reduction::abssum;
}

}  // namespace sb::ops
