// Leaf variance and the gradient noise scale (McCandlish et al. 2018, appendix A): the estimators
// on constructed leaf gradients whose answer is known in closed form; unbiasedness on Gaussian
// leaf gradients with a known mean and covariance; loss scaling divides out exactly; and the
// ExactSum words merged across "ranks" give bitwise the one-process statistics.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/det/philox.hpp"

namespace {

// The definitions: one ExactSum::add per term, in order.
sb::det::ExactSum plain_sum_of_squares(const float* x, size_t n) {
  sb::det::ExactSum s;
  for (size_t i = 0; i < n; ++i) s.add(sb::exact_square(x[i]));
  return s;
}

// Two tensors with a gap between them, as gpt_param_layout pads: a (4) at 0, b (3) at 16.
std::vector<sb::ParamView> two_tensors() {
  return {{"a", {4}, 0, 4, sb::ParamKind::bias, 0.0f, 0.0f}, {"b", {3}, 16, 3, sb::ParamKind::bias, 0.0f, 0.0f}};
}
constexpr size_t kFlat = 19;

// Leaf gradients g_l = μ + d_l with Σ_l d_l = 0 for tensor a (b is a constant vector).
std::vector<std::vector<float>> leaf_gradients(float scale) {
  const float mu[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  const float d[4][4] = {{1, 1, 0, 0}, {-1, -1, 0, 0}, {0, 0, 2, -2}, {0, 0, -2, 2}};
  std::vector<std::vector<float>> leaves(4, std::vector<float>(kFlat, 0.0f));
  for (int l = 0; l < 4; ++l) {
    for (int i = 0; i < 4; ++i) leaves[l][i] = (mu[i] + d[l][i]) * scale;
    for (int i = 0; i < 3; ++i) leaves[l][16 + i] = 2.0f * scale;
  }
  return leaves;
}

std::vector<float> batch_gradient() {
  std::vector<float> g(kFlat, 0.0f);
  const float mu[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  for (int i = 0; i < 4; ++i) g[i] = mu[i];
  for (int i = 0; i < 3; ++i) g[16 + i] = 2.0f;
  return g;
}

sb::StepStats statistics(float scale, int64_t leaf_size) {
  sb::GradientStatistics stats(two_tensors());
  for (const std::vector<float>& g : leaf_gradients(scale)) stats.add_leaf(g.data());
  const std::vector<float> batch = batch_gradient();
  sb::StepStats s;
  stats.finish(batch.data(), scale, 4, leaf_size, s);
  return s;
}

}  // namespace

TEST_CASE("noise-scale estimators on leaves with a known mean and spread") {
  // L = 4 leaves of b = 2 sequences. Tensor a: |μ|² = 14.25 and s = mean_l ‖d_l‖² = 20/4 = 5, so
  // |G_small|² = 19.25, |G_big|² = 14.25 and, from the closed forms,
  //   |G|² estimate = |μ|² − s/(L−1) = 14.25 − 5/3,   tr(Σ) estimate = s·L·b/(L−1) = 40/3.
  // Tensor b: every leaf equal, so tr(Σ) = 0 and |G|² = 12 exactly.
  const sb::StepStats s = statistics(1.0f, 2);
  REQUIRE(s.tensors.size() == 2);
  const sb::TensorStats& a = s.tensors[0];
  CHECK(a.leaf_sq_mean == 19.25f);
  CHECK(a.batch_sq == 14.25f);
  CHECK(a.grad_sq_est == doctest::Approx(14.25 - 5.0 / 3.0).epsilon(1e-6));
  CHECK(a.trace_est == doctest::Approx(40.0 / 3.0).epsilon(1e-6));
  CHECK(a.noise_scale == doctest::Approx((40.0 / 3.0) / (14.25 - 5.0 / 3.0)).epsilon(1e-6));
  CHECK(a.grad_norm == doctest::Approx(std::sqrt(14.25)).epsilon(1e-7));
  CHECK(a.grad_max == 3.0f);
  CHECK(a.grad_mean == 0.625f);
  const sb::TensorStats& b = s.tensors[1];
  CHECK(b.trace_est == 0.0f);
  CHECK(b.grad_sq_est == 12.0f);
  CHECK(b.noise_scale == 0.0f);
  // Whole model: the sums of both tensors.
  CHECK(s.leaf_sq_mean == 31.25f);
  CHECK(s.batch_sq == 26.25f);
  CHECK(s.trace_est == doctest::Approx(40.0 / 3.0).epsilon(1e-6));
}

TEST_CASE("a loss scale divides out of the leaf sums exactly") {
  const sb::StepStats plain = statistics(1.0f, 2);
  const sb::StepStats scaled = statistics(1024.0f, 2);
  REQUIRE(plain.tensors.size() == scaled.tensors.size());
  CHECK(std::memcmp(plain.tensors.data(), scaled.tensors.data(), plain.tensors.size() * sizeof(sb::TensorStats)) == 0);
  CHECK(plain.noise_scale == scaled.noise_scale);
}

TEST_CASE("leaf sums merged across ranks as ExactSum words equal one process's, bitwise") {
  const std::vector<std::vector<float>> leaves = leaf_gradients(1.0f);
  sb::GradientStatistics whole(two_tensors()), rank0(two_tensors()), rank1(two_tensors());
  for (const auto& g : leaves) whole.add_leaf(g.data());
  rank0.add_leaf(leaves[3].data());  // ranks hold disjoint leaves, in any order
  rank1.add_leaf(leaves[1].data());
  rank1.add_leaf(leaves[0].data());
  rank1.add_leaf(leaves[2].data());
  std::vector<int64_t> w0(rank0.words()), w1(rank1.words());
  rank0.to_words(w0.data());
  rank1.to_words(w1.data());
  for (size_t i = 0; i < w0.size(); ++i) w0[i] += w1[i];  // what an int64 SUM all-reduce does
  rank0.from_words(w0.data());
  const std::vector<float> batch = batch_gradient();
  sb::StepStats a, b;
  whole.finish(batch.data(), 1.0, 4, 2, a);
  rank0.finish(batch.data(), 1.0, 4, 2, b);
  CHECK(std::memcmp(a.tensors.data(), b.tensors.data(), a.tensors.size() * sizeof(sb::TensorStats)) == 0);
}

TEST_CASE("one leaf gives no variance estimate; a skipped step leaves gradient fields NaN") {
  const sb::NoiseEstimate e = sb::estimate_noise(2.0, 1.0, 4.0, 4.0);
  CHECK(std::isnan(e.grad_sq));
  CHECK(std::isnan(e.trace));
  sb::GradientStatistics stats(two_tensors());
  const std::vector<std::vector<float>> leaves = leaf_gradients(1.0f);
  stats.add_leaf(leaves[0].data());
  sb::StepStats s;
  stats.finish(nullptr, 1.0, 1, 1, s);
  CHECK(s.tensors[0].leaf_sq_mean == 14.25f);  // ‖(2, −1, 0.5, 3)‖²
  CHECK(std::isnan(s.tensors[0].grad_norm));
  CHECK(std::isnan(s.noise_scale));
}

TEST_CASE("the estimators are unbiased on Gaussian leaf gradients (McCandlish et al. 2018)") {
  // Per-sequence gradients x ~ N(μ, σ²·I) in n dimensions: a leaf of b sequences is
  // N(μ, σ²/b·I) and tr(Σ) = n·σ². Averaged over many steps, the estimates approach |μ|² and n·σ²
  // (B_simple = n·σ²/|μ|²); each mean is checked within 5 standard errors.
  const int n = 32, L = 8, b = 4, trials = 3000;
  const double sigma = 0.5;
  std::vector<sb::ParamView> layout{{"x", {n}, 0, size_t(n), sb::ParamKind::bias, 0.0f, 0.0f}};
  std::vector<float> mu(n);
  double mu_sq = 0;
  for (int i = 0; i < n; ++i) {
    mu[i] = 0.05f * static_cast<float>(i % 7) - 0.1f;
    mu_sq += double(mu[i]) * double(mu[i]);
  }
  double sum_g = 0, sum_g2 = 0, sum_t = 0, sum_t2 = 0;
  std::vector<float> leaf(n), batch(n);
  for (int t = 0; t < trials; ++t) {
    sb::GradientStatistics stats(layout);
    std::vector<double> acc(n, 0.0);
    for (int l = 0; l < L; ++l) {
      for (int i = 0; i < n; ++i) {
        const uint64_t index = (uint64_t(t) * L + uint64_t(l)) * n + uint64_t(i);
        const double z = sb::det::philox_normal(7, 1, index);
        leaf[i] = static_cast<float>(mu[i] + sigma / std::sqrt(double(b)) * z);
        acc[i] += leaf[i];
      }
      stats.add_leaf(leaf.data());
    }
    for (int i = 0; i < n; ++i) batch[i] = static_cast<float>(acc[i] / L);
    sb::StepStats s;
    stats.finish(batch.data(), 1.0, L, b, s);
    sum_g += s.tensors[0].grad_sq_est;
    sum_g2 += double(s.tensors[0].grad_sq_est) * s.tensors[0].grad_sq_est;
    sum_t += s.tensors[0].trace_est;
    sum_t2 += double(s.tensors[0].trace_est) * s.tensors[0].trace_est;
  }
  const double mean_g = sum_g / trials, mean_t = sum_t / trials;
  const double se_g = std::sqrt((sum_g2 / trials - mean_g * mean_g) / trials);
  const double se_t = std::sqrt((sum_t2 / trials - mean_t * mean_t) / trials);
  const double trace = n * sigma * sigma;
  CHECK(std::fabs(mean_g - mu_sq) < 5 * se_g);
  CHECK(std::fabs(mean_t - trace) < 5 * se_t);
  CHECK(se_t < 0.05 * trace);  // the check has power: the error bars are tight
  // The biased plug-in |G_big|² would overshoot |μ|² by tr(Σ)/B_big = n·σ²/(L·b): far outside.
  CHECK(trace / (L * b) > 10 * se_g);
}

TEST_CASE("the binned sum of squares is exactly sum_of_squares (every exponent, NaN, Inf)") {
  // Random bit patterns cover every exponent, subnormals and both zeros; the length crosses
  // several 2^16-element blocks and is not a multiple of 4.
  const size_t n = 200003;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t b = sb::det::philox_u32(3, 5, i);
    if ((b >> 23 & 0xFFu) == 0xFFu) b ^= 0x00800000u;  // finite values only here
    std::memcpy(&x[i], &b, sizeof b);
  }
  x[7] = 0x1.fffffep127f;
  x[8] = -0.0f;
  x[9] = 0x1p-149f;
  auto same = [](const sb::det::ExactSum& a, const sb::det::ExactSum& b) {
    const double da = a.to_f64(), db = b.to_f64();
    const float fa = a.to_f32(), fb = b.to_f32();
    return std::memcmp(&da, &db, sizeof da) == 0 && std::memcmp(&fa, &fb, sizeof fa) == 0;
  };
  CHECK(same(sb::binned_sum_of_squares(x.data(), n), plain_sum_of_squares(x.data(), n)));
  // Small magnitudes only (a sum that large values do not swamp) and short tails.
  std::vector<float> small(1000);
  for (size_t i = 0; i < small.size(); ++i) small[i] = sb::det::philox_normal(3, 6, i) * 1e-30f;
  for (size_t len : {size_t(0), size_t(1), size_t(5), small.size()}) {
    CAPTURE(len);
    CHECK(same(sb::binned_sum_of_squares(small.data(), len), plain_sum_of_squares(small.data(), len)));
  }
  small[17] = INFINITY;
  CHECK(std::isinf(sb::binned_sum_of_squares(small.data(), small.size()).to_f64()));
  small[18] = NAN;
  CHECK(std::isnan(sb::binned_sum_of_squares(small.data(), small.size()).to_f64()));
}
