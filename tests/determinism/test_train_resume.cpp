// Resume (docs/CONTRACT.md, "time"): 20 uninterrupted steps equal 10 steps, export_state, a new
// Trainer, import_state, 10 more — weights, optimizer state, loss-scale state and every step's
// loss and fingerprints bitwise — in fp32, bf16 and fp16 (with skipped steps before the split).
// Bad states are refused with a message.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"
#include "support/train_bits.hpp"

namespace {

using sb::test::check_same_state;
using sb::test::same_bits;

sb::Config tiny_config(sb::Precision precision) {
  sb::Config c = sb::test::tiny_gpt_config({.steps = 20, .warmup = 3, .eval_every = 5, .eval_leaves = 2, .threads = 2});
  c.train.precision = precision;
  c.optim.momentum_warmup = 6;
  if (precision == sb::Precision::fp16) {
    c.train.loss_scale = 0x1p22;  // a few skipped steps, then growth every 3 good steps
    c.train.loss_scale_backoff = 0.25;
    c.train.loss_scale_growth_interval = 3;
  }
  return c;
}

}  // namespace

TEST_CASE("10 steps, export, import into a new Trainer, 10 more: bitwise the 20-step run") {
  for (sb::Precision p : {sb::Precision::fp32, sb::Precision::bf16, sb::Precision::fp16}) {
    CAPTURE(sb::to_string(p));
    const sb::Config config = tiny_config(p);

    sb::Trainer straight(config);
    sb::test::RunBits whole;
    while (!straight.finished()) sb::test::record(whole, straight.step());
    const sb::TrainerState end = straight.export_state();

    sb::test::RunBits parts;
    sb::TrainerState middle;
    {
      sb::Trainer first(config);
      for (int i = 0; i < 10; ++i) sb::test::record(parts, first.step());
      middle = first.export_state();
    }
    CHECK(middle.step == 10);
    if (p == sb::Precision::fp16) {
      CHECK(middle.loss_scale.skipped_steps > 0);
      CHECK(middle.updates < 10);
    }
    // A different execution configuration for the second half: the state is all that carries.
    sb::Config second_config = config;
    second_config.run.threads = 1;
    sb::TrainerOptions second_options;
    second_options.micro_leaves = 1;
    sb::Trainer second(second_config, second_options);
    second.import_state(middle);
    CHECK(second.steps_done() == 10);
    while (!second.finished()) sb::test::record(parts, second.step());

    check_same_state(end, second.export_state());
    CHECK(same_bits(whole.series, parts.series));
  }
}

TEST_CASE("a resumed run that skips the import differs (the test can fail)") {
  const sb::Config config = tiny_config(sb::Precision::fp32);
  sb::Trainer a(config), b(config);
  for (int i = 0; i < 3; ++i) a.step();
  sb::TrainerState state = a.export_state();
  state.step = 0;  // weights after 3 steps, but claiming step 0: data and schedule restart
  state.updates = 0;
  state.cursor = b.sampler().cursor(0);
  b.import_state(state);
  a.step();
  b.step();
  CHECK_FALSE(same_bits(a.export_state().weights, b.export_state().weights));
}

TEST_CASE("import_state refuses states that do not fit") {
  const sb::Config config = tiny_config(sb::Precision::fp32);
  sb::Trainer trainer(config);
  trainer.step();
  const sb::TrainerState good = trainer.export_state();

  sb::TrainerState s = good;
  s.weights.pop_back();
  CHECK_THROWS_AS(trainer.import_state(s), sb::Error);

  s = good;
  s.optimizer.pop_back();
  CHECK_THROWS_AS(trainer.import_state(s), sb::Error);

  s = good;
  s.optimizer[0].name = "not/a-buffer";
  CHECK_THROWS_AS(trainer.import_state(s), sb::Error);

  s = good;
  s.cursor = trainer.sampler().cursor(5);  // the data position of another step
  CHECK_THROWS_AS(trainer.import_state(s), sb::Error);

  s = good;
  s.updates = s.step + 1;
  CHECK_THROWS_AS(trainer.import_state(s), sb::Error);

  CHECK_NOTHROW(trainer.import_state(good));
}
