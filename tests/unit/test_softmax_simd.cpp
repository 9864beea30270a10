// The vectorised softmax loops of the CPU backend (core/cpu/softmax_xent.cpp, attention.cpp: samebits
// exp inlined, its range branches selected per SIMD lane) over inputs wide enough to reach every
// branch of exp (e^x rounding to 0 below -104, the finite range), bitwise against the shared row
// formulas (ops::xent_row_forward, ops::xent_dlogit, test::attention_row_forward).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/attention.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "support/row_reference.hpp"
#include "test_op_support.hpp"

using namespace sb;

TEST_CASE("softmax_xent: logits in [-300, 300] (numerators that underflow to 0), bitwise") {
  auto be = make_cpu_backend();
  const int N = 7;
  for (int V : {17, 256}) {
    const auto logits = test::uniform(static_cast<size_t>(N) * V, 5, -300, 300);
    std::vector<int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = (n * 5) % V;
    std::vector<float> losses(N), stats(2 * N), dl(logits.size());
    be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
    be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
    std::vector<float> losses_ref(N), stats_ref(2 * N), dl_ref(logits.size());
    for (int n = 0; n < N; ++n) {
      losses_ref[n] = ops::xent_row_forward(&stats_ref[2 * n], &logits[static_cast<size_t>(n) * V], targets[n], V);
      for (int v = 0; v < V; ++v) {
        const size_t i = static_cast<size_t>(n) * V + v;
        dl_ref[i] = ops::xent_dlogit(logits[i], stats_ref[2 * n], stats_ref[2 * n + 1], v == targets[n],
                                     static_cast<float>(N), 1.0f);
      }
    }
    CAPTURE(V);
    CHECK(test::same_bits(losses, losses_ref, "xent losses"));
    CHECK(test::same_bits(stats, stats_ref, "xent stats"));
    CHECK(test::same_bits(dl, dl_ref, "xent dlogits"));
  }
}

TEST_CASE("attention: scores hundreds apart (probabilities that underflow to 0), bitwise") {
  auto be = make_cpu_backend();
  const int B = 1, T = 45, C = 32, NH = 1, hs = C / NH, ld = 3 * C;
  const auto qkv = test::uniform(static_cast<size_t>(B) * T * ld, 9, -12, 12);
  std::vector<float> y(static_cast<size_t>(B) * T * C), att(static_cast<size_t>(B) * NH * T * T);
  be->attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  std::vector<float> y_ref(y.size()), att_ref(att.size());
  for (int t = 0; t < T; ++t)
    test::attention_row_forward(&y_ref[static_cast<size_t>(t) * C], &att_ref[static_cast<size_t>(t) * T],
                                &qkv[static_cast<size_t>(t) * ld], &qkv[C], &qkv[2 * C], ld, t, T, hs);
  bool underflow = false;  // the test reaches exp's zero branch (causal entries j ≤ t only)
  for (int t = 0; t < T; ++t)
    for (int j = 0; j <= t; ++j) underflow = underflow || att_ref[static_cast<size_t>(t) * T + j] == 0.0f;
  CHECK(underflow);
  CHECK(test::same_bits(att, att_ref, "attention probabilities"));
  CHECK(test::same_bits(y, y_ref, "attention out"));
}
