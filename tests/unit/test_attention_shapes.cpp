// The CPU attention's blocked kernels (core/cpu/attention.cpp: causal parts of the canonical GEMM per
// (sequence, head)) at the shapes that stress them: head sizes 8, 20, 32 and 64 (one, a partial and
// two column panels), T = 1, odd T, the default model's T = 128 and T = 300 (chains across k-blocks)
// — forward and backward, each bitwise against the shared row references (ops::attention_row_*)
// and canonical dots for dq, dk and dv, on 2 threads.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/attention.hpp"
#include "support/row_reference.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

// underflow: q = k = 0 (uniform probabilities) and v = ±the smallest subnormal with random signs,
// so every product p·v underflows and each chain of P·V holds the signed zero of its last term —
// a chain that ran past its row would turn a −0 into +0 (fma(+0, +v, −0) = +0).
bool check(int B, int T, int C, int NH, uint32_t seed, bool underflow = false) {
  auto be = make_cpu_backend();
  const int hs = C / NH, ld = 3 * C;
  auto qkv = test::uniform(static_cast<size_t>(B) * T * ld, seed, -2, 2);
  if (underflow)
    for (size_t i = 0; i < qkv.size(); ++i)
      qkv[i] = static_cast<int>(i % ld) < 2 * C ? 0.0f : std::copysign(1.4e-45f, qkv[i]);
  const auto dy = test::uniform(static_cast<size_t>(B) * T * C, seed + 1);
  std::vector<float> y(static_cast<size_t>(B) * T * C), att(static_cast<size_t>(B) * NH * T * T, -1.0f);
  std::vector<float> dqkv(qkv.size()), datt(att.size(), -1.0f);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  be->attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  be->attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(), att.data(), B, T, C, NH);
  omp_set_num_threads(saved);

  std::vector<float> y_ref(y.size()), att_ref(att.size()), datt_ref(att.size()), dqkv_ref(qkv.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t base = static_cast<size_t>(b) * T * ld + h * hs;
      const size_t head = (static_cast<size_t>(b) * NH + h) * T * T;
      const float* P = &att_ref[head];
      float* dS = &datt_ref[head];
      for (int t = 0; t < T; ++t) {
        test::attention_row_forward(
            &y_ref[(static_cast<size_t>(b) * T + t) * C + h * hs], &att_ref[head + static_cast<size_t>(t) * T],
            &qkv[base + static_cast<size_t>(t) * ld], &qkv[base + C], &qkv[base + 2 * C], ld, t, T, hs);
        test::attention_row_dscores(&dS[static_cast<size_t>(t) * T], &P[static_cast<size_t>(t) * T],
                                    &dy[(static_cast<size_t>(b) * T + t) * C + h * hs], &qkv[base + 2 * C], ld, t, T,
                                    hs);
      }
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < hs; ++d) {
          const size_t r = base + static_cast<size_t>(t) * ld + d;
          dqkv_ref[r] = ops::canonical_dot(&dS[static_cast<size_t>(t) * T], 1, &qkv[base + C + d], ld, t + 1, 0.0f);
          dqkv_ref[r + C] = ops::canonical_dot(&dS[static_cast<size_t>(t) * T + t], T,
                                               &qkv[base + static_cast<size_t>(t) * ld + d], ld, T - t, 0.0f);
          dqkv_ref[r + 2 * C] =
              ops::canonical_dot(&P[static_cast<size_t>(t) * T + t], T,
                                 &dy[(static_cast<size_t>(b) * T + t) * C + h * hs + d], C, T - t, 0.0f);
        }
    }
  const bool probs = test::same_bits(att, att_ref, "attention probabilities");
  const bool out = test::same_bits(y, y_ref, "attention out");
  const bool dscores = test::same_bits(datt, datt_ref, "attention d(scores)");
  const bool grads = test::same_bits(dqkv, dqkv_ref, "attention dqkv");
  return probs && out && dscores && grads;
}

}  // namespace

TEST_CASE("attention: blocked kernels equal the row references at head sizes 8..64 and T up to 300") {
  struct Shape {
    int B, T, C, NH;
  };
  const Shape shapes[] = {{1, 1, 8, 1},    {2, 37, 24, 3}, {1, 128, 128, 4},
                          {2, 131, 60, 3}, {1, 9, 64, 1},  {1, 300, 32, 1}};
  uint32_t seed = 40;
  for (const Shape& s : shapes) {
    CAPTURE(s.B);
    CAPTURE(s.T);
    CAPTURE(s.C);
    CAPTURE(s.NH);
    CHECK(check(s.B, s.T, s.C, s.NH, seed += 2));
  }
}

TEST_CASE("attention: each P·V and dS·K chain ends at its own row (signed zeros of underflow kept)") {
  uint32_t seed = 90;
  for (int T : {5, 17, 64}) {
    CAPTURE(T);
    CHECK(check(2, T, 24, 3, seed += 2, true));
  }
}
