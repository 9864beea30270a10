// Parity of the vocabulary-parallel cross-entropy (xent_shard_max, xent_shard_sum, xent_shard_loss):
// the rows' columns cut into shards at offsets that are not multiples of 32, each shard continuing
// the record the previous one passed on, as the ranks of a tensor-parallel group do — CUDA equals
// the CPU bit for bit after every shard under every launch configuration, outputs inside guard
// bands, and the last shard's losses and stats are the unsplit softmax_xent_forward's.
#include <random>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/softmax_xent.hpp"

namespace sb::test {
namespace {

// Columns [first, first + width) of each of the N rows of x (N, V).
std::vector<float> columns(const std::vector<float>& x, int N, int V, int first, int width) {
  std::vector<float> out(static_cast<size_t>(N) * width);
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < width; ++v) out[static_cast<size_t>(n) * width + v] = x[static_cast<size_t>(n) * V + first + v];
  return out;
}

TEST_CASE("vocabulary-parallel cross-entropy: CUDA equals the CPU bitwise, shard by shard") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int N = 37;
  constexpr int P = ops::kXentPart;
  uint32_t seed = 11;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (int V : {33, 257, 1000}) {
      const std::vector<int> cuts = {0, 7, V / 3 + 1, V - 1, V};  // shards of 7, …, 1 columns
      std::mt19937 rng(seed += 2);
      std::uniform_int_distribution<int32_t> tok(0, V - 1);
      std::vector<int32_t> targets(N);
      for (int32_t& t : targets) t = tok(rng);
      const std::vector<float> logits = parity_values(static_cast<size_t>(N) * V, seed, 1e30f);
      std::vector<float> max(N), part(static_cast<size_t>(N) * P), losses(N), stats(2 * N);
      Guarded gmax(*gpu, N), gpart(*gpu, part.size()), glosses(*gpu, N), gstats(*gpu, 2 * N);
      const std::string on = detail::concat(" V=", V, " on ", gpu->describe());
      for (size_t s = 0; s + 1 < cuts.size(); ++s) {
        const int first = cuts[s], width = cuts[s + 1] - first;
        const std::vector<float> shard = columns(logits, N, V, first, width);
        cpu->xent_shard_max(max.data(), shard.data(), N, width, s > 0);
        Guarded gshard(*gpu, shard.size(), shard);
        gpu->xent_shard_max(gmax.data(), gshard.data(), N, width, s > 0);
        check_output(gmax, max, detail::concat("xent_shard_max, shard ", s, on));
      }
      for (size_t s = 0; s + 1 < cuts.size(); ++s) {
        const int first = cuts[s], width = cuts[s + 1] - first;
        const std::vector<float> shard = columns(logits, N, V, first, width);
        std::vector<int32_t> relative(N);
        for (int n = 0; n < N; ++n) relative[n] = targets[n] - first;
        cpu->xent_shard_sum(part.data(), shard.data(), max.data(), relative.data(), N, width, first, s > 0);
        Guarded gshard(*gpu, shard.size(), shard);
        Tensor grelative = device_ints(*gpu, relative);
        gpu->xent_shard_sum(gpart.data(), gshard.data(), gmax.data(), grelative.data_as<int32_t>(), N, width, first,
                            s > 0);
        check_output(gpart, part, detail::concat("xent_shard_sum, shard ", s, on));
      }
      cpu->xent_shard_loss(losses.data(), stats.data(), part.data(), max.data(), N);
      gpu->xent_shard_loss(glosses.data(), gstats.data(), gpart.data(), gmax.data(), N);
      check_output(glosses, losses, "xent_shard_loss losses" + on);
      check_output(gstats, stats, "xent_shard_loss stats" + on);
      std::vector<float> whole_losses(N), whole_stats(2 * N);
      cpu->softmax_xent_forward(whole_losses.data(), whole_stats.data(), logits.data(), targets.data(), N, V);
      CHECK(same_bits(losses, whole_losses, "shard losses vs the unsplit rows" + on));
      CHECK(same_bits(stats, whole_stats, "shard stats vs the unsplit rows" + on));
    }
  }
}

}  // namespace
}  // namespace sb::test
