// Training works: the default model (GPT 4×128, seq 128, vocab 256; 8 leaves of one
// sequence per step) trained with Muon on the synthetic language gets its validation loss clearly
// below the language's unigram entropy within 150 steps, and Muon reaches the validation loss that
// AdamW ends with in fewer steps. Learning rates, each the best of a short sweep (docs/TRAINING.md
// §7): Muon lr 0.02 with AdamW lr 3e-3 for embeddings, norms and biases; AdamW lr 3e-3 for all.
// Both: cosine schedule, 15 warmup steps, clip 1.0, fp32, deterministic numerics.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/data/synthetic.hpp"

namespace {

constexpr int kSteps = 150;
constexpr int kEvalEvery = 10;

sb::Config config_for(sb::OptimizerName name) {
  sb::Config c;  // the default experiment's model, data and leaves
  c.optim.name = name;
  c.optim.lr = name == sb::OptimizerName::muon ? 0.02 : 3e-3;
  c.optim.adam_lr = 3e-3;
  c.train.steps = kSteps;
  c.train.warmup = 15;
  c.train.eval_every = kEvalEvery;
  return c;
}

// Validation loss after steps kEvalEvery, 2·kEvalEvery, …, kSteps.
std::vector<float> validation_curve(sb::OptimizerName name) {
  sb::TrainerOptions options;
  options.statistics = false;
  sb::Trainer trainer(config_for(name), options);
  std::vector<float> curve;
  while (!trainer.finished()) {
    const sb::StepResult r = trainer.step();
    if (!std::isnan(r.stats.val_loss)) curve.push_back(r.stats.val_loss);
  }
  return curve;
}

// The first evaluated step whose validation loss is at most `target` (0: never).
int steps_to_reach(const std::vector<float>& curve, float target) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i] <= target) return static_cast<int>(i + 1) * kEvalEvery;
  }
  return 0;
}

}  // namespace

TEST_CASE("the default Muon model learns the synthetic language, and reaches AdamW's loss sooner") {
  const sb::Config base = config_for(sb::OptimizerName::muon);
  const sb::data::SyntheticLanguage language(base.data.synthetic, base.model.vocab, base.data.seed,
                                             sb::data::Split::validation);
  const sb::data::SyntheticStats stats = sb::data::synthetic_stats(language, uint64_t{1} << 18);
  const double unigram = stats.unigram_entropy;

  const std::vector<float> muon = validation_curve(sb::OptimizerName::muon);
  const std::vector<float> adamw = validation_curve(sb::OptimizerName::adamw);
  REQUIRE(muon.size() == kSteps / kEvalEvery);
  REQUIRE(adamw.size() == kSteps / kEvalEvery);
  std::printf("unigram entropy %.4f nats, ideal loss %.4f\nstep   muon val   adamw val\n", unigram, stats.ideal_loss);
  for (size_t i = 0; i < muon.size(); ++i) {
    std::printf("%4zu   %8.4f   %9.4f\n", (i + 1) * kEvalEvery, muon[i], adamw[i]);
  }

  CHECK(muon.back() < unigram - 0.5);  // clearly below: more than half a nat
  const float target = adamw.back();
  const int muon_steps = steps_to_reach(muon, target);
  const int adamw_steps = steps_to_reach(adamw, target);
  std::printf("AdamW's final validation loss %.4f: Muon reaches it at step %d, AdamW at step %d\n", target, muon_steps,
              adamw_steps);
  CHECK(muon_steps > 0);
  CHECK(muon_steps < adamw_steps);
}
