// What the training tests share (with the tiny GPT of tiny_gpt.hpp): a bitwise comparison of
// vectors, and the invariance check of the contract — a reference run against the same experiment
// on other thread counts, accumulation splits, a permuted leaf order and a resume, every step's
// recorded fields, fingerprints, weights and optimizer state compared bit for bit (memcmp).
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/tiny_gpt.hpp"

namespace sb::test {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void append_bytes(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Everything a run produces that the contract covers, as raw bytes.
struct RunBits {
  std::vector<unsigned char> series;  // every step's StepStats fields and fingerprints
  std::vector<float> weights, state;  // after the last step; state: every optimizer array
  std::vector<std::string> state_names;
  std::vector<float> loss_scales;  // every step's
  int skipped = 0;                 // steps skipped for an fp16 overflow
};

inline void record(RunBits& bits, const StepResult& r) {
  const StepStats& s = r.stats;
  std::vector<unsigned char>& out = bits.series;
  append_bytes(out, s.step);
  append_bytes(out, s.loss);
  append_bytes(out, s.val_loss);
  append_bytes(out, s.lr_factor);
  append_bytes(out, s.lr);
  append_bytes(out, s.adam_lr);
  append_bytes(out, s.muon_momentum);
  append_bytes(out, s.grad_norm);
  append_bytes(out, s.clip_scale);
  append_bytes(out, s.loss_scale);
  append_bytes(out, s.skipped);
  append_bytes(out, s.tokens);
  append_bytes(out, s.tokens_seen);
  append_bytes(out, s.leaf_sq_mean);
  append_bytes(out, s.batch_sq);
  append_bytes(out, s.grad_sq_est);
  append_bytes(out, s.trace_est);
  append_bytes(out, s.noise_scale);
  for (const TensorStats& t : s.tensors) append_bytes(out, t);
  for (float m : s.qk_max_logits) append_bytes(out, m);
  append_bytes(out, s.qk_clipped);
  for (uint64_t f : r.param_fingerprints) append_bytes(out, f);
  for (uint64_t f : r.grad_fingerprints) append_bytes(out, f);
  bits.loss_scales.push_back(s.loss_scale);
  bits.skipped += s.skipped ? 1 : 0;
}

inline void finish(RunBits& bits, Trainer& trainer) {
  const TrainerState s = trainer.export_state();
  bits.weights = s.weights;
  for (const StateArray& a : s.optimizer) {
    bits.state.insert(bits.state.end(), a.data.begin(), a.data.end());
    bits.state_names.push_back(a.name);
  }
}

inline RunBits run_bits(const Config& config, const TrainerOptions& options = {}) {
  Trainer trainer(config, options);
  RunBits bits;
  while (!trainer.finished()) record(bits, trainer.step());
  finish(bits, trainer);
  return bits;
}

// `first_steps` steps, export_state (into *middle when given), a new Trainer on 2 threads in
// micro-steps of 1 leaf, import_state, the rest.
inline RunBits run_resumed(const Config& config, int first_steps, TrainerState* middle = nullptr) {
  RunBits bits;
  TrainerState state;
  {
    Trainer first(config);
    for (int i = 0; i < first_steps; ++i) record(bits, first.step());
    state = first.export_state();
  }
  Config second_config = config;
  second_config.run.threads = 2;
  TrainerOptions second_options;
  second_options.micro_leaves = 1;
  Trainer second(second_config, second_options);
  second.import_state(state);
  while (!second.finished()) record(bits, second.step());
  finish(bits, second);
  if (middle != nullptr) *middle = std::move(state);
  return bits;
}

inline void check_same(const RunBits& ref, const RunBits& got) {
  CHECK(same_bits(ref.series, got.series));
  CHECK(same_bits(ref.weights, got.weights));
  CHECK(same_bits(ref.state, got.state));
  CHECK(ref.state_names == got.state_names);
}

// Two exported states are the same: step, updates, data cursor, experiment, loss scale, and the
// weights and every optimizer array bit for bit.
inline void check_same_state(const TrainerState& a, const TrainerState& b) {
  CHECK(a.step == b.step);
  CHECK(a.updates == b.updates);
  CHECK(a.cursor == b.cursor);
  CHECK(same_bits(a.weights, b.weights));
  REQUIRE(a.optimizer.size() == b.optimizer.size());
  for (size_t i = 0; i < a.optimizer.size(); ++i) {
    CHECK(a.optimizer[i].name == b.optimizer[i].name);
    CHECK(same_bits(a.optimizer[i].data, b.optimizer[i].data));
  }
  CHECK(a.loss_scale.scale == b.loss_scale.scale);
  CHECK(a.loss_scale.good_steps == b.loss_scale.good_steps);
  CHECK(a.loss_scale.skipped_steps == b.loss_scale.skipped_steps);
  CHECK(a.experiment_id == b.experiment_id);
}

// The execution configurations an invariance test tries against the reference run.
struct Invariance {
  std::vector<int> threads;   // run.threads values
  std::vector<int> micro;     // TrainerOptions::micro_leaves values
  uint64_t shuffle_seed = 0;  // non-zero: also a permuted leaf order, in micro-steps of
  int shuffle_micro = 0;      // shuffle_micro leaves on shuffle_threads threads
  int shuffle_threads = 1;
  int resume_after = 0;  // non-zero: also run_resumed after that many steps
};

inline void check_invariance(const Config& base, const RunBits& ref, const Invariance& v) {
  REQUIRE(!ref.weights.empty());
  REQUIRE(!ref.state.empty());
  for (int threads : v.threads) {
    CAPTURE(threads);
    Config c = base;
    c.run.threads = threads;
    check_same(ref, run_bits(c));
  }
  for (int micro : v.micro) {
    CAPTURE(micro);
    TrainerOptions o;
    o.micro_leaves = micro;
    check_same(ref, run_bits(base, o));
  }
  if (v.shuffle_seed != 0) {
    TrainerOptions o;
    o.leaf_order_seed = v.shuffle_seed;
    o.micro_leaves = v.shuffle_micro;
    Config c = base;
    c.run.threads = v.shuffle_threads;
    check_same(ref, run_bits(c, o));
  }
  if (v.resume_after > 0) check_same(ref, run_resumed(base, v.resume_after));
}

}  // namespace sb::test
