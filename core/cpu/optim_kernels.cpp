// The optimizers' loops on host memory (optim_kernels.hpp): the CPU backend's OptimKernels. Contract: elements are
// independent (OpenMP over a static partition: any thread count gives the same bits); sums are one det::ExactSum per
// thread (binned: exact_norm.hpp binned_update_squares), merged exactly.
#include "samebits/core/cpu/cpu_backend.hpp"

#include <algorithm>
#include <utility>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/det/error.hpp"

namespace sb {

namespace {

constexpr ptrdiff_t kParallelMin = 8192;  // below this, one thread (the result is the same)

// f(i) for i < n on OpenMP threads.
template <class F>
void parallel_for(size_t n, const F& f) {
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
#pragma omp parallel for schedule(static) if (count >= kParallelMin)
  for (ptrdiff_t i = 0; i < count; ++i) f(static_cast<size_t>(i));
}

// update(i) for i < n on OpenMP threads; update applies element i and returns {weight before,
// weight after}. When sums is non-null the pairs are added into it exactly, a chunk at a time
// (binned_update_squares: vectorized exact sums; any partition gives the same exact values).
template <class Update>
void apply_elements(size_t n, UpdateSums* sums, const Update& update) {
  if (sums == nullptr) {
    parallel_for(n, [&](size_t i) { update(i); });
    return;
  }
  constexpr size_t kChunk = 4096;
  const ptrdiff_t chunks = static_cast<ptrdiff_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel if (static_cast <ptrdiff_t>(n) >= kParallelMin)
  {
    UpdateSums local;
    float before[kChunk], after[kChunk];  // (kChunk) one chunk's weights before and after
#pragma omp for schedule(static) nowait
    for (ptrdiff_t c = 0; c < chunks; ++c) {
      const size_t start = static_cast<size_t>(c) * kChunk, len = std::min(kChunk, n - start);
      // Elements are independent (no reduction here), so SIMD lanes cannot change a bit.
#pragma omp simd
      for (size_t j = 0; j < len; ++j) {
        const auto [b, a] = update(start + j);
        before[j] = b;
        after[j] = a;
      }
      binned_update_squares(local.delta_sq, local.weight_sq, before, after, len);
    }
#pragma omp critical(sb_update_sums)
    sums->merge(local);
  }
}

class HostOptimKernels final : public OptimKernels {
 public:
  void muon_momentum(float* m, float* u, const float* g, size_t n, const ops::MuonMomentum& k) override {
    parallel_for(n, [&](size_t j) { u[j] = ops::muon_momentum_step(m[j], g[j], k); });
  }

  void muon_normalize(float* x, const float* u, size_t n, float denom) override {
    parallel_for(n, [&](size_t k) { x[k] = ops::muon_normalize(u[k], denom); });
  }

  void ns_polynomial(float* b, const float* a, size_t n, float pb, float pc) override {
    parallel_for(n, [&](size_t k) { b[k] = ops::ns_polynomial(a[k], b[k], pb, pc); });
  }

  void ns_combine(float* x, const float* bx, size_t n, float pa) override {
    parallel_for(n, [&](size_t k) { x[k] = ops::ns_combine(x[k], bx[k], pa); });
  }

  det::ExactSum ortho_squares(const float* a, int r) override {
    const size_t n = static_cast<size_t>(r);
    det::ExactSum sq;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) sq.add(ops::ortho_square(a[i * n + j], i == j));
    return sq;
  }

  void muon_apply(float* w, const float* x, size_t n, float decay, float step, UpdateSums* sums) override {
    apply_elements(n, sums, [&](size_t j) {
      const float before = w[j];
      w[j] = ops::muon_apply(before, x[j], decay, step);
      return std::pair<float, float>{before, w[j]};
    });
  }

  void muon_apply_rows(float* w, const float* x, int rows, int cols, float decay, float step, const float* row_step,
                       bool cautious, UpdateSums* sums) override {
    const size_t c = static_cast<size_t>(cols);
    apply_elements(static_cast<size_t>(rows) * c, sums, [&](size_t j) {
      const float before = w[j];
      const float s = row_step != nullptr ? row_step[j / c] : step;
      w[j] = cautious ? ops::muon_apply_cautious(before, x[j], decay, s) : ops::muon_apply(before, x[j], decay, s);
      return std::pair<float, float>{before, w[j]};
    });
  }

  void adamw(float* w, const float* g, float* m, float* v, size_t n, const ops::AdamWConstants& k,
             UpdateSums* sums) override {
    apply_elements(n, sums, [&](size_t i) {
      const float before = w[i];
      ops::adamw_update(&w[i], &m[i], &v[i], g[i], k);
      return std::pair<float, float>{before, w[i]};
    });
  }

  det::ExactSum sum_of_squares(const float* x, size_t n) override { return sb::sum_of_squares(x, n); }

  void scale(float* x, size_t n, float factor) override {
    parallel_for(n, [&](size_t i) { x[i] = x[i] * factor; });
  }
};

}  // namespace

OptimKernels& host_optim_kernels() {
  static HostOptimKernels kernels;
  return kernels;
}

}  // namespace sb
