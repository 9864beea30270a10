// GELU (tanh form) on the CPU: elementwise, OpenMP threads and SIMD lanes over elements; the formula is ops/gelu.hpp,
// bitwise equal to core/cuda/gelu.cu.
#include "cpu_backend.hpp"
#include "samebits/core/ops/gelu.hpp"

namespace sb::cpu {

void CpuBackend::gelu_forward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = ops::gelu_forward(inp[i]);
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dinp[i] = ops::gelu_backward(inp[i], dout[i]);
}

}  // namespace sb::cpu
