// train.schedule = adaptive: the learning rate of each step scaled by the gain its measured
// gradient noise supports — AdaScale's gain ratio (Johnson, Agrawal, Gu & Guestrin 2020,
// "AdaScale SGD", ICML) with the variance and the squared gradient from the exact two-batch
// estimators of the gradient noise scale (McCandlish et al. 2018, appendix A; smoothed by
// separate EMAs of |G|² and tr(Σ) as they recommend). With a leaf of B_s sequences as AdaScale's
// base batch and the step's B_b = leaves × B_s sequences (S = leaves times larger):
//   g ← β·g + (1 − β)·|G|²_s,  t ← β·t + (1 − β)·tr(Σ)_s     (fp64, this order; the fp32 estimates
//                                                             the run file records as
//                                                             series/grad_sq_est and trace_est)
//   B_noise = t / g;  r = (B_noise/B_s + 1) / (B_noise/B_b + 1)  (AdaScale's gain, 1 ≤ r ≤ S)
//   ρ = r / S = (B_noise + B_s) / (B_noise + B_b)              (1/S ≤ ρ ≤ 1)
//   lr_factor = cosine(step) · ρ                               (recorded as series/lr_factor)
// ρ → 1 when noise dominates (B_noise ≫ B_b: the batch is worth S leaf steps, linear scaling) and
// ρ → 1/S when the signal does (B_noise ≪ B_s: averaging leaves gains nothing), so the peak lr is
// the linear-scaling rate. t ≤ 0 (no measurable noise) gives ρ = B_s/B_b, g ≤ 0 < t (noise only)
// ρ = 1; a step whose
// estimates are not finite (a skipped fp16 step) leaves the EMAs alone. Docs: docs/TRAINING.md.
// Contract: the inputs are exact statistics rounded once (the same bits at every thread count,
// accumulation split and world size) and the rest a fixed sequence of fp64 operations, so the
// factors are too; the EMAs are state (checkpointed), so a resumed run continues bitwise.
#pragma once
#include <cstdint>

#include "samebits/core/config.hpp"

namespace sb {

struct AdaptiveLrState {
  double grad_sq = 0.0;  // g: EMA of |G|² estimates
  double trace = 0.0;    // t: EMA of tr(Σ) estimates
};

// ρ of the formula above for EMAs (g, t) and batches of b_small and b_big sequences.
double adaptive_gain(double grad_sq, double trace, double b_small, double b_big);

class AdaptiveLr {
 public:
  // β = train.adaptive_beta, B_s = data.leaf_size, B_b = data.leaves × data.leaf_size.
  explicit AdaptiveLr(const Config& config);
  // Folds one step's estimates into the EMAs (unless either is not finite) and returns ρ.
  double update(float grad_sq_est, float trace_est);
  const AdaptiveLrState& state() const { return state_; }
  void set_state(const AdaptiveLrState& state) { state_ = state; }

 private:
  double beta_, b_small_, b_big_;
  AdaptiveLrState state_;
};

}  // namespace sb
