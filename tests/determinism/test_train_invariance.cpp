// The training loop's execution configuration does not change a bit: after 20 steps of a tiny
// model (fp32, bf16, fp16; Muon and AdamW) the weights, the optimizer state and every step's loss,
// statistics and fingerprints are bitwise those of the reference run (1 thread, all leaves in one
// micro-step, ascending leaf order) for 2, 3 and 4 threads, micro-steps of 1, 2 and 4 leaves, and a
// permuted leaf order. fp16 with an enormous initial loss scale: the same steps are skipped and the
// scale backs off identically on every configuration.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/train_bits.hpp"

namespace {

using sb::test::check_same;
using sb::test::run_bits;
using sb::test::RunBits;
using sb::test::same_bits;

sb::Config tiny_config(sb::Precision precision, sb::OptimizerName optimizer) {
  sb::Config c = sb::test::tiny_gpt_config({.leaf_size = 2, .steps = 20, .eval_every = 10, .eval_leaves = 2});
  c.optim.name = optimizer;
  c.optim.lr = optimizer == sb::OptimizerName::muon ? 0.02 : 3e-3;
  c.train.precision = precision;
  return c;
}

// The reference run and every variant of the execution configuration.
void check_invariance(const sb::Config& base) {
  sb::test::check_invariance(
      base, run_bits(base, {}),
      {.threads = {2, 3, 4}, .micro = {1, 2, 4}, .shuffle_seed = 12345, .shuffle_micro = 3, .shuffle_threads = 3});
}

}  // namespace

TEST_CASE("20 Muon steps are bitwise invariant to threads, accumulation split and leaf order") {
  for (sb::Precision p : {sb::Precision::fp32, sb::Precision::bf16, sb::Precision::fp16}) {
    CAPTURE(sb::to_string(p));
    check_invariance(tiny_config(p, sb::OptimizerName::muon));
  }
}

TEST_CASE("20 AdamW steps are bitwise invariant to threads, accumulation split and leaf order") {
  check_invariance(tiny_config(sb::Precision::fp32, sb::OptimizerName::adamw));
}

TEST_CASE("the results depend on the experiment: another seed gives other weights") {
  // Guards the invariance tests against comparing something that never changes.
  sb::Config a = tiny_config(sb::Precision::fp32, sb::OptimizerName::muon);
  sb::Config b = a;
  b.data.seed = 2;
  const RunBits ra = run_bits(a, {}), rb = run_bits(b, {});
  CHECK_FALSE(same_bits(ra.weights, rb.weights));
  CHECK_FALSE(same_bits(ra.series, rb.series));
  sb::Config d = a;
  d.train.precision = sb::Precision::bf16;
  CHECK_FALSE(same_bits(ra.weights, run_bits(d, {}).weights));
}

TEST_CASE("fp16 overflow: the same steps are skipped and the scale backs off on every configuration") {
  sb::Config base = tiny_config(sb::Precision::fp16, sb::OptimizerName::muon);
  base.train.loss_scale = 0x1p24;  // the loss gradient times 2^24 overflows fp16 GEMM operands
  base.train.loss_scale_backoff = 0.125;
  base.train.loss_scale_growth_interval = 4;
  base.train.steps = 12;
  const RunBits ref = run_bits(base, {});
  CHECK(ref.skipped >= 2);
  CHECK(ref.skipped < 12);
  // Each skip multiplies the scale by the backoff; the first step used the initial scale.
  REQUIRE(ref.loss_scales.size() == 12);
  CHECK(ref.loss_scales[0] == 0x1p24);
  CHECK(ref.loss_scales[1] == 0x1p21);

  sb::Trainer trainer(base);
  const std::vector<uint64_t> initial = trainer.param_fingerprints();
  const sb::StepResult first = trainer.step();
  CHECK(first.stats.skipped);
  CHECK(first.param_fingerprints == initial);  // a skipped step leaves the weights alone
  CHECK(std::isnan(first.stats.grad_norm));
  CHECK(std::isfinite(first.stats.loss));
  CHECK(trainer.updates_done() == 0);
  CHECK(trainer.loss_scale()->scale == 0x1p21);

  for (int threads : {2, 4}) {
    sb::Config c = base;
    c.run.threads = threads;
    sb::TrainerOptions o;
    o.micro_leaves = threads == 2 ? 1 : 0;
    o.leaf_order_seed = threads == 4 ? 99 : 0;
    const RunBits got = run_bits(c, o);
    CHECK(got.loss_scales == ref.loss_scales);
    check_same(ref, got);
  }
}
