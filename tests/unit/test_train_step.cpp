// One training step against the core's definitions: the trainer's batch gradient is the GPT batch
// scheme g = fl(fl(Σ_l g_l)/L) (its fingerprint equals batch_gradient's), its loss is the exact
// mean, its leaf statistics are the exact Σ_l ‖g_l‖²; switches that must not change bits
// (statistics off, allreduce=native on one rank) do not; leaf_sum=native's gradient is the leaves'
// fp32 sum in leaf order; a few steps lower the loss.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/det/fingerprint.hpp"
#include "support/train_bits.hpp"

namespace {

sb::Config tiny_config() { return sb::test::tiny_gpt_config({.leaf_size = 2, .steps = 40, .threads = 2}); }

}  // namespace

TEST_CASE("the first step's gradient, loss and leaf statistics are the core's batch scheme") {
  const sb::Config config = tiny_config();
  sb::Trainer trainer(config);
  const sb::StepResult r = trainer.step();

  // The same leaves through the core's API on a fresh model with the same initialisation.
  auto backend = sb::make_cpu_backend();
  sb::GPT model(config.model, static_cast<int>(config.data.leaf_size), *backend);
  model.init(config.train.seed);
  const int L = static_cast<int>(config.data.leaves);
  const size_t leaf_tokens = size_t(config.data.leaf_size) * size_t(config.model.seq_len + 1);
  std::vector<int32_t> tokens(size_t(L) * leaf_tokens);
  trainer.sampler().leaves(0, sb::data::LeafRange{0, L}, tokens.data());
  std::vector<const int32_t*> leaves;
  for (int l = 0; l < L; ++l) leaves.push_back(tokens.data() + size_t(l) * leaf_tokens);
  auto acc = backend->make_accumulator(model.flat_size());
  std::vector<float> g(model.flat_size());
  sb::det::ExactSum leaf_sq;
  const float loss = sb::batch_gradient(model, leaves, *acc, g.data(), [&](size_t, float, const float* leaf_grad) {
    leaf_sq.merge(sb::sum_of_squares(leaf_grad, g.size()));
  });

  CHECK(std::memcmp(&loss, &r.stats.loss, sizeof(float)) == 0);
  REQUIRE(r.grad_fingerprints.size() == model.params().size());
  for (size_t t = 0; t < model.params().size(); ++t) {
    const sb::ParamView& p = model.params()[t];
    CHECK(r.grad_fingerprints[t] == sb::det::fingerprint(g.data() + p.offset, p.numel));
  }
  const float leaf_sq_mean = static_cast<float>(leaf_sq.to_f64() / L);
  CHECK(std::memcmp(&leaf_sq_mean, &r.stats.leaf_sq_mean, sizeof(float)) == 0);
  CHECK(r.stats.grad_norm == sb::norm2(g.data(), g.size()));
  CHECK(r.stats.tokens == L * config.data.leaf_size * config.model.seq_len);
  CHECK(r.stats.step == 1);
  CHECK(trainer.steps_done() == 1);
  CHECK(trainer.updates_done() == 1);
  // The update moved every tensor.
  sb::GPT init(config.model, static_cast<int>(config.data.leaf_size), *backend);
  init.init(config.train.seed);
  for (size_t t = 0; t < init.params().size(); ++t) {
    const sb::ParamView& p = init.params()[t];
    CAPTURE(p.name);
    CHECK(r.param_fingerprints[t] != sb::det::fingerprint(init.weights().data_as<float>() + p.offset, p.numel));
  }
  // Statistics are filled for every tensor; Muon matrices report an orthogonality error.
  REQUIRE(r.stats.tensors.size() == model.params().size());
  for (size_t t = 0; t < model.params().size(); ++t) {
    CAPTURE(model.params()[t].name);
    CHECK(r.stats.tensors[t].update_rms > 0.0f);
    CHECK(std::isfinite(r.stats.tensors[t].leaf_sq_mean));
    CHECK(std::isnan(r.stats.tensors[t].ortho_error) == (model.params()[t].kind != sb::ParamKind::matrix));
  }
  CHECK(std::isfinite(r.stats.noise_scale));
  CHECK(r.comm.total_bytes() > 0);
}

