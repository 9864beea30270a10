// The statistics of one training step (what the run store records in /series) and the exact sums
// behind them: per-tensor gradient norm, max |g|, mean, and the leaf variance — Σ_l ‖g_l‖² over
// the step's leaves and ‖G‖² of the batch gradient — with the gradient noise scale estimators of
// McCandlish et al. 2018 (appendix A). Contract: every sum is exact (det::ExactSum, merged across
// threads and ranks as integer limbs), so every statistic has the same bits for any thread count,
// leaf order, accumulation split and world size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

// Unbiased estimates from two batch sizes (McCandlish et al. 2018, appendix A). With
// |G_small|² = the mean over leaves of ‖g_l‖² (each leaf the mean gradient of B_small sequences)
// and |G_big|² = ‖G‖² of the batch gradient (B_big sequences):
//   |G|²  ≈ (B_big·|G_big|² − B_small·|G_small|²) / (B_big − B_small)
//   tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)
//   B_simple = tr(Σ) / |G|²
// Σ is the per-sequence gradient covariance, so B_simple counts sequences (× seq_len for tokens).
// Both estimates can be negative on a noisy step (they are unbiased, not positive); with one leaf
// (B_big = B_small) they are undefined: NaN. Computed in fp64 in this fixed order.
struct NoiseEstimate {
  double grad_sq = 0;      // |G|² estimate
  double trace = 0;        // tr(Σ) estimate
  double noise_scale = 0;  // B_simple
};
NoiseEstimate estimate_noise(double leaf_sq_mean, double batch_sq, double b_small, double b_big);

// The exact per-tensor leaf sums of one step: leaves add Σ_i g_l[i]² per tensor (exact,
// core/exact_norm.hpp) where the gradients live (Backend::make_tensor_sums); ranks all-reduce
// them as ExactSum words; finish() adds the batch gradient's statistics (the values of
// optim/clip.hpp grad_stats, from exact sums) and the noise-scale estimates. Only O(tensors)
// words per step reach the host.
class GradientStatistics {
 public:
  // Gradients in host memory (the host TensorSums).
  explicit GradientStatistics(const std::vector<ParamView>& layout);
  // Gradients in `backend`'s memory (its TensorSums); backend must outlive this object.
  GradientStatistics(const std::vector<ParamView>& layout, Backend& backend);
  // Of a part of a model (a pipeline stage's tensors): layout's tensor i is tensor slots[i] of
  // the `tensors` whose statistics words(), from_words() and finish() hold (the others' leaf sums
  // come from other ranks through the all-reduce of the words).
  GradientStatistics(const std::vector<ParamView>& layout, Backend& backend, std::vector<size_t> slots, size_t tensors);

  void clear();
  // One leaf's gradient, as backward left it (times the step's loss scale).  grad: (flat_size),
  // host or backend memory as constructed.
  void add_leaf(const float* grad);
  // The per-leaf sums themselves, for a pass that adds leaves' squares with their gradients
  // (LeafPass::leaf_squares; TensorSums::add(grad, false) per leaf, as add_leaf).
  TensorSums* leaf_sums() {
    leaves_pending_ = true;
    return leaf_.get();
  }
  // The per-tensor sums as ExactSum words, for an int64 SUM all-reduce: (words()).
  size_t words() const { return leaf_sq_.size() * det::ExactSum::kWords; }
  void to_words(int64_t* out);         // out: (words())
  void from_words(const int64_t* in);  // in: (words()), the SUM over ranks

  // Fills stats.tensors and the whole-model leaf-variance fields (the layout is the whole model's).
  // grad: (flat_size) as in add_leaf, the unscaled batch gradient before clipping, or nullptr on a skipped step
  // (gradient fields NaN). leaf_scale: the loss scale the leaves were computed with (a power of two, divided out of the
  // rounded sums exactly); `leaves` leaves of `leaf_size` sequences made the batch.
  void finish(const float* grad, double leaf_scale, int64_t leaves, int64_t leaf_size, StepStats& stats);
  // The same from the batch gradient's sums instead of the gradient: batch (tensors) every
  // tensor's, batch_squares = Σ_t Σ_i G_t[i]² exact (the whole model's); batch null on a skipped
  // step. finish(grad, …) is this with the sums of grad, bit for bit.
  void finish(const TensorBatchSums* batch, const det::ExactSum& batch_squares, double leaf_scale, int64_t leaves,
              int64_t leaf_size, StepStats& stats);

 private:
  GradientStatistics(std::vector<ParamView> layout, std::unique_ptr<TensorSums> leaf, std::unique_ptr<TensorSums> batch,
                     std::vector<size_t> slots, size_t tensors);
  void read_leaves();  // leaf_sq_ ← the leaf sums, when leaves were added since

  std::vector<ParamView> layout_;
  std::vector<size_t> slots_;                 // (layout tensors) each one's place among leaf_sq_
  std::unique_ptr<TensorSums> leaf_, batch_;  // the step's leaves; the batch gradient
  bool leaves_pending_ = false;               // leaves added since leaf_sq_ was read
  std::vector<det::ExactSum> leaf_sq_;        // (the model's tensors) Σ_l Σ_i g_l[i]²
};

}  // namespace sb
