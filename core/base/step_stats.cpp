// A tensor's batch-gradient statistics from its exact sums (step_stats.hpp batch_sums): each
// value rounded once, the same bits wherever the sums were made (rule 5).
#include "samebits/core/step_stats.hpp"

#include "samebits/core/exact_norm.hpp"

namespace sb {

TensorBatchSums batch_sums(const det::ExactSum& squares, const det::ExactSum& sum, float max_abs, size_t numel) {
  // optim/clip.hpp grad_stats, bit for bit, from the same exact sums.
  TensorBatchSums b;
  b.norm = sqrt_rounded(squares);
  b.max_abs = max_abs;
  b.mean = static_cast<float>(sum.to_f64() / static_cast<double>(numel));
  b.sq = squares.to_f64();
  return b;
}

}  // namespace sb
