// train.schedule = adaptive (optim/adaptive_lr.hpp) keeps the contract: 12 steps of a tiny model
// give bitwise the reference run's lr factors, statistics, fingerprints, weights and optimizer
// state on 2 and 3 threads, in micro-steps of 1 and 2 leaves, in a permuted leaf order, and when
// stopped after 6 steps, exported (the EMAs with the state), imported into a new Trainer and
// continued. The gain is live (the factors differ from cosine's) and follows adaptive_gain.
#include <doctest/doctest.h>

#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"
#include "support/train_bits.hpp"

namespace {

sb::Config tiny_config() {
  sb::Config c = sb::test::tiny_gpt_config({.leaf_size = 2, .steps = 12, .eval_every = 6, .eval_leaves = 2});
  c.train.schedule = sb::Schedule::adaptive;
  return c;
}

}  // namespace

TEST_CASE("adaptive lr: bitwise invariant to threads, accumulation split, leaf order and resume") {
  for (sb::OptimizerName name : {sb::OptimizerName::muon, sb::OptimizerName::adamw}) {
    CAPTURE(sb::config_name(name));
    sb::Config base = tiny_config();
    base.optim.name = name;
    if (name == sb::OptimizerName::adamw) base.optim.lr = 3e-3;
    const sb::test::RunBits ref = sb::test::run_bits(base);
    sb::test::check_invariance(base, ref, {.threads = {2, 3}, .micro = {1, 2}, .shuffle_seed = 77, .shuffle_micro = 2});
    sb::TrainerState middle;
    sb::test::check_same(ref, sb::test::run_resumed(base, 6, &middle));
    CHECK(middle.optimizer.back().name == sb::kAdaptiveStateName);
  }
}

TEST_CASE("adaptive lr: the factors are cosine times the gain of the EMAs, and differ from cosine") {
  const sb::Config c = tiny_config();
  sb::Trainer trainer(c);
  double g = 0.0, t = 0.0;
  const double beta = c.train.adaptive_beta, bs = 2.0, bb = 8.0;
  int below = 0;
  for (int64_t i = 0; !trainer.finished(); ++i) {
    const sb::StepStats got = trainer.step().stats;
    g = beta * g + (1.0 - beta) * static_cast<double>(got.grad_sq_est);
    t = beta * t + (1.0 - beta) * static_cast<double>(got.trace_est);
    const double rho = sb::adaptive_gain(g, t, bs, bb);
    CHECK(got.lr_factor == sb::lr_factor(c.train, i + 1) * rho);
    CHECK(rho >= bs / bb);
    CHECK(rho <= 1.0);
    below += rho < 1.0 ? 1 : 0;
  }
  CHECK(below > 0);
}

TEST_CASE("adaptive lr: the gain's limits and the refusals") {
  CHECK(sb::adaptive_gain(1.0, 0.0, 2.0, 8.0) == 0.25);   // no noise: no gain from the batch, B_s / B_b
  CHECK(sb::adaptive_gain(1.0, -3.0, 2.0, 8.0) == 0.25);  // a negative estimate counts as none
  CHECK(sb::adaptive_gain(0.0, 1.0, 2.0, 8.0) == 1.0);    // noise only: the full linear scaling
  CHECK(sb::adaptive_gain(1.0, 1e9, 2.0, 8.0) > 0.999);   // noise-dominated: ρ → 1
  CHECK(sb::adaptive_gain(1.0, 4.0, 2.0, 8.0) == 0.5);    // B_noise = 4: (4 + 2) / (4 + 8)
  sb::Config c = tiny_config();
  c.data.leaves = 1;
  CHECK_THROWS_AS(sb::validate(c), sb::Error);
  c = tiny_config();
  c.train.adaptive_beta = 1.0;
  CHECK_THROWS_AS(sb::validate(c), sb::Error);
  c = tiny_config();
  sb::TrainerOptions no_stats;
  no_stats.statistics = false;
  CHECK_THROWS_AS(sb::Trainer(c, no_stats), sb::Error);
  // A cosine checkpoint does not resume an adaptive run, nor the reverse.
  sb::Config cosine = tiny_config();
  cosine.train.schedule = sb::Schedule::cosine;
  sb::Trainer a(cosine);
  a.step();
  sb::Trainer b(c);
  CHECK_THROWS_AS(b.import_state(a.export_state()), sb::Error);
  b.step();
  sb::Trainer d(cosine);
  CHECK_THROWS_AS(d.import_state(b.export_state()), sb::Error);
}
