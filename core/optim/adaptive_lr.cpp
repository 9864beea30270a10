// train.schedule = adaptive (adaptive_lr.hpp): fp64 + − × ÷ in the order written there on the
// recorded fp32 estimates — the same doubles on every configuration.
#include "samebits/core/optim/adaptive_lr.hpp"

#include <cmath>

namespace sb {

double adaptive_gain(double grad_sq, double trace, double b_small, double b_big) {
  if (!(trace > 0.0)) return b_small / b_big;  // no measurable noise: a larger batch gains nothing
  if (!(grad_sq > 0.0)) return 1.0;            // noise only: the full linear scaling
  const double noise = trace / grad_sq;
  return (noise + b_small) / (noise + b_big);
}

AdaptiveLr::AdaptiveLr(const Config& config)
    : beta_(config.train.adaptive_beta),
      b_small_(static_cast<double>(config.data.leaf_size)),
      b_big_(static_cast<double>(config.data.leaves) * static_cast<double>(config.data.leaf_size)) {}

double AdaptiveLr::update(float grad_sq_est, float trace_est) {
  if (std::isfinite(grad_sq_est) && std::isfinite(trace_est)) {
    state_.grad_sq = beta_ * state_.grad_sq + (1.0 - beta_) * static_cast<double>(grad_sq_est);
    state_.trace = beta_ * state_.trace + (1.0 - beta_) * static_cast<double>(trace_est);
  }
  return adaptive_gain(state_.grad_sq, state_.trace, b_small_, b_big_);
}

}  // namespace sb
