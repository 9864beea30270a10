// Through the Backend interface on the CPU backend: the host-traffic counter (bytes each way,
// per copy), and the per-tensor exact sums (TensorSums) equal to the host statistics bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/train/statistics.hpp"

TEST_CASE("the CPU backend counts the bytes of every host copy, each way") {
  const auto be = sb::make_cpu_backend();
  CHECK(be->host_traffic().to_host == 0);
  CHECK(be->host_traffic().from_host == 0);
  sb::Tensor t = be->alloc(sb::DType::f32, {100});
  std::vector<float> host(100, 1.5f);
  be->copy_from_host(t.data(), host.data(), 400);
  const sb::HostTraffic before = be->host_traffic();
  be->copy_to_host(host.data(), t.data(), 40);
  be->copy_to_host(host.data(), t.data(), 0);
  be->copy(t.data(), t.data(), 400);  // backend to backend: not host traffic
  be->zero(t.data(), 400);
  const sb::HostTraffic now = be->host_traffic();
  CHECK(now.from_host == 400);
  CHECK(now.to_host == 40);
  const sb::HostTraffic step = now - before;
  CHECK(step.from_host == 0);
  CHECK(step.to_host == 40);
}

namespace {

std::vector<float> values(size_t n, float scale, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("TensorSums through the CPU backend: exact sums, max and their accumulation") {
  const auto be = sb::make_cpu_backend();
  const size_t n = 200000;
  std::vector<float> a = values(n, 3.0f, 1), b = values(n, 1e-3f, 2);
  a[5] = -7.25f;
  const std::vector<sb::TensorSpan> spans{{0, 70000}, {70016, 0}, {70016, n - 70016}};
  const auto sums = be->make_tensor_sums(spans);
  sums->clear();
  sums->add(a.data(), true);
  sums->add(b.data(), true);
  std::vector<sb::det::ExactSum> sq(3), sm(3);
  std::vector<float> mx(3);
  sums->read(sq.data(), sm.data(), mx.data());
  for (size_t t = 0; t < spans.size(); ++t) {
    sb::det::ExactSum want_sq, want_sm;
    float want_max = 0;
    for (size_t i = spans[t].offset; i < spans[t].offset + spans[t].numel; ++i) {
      for (const float x : {a[i], b[i]}) {
        want_sq.add(sb::exact_square(x));
        want_sm.add(static_cast<double>(x));
        want_max = std::max(want_max, std::fabs(x));
      }
    }
    CHECK(sq[t].to_f64() == want_sq.to_f64());
    CHECK(sm[t].to_f64() == want_sm.to_f64());
    CHECK(same_bits(mx[t], want_max));
  }
  CHECK(same_bits(mx[0], 7.25f));
  a[70016 + 3] = std::numeric_limits<float>::quiet_NaN();
  sums->clear();
  sums->add(a.data(), true);
  sums->read(sq.data(), nullptr, mx.data());
  CHECK(std::isnan(mx[2]));
  CHECK_FALSE(std::isnan(mx[0]));
  CHECK(mx[1] == 0.0f);  // an empty span
}

TEST_CASE("statistics from backend memory equal the host statistics bit for bit (CPU backend)") {
  std::vector<sb::ParamView> layout(2);
  layout[0] = {"a", {300, 100}, 0, 30000, {}, 0, 0};
  layout[1] = {"b", {5000}, 30016, 5000, {}, 0, 0};
  const size_t flat = 35016;
  const auto be = sb::make_cpu_backend();
  sb::GradientStatistics host(layout), device(layout, *be);
  std::vector<std::vector<float>> leaves;
  for (uint32_t l = 0; l < 4; ++l) leaves.push_back(values(flat, 0.1f * float(l + 1), 10 + l));
  const std::vector<float> batch = values(flat, 0.05f, 99);
  sb::StepStats s_host, s_device;
  for (auto* st : {&host, &device}) {
    st->clear();
    for (const auto& g : leaves) st->add_leaf(g.data());
  }
  host.finish(batch.data(), 1.0, 4, 2, s_host);
  device.finish(batch.data(), 1.0, 4, 2, s_device);
  REQUIRE(s_host.tensors.size() == 2);
  REQUIRE(s_device.tensors.size() == 2);
  CHECK(std::memcmp(s_host.tensors.data(), s_device.tensors.data(), 2 * sizeof(sb::TensorStats)) == 0);
  for (const auto& [x, y] :
       {std::pair{s_host.leaf_sq_mean, s_device.leaf_sq_mean}, std::pair{s_host.batch_sq, s_device.batch_sq},
        std::pair{s_host.noise_scale, s_device.noise_scale}}) {
    CHECK(same_bits(x, y));
  }
  CHECK(std::isfinite(s_host.tensors[0].grad_norm));
  CHECK(s_host.tensors[0].grad_norm > 0.0f);
}
