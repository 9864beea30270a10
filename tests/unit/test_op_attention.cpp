// Causal multi-head attention (core/cpu/attention.cpp): bitwise equal to the shared row references
// (ops::attention_row_*) and to canonical dots for dq, dk, dv; backward against fp64 finite
// differences of an fp64 forward; bits independent of the thread count.
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

std::vector<double> attention_ref(const std::vector<double>& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH, ld = 3 * C;
  const double scale = 1 / std::sqrt(static_cast<double>(hs));
  std::vector<double> y(static_cast<size_t>(B) * T * C, 0.0), s(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* q = &qkv[(b * T + t) * ld + h * hs];
        double m = -INFINITY, den = 0;
        for (int j = 0; j <= t; ++j) {
          const double* k = &qkv[(b * T + j) * ld + C + h * hs];
          double d = 0;
          for (int i = 0; i < hs; ++i) d += q[i] * k[i];
          s[j] = d * scale;
          m = std::fmax(m, s[j]);
        }
        for (int j = 0; j <= t; ++j) den += std::exp(s[j] - m);
        for (int j = 0; j <= t; ++j) {
          const double p = std::exp(s[j] - m) / den;
          const double* v = &qkv[(b * T + j) * ld + 2 * C + h * hs];
          for (int i = 0; i < hs; ++i) y[(b * T + t) * C + h * hs + i] += p * v[i];
        }
      }
  return y;
}

}  // namespace

TEST_CASE("attention: CPU equals the row references and canonical dots, bitwise") {
  auto be = make_cpu_backend();
  const int B = 2, T = 37, C = 24, NH = 3, hs = C / NH, ld = 3 * C;
  const auto qkv = test::uniform(static_cast<size_t>(B) * T * ld, 1, -2, 2);
  const auto dy = test::uniform(static_cast<size_t>(B) * T * C, 2);
  std::vector<float> y(static_cast<size_t>(B) * T * C), att(static_cast<size_t>(B) * NH * T * T, -1.0f);
  std::vector<float> dqkv(qkv.size()), datt(att.size());
  be->attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  be->attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(), att.data(), B, T, C, NH);

  std::vector<float> y_ref(y.size()), att_ref(att.size()), datt_ref(att.size()), dqkv_ref(qkv.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const size_t base = static_cast<size_t>(b) * T * ld + h * hs;
      const float* P = &att_ref[(static_cast<size_t>(b) * NH + h) * T * T];
      float* dS = &datt_ref[(static_cast<size_t>(b) * NH + h) * T * T];
      for (int t = 0; t < T; ++t) {
        test::attention_row_forward(&y_ref[(b * T + t) * C + h * hs], &att_ref[((b * NH + h) * T + t) * T],
                                    &qkv[base + t * ld], &qkv[base + C], &qkv[base + 2 * C], ld, t, T, hs);
        test::attention_row_dscores(&dS[t * T], &P[t * T], &dy[(b * T + t) * C + h * hs], &qkv[base + 2 * C], ld, t, T,
                                    hs);
      }
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < hs; ++d) {
          dqkv_ref[base + t * ld + d] = ops::canonical_dot(&dS[t * T], 1, &qkv[base + C + d], ld, t + 1, 0.0f);
          dqkv_ref[base + t * ld + C + d] =
              ops::canonical_dot(&dS[t * T + t], T, &qkv[base + t * ld + d], ld, T - t, 0.0f);
          dqkv_ref[base + t * ld + 2 * C + d] =
              ops::canonical_dot(&P[t * T + t], T, &dy[(b * T + t) * C + h * hs + d], C, T - t, 0.0f);
        }
    }
  CHECK(test::same_bits(y, y_ref, "attention out"));
  CHECK(test::same_bits(att, att_ref, "attention probabilities"));
  CHECK(test::same_bits(datt, datt_ref, "attention d(scores)"));
  CHECK(test::same_bits(dqkv, dqkv_ref, "attention dqkv"));
}

TEST_CASE("attention backward matches fp64 finite differences") {
  auto be = make_cpu_backend();
  const int B = 2, T = 6, C = 8, NH = 2;
  const auto qkv = test::uniform(static_cast<size_t>(B) * T * 3 * C, 11, -1.5f, 1.5f);
  const auto r = test::uniform(static_cast<size_t>(B) * T * C, 12);
  std::vector<float> y(r.size()), att(static_cast<size_t>(B) * NH * T * T), dqkv(qkv.size()), datt(att.size());
  be->attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  be->attention_backward(dqkv.data(), datt.data(), r.data(), qkv.data(), att.data(), B, T, C, NH);
  auto qd = test::to_double(qkv);
  auto loss = [&] { return test::project(attention_ref(qd, B, T, C, NH), r); };
  const auto y_ref = attention_ref(qd, B, T, C, NH);
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) worst = std::fmax(worst, std::fabs(y[i] - y_ref[i]));
  CHECK(worst < 1e-5);
  test::check_gradient(dqkv, test::fd_gradient(qd, loss), 1e-4, "attention dqkv");
}

TEST_CASE("attention bits do not depend on the thread count") {
  auto be = make_cpu_backend();
  const int B = 3, T = 20, C = 16, NH = 4;
  const auto qkv = test::uniform(static_cast<size_t>(B) * T * 3 * C, 21);
  const auto dy = test::uniform(static_cast<size_t>(B) * T * C, 22);
  std::vector<float> first;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    std::vector<float> y(dy.size()), att(static_cast<size_t>(B) * NH * T * T), dqkv(qkv.size()), datt(att.size());
    be->attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
    be->attention_backward(dqkv.data(), datt.data(), dy.data(), qkv.data(), att.data(), B, T, C, NH);
    y.insert(y.end(), dqkv.begin(), dqkv.end());
    if (first.empty()) first = y;
    CAPTURE(threads);
    CHECK(test::same_bits(y, first, "attention threads"));
  }
  omp_set_num_threads(saved);
}
