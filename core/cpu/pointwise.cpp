// Elementwise functions on samebits' own math on the CPU (host_ops.hpp): one formula per function
// from det/math.hpp and ops/, OpenMP over elements.
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/core/ops/gelu.hpp"
#include "samebits/core/ops/swiglu.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"

namespace sb::cpu {
namespace {

template <class F>
void each(float* out, const float* a, const float* b, int64_t n, F f) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b ? b[i] : 0.0f);
}

}  // namespace

void pointwise(Pointwise f, float* out, const float* inp, int64_t n) {
  switch (f) {
    case Pointwise::exp: return each(out, inp, nullptr, n, [](float x, float) { return det::exp(x); });
    case Pointwise::log: return each(out, inp, nullptr, n, [](float x, float) { return det::log(x); });
    case Pointwise::tanh: return each(out, inp, nullptr, n, [](float x, float) { return det::tanh(x); });
    case Pointwise::sigmoid: return each(out, inp, nullptr, n, [](float x, float) { return ops::sigmoid(x); });
    case Pointwise::silu: return each(out, inp, nullptr, n, [](float x, float) { return x * ops::sigmoid(x); });
    case Pointwise::gelu_tanh: return each(out, inp, nullptr, n, [](float x, float) { return ops::gelu_forward(x); });
    case Pointwise::gelu_erf:
      return each(out, inp, nullptr, n, [](float x, float) { return ops::gelu_erf_forward(x); });
    case Pointwise::sin: return each(out, inp, nullptr, n, [](float x, float) { return det::sin(x); });
    case Pointwise::cos: return each(out, inp, nullptr, n, [](float x, float) { return det::cos(x); });
    case Pointwise::erf: return each(out, inp, nullptr, n, [](float x, float) { return det::erf(x); });
  }
  SB_FAIL("pointwise: unknown function");
}

void pointwise_backward(Pointwise f, float* dinp, const float* dout, const float* at, int64_t n) {
  switch (f) {
    case Pointwise::tanh: return each(dinp, dout, at, n, [](float dy, float y) { return dy * (1.0f - y * y); });
    case Pointwise::sigmoid: return each(dinp, dout, at, n, [](float dy, float y) { return dy * (y * (1.0f - y)); });
    case Pointwise::silu:
      return each(dinp, dout, at, n, [](float dy, float x) {
        const float s = ops::sigmoid(x);
        return dy * (s * (1.0f + x * (1.0f - s)));
      });
    case Pointwise::gelu_tanh:
      return each(dinp, dout, at, n, [](float dy, float x) { return ops::gelu_backward(x, dy); });
    case Pointwise::gelu_erf:
      return each(dinp, dout, at, n, [](float dy, float x) { return ops::gelu_erf_backward(x, dy); });
    default: SB_FAIL("pointwise_backward: no gradient formula for this function");
  }
}

}  // namespace sb::cpu
