// Fused softmax + cross-entropy (core/cpu/softmax_xent.cpp): bitwise equal to the shared row
// formulas (ops/softmax_xent.hpp), the exact max's ±0/NaN rule, loss scaling exact for powers of
// two, and the gradient against fp64 finite differences of the fp64 mean loss.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/bits.hpp"
#include "test_op_support.hpp"

using namespace sb;

TEST_CASE("exact_max: order-free, +0 over -0, canonical NaN") {
  const float nan1 = det::float_of_bits(0x7fc00001u), nan2 = det::float_of_bits(0xffc00002u);
  CHECK(det::bits_of(ops::exact_max(0.0f, -0.0f)) == 0u);
  CHECK(det::bits_of(ops::exact_max(-0.0f, 0.0f)) == 0u);
  CHECK(det::bits_of(ops::exact_max(-0.0f, -0.0f)) == 0x80000000u);
  CHECK(det::bits_of(ops::exact_max(nan1, 1.0f)) == 0x7fc00000u);
  CHECK(det::bits_of(ops::exact_max(1.0f, nan2)) == 0x7fc00000u);
  CHECK(det::bits_of(ops::exact_max(nan2, nan1)) == 0x7fc00000u);
  CHECK(ops::exact_max(-INFINITY, -3.0f) == -3.0f);
  CHECK(ops::exact_max(2.0f, 1.0f) == 2.0f);
}

TEST_CASE("softmax_xent: CPU equals the row formulas, bitwise; loss scale exact") {
  auto be = make_cpu_backend();
  for (int V : {2, 31, 256, 1000}) {
    const int N = 11;
    const auto logits = test::uniform(static_cast<size_t>(N) * V, 1, -8, 8);
    std::vector<int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = (n * 37) % V;
    std::vector<float> losses(N), stats(2 * N), dl(logits.size()), dl_scaled(logits.size());
    be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
    be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
    be->softmax_xent_backward(dl_scaled.data(), logits.data(), stats.data(), targets.data(), N, V, 1024.0f);
    std::vector<float> losses_ref(N), stats_ref(2 * N), dl_ref(logits.size()), dl_unscaled(logits.size());
    for (int n = 0; n < N; ++n) {
      losses_ref[n] = ops::xent_row_forward(&stats_ref[2 * n], &logits[n * V], targets[n], V);
      for (int v = 0; v < V; ++v)
        dl_ref[n * V + v] = ops::xent_dlogit(logits[n * V + v], stats_ref[2 * n], stats_ref[2 * n + 1], v == targets[n],
                                             static_cast<float>(N), 1.0f);
    }
    for (size_t i = 0; i < dl.size(); ++i) dl_unscaled[i] = dl_scaled[i] / 1024.0f;
    CAPTURE(V);
    CHECK(test::same_bits(losses, losses_ref, "xent losses"));
    CHECK(test::same_bits(stats, stats_ref, "xent stats"));
    CHECK(test::same_bits(dl, dl_ref, "xent dlogits"));
    CHECK(test::same_bits(dl, dl_unscaled, "xent loss scale 1024"));
  }
}

TEST_CASE("softmax_xent gradient matches fp64 finite differences of the mean loss") {
  auto be = make_cpu_backend();
  const int N = 6, V = 17;
  const auto logits = test::uniform(static_cast<size_t>(N) * V, 11, -4, 4);
  std::vector<int32_t> targets = {0, 16, 3, 3, 9, 12};
  std::vector<float> losses(N), stats(2 * N), dl(logits.size());
  be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
  be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
  auto ld = test::to_double(logits);
  auto row_loss = [&](int n) {
    double m = -INFINITY, s = 0;
    for (int v = 0; v < V; ++v) m = std::fmax(m, ld[n * V + v]);
    for (int v = 0; v < V; ++v) s += std::exp(ld[n * V + v] - m);
    return m + std::log(s) - ld[n * V + targets[n]];
  };
  double worst = 0;
  for (int n = 0; n < N; ++n) worst = std::fmax(worst, std::fabs(losses[n] - row_loss(n)) / row_loss(n));
  MESSAGE("xent loss max relative error vs fp64: ", worst);
  CHECK(worst < 1e-6);
  auto loss = [&] {
    double s = 0;
    for (int n = 0; n < N; ++n) s += row_loss(n);
    return s / N;
  };
  test::check_gradient(dl, test::fd_gradient(ld, loss), 1e-5, "xent dlogits");
}
