// The training loop's execution configuration does not change a bit: after 20 steps of a tiny
// model (fp32, bf16, fp16; Muon and AdamW) the weights, the optimizer state and every step's loss,
// statistics and fingerprints are bitwise those of the reference run (1 thread, all leaves in one
// micro-step, ascending leaf order) for 2, 3 and 4 threads, micro-steps of 1, 2 and 4 leaves, and a
// permuted leaf order. fp16 with an enormous initial loss scale: the same steps are skipped and the
// scale backs off identically on every configuration.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

sb::Config tiny_config(sb::Precision precision, sb::OptimizerName optimizer) {
  sb::Config c;
  c.model.vocab = 64;
  c.model.seq_len = 16;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.data.leaf_size = 2;
  c.data.leaves = 4;
  c.data.synthetic.doc_len = 32;
  c.optim.name = optimizer;
  c.optim.lr = optimizer == sb::OptimizerName::muon ? 0.02 : 3e-3;
  c.train.steps = 20;
  c.train.warmup = 2;
  c.train.precision = precision;
  c.train.eval_every = 10;
  c.train.eval_leaves = 2;
  c.run.threads = 1;
  return c;
}

// Everything a run produces that the contract covers, as raw bytes.
struct RunBits {
  std::vector<float> weights;
  std::vector<float> optimizer_state;
  std::vector<unsigned char> series;  // every step's statistics fields, bit for bit
  std::vector<uint64_t> fingerprints; // every step's parameter and gradient fingerprints
  std::vector<double> loss_scales;
  int skipped = 0;
};

template <class T>
void append(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

void append_stats(std::vector<unsigned char>& out, const sb::StepStats& s) {
  append(out, s.step);
  append(out, s.loss);
  append(out, s.val_loss);
  append(out, s.lr);
  append(out, s.adam_lr);
  append(out, s.grad_norm);
  append(out, s.clip_scale);
  append(out, s.loss_scale);
  append(out, s.skipped);
  append(out, s.leaf_sq_mean);
  append(out, s.batch_sq);
  append(out, s.grad_sq_est);
  append(out, s.trace_est);
  append(out, s.noise_scale);
  for (const sb::TensorStats& t : s.tensors) append(out, t);
}

RunBits run(const sb::Config& config, const sb::TrainerOptions& options) {
  sb::Trainer trainer(config, options);
  RunBits bits;
  while (!trainer.finished()) {
    const sb::StepResult r = trainer.step();
    append_stats(bits.series, r.stats);
    bits.fingerprints.insert(bits.fingerprints.end(), r.param_fingerprints.begin(),
                             r.param_fingerprints.end());
    bits.fingerprints.insert(bits.fingerprints.end(), r.grad_fingerprints.begin(),
                             r.grad_fingerprints.end());
    bits.loss_scales.push_back(r.stats.loss_scale);
    bits.skipped += r.stats.skipped ? 1 : 0;
  }
  const sb::TrainerState state = trainer.export_state();
  bits.weights = state.weights;
  for (const sb::StateArray& a : state.optimizer) {
    bits.optimizer_state.insert(bits.optimizer_state.end(), a.data.begin(), a.data.end());
  }
  return bits;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_same(const RunBits& ref, const RunBits& got) {
  CHECK(same_bits(ref.weights, got.weights));
  CHECK(same_bits(ref.optimizer_state, got.optimizer_state));
  CHECK(same_bits(ref.series, got.series));
  CHECK(same_bits(ref.fingerprints, got.fingerprints));
  CHECK(ref.skipped == got.skipped);
}

// The reference run and every variant of the execution configuration.
void check_invariance(const sb::Config& base) {
  const RunBits ref = run(base, {});
  REQUIRE(!ref.weights.empty());
  REQUIRE(!ref.optimizer_state.empty());
  for (int threads : {2, 3, 4}) {
    CAPTURE(threads);
    sb::Config c = base;
    c.run.threads = threads;
    check_same(ref, run(c, {}));
  }
  for (int micro : {1, 2, 4}) {
    CAPTURE(micro);
    sb::TrainerOptions o;
    o.micro_leaves = micro;
    check_same(ref, run(base, o));
  }
  sb::TrainerOptions shuffled;
  shuffled.leaf_order_seed = 12345;
  shuffled.micro_leaves = 3;
  sb::Config c = base;
  c.run.threads = 3;
  check_same(ref, run(c, shuffled));
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
  const RunBits ra = run(a, {}), rb = run(b, {});
  CHECK_FALSE(same_bits(ra.weights, rb.weights));
  CHECK_FALSE(same_bits(ra.series, rb.series));
  sb::Config d = a;
  d.train.precision = sb::Precision::bf16;
  CHECK_FALSE(same_bits(ra.weights, run(d, {}).weights));
}

TEST_CASE("fp16 overflow: the same steps are skipped and the scale backs off on every configuration") {
  sb::Config base = tiny_config(sb::Precision::fp16, sb::OptimizerName::muon);
  base.train.loss_scale = 0x1p24;  // the loss gradient times 2^24 overflows fp16 GEMM operands
  base.train.loss_scale_backoff = 0.125;
  base.train.loss_scale_growth_interval = 4;
  base.train.steps = 12;
  const RunBits ref = run(base, {});
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
    const RunBits got = run(c, o);
    CHECK(got.loss_scales == ref.loss_scales);
    check_same(ref, got);
  }
}
