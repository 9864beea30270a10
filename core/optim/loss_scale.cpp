// The fp16 dynamic loss scale (loss_scale.hpp): powers of two only, so every product with the
// scale is exact; decisions from the step's order-free non-finite status (the accumulator's).
#include "samebits/core/optim/loss_scale.hpp"

#include <algorithm>

#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb {

namespace {

bool is_power_of_two(double x) {
  const uint64_t b = det::bits_of(x);
  const uint64_t e = (b >> 52) & 0x7ff;
  return (b >> 63) == 0 && e != 0 && e != 0x7ff && (b & 0xfffffffffffffull) == 0;
}

}  // namespace

DynamicLossScale::DynamicLossScale(double initial_scale, int64_t growth_interval, double growth, double backoff)
    : growth_interval_(growth_interval), growth_(growth), backoff_(backoff) {
  SB_CHECK(is_power_of_two(initial_scale) && initial_scale >= kMinScale && initial_scale <= kMaxScale,
           "train.loss_scale=", initial_scale,
           " must be a power of two in [2^-24, 2^24] (so "
           "scaling is exact); 65536 is usual");
  SB_CHECK(is_power_of_two(growth) && growth > 1.0, "train.loss_scale_growth=", growth,
           " must be a power of two above 1 (so the scale stays a power of two); 2 is usual");
  SB_CHECK(is_power_of_two(backoff) && backoff < 1.0, "train.loss_scale_backoff=", backoff,
           " must be a power of two below 1 (so the scale stays a power of two); 0.5 is usual");
  SB_CHECK(growth_interval >= 1, "train.loss_scale_growth_interval=", growth_interval,
           " must be at least 1; 1000 is usual");
  state_.scale = initial_scale;
}

DynamicLossScale::DynamicLossScale(const TrainConfig& train)
    : DynamicLossScale(train.loss_scale, train.loss_scale_growth_interval, train.loss_scale_growth,
                       train.loss_scale_backoff) {}

bool DynamicLossScale::update(bool overflow) {
  if (overflow) {
    state_.scale = std::max(kMinScale, state_.scale * backoff_);
    state_.good_steps = 0;
    state_.skipped_steps += 1;
    return false;
  }
  state_.good_steps += 1;
  if (state_.good_steps >= growth_interval_) {
    state_.scale = std::min(kMaxScale, state_.scale * growth_);
    state_.good_steps = 0;
  }
  return true;
}

void DynamicLossScale::set_state(const LossScaleState& state) {
  SB_CHECK(is_power_of_two(state.scale) && state.scale >= kMinScale && state.scale <= kMaxScale,
           "loss-scale state: scale ", state.scale,
           " is not a power of two in [2^-24, 2^24]; "
           "the checkpoint is damaged or from another program");
  SB_CHECK(state.good_steps >= 0 && state.good_steps < growth_interval_ && state.skipped_steps >= 0,
           "loss-scale state: good_steps ", state.good_steps, " must lie in [0, ", growth_interval_,
           ") and skipped_steps ", state.skipped_steps,
           " must be non-negative; the checkpoint does not match train.loss_scale_growth_interval");
  state_ = state;
}

}  // namespace sb
