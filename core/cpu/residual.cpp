// Residual addition on the CPU: elementwise, OpenMP over elements (ops/residual.hpp), bitwise
// equal to core/cuda/residual.cu.
#include "samebits/core/ops/residual.hpp"
#include "cpu_backend_class.hpp"

namespace sb::cpu {

void CpuBackend::residual_forward(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = ops::residual_out(a[i], b[i]);
}

}  // namespace sb::cpu
