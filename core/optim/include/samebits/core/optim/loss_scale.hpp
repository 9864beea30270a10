// The dynamic loss scale of fp16 training (docs/CONTRACT.md rule 11; PyTorch GradScaler's rule):
// grow after `growth_interval` overflow-free steps, back off and skip the step on overflow.
// Contract: every decision is a function of the rounded batch gradient only (any non-finite
// element, an order-free OR), so it is identical on every configuration; the scale is always a
// power of two, so scaling and unscaling gradients is exact.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/core/config.hpp"
#include "samebits/core/train_state.hpp"

namespace sb {

class DynamicLossScale {
 public:
  // Bounds of the scale: growth and backoff stop there.
  static constexpr double kMinScale = 0x1p-24;
  static constexpr double kMaxScale = 0x1p24;

  // Throws sb::Error unless initial_scale, growth and backoff are powers of two with
  // growth > 1 > backoff, the scale lies in [kMinScale, kMaxScale] and growth_interval ≥ 1.
  DynamicLossScale(double initial_scale, int64_t growth_interval, double growth, double backoff);
  // From train.loss_scale, loss_scale_growth_interval, loss_scale_growth, loss_scale_backoff.
  explicit DynamicLossScale(const TrainConfig& train);

  // The scale to multiply the loss gradient by in this step (exact in fp32).
  float scale() const { return static_cast<float>(state_.scale); }

  // Records this step's outcome and returns whether to apply it. overflow: scale ← max(kMinScale,
  // scale·backoff), good_steps ← 0, skipped_steps += 1, returns false (skip the update). Else
  // good_steps += 1 and, when it reaches growth_interval, scale ← min(kMaxScale, scale·growth)
  // and good_steps ← 0; returns true.
  bool update(bool overflow);

  const LossScaleState& state() const { return state_; }
  // Restores a checkpoint's state; throws sb::Error when it is not one this scaler can reach.
  void set_state(const LossScaleState& state);

 private:
  LossScaleState state_;
  int64_t growth_interval_;
  double growth_, backoff_;
};

}  // namespace sb
