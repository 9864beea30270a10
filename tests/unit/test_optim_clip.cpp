// Exact norms and clipping: the correctly rounded √ of an exact sum (midpoint and near-midpoint
// cases that fp64 alone would round wrongly), the global norm against fp64, the clip rule, the
// per-tensor statistics, and the same bits on 1..4 threads.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/clip.hpp"
#include "test_op_support.hpp"

namespace {

float sqrt_of(std::initializer_list<double> values) {
  sb::det::ExactSum s;
  for (double v : values) s.add(v);
  return sb::sqrt_rounded(s);
}

}  // namespace

TEST_CASE("exact norm: correctly rounded square root of an exact sum") {
  CHECK(sqrt_of({}) == 0.0f);
  CHECK(sqrt_of({9.0, 16.0}) == 5.0f);
  CHECK(std::isnan(sqrt_of({-1.0})));
  CHECK(std::isinf(sqrt_of({std::numeric_limits<double>::infinity()})));
  // m = 1 + 2^-24 is the midpoint between 1 and 1 + 2^-23; m² is exact in fp64.
  const double m = 1.0 + 0x1p-24;
  CHECK(sqrt_of({m * m}) == 1.0f);                       // tie: to even (1)
  CHECK(sqrt_of({m * m, 0x1p-200}) == 1.0f + 0x1p-23f);  // a hair above: up (fp64 alone: 1)
  CHECK(sqrt_of({m * m, -0x1p-200}) == 1.0f);            // a hair below: down
  const double m_odd = 1.0 + 3 * 0x1p-24;                // between 1 + 2^-23 (odd) and 1 + 2^-22
  CHECK(sqrt_of({m_odd * m_odd}) == 1.0f + 0x1p-22f);
  CHECK(sqrt_of({m_odd * m_odd, -0x1p-200}) == 1.0f + 0x1p-23f);
  // Just below a power of two the lower neighbour is half an ulp closer.
  const double below2 = 2.0 - 0x1p-24;  // midpoint between 2 − 2^-23 and 2
  CHECK(sqrt_of({below2 * below2}) == 2.0f);
  CHECK(sqrt_of({below2 * below2, -0x1p-200}) == 2.0f - 0x1p-23f);
  // Subnormal results and overflow.
  CHECK(sqrt_of({0x1p-298}) == 0x1p-149f);
  CHECK(sqrt_of({0x1p300, 0x1p300}) == std::numeric_limits<float>::infinity());
  const double fmax = std::numeric_limits<float>::max();
  CHECK(sqrt_of({fmax * fmax}) == std::numeric_limits<float>::max());
}

TEST_CASE("exact norm: global norm, max and mean against fp64") {
  const std::vector<float> g = sb::test::uniform(100000, 3, -2.0f, 2.0f);
  double sq = 0.0, sum = 0.0, mx = 0.0;
  for (float x : g) {
    sq += static_cast<double>(x) * x;
    sum += x;
    mx = std::max(mx, std::fabs(static_cast<double>(x)));
  }
  CHECK(sb::norm2(g.data(), g.size()) == doctest::Approx(std::sqrt(sq)).epsilon(1e-7));
  const sb::GradStats s = sb::grad_stats(g.data(), g.size());
  CHECK(s.max_abs == static_cast<float>(mx));
  CHECK(s.mean == doctest::Approx(sum / g.size()).epsilon(1e-6));
  std::vector<float> with_nan = g;
  with_nan[777] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(sb::max_abs(with_nan.data(), with_nan.size())));
  CHECK(sb::max_abs(nullptr, 0) == 0.0f);
}

TEST_CASE("clip: factor and application") {
  CHECK(sb::clip_factor(0.5f, 1.0) == 1.0f);
  CHECK(sb::clip_factor(4.0f, 1.0) == static_cast<float>(1.0 / (4.0 + 1e-6)));
  CHECK(sb::clip_factor(4.0f, 0.0) == 1.0f);  // off
  CHECK(sb::clip_factor(std::numeric_limits<float>::infinity(), 1.0) == 1.0f);
  std::vector<float> g = {3.0f, 4.0f, 0.0f, 0.0f};
  const sb::ClipResult r = sb::clip_grad_norm(sb::host_optim_kernels(), g.data(), g.size(), 1.0);
  CHECK(r.norm == 5.0f);
  CHECK(r.factor == static_cast<float>(1.0 / (5.0 + 1e-6)));
  CHECK(g[0] == 3.0f * r.factor);
  CHECK(g[1] == 4.0f * r.factor);
  std::vector<float> small = {0.3f, 0.4f};
  CHECK(sb::clip_grad_norm(sb::host_optim_kernels(), small.data(), 2, 1.0).factor == 1.0f);
  CHECK(small[0] == 0.3f);
}

TEST_CASE("clip: per-tensor statistics follow the layout") {
  const std::vector<sb::ParamView> layout = {{"a", {2}, 0, 2, sb::ParamKind::bias, 0, 0},
                                             {"b", {2, 2}, 16, 4, sb::ParamKind::matrix, 0, 0}};
  std::vector<float> g(20, 0.0f);
  g[0] = -3.0f;
  g[1] = 4.0f;
  g[16] = 1.0f;
  g[17] = -1.0f;
  g[18] = 1.0f;
  g[19] = -2.0f;
  const auto s = sb::grad_stats(g.data(), layout);
  REQUIRE(s.size() == 2);
  CHECK(s[0].norm == 5.0f);
  CHECK(s[0].max_abs == 4.0f);
  CHECK(s[0].mean == 0.5f);
  CHECK(s[1].norm == sb::sqrt_rounded([] {
          sb::det::ExactSum e;
          e.add(7.0);
          return e;
        }()));
  CHECK(s[1].max_abs == 2.0f);
  CHECK(s[1].mean == -0.25f);
}

TEST_CASE("clip: the same bits on 1..4 threads") {
  const int saved = omp_get_max_threads();
  const std::vector<float> g0 = sb::test::uniform(300001, 5, -1e3f, 1e3f);
  std::vector<float> ref;
  float ref_norm = 0.0f;
  for (int t = 1; t <= 4; ++t) {
    omp_set_num_threads(t);
    std::vector<float> g = g0;
    const sb::ClipResult r = sb::clip_grad_norm(sb::host_optim_kernels(), g.data(), g.size(), 1.0);
    if (t == 1) {
      ref = g;
      ref_norm = r.norm;
      continue;
    }
    CHECK(std::memcmp(&r.norm, &ref_norm, sizeof(float)) == 0);
    CHECK(sb::test::same_bits(g, ref, "clipped gradient"));
  }
  omp_set_num_threads(saved);
}
