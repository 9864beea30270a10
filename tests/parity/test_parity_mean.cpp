// Parity of the batch's means (core/cpu/mean.cpp ↔ core/cuda/mean.cu): allreduce=native's
// gradient division (a divisor that is not a power of two, so each quotient rounds) and
// reduce=native's leaf loss (a float sum in token order, then one division) — CUDA equals the CPU
// bit for bit under every launch configuration; outputs inside guard bands.
#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

TEST_CASE("gradient_mean: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int64_t n = 100003;
  const std::vector<float> x = parity_values(n, 5, 3e38f);
  std::vector<float> mean = x;
  cpu->gradient_mean(mean.data(), n, 12.0f);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gx(*gpu, n, x);
    gpu->gradient_mean(gx.data(), n, 12.0f);
    check_output(gx, mean, "gradient_mean on " + gpu->describe());
  }
}

TEST_CASE("native_loss_mean: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int N = 4099;
  const std::vector<float> losses = parity_values(N, 6, 1e4f);
  std::vector<float> mean(1);
  cpu->native_loss_mean(mean.data(), losses.data(), N);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded glosses(*gpu, N, losses), gmean(*gpu, 1);
    gpu->native_loss_mean(gmean.data(), glosses.data(), N);
    check_output(gmean, mean, "native_loss_mean on " + gpu->describe());
  }
}

}  // namespace
}  // namespace sb::test
