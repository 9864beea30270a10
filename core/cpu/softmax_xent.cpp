// Fused softmax + cross-entropy on the CPU: OpenMP over rows. Row max exact (rule 6), denominator
// det::lane32_sum of the numerators (rule 2) — bitwise ops::xent_row_forward and
// core/cuda/softmax_xent.cu; exp vectorised across each row (separate elements per SIMD lane).
// The vocabulary-parallel pieces: ops::xent_shard_lane for each lane of a row (the lanes continued
// by global column), ops::xent_shard_target, ops::xent_shard_loss_row. Formulas:
// ops/softmax_xent.hpp.
#include <algorithm>
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::cpu {
namespace {

// The row loops, flattened so that samebits exp inlines and they vectorise (SIMD lanes are
// separate elements, each with the scalar formula's IEEE operations).
[[gnu::flatten]] void numerators(float* e, const float* l, int V, float m) {  // (V) each
#pragma omp simd
  for (int v = 0; v < V; ++v) e[v] = ops::softmax_numerator(l[v], m);
}

[[gnu::flatten]] void dlogit_row(float* dl, const float* l, float m, float den, int target, int V, float rows,
                                 float loss_scale) {  // (V) each
#pragma omp simd
  for (int v = 0; v < V; ++v) dl[v] = ops::xent_dlogit(l[v], m, den, v == target, rows, loss_scale);
}

}  // namespace

void CpuBackend::softmax_xent_forward(float* losses, float* stats, const float* logits, const int32_t* targets, int N,
                                      int V) {
  const ReduceMode mode = numerics().reduce;
  for (int n = 0; n < N; ++n)
    SB_CHECK(targets[n] >= 0 && targets[n] < V, "target token ", targets[n], " at position ", n,
             " is outside the vocabulary [0, ", V, ")");
#pragma omp parallel
  {
    std::vector<float> e(V);  // (V) numerators
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* l = logits + static_cast<size_t>(n) * V;
      const float m = ops::row_max(l, V);
      numerators(e.data(), l, V, m);
      const float den = row_sum(e.data(), V, mode);
      stats[2 * n] = m;
      stats[2 * n + 1] = den;
      losses[n] = ops::xent_loss(l[targets[n]], m, den);
    }
  }
}

void CpuBackend::xent_shard_max(float* max, const float* logits, int N, int V, bool accumulate) {
  const float start = det::float_of_bits(0xff800000u);  // -inf
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n)
    max[n] = ops::row_max_continue(accumulate ? max[n] : start, logits + static_cast<size_t>(n) * V, V);
}

void CpuBackend::xent_shard_sum(float* part, const float* logits, const float* max, const int32_t* targets, int N,
                                int V, int first, bool accumulate) {
  const ReduceMode mode = numerics().reduce;
#pragma omp parallel
  {
    std::vector<float> e(mode == ReduceMode::native ? V : 0);  // (V) numerators
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* l = logits + static_cast<size_t>(n) * V;
      float* p = part + static_cast<size_t>(n) * ops::kXentPart;
      if (!accumulate) std::fill(p, p + ops::kXentPart, 0.0f);
      if (mode == ReduceMode::canonical) {
        for (int lane = 0; lane < det::kLanes; ++lane)
          p[lane] = ops::xent_shard_lane(p[lane], l, V, first, max[n], lane);
      } else {
        // reduce=native: this rank's plain sum added to lane 0, as a framework adds the ranks'
        // partial sums (its bits depend on the split).
        numerators(e.data(), l, V, max[n]);
        p[0] = p[0] + row_sum(e.data(), V, mode);
      }
      ops::xent_shard_target(p, l, V, targets[n]);
    }
  }
}

void CpuBackend::xent_shard_loss(float* losses, float* stats, const float* part, const float* max, int N) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n)
    losses[n] = ops::xent_shard_loss_row(stats + 2 * static_cast<size_t>(n),
                                         part + static_cast<size_t>(n) * ops::kXentPart, max[n]);
}

void CpuBackend::softmax_xent_backward(float* dlogits, const float* logits, const float* stats, const int32_t* targets,
                                       int N, int V, float loss_scale) {
  const float rows = static_cast<float>(N);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<size_t>(n) * V;
    float* dl = dlogits + static_cast<size_t>(n) * V;
    dlogit_row(dl, l, stats[2 * n], stats[2 * n + 1], targets[n], V, rows, loss_scale);
  }
}

}  // namespace sb::cpu
