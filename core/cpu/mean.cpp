// The batch's means on the CPU (ops/gradient.hpp, ops/loss_mean.hpp), bitwise equal to
// core/cuda/mean.cu: the gradient's division elementwise, OpenMP over elements; the native loss
// mean on one thread in token order.
#include "cpu_backend_class.hpp"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/core/ops/loss_mean.hpp"

namespace sb::cpu {

void CpuBackend::gradient_mean(float* x, int64_t n, float divisor) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = ops::leaf_mean(x[i], divisor);
}

void CpuBackend::native_loss_mean(float* mean, const float* losses, int N) {
  mean[0] = ops::native_loss_mean(losses, N);
}

}  // namespace sb::cpu
