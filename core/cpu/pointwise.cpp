// Elementwise functions on samebits' own math on the CPU (host_ops.hpp): the formulas of
// ops/pointwise.hpp, OpenMP over elements.
#include "samebits/core/cpu/host_ops.hpp"

namespace sb::cpu {
namespace {

template <Pointwise F>
void values(float* out, const float* inp, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = ops::pointwise_value<F>(inp[i]);
}

template <Pointwise F>
void grads(float* dinp, const float* dout, const float* at, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dinp[i] = ops::pointwise_grad<F>(dout[i], at[i]);
}

}  // namespace

void pointwise(Pointwise f, float* out, const float* inp, int64_t n) {
  ops::with_pointwise(f, [&](auto fn) { values<decltype(fn)::value>(out, inp, n); });
}

void pointwise_backward(Pointwise f, float* dinp, const float* dout, const float* at, int64_t n) {
  ops::with_pointwise_grad(f, [&](auto fn) { grads<decltype(fn)::value>(dinp, dout, at, n); });
}

}  // namespace sb::cpu