TEST_CASE("leaf_sum=native: the batch gradient is the leaves' fp32 sum in leaf order, on 1 and 3 threads") {
  sb::Config config = tiny_config();
  config.numerics.allreduce = sb::AllreduceMode::native;
  config.numerics.leaf_sum = sb::LeafSumMode::native;
  auto backend = sb::make_cpu_backend();
  sb::GPT model(config.model, static_cast<int>(config.data.leaf_size), *backend);
  model.init(config.train.seed);
  const int L = static_cast<int>(config.data.leaves);
  REQUIRE(L >= 3);
  const size_t leaf_tokens = size_t(config.data.leaf_size) * size_t(config.model.seq_len + 1);
  std::vector<int32_t> tokens(size_t(L) * leaf_tokens);
  sb::Trainer reference(config);
  reference.sampler().leaves(0, sb::data::LeafRange{0, L}, tokens.data());
  std::vector<const int32_t*> leaves;
  for (int l = 0; l < L; ++l) leaves.push_back(tokens.data() + size_t(l) * leaf_tokens);
  // The leaves' gradients summed on the host, s = g0; s = s + g1; …, then divided by L.
  std::vector<float> sum;
  auto exact = backend->make_accumulator(model.flat_size());
  std::vector<float> g_exact(model.flat_size());
  sb::batch_gradient(model, leaves, *exact, g_exact.data(), [&](size_t l, float, const float* g) {
    if (l == 0) {
      sum.assign(g, g + model.flat_size());
    } else {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + g[i];
    }
  });
  for (float& x : sum) x = sb::ops::leaf_mean(x, static_cast<float>(L));
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    config.run.threads = threads;
    sb::Trainer trainer(config);
    const sb::StepResult r = trainer.step();
    REQUIRE(r.grad_fingerprints.size() == model.params().size());
    bool differs_from_exact = false;
    for (size_t t = 0; t < model.params().size(); ++t) {
      const sb::ParamView& p = model.params()[t];
      CAPTURE(p.name);
      CHECK(r.grad_fingerprints[t] == sb::det::fingerprint(sum.data() + p.offset, p.numel));
      differs_from_exact |= r.grad_fingerprints[t] != sb::det::fingerprint(g_exact.data() + p.offset, p.numel);
    }
    CHECK(differs_from_exact);  // the switch changes bits
  }
}

TEST_CASE("statistics and fingerprints off, or allreduce=native on one rank: the same weights") {
  sb::Config config = tiny_config();
  config.train.steps = 8;
  auto weights = [](const sb::Config& c, const sb::TrainerOptions& o) {
    sb::Trainer t(c, o);
    std::vector<float> losses;
    while (!t.finished()) losses.push_back(t.step().stats.loss);
    std::vector<float> w = t.export_state().weights;
    w.insert(w.end(), losses.begin(), losses.end());
    return w;
  };
  const std::vector<float> ref = weights(config, {});
  sb::TrainerOptions quiet;
  quiet.statistics = false;
  quiet.fingerprints = false;
  const std::vector<float> off = weights(config, quiet);
  CHECK(std::memcmp(ref.data(), off.data(), ref.size() * sizeof(float)) == 0);
  sb::Config native = config;
  native.numerics.allreduce = sb::AllreduceMode::native;
  const std::vector<float> nat = weights(native, {});
  CHECK(std::memcmp(ref.data(), nat.data(), ref.size() * sizeof(float)) == 0);
  sb::TrainerOptions o;
  o.statistics = false;
  sb::Trainer t(config, o);
  const sb::StepResult r = t.step();
  CHECK(r.stats.tensors.empty());
  CHECK(std::isnan(r.stats.noise_scale));
  CHECK(std::isfinite(r.stats.grad_norm));
}

TEST_CASE("forty steps lower the training and validation loss") {
  sb::Config config = tiny_config();
  config.train.eval_every = 20;
  config.train.eval_leaves = 4;
  sb::Trainer trainer(config);
  const float val0 = trainer.evaluate();
  float first = 0, last = 0, val = 0;
  int evals = 0;
  while (!trainer.finished()) {
    const sb::StepResult r = trainer.step();
    if (r.stats.step == 1) first = r.stats.loss;
    last = r.stats.loss;
    if (!std::isnan(r.stats.val_loss)) {
      val = r.stats.val_loss;
      ++evals;
    }
  }
  CHECK(evals == 2);
  CHECK(val0 == doctest::Approx(std::log(64.0)).epsilon(0.05));  // uniform at initialisation
  CHECK(last < first - 0.25f);
  CHECK(val < val0 - 0.25f);
  CHECK(trainer.evaluate() == val);  // evaluation does not change the model
}

TEST_CASE("export_state into the buffers of an earlier state: bitwise the fresh export") {
  sb::Config config = tiny_config();
  config.train.steps = 3;
  sb::Trainer t(config);
  t.step();
  sb::TrainerState reused = t.export_state();  // step 1's state, then overwritten with step 3's
  reused.experiment_id = "stale";
  reused.optimizer.push_back({"stale", std::vector<float>(5, 1.0f)});  // a buffer the optimizer lacks
  const float* weights_before = reused.weights.data();
  t.step();
  t.step();
  t.export_state(reused);
  const sb::TrainerState fresh = t.export_state();
  CHECK(reused.weights.data() == weights_before);  // the same buffer, no new allocation
  CHECK(reused.step == fresh.step);
  CHECK(reused.updates == fresh.updates);
  CHECK(reused.experiment_id == fresh.experiment_id);
  REQUIRE(reused.weights.size() == fresh.weights.size());
  CHECK(std::memcmp(reused.weights.data(), fresh.weights.data(), fresh.weights.size() * sizeof(float)) == 0);
  REQUIRE(reused.optimizer.size() == fresh.optimizer.size());
  for (size_t k = 0; k < fresh.optimizer.size(); ++k) {
    CHECK(reused.optimizer[k].name == fresh.optimizer[k].name);
    REQUIRE(reused.optimizer[k].data.size() == fresh.optimizer[k].data.size());
    CHECK(std::memcmp(reused.optimizer[k].data.data(), fresh.optimizer[k].data.data(),
                      fresh.optimizer[k].data.size() * sizeof(float)) == 0);
  }
}
