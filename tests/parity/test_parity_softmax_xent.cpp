// Parity of the fused softmax + cross-entropy: CUDA (one warp per row: exact max, 32-lane
// denominator by shuffles; one thread per logit for the gradient) equals the CPU bit for bit, for
// vocabularies below, at and above multiples of 32, with and without a loss scale, under every
// launch configuration; outputs inside guard bands.
#include <random>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

TEST_CASE("softmax cross-entropy forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int N = 37;
  uint32_t seed = 3;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (int V : {1, 2, 31, 33, 257, 1000}) {
      std::mt19937 rng(seed += 2);
      std::uniform_int_distribution<int32_t> tok(0, V - 1);
      std::vector<int32_t> targets(N);
      for (int32_t& t : targets) t = tok(rng);
      const std::vector<float> logits = parity_values(static_cast<size_t>(N) * V, seed, 1e30f);
      std::vector<float> losses(N), stats(2 * N), dlogits(static_cast<size_t>(N) * V),
          dscaled(static_cast<size_t>(N) * V);
      cpu->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
      cpu->softmax_xent_backward(dlogits.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
      cpu->softmax_xent_backward(dscaled.data(), logits.data(), stats.data(), targets.data(), N, V, 65536.0f);
      Tensor gtargets = device_ints(*gpu, targets);
      Guarded glogits(*gpu, logits.size(), logits), glosses(*gpu, N), gstats(*gpu, 2 * N),
          gdlogits(*gpu, dlogits.size()), gdscaled(*gpu, dscaled.size());
      const int32_t* t = gtargets.data_as<int32_t>();
      gpu->softmax_xent_forward(glosses.data(), gstats.data(), glogits.data(), t, N, V);
      gpu->softmax_xent_backward(gdlogits.data(), glogits.data(), gstats.data(), t, N, V, 1.0f);
      gpu->softmax_xent_backward(gdscaled.data(), glogits.data(), gstats.data(), t, N, V, 65536.0f);
      const std::string on = detail::concat(" V=", V, " on ", gpu->describe());
      check_output(glosses, losses, "xent losses" + on);
      check_output(gstats, stats, "xent stats" + on);
      check_output(gdlogits, dlogits, "xent dlogits" + on);
      check_output(gdscaled, dscaled, "xent dlogits, loss scale 2^16" + on);
    }
  }
}

TEST_CASE("softmax cross-entropy rejects a target outside the vocabulary, as the CPU does") {
  require_gpu();
  auto gpu = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  Tensor targets = device_ints(*gpu, {0, 9});
  Guarded logits(*gpu, 2 * 4, std::vector<float>(8, 0.5f)), losses(*gpu, 2), stats(*gpu, 4);
  CHECK_THROWS_AS(
      gpu->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data_as<int32_t>(), 2, 4),
      sb::Error);
}

}  // namespace
}  // namespace sb::test
