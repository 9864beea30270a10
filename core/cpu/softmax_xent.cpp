// Fused softmax + cross-entropy on the CPU: OpenMP over rows. Row max exact (rule 6), denominator
// det::lane32_sum of the numerators (rule 2) — bitwise ops::xent_row_forward and
// core/cuda/softmax_xent.cu; exp vectorised across each row (separate elements per SIMD lane).
// Formulas: ops/softmax_xent.hpp.
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/error.hpp"

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
