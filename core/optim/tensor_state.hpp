// What AdamW and Muon share (internal): per-tensor state buffers of owned tensors, the ownership
// flags, the last step's statistics, and the elementwise update loop with exact update sums.
// Contract: elements are independent (any thread count gives the same bits); the update sums are
// det::ExactSum per thread, merged exactly.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/ops/adamw.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb::optim_detail {

// Σ (W_after − W_before)² and Σ W_before², exactly (docs/OPTIM.md §4).
struct UpdateSums {
  det::ExactSum delta_sq, weight_sq;
  // d = fl64(after − before) (fp64 subtraction), d² rounded in fp64; before² exact.
  void add(float before, float after) {
    const double d = static_cast<double>(after) - static_cast<double>(before);
    delta_sq.add(d * d);
    const double w = before;
    weight_sq.add(w * w);
  }
  void merge(const UpdateSums& other) {
    delta_sq.merge(other.delta_sq);
    weight_sq.merge(other.weight_sq);
  }
  // update_rms = fl32(√(fl64(Σd²) / numel)), update_weight_ratio = fl32(√(fl64(Σd²) / fl64(ΣW²))),
  // ortho_error as given.
  TensorUpdateStats finish(size_t numel, float ortho_error) const;
};

// Statistics of a tensor this optimizer did not update (unowned): every field NaN.
TensorUpdateStats not_computed();

// Runs update(i) for i < n on OpenMP threads; update applies element i and returns
// {weight before, weight after}. When sums is non-null the pairs are added into it exactly.
template <class Update>
void apply_elements(size_t n, UpdateSums* sums, const Update& update) {
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
  if (sums == nullptr) {
#pragma omp parallel for schedule(static) if (count >= 8192)
    for (ptrdiff_t i = 0; i < count; ++i) update(static_cast<size_t>(i));
    return;
  }
#pragma omp parallel if (count >= 8192)
  {
    UpdateSums local;
#pragma omp for schedule(static) nowait
    for (ptrdiff_t i = 0; i < count; ++i) {
      const auto [before, after] = update(static_cast<size_t>(i));
      local.add(before, after);
    }
#pragma omp critical(sb_update_sums)
    sums->merge(local);
  }
}

// AdamW on one tensor (ops::adamw_update per element); shared by AdamW and Muon's AdamW group.
// w, m, v: (n) updated in place; g: (n).
void adamw_tensor(float* w, const float* g, float* m, float* v, size_t n,
                  const ops::AdamWConstants& k, UpdateSums* sums);

// Throws sb::Error unless `backend` computes in host memory: the optimizers' elementwise loops
// run on the host (the CPU backend).
void require_host_backend(const Backend& backend, const char* who);

// State buffers per tensor; only owned tensors hold them (backend memory, zero at allocation).
class TensorState {
 public:
  // kinds[i]: the names of tensor i's buffers ("momentum", "exp_avg", ...), in order.
  TensorState(const std::vector<ParamView>& params, Backend& backend,
              std::vector<std::vector<std::string>> kinds);

  const std::vector<ParamView>& params() const { return params_; }
  Backend& backend() { return backend_; }
  bool owned(size_t tensor) const { return owned_[tensor]; }
  // Buffer k of an owned tensor: (numel).
  float* buffer(size_t tensor, size_t k) { return buffers_[tensor][k].data_as<float>(); }

  // Frees the state of tensors no longer owned, allocates (zeroed) the newly owned ones, keeps
  // the rest. Throws sb::Error when owned.size() is not the tensor count.
  void set_owned(const std::vector<bool>& owned);
  std::vector<StateBuffer> state();
  size_t bytes() const;
  std::vector<TensorUpdateStats>& stats() { return stats_; }
  const std::vector<TensorUpdateStats>& stats() const { return stats_; }

 private:
  std::vector<ParamView> params_;
  Backend& backend_;
  std::vector<std::vector<std::string>> kinds_;
  std::vector<bool> owned_;
  std::vector<std::vector<Tensor>> buffers_;  // [tensor][kind] (numel) f32, empty when unowned
  std::vector<TensorUpdateStats> stats_;      // (tensors), layout order
};

}  // namespace sb::optim_detail
