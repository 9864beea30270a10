// train.schedule = adaptive (optim/adaptive_lr.hpp) keeps the contract: 12 steps of a tiny model
// give bitwise the reference run's lr factors, statistics, fingerprints, weights and optimizer
// state on 2 and 3 threads, in micro-steps of 1 and 2 leaves, in a permuted leaf order, and when
// stopped after 6 steps, exported (the EMAs with the state), imported into a new Trainer and
// continued. The gain is live (the factors differ from cosine's) and follows adaptive_gain.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"

namespace {

sb::Config tiny_config() {
  sb::Config c;
  c.model.vocab = 64;
  c.model.seq_len = 16;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.data.leaf_size = 2;
  c.data.leaves = 4;
  c.data.synthetic.doc_len = 32;
  c.train.schedule = sb::Schedule::adaptive;
  c.train.steps = 12;
  c.train.warmup = 2;
  c.train.eval_every = 6;
  c.train.eval_leaves = 2;
  c.run.threads = 1;
  return c;
}

struct RunBits {
  std::vector<double> factors;
  std::vector<float> grad_sq, trace;
  std::vector<uint64_t> fingerprints;
  std::vector<float> weights, state;
};

void record(RunBits& b, const sb::StepResult& r) {
  b.factors.push_back(r.stats.lr_factor);
  b.grad_sq.push_back(r.stats.grad_sq_est);
  b.trace.push_back(r.stats.trace_est);
  b.fingerprints.insert(b.fingerprints.end(), r.param_fingerprints.begin(), r.param_fingerprints.end());
  b.fingerprints.insert(b.fingerprints.end(), r.grad_fingerprints.begin(), r.grad_fingerprints.end());
}

void finish(RunBits& b, sb::Trainer& t) {
  const sb::TrainerState s = t.export_state();
  b.weights = s.weights;
  for (const sb::StateArray& a : s.optimizer) b.state.insert(b.state.end(), a.data.begin(), a.data.end());
}

RunBits run(const sb::Config& config, const sb::TrainerOptions& options) {
  sb::Trainer t(config, options);
  RunBits b;
  while (!t.finished()) record(b, t.step());
  finish(b, t);
  return b;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_same(const RunBits& a, const RunBits& b) {
  CHECK(same_bits(a.factors, b.factors));
  CHECK(same_bits(a.grad_sq, b.grad_sq));
  CHECK(same_bits(a.trace, b.trace));
  CHECK(same_bits(a.fingerprints, b.fingerprints));
  CHECK(same_bits(a.weights, b.weights));
  CHECK(same_bits(a.state, b.state));
}

}  // namespace

TEST_CASE("adaptive lr: bitwise invariant to threads, accumulation split, leaf order and resume") {
  for (sb::OptimizerName name : {sb::OptimizerName::muon, sb::OptimizerName::adamw}) {
    CAPTURE(sb::config_name(name));
    sb::Config base = tiny_config();
    base.optim.name = name;
    if (name == sb::OptimizerName::adamw) base.optim.lr = 3e-3;
    const RunBits ref = run(base, {});
    for (int threads : {2, 3}) {
      sb::Config c = base;
      c.run.threads = threads;
      check_same(ref, run(c, {}));
    }
    for (int micro : {1, 2}) {
      sb::TrainerOptions o;
      o.micro_leaves = micro;
      o.leaf_order_seed = micro == 2 ? 77 : 0;
      check_same(ref, run(base, o));
    }
    RunBits resumed;
    sb::TrainerState middle;
    {
      sb::Trainer first(base);
      for (int i = 0; i < 6; ++i) record(resumed, first.step());
      middle = first.export_state();
    }
    CHECK(middle.optimizer.back().name == sb::kAdaptiveStateName);
    sb::Config second_config = base;
    second_config.run.threads = 2;
    sb::TrainerOptions second_options;
    second_options.micro_leaves = 1;
    sb::Trainer second(second_config, second_options);
    second.import_state(middle);
    while (!second.finished()) record(resumed, second.step());
    finish(resumed, second);
    check_same(ref, resumed);
  }
}

TEST_CASE("adaptive lr: the factors are cosine times the gain of the EMAs, and differ from cosine") {
  const sb::Config c = tiny_config();
  const RunBits got = run(c, {});
  double g = 0.0, t = 0.0;
  const double beta = c.train.adaptive_beta, bs = 2.0, bb = 8.0;
  int below = 0;
  for (size_t i = 0; i < got.factors.size(); ++i) {
    g = beta * g + (1.0 - beta) * static_cast<double>(got.grad_sq[i]);
    t = beta * t + (1.0 - beta) * static_cast<double>(got.trace[i]);
    const double rho = sb::adaptive_gain(g, t, bs, bb);
    CHECK(got.factors[i] == sb::lr_factor(c.train, static_cast<int64_t>(i) + 1) * rho);
    CHECK(rho >= bs / bb);
    CHECK(rho <= 1.0);
    below += rho < 1.0 ? 1 : 0;
  }
  CHECK(below > 0);
}

TEST_CASE("adaptive lr: the gain's limits and the refusals") {
  CHECK(sb::adaptive_gain(1.0, 0.0, 2.0, 8.0) == 0.25);    // no noise: no gain from the batch, B_s / B_b
  CHECK(sb::adaptive_gain(1.0, -3.0, 2.0, 8.0) == 0.25);   // a negative estimate counts as none
  CHECK(sb::adaptive_gain(0.0, 1.0, 2.0, 8.0) == 1.0);     // noise only: the full linear scaling
  CHECK(sb::adaptive_gain(1.0, 1e9, 2.0, 8.0) > 0.999);    // noise-dominated: ρ → 1
  CHECK(sb::adaptive_gain(1.0, 4.0, 2.0, 8.0) == 0.5);     // B_noise = 4: (4 + 2) / (4 + 8)
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
