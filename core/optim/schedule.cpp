// Learning-rate schedules and Muon's momentum warmup (schedule.hpp): fp64 + − × ÷ in the order
// written there, and det::cos_2pi for the cosine — no libm, the same doubles everywhere.
#include "samebits/core/optim/schedule.hpp"

#include <algorithm>

#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"

namespace sb {

double lr_factor(const TrainConfig& train, int64_t step) {
  SB_CHECK(step >= 1, "lr_factor: step counts updates from 1, got ", step);
  const int64_t S = train.steps, W = train.warmup;
  const int64_t s = std::min(step, S);
  if (s <= W) return static_cast<double>(s) / static_cast<double>(W);
  const double m = train.min_lr_ratio;
  switch (train.schedule) {
    case Schedule::constant: return 1.0;
    case Schedule::cosine:
    case Schedule::adaptive: {  // the trainer multiplies by the measured gain (adaptive_lr.hpp)
      const double p = static_cast<double>(s - W) / static_cast<double>(S - W);
      const double c = static_cast<double>(det::cos_2pi(static_cast<float>(p * 0.5)));
      return m + (1.0 - m) * 0.5 * (1.0 + c);
    }
    case Schedule::wsd: {
      const int64_t D = std::max<int64_t>(1, static_cast<int64_t>(train.decay_fraction * static_cast<double>(S)));
      const int64_t E = std::max(W, S - D);
      if (s <= E) return 1.0;
      return 1.0 - (1.0 - m) * static_cast<double>(s - E) / static_cast<double>(S - E);
    }
  }
  SB_FAIL("lr_factor: unknown schedule ", static_cast<int>(train.schedule));
}

double muon_momentum(const OptimConfig& optim, int64_t step) {
  SB_CHECK(step >= 1, "muon_momentum: step counts updates from 1, got ", step);
  const int64_t K = optim.momentum_warmup;
  if (K <= 0) return optim.momentum;
  const double f = std::min(1.0, static_cast<double>(step - 1) / static_cast<double>(K));
  return optim.momentum_warmup_start + (optim.momentum - optim.momentum_warmup_start) * f;
}

}  // namespace sb
