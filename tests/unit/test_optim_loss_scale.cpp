// fp16 dynamic loss scale: forced overflow skips the step and backs off, growth after the
// interval, bounds, and the checkpoint state round trip.
#include <doctest/doctest.h>

#include "samebits/core/optim/loss_scale.hpp"
#include "samebits/det/error.hpp"

TEST_CASE("loss scale: overflow skips and backs off; growth after the interval") {
  sb::DynamicLossScale ls(65536.0, 3, 2.0, 0.5);
  CHECK(ls.scale() == 65536.0f);
  CHECK(ls.update(false));
  CHECK(ls.update(false));
  CHECK(ls.state().good_steps == 2);
  CHECK_FALSE(ls.update(true));  // forced overflow: skip
  CHECK(ls.scale() == 32768.0f);
  CHECK(ls.state().good_steps == 0);
  CHECK(ls.state().skipped_steps == 1);
  CHECK(ls.update(false));
  CHECK(ls.update(false));
  CHECK(ls.scale() == 32768.0f);
  CHECK(ls.update(false));  // third overflow-free step: grow
  CHECK(ls.scale() == 65536.0f);
  CHECK(ls.state().good_steps == 0);
}

TEST_CASE("loss scale: bounds and validation") {
  sb::DynamicLossScale ls(0x1p24, 1, 2.0, 0.5);
  ls.update(false);
  CHECK(ls.scale() == 0x1p24f);  // capped
  sb::DynamicLossScale low(0x1p-24, 1, 2.0, 0.5);
  low.update(true);
  CHECK(low.scale() == 0x1p-24f);  // floored
  CHECK_THROWS_AS(sb::DynamicLossScale(1000.0, 10, 2.0, 0.5), sb::Error);
  CHECK_THROWS_AS(sb::DynamicLossScale(1024.0, 10, 3.0, 0.5), sb::Error);
  CHECK_THROWS_AS(sb::DynamicLossScale(1024.0, 10, 2.0, 0.3), sb::Error);
  CHECK_THROWS_AS(sb::DynamicLossScale(1024.0, 0, 2.0, 0.5), sb::Error);
  sb::TrainConfig t;
  CHECK(sb::DynamicLossScale(t).scale() == static_cast<float>(t.loss_scale));
}

TEST_CASE("loss scale: state round trip gives the same decisions") {
  sb::DynamicLossScale a(1024.0, 4, 2.0, 0.5);
  for (bool o : {false, true, false, false}) a.update(o);
  sb::DynamicLossScale b(1024.0, 4, 2.0, 0.5);
  b.set_state(a.state());
  for (bool o : {false, false, true, false, false, false, false}) CHECK(a.update(o) == b.update(o));
  CHECK(a.state().scale == b.state().scale);
  CHECK(a.state().good_steps == b.state().good_steps);
  CHECK(a.state().skipped_steps == b.state().skipped_steps);
  sb::LossScaleState bad = a.state();
  bad.scale = 3.0;
  CHECK_THROWS_AS(b.set_state(bad), sb::Error);
  bad = a.state();
  bad.good_steps = 4;
  CHECK_THROWS_AS(b.set_state(bad), sb::Error);
}
