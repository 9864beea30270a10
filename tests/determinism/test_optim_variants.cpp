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

namespace {

sb::Config tiny_config() {
  sb::Config c;
  c.model.vocab = 64;
  c.model.seq_len = 16;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.data.leaf_size = 1;
  c.data.leaves = 4;
  c.data.synthetic.doc_len = 32;
  c.optim.weight_decay = 0.1;
  c.train.steps = 10;
  c.train.warmup = 2;
  c.train.eval_every = 5;
  c.train.eval_leaves = 2;
  c.run.threads = 1;
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

template <class T>
void append(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Every step's recorded bits: loss, validation loss, lr, norms, noise statistics, per-tensor
// statistics, parameter and gradient fingerprints.
void record(std::vector<unsigned char>& out, const sb::StepResult& r) {
  const sb::StepStats& s = r.stats;
  append(out, s.loss);
  append(out, s.val_loss);
  append(out, s.lr);
  append(out, s.grad_norm);
  append(out, s.clip_scale);
  append(out, s.leaf_sq_mean);
  append(out, s.batch_sq);
  append(out, s.noise_scale);
  for (const sb::TensorStats& t : s.tensors) append(out, t);
  for (uint64_t f : r.param_fingerprints) append(out, f);
  for (uint64_t f : r.grad_fingerprints) append(out, f);
}

struct RunBits {
  std::vector<unsigned char> series;
  std::vector<float> weights, state;
  std::vector<std::string> state_names;
};

void finish(RunBits& bits, sb::Trainer& trainer) {
  const sb::TrainerState s = trainer.export_state();
  bits.weights = s.weights;
  for (const sb::StateArray& a : s.optimizer) {
    bits.state.insert(bits.state.end(), a.data.begin(), a.data.end());
    bits.state_names.push_back(a.name);
  }
}

RunBits run(const sb::Config& config, const sb::TrainerOptions& options) {
  sb::Trainer trainer(config, options);
  RunBits bits;
  while (!trainer.finished()) record(bits.series, trainer.step());
  finish(bits, trainer);
  return bits;
}

// 5 steps, export, a new Trainer on 2 threads in micro-steps of 1 leaf, import, the rest.
RunBits run_resumed(const sb::Config& config) {
  RunBits bits;
  sb::TrainerState middle;
  {
    sb::Trainer first(config);
    for (int i = 0; i < 5; ++i) record(bits.series, first.step());
    middle = first.export_state();
  }
  sb::Config second_config = config;
  second_config.run.threads = 2;
  sb::TrainerOptions second_options;
  second_options.micro_leaves = 1;
  sb::Trainer second(second_config, second_options);
  second.import_state(middle);
  while (!second.finished()) record(bits.series, second.step());
  finish(bits, second);
  return bits;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_same(const RunBits& ref, const RunBits& got) {
  CHECK(same_bits(ref.series, got.series));
  CHECK(same_bits(ref.weights, got.weights));
  CHECK(same_bits(ref.state, got.state));
  CHECK(ref.state_names == got.state_names);
}

}  // namespace

TEST_CASE("Muon variants: bitwise invariant to threads, accumulation split and resume") {
  const RunBits plain = run(tiny_config(), {});
  for (const Variant& v : kVariants) {
    CAPTURE(std::string(v.name));
    sb::Config base = tiny_config();
    v.apply(base.optim);
    const RunBits ref = run(base, {});
    CHECK_FALSE(same_bits(ref.weights, plain.weights));  // the switch changes the training
    for (int threads : {2, 3}) {
      CAPTURE(threads);
      sb::Config c = base;
      c.run.threads = threads;
      check_same(ref, run(c, {}));
    }
    for (int micro : {1, 2}) {
      CAPTURE(micro);
      sb::TrainerOptions o;
      o.micro_leaves = micro;
      check_same(ref, run(base, o));
    }
    check_same(ref, run_resumed(base));
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
