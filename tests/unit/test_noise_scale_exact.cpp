// The trainer's gradient-noise statistics (train/statistics.hpp, McCandlish et al. 2018 app. A)
// against exact per-example gradients of a small GPT: with leaf_size 1 every leaf is one sequence,
// so one forward/backward per leaf is that sequence's gradient g_i. Two claims (docs/STUDIES.md §1):
//  1. Algebra, on the trainer's own leaves of several steps: with B_small = 1, B_big = L,
//       tr(Σ)_est = (1/(L−1)) Σ_i ‖g_i − Ḡ‖²   (the unbiased sample covariance trace)
//       |G|²_est  = ‖Ḡ‖² − tr(Σ)_est / L
//     equal to fp rounding (the trainer rounds G to fp32 and the estimates to fp32).
//  2. Statistics: batches of L sequences drawn with replacement from a pool of N per-example
//     gradients have E[tr(Σ)_est] = tr(Σ_pool) and E[|G|²_est] = ‖μ_pool‖²; the mean over R
//     batches is checked within 5 standard errors, and the biased plug-in ‖Ḡ‖² shown to miss.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/data/sampler.hpp"
#include "support/train_bits.hpp"

namespace {

sb::Config tiny_config() {
  // One sequence per leaf: leaf gradients are per-example gradients. One thread never changes a
  // bit and keeps the test fast on a loaded machine.
  return sb::test::tiny_gpt_config({.n_layer = 1, .leaves = 8, .steps = 3, .warmup = 1});
}

// Per-example gradients of the sequences `tokens` (n rows of seq_len + 1) at `model`'s weights:
// (n, flat_size) row-major, fp32 as backward leaves them.
std::vector<float> per_example_gradients(sb::GPT& model, const int32_t* tokens, int n) {
  const size_t row = size_t(model.config().seq_len + 1), F = model.flat_size();
  std::vector<float> g(size_t(n) * F);
  for (int i = 0; i < n; ++i) {
    model.forward(tokens + size_t(i) * row);
    model.backward();
    std::memcpy(g.data() + size_t(i) * F, model.grads().data_as<float>(), F * sizeof(float));
  }
  return g;
}

// Exact-in-fp64 statistics of rows `idx` of g restricted to elements [begin, end).
struct Direct {
  double mean_sq = 0;  // ‖Ḡ‖²
  double trace = 0;    // (1/(L−1)) Σ_i ‖g_i − Ḡ‖²
  double grad_sq = 0;  // ‖Ḡ‖² − trace/L
};
Direct direct(const std::vector<float>& g, size_t F, const std::vector<int>& idx, size_t begin, size_t end) {
  const double L = double(idx.size());
  Direct d;
  for (size_t e = begin; e < end; ++e) {
    double m = 0;
    for (int i : idx) m += g[size_t(i) * F + e];
    m /= L;
    d.mean_sq += m * m;
    for (int i : idx) {
      const double r = g[size_t(i) * F + e] - m;
      d.trace += r * r;
    }
  }
  d.trace /= L - 1;
  d.grad_sq = d.mean_sq - d.trace / L;
  return d;
}

// |a − b| within a relative fp error of the terms' magnitude `scale`.
bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-5 * scale + 1e-30; }

}  // namespace

TEST_CASE("the trainer's noise estimates are the exact per-example covariance algebra") {
  const sb::Config config = tiny_config();
  sb::Trainer trainer(config);
  auto backend = sb::make_cpu_backend();
  sb::GPT model(config.model, 1, *backend);
  const int L = static_cast<int>(config.data.leaves);
  const size_t F = model.flat_size(), row = size_t(config.model.seq_len + 1);
  std::vector<int> all(L);
  for (int i = 0; i < L; ++i) all[i] = i;
  std::vector<int32_t> tokens(size_t(L) * row);

  for (int64_t step = 0; step < config.train.steps; ++step) {
    CAPTURE(step);
    // The per-example gradients at the weights this step starts from, on this step's leaves.
    std::memcpy(model.weights().data_as<float>(), trainer.model().weights().data_as<float>(), F * sizeof(float));
    trainer.sampler().leaves(uint64_t(step), sb::data::LeafRange{0, L}, tokens.data());
    const std::vector<float> g = per_example_gradients(model, tokens.data(), L);
    const sb::StepResult r = trainer.step();
    REQUIRE(r.stats.tensors.size() == model.params().size());

    Direct whole;
    for (size_t t = 0; t < model.params().size(); ++t) {
      const sb::ParamView& p = model.params()[t];
      CAPTURE(p.name);
      const Direct d = direct(g, F, all, p.offset, p.offset + p.numel);
      const sb::TensorStats& s = r.stats.tensors[t];
      const double scale = d.mean_sq + d.trace;
      CHECK(close(s.batch_sq, d.mean_sq, scale));
      CHECK(close(s.trace_est, d.trace, scale));
      CHECK(close(s.grad_sq_est, d.grad_sq, scale));
      whole.mean_sq += d.mean_sq;
      whole.trace += d.trace;
      whole.grad_sq += d.grad_sq;
    }
    const double scale = whole.mean_sq + whole.trace;
    CHECK(close(r.stats.trace_est, whole.trace, scale));
    CHECK(close(r.stats.grad_sq_est, whole.grad_sq, scale));
    // B_simple = tr/|G|²: the relative errors of both add up (|G|²_est may be small or negative).
    const double ratio = whole.trace / whole.grad_sq;
    const double rel = 1e-5 * scale * (1 / std::fabs(whole.grad_sq) + 1 / whole.trace);
    CHECK(std::fabs(r.stats.noise_scale - ratio) <= rel * std::fabs(ratio));
  }
}

