// The exact sums behind an update's statistics (optim_kernels.hpp UpdateSums), shared by every
// backend's OptimKernels: Σ (W_after − W_before)² and Σ W_before² exactly (exact_norm.hpp), each
// statistic rounded once from them (docs/OPTIM.md §4).
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb {

void UpdateSums::add(float before, float after) { add_update_squares(delta_sq, weight_sq, before, after); }

TensorUpdateStats UpdateSums::finish(size_t numel, float ortho_error) const {
  const double dsq = delta_sq.to_f64();
  const double wsq = weight_sq.to_f64();
  TensorUpdateStats s;
  s.update_rms = static_cast<float>(sqrt_f64(dsq / static_cast<double>(numel)));
  s.update_weight_ratio = static_cast<float>(sqrt_f64(dsq / wsq));
  s.ortho_error = ortho_error;
  return s;
}

}  // namespace sb
