// Learning-rate schedules and Muon's momentum warmup: values at the defining points, against
// libm's cos in fp64 as the outside reference (tolerance), monotonicity and clamping.
#include <doctest/doctest.h>

#include <cmath>

#include "samebits/core/optim/schedule.hpp"

namespace {

sb::TrainConfig train(sb::Schedule s) {
  sb::TrainConfig t;
  t.steps = 100;
  t.warmup = 10;
  t.schedule = s;
  t.min_lr_ratio = 0.1;
  t.decay_fraction = 0.2;
  return t;
}

}  // namespace

TEST_CASE("schedule: linear warmup from 1/W, then constant") {
  const auto t = train(sb::Schedule::constant);
  CHECK(sb::lr_factor(t, 1) == 0.1);
  CHECK(sb::lr_factor(t, 5) == 0.5);
  CHECK(sb::lr_factor(t, 10) == 1.0);
  CHECK(sb::lr_factor(t, 11) == 1.0);
  CHECK(sb::lr_factor(t, 1000) == 1.0);
  CHECK_THROWS(sb::lr_factor(t, 0));
  auto no_warmup = t;
  no_warmup.warmup = 0;
  CHECK(sb::lr_factor(no_warmup, 1) == 1.0);
}

TEST_CASE("schedule: cosine from 1 to min_lr_ratio") {
  const auto t = train(sb::Schedule::cosine);
  CHECK(sb::lr_factor(t, 10) == 1.0);
  CHECK(sb::lr_factor(t, 55) == doctest::Approx(0.55).epsilon(1e-7));  // half way: m + (1 − m)/2
  CHECK(sb::lr_factor(t, 100) == doctest::Approx(0.1).epsilon(1e-12));
  CHECK(sb::lr_factor(t, 150) == sb::lr_factor(t, 100));  // clamped after the last step
  double prev = 2.0;
  for (int64_t s = 10; s <= 100; ++s) {
    const double f = sb::lr_factor(t, s);
    const double p = static_cast<double>(s - 10) / 90.0;
    CHECK(f == doctest::Approx(0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * p))).epsilon(1e-7));
    CHECK(f <= prev);
    prev = f;
  }
}

TEST_CASE("schedule: warmup-stable-decay") {
  const auto t = train(sb::Schedule::wsd);  // decay over the last 20 steps: 81 … 100
  CHECK(sb::lr_factor(t, 10) == 1.0);
  CHECK(sb::lr_factor(t, 80) == 1.0);
  CHECK(sb::lr_factor(t, 81) == doctest::Approx(1.0 - 0.9 / 20.0));
  CHECK(sb::lr_factor(t, 90) == doctest::Approx(1.0 - 0.9 * 10.0 / 20.0));
  CHECK(sb::lr_factor(t, 100) == doctest::Approx(0.1).epsilon(1e-12));
  auto long_warmup = t;
  long_warmup.warmup = 90;  // warmup longer than the stable phase: decay starts after it
  CHECK(sb::lr_factor(long_warmup, 90) == 1.0);
  CHECK(sb::lr_factor(long_warmup, 95) == doctest::Approx(1.0 - 0.9 * 0.5));
}

TEST_CASE("schedule: Muon momentum warmup") {
  sb::OptimConfig o;
  CHECK(sb::muon_momentum(o, 1) == 0.95);
  o.momentum_warmup = 300;
  o.momentum_warmup_start = 0.85;
  CHECK(sb::muon_momentum(o, 1) == 0.85);
  CHECK(sb::muon_momentum(o, 151) == doctest::Approx(0.90));
  CHECK(sb::muon_momentum(o, 301) == doctest::Approx(0.95).epsilon(1e-15));
  CHECK(sb::muon_momentum(o, 5000) == sb::muon_momentum(o, 301));
}
