// The Muon variants (docs/OPTIM.md §1.1: NorMuon, split Q/K/V, cautious weight decay, QK-clip, the
// scale modes and Emerging-Optimizers' Polar Express table) keep the contract: 10 steps of a tiny model
// give bitwise the reference run's weights, optimizer state (NorMuon's second moment included) and
// every step's statistics and fingerprints on 2 and 3 threads, in micro-steps of 1 and 2 leaves,
// and when stopped after 5 steps, exported, imported into a new Trainer (another thread count and
// split) and continued. Each variant also changes the weights (the switches are live).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/train_bits.hpp"

namespace {

using sb::test::run_bits;
using sb::test::RunBits;
using sb::test::same_bits;

sb::Config tiny_config() {
  sb::Config c = sb::test::tiny_gpt_config({.eval_every = 5, .eval_leaves = 2});
  c.optim.weight_decay = 0.1;
  return c;
}

// Below the tiny model's largest logits after a few steps, so the clip acts (checked below).
constexpr double kTau = 0.03;

struct Variant {
  const char* name;
  void (*apply)(sb::OptimConfig&);
};

const Variant kVariants[] = {
    {"normuon", [](sb::OptimConfig& o) { o.name = sb::OptimizerName::normuon; }},
    {"split_qkv", [](sb::OptimConfig& o) { o.split_qkv = true; }},
    {"cautious_wd", [](sb::OptimConfig& o) { o.cautious_wd = true; }},
    {"unit_rms, extra_scale, polar_express_8",
     [](sb::OptimConfig& o) {
       o.scale = sb::MuonScale::unit_rms;
       o.extra_scale = 0.75;
       o.ns_coefficients = sb::NsCoefficients::polar_express_8;
       o.ns_steps = 8;
     }},
    {"qk_clip", [](sb::OptimConfig& o) { o.qk_clip = kTau; }},
    {"normuon, split_qkv, cautious_wd, polar_express_5",
     [](sb::OptimConfig& o) {
       o.name = sb::OptimizerName::normuon;
       o.split_qkv = true;
       o.cautious_wd = true;
       o.ns_coefficients = sb::NsCoefficients::polar_express_5;
     }},
};

}  // namespace

TEST_CASE("Muon variants: bitwise invariant to threads, accumulation split and resume") {
  const RunBits plain = run_bits(tiny_config());
  for (const Variant& v : kVariants) {
    CAPTURE(std::string(v.name));
    sb::Config base = tiny_config();
    v.apply(base.optim);
    const RunBits ref = run_bits(base);
    CHECK_FALSE(same_bits(ref.weights, plain.weights));  // the switch changes the training
    sb::test::check_invariance(base, ref, {.threads = {2, 3}, .micro = {1, 2}, .resume_after = 5});
  }
}

TEST_CASE("normuon checkpoints its second moment: one value per row of each matrix") {
  sb::Config c = tiny_config();
  c.optim.name = sb::OptimizerName::normuon;
  sb::Trainer trainer(c);
  trainer.step();
  const sb::TrainerState s = trainer.export_state();
  int moments = 0;
  for (const sb::StateArray& a : s.optimizer) {
    if (a.name.find("/second_moment") == std::string::npos) continue;
    ++moments;
    const std::string tensor = a.name.substr(0, a.name.find("/second_moment"));
    for (const sb::ParamView& p : trainer.model().params()) {
      if (p.name == tensor) CHECK(a.data.size() == static_cast<size_t>(p.shape[0]));
    }
    bool positive = true;
    for (float v : a.data) positive = positive && v > 0.0f;
    CHECK(positive);
  }
  CHECK(moments == 4 * c.model.n_layer);  // qkv, attn.proj, mlp.fc, mlp.proj per layer
}

TEST_CASE("qk_clip: the per-head maxima are the same on every configuration, and the clip acts") {
  sb::Config c = tiny_config();
  c.optim.qk_clip = kTau;
  c.data.leaves = 6;
  const auto maxima = [](const sb::Config& config, const sb::TrainerOptions& options, int* clipped) {
    sb::Trainer t(config, options);
    std::vector<float> all;
    *clipped = 0;
    while (!t.finished()) {
      const sb::StepResult r = t.step();
      REQUIRE(r.stats.qk_max_logits.size() == size_t(config.model.n_layer * config.model.n_head));
      all.insert(all.end(), r.stats.qk_max_logits.begin(), r.stats.qk_max_logits.end());
      *clipped += r.stats.qk_clipped;
    }
    return all;
  };
  int clipped = 0, other = 0;
  const std::vector<float> ref = maxima(c, {}, &clipped);
  CHECK(clipped > 0);
  float largest = 0.0f;
  for (float s : ref) largest = std::max(largest, s);
  CHECK(largest > kTau);
  sb::Config threads = c;
  threads.run.threads = 3;
  sb::TrainerOptions split;
  split.micro_leaves = 1;
  split.leaf_order_seed = 7;
  CHECK(same_bits(ref, maxima(threads, split, &other)));
  CHECK(other == clipped);
}