TEST_CASE("averaged over batches the estimates match the pool's exact mean and covariance") {
  // A pool of N sequences at the initial weights; batches of L drawn with replacement are i.i.d.
  // draws from the pool's empirical distribution: mean μ, covariance Σ = (1/N) Σ_n (g_n−μ)(g_n−μ)ᵀ.
  const sb::Config config = tiny_config();
  const int L = static_cast<int>(config.data.leaves), N = 64, R = 1500;
  auto backend = sb::make_cpu_backend();
  sb::GPT model(config.model, 1, *backend);
  model.init(config.train.seed);
  const size_t F = model.flat_size(), row = size_t(config.model.seq_len + 1);
  const sb::Trainer trainer(config);  // its sampler: the pool is the first N/L steps' leaves
  const sb::data::Sampler& sampler = trainer.sampler();
  std::vector<int32_t> tokens(size_t(N) * row);
  for (int s = 0; s < N / L; ++s)
    sampler.leaves(uint64_t(s), sb::data::LeafRange{0, L}, tokens.data() + size_t(s) * L * row);
  const std::vector<float> g = per_example_gradients(model, tokens.data(), N);

  std::vector<int> pool(N);
  for (int i = 0; i < N; ++i) pool[i] = i;
  const Direct p = direct(g, F, pool, 0, F);
  const double mu_sq = p.mean_sq, trace = p.trace * (N - 1) / N;  // population (1/N) trace

  sb::GradientStatistics stats(model.params());
  std::mt19937_64 rng(20181214);
  std::vector<float> batch(F);
  std::vector<double> acc(F);
  double sg = 0, sg2 = 0, st = 0, st2 = 0, sb_ = 0, sb2 = 0, sgt = 0;
  for (int r = 0; r < R; ++r) {
    stats.clear();
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int l = 0; l < L; ++l) {
      const float* gi = g.data() + size_t(rng() % uint64_t(N)) * F;
      stats.add_leaf(gi);
      for (size_t e = 0; e < F; ++e) acc[e] += gi[e];
    }
    for (size_t e = 0; e < F; ++e) batch[e] = static_cast<float>(acc[e] / L);
    sb::StepStats s;
    stats.finish(batch.data(), 1.0, L, 1, s);
    sg += s.grad_sq_est;
    sg2 += double(s.grad_sq_est) * s.grad_sq_est;
    st += s.trace_est;
    st2 += double(s.trace_est) * s.trace_est;
    sgt += double(s.grad_sq_est) * s.trace_est;
    sb_ += s.batch_sq;
    sb2 += double(s.batch_sq) * s.batch_sq;
  }
  const double mg = sg / R, mt = st / R, mb = sb_ / R;
  const double vg = sg2 / R - mg * mg, vt = st2 / R - mt * mt, cgt = sgt / R - mg * mt;
  const double se_g = std::sqrt(vg / R), se_t = std::sqrt(vt / R);
  const double se_b = std::sqrt((sb2 / R - mb * mb) / R);
  CAPTURE(mu_sq);
  CAPTURE(trace);
  CAPTURE(mg);
  CAPTURE(mt);
  CHECK(std::fabs(mt - trace) < 5 * se_t);
  CHECK(std::fabs(mg - mu_sq) < 5 * se_g);
  // The check has power: tight error bars, and the plug-in ‖Ḡ‖² (biased by tr(Σ)/L) is rejected.
  CHECK(se_t < 0.05 * trace);
  CHECK(std::fabs(mb - mu_sq) > 5 * se_b);
  // B_simple as a ratio of the averaged estimates (what smoothing |G|² and tr(Σ) separately, then
  // dividing, estimates): within 5 standard errors of the delta method.
  const double b_true = trace / mu_sq, b_avg = mt / mg;
  const double se_b_simple =
      b_avg * std::sqrt(vt / (mt * mt) + vg / (mg * mg) - 2 * cgt / (mt * mg)) / std::sqrt(double(R));
  CAPTURE(b_true);
  CAPTURE(b_avg);
  CHECK(std::fabs(b_avg - b_true) < 5 * se_b_simple);
}
