// GELU, SwiGLU, rotary positions, residual and token/position embeddings (core/cpu/gelu.cpp, swiglu.cpp, rope.cpp,
// residual.cpp, embedding.cpp):
// bitwise equal to the shared formulas (ops/*.hpp) — embedding gradients in token order —, and
// backward against fp64 finite differences of fp64 forwards.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/embedding.hpp"
#include "samebits/core/ops/gelu.hpp"
#include "samebits/core/ops/residual.hpp"
#include "samebits/core/ops/rope.hpp"
#include "samebits/core/ops/swiglu.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {
double gelu_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
}  // namespace

TEST_CASE("gelu: CPU equals ops::gelu_*, close to fp64, backward matches finite differences") {
  auto be = make_cpu_backend();
  const int n = 301;
  const auto x = test::uniform(n, 1, -6, 6);
  const auto r = test::uniform(n, 2);
  std::vector<float> y(n), dx(n);
  be->gelu_forward(y.data(), x.data(), n);
  be->gelu_backward(dx.data(), x.data(), r.data(), n);
  bool same = true;
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    same = same && ops::gelu_forward(x[i]) == y[i] && ops::gelu_backward(x[i], r[i]) == dx[i];
    worst = std::fmax(worst, std::fabs(y[i] - gelu_ref(x[i])));
  }
  CHECK(same);
  MESSAGE("gelu forward max abs error vs fp64: ", worst);
  CHECK(worst < 2e-6);
  auto xd = test::to_double(x);
  auto loss = [&] {
    std::vector<double> yd(n);
    for (int i = 0; i < n; ++i) yd[i] = gelu_ref(xd[i]);
    return test::project(yd, r);
  };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-4, "gelu dinp");
}

TEST_CASE("swiglu: CPU equals ops::swiglu_*, close to fp64, backward matches finite differences") {
  auto be = make_cpu_backend();
  const int N = 7, F = 43;
  const auto x = test::uniform(2 * N * F, 3, -8, 8);  // each row: the gate's F, then the up's F
  const auto r = test::uniform(N * F, 4);
  std::vector<float> y(N * F), dx(2 * N * F);
  be->swiglu_forward(y.data(), x.data(), N, F);
  be->swiglu_backward(dx.data(), x.data(), r.data(), N, F);
  const auto ref = [&](const std::vector<double>& in, int n, int j) {
    const double g = in[size_t(n) * 2 * F + j], u = in[size_t(n) * 2 * F + F + j];
    return g / (1 + std::exp(-g)) * u;
  };
  const auto xd = test::to_double(x);
  bool same = true;
  double worst = 0;
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < F; ++j) {
      const float g = x[size_t(n) * 2 * F + j], u = x[size_t(n) * 2 * F + F + j], dy = r[size_t(n) * F + j];
      same = same && ops::swiglu_forward(g, u) == y[size_t(n) * F + j] &&
             ops::swiglu_backward_gate(g, u, dy) == dx[size_t(n) * 2 * F + j] &&
             ops::swiglu_backward_up(g, dy) == dx[size_t(n) * 2 * F + F + j];
      worst = std::fmax(worst, std::fabs(y[size_t(n) * F + j] - ref(xd, n, j)) / (1 + std::fabs(ref(xd, n, j))));
    }
  }
  CHECK(same);
  MESSAGE("swiglu forward max relative error vs fp64: ", worst);
  CHECK(worst < 1e-6);
  auto xv = xd;
  auto loss = [&] {
    std::vector<double> yd(size_t(N) * F);
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < F; ++j) yd[size_t(n) * F + j] = ref(xv, n, j);
    return test::project(yd, r);
  };
  test::check_gradient(dx, test::fd_gradient(xv, loss), 1e-4, "swiglu dinp");
  // Saturated gates: σ is 0 or 1 once exp(−g) overflows or underflows, no NaN.
  CHECK(ops::swiglu_forward(-200.0f, 3.0f) == 0.0f);
  CHECK(ops::swiglu_forward(200.0f, 0.5f) == 100.0f);
  CHECK(ops::swiglu_backward_gate(-200.0f, 3.0f, 1.0f) == 0.0f);
  CHECK(ops::swiglu_backward_gate(200.0f, 3.0f, 1.0f) == 3.0f);
}

TEST_CASE("rope: CPU equals ops::rope_*, close to fp64, backward matches finite differences; v untouched") {
  auto be = make_cpu_backend();
  const int B = 2, T = 9, NH = 3, hd = 6, C = NH * hd;
  const float theta = 100.0f;
  std::vector<float> table(size_t(T) * hd);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < hd / 2; ++i) {
      table[size_t(t) * hd + 2 * size_t(i)] = ops::rope_cos(t, i, hd, theta);
      table[size_t(t) * hd + 2 * size_t(i) + 1] = ops::rope_sin(t, i, hd, theta);
      const double a = t * std::pow(double(theta), -2.0 * i / hd);  // fp64 angle and its cos, sin
      CHECK(std::fabs(table[size_t(t) * hd + 2 * size_t(i)] - std::cos(a)) < 1e-6);
      CHECK(std::fabs(table[size_t(t) * hd + 2 * size_t(i) + 1] - std::sin(a)) < 1e-6);
    }
  const int n = B * T * 3 * C;
  const auto x = test::uniform(n, 5, -2, 2);
  const auto r = test::uniform(n, 6);
  std::vector<float> y = x, dx = r;
  be->rope_forward(y.data(), table.data(), B, T, C, NH);
  be->rope_backward(dx.data(), table.data(), B, T, C, NH);
  // v (the last C of each row) untouched; q and k pairs by the formula.
  bool same = true;
  for (int m = 0; m < B * T; ++m) {
    const float* cs = table.data() + size_t(m % T) * hd;
    for (int c = 0; c < 3 * C; ++c) {
      const size_t at = size_t(m) * 3 * C + c;
      if (c >= 2 * C) {
        same = same && y[at] == x[at] && dx[at] == r[at];
        continue;
      }
      const int i = c % hd;
      const bool low = i < hd / 2;
      const size_t lo = low ? at : at - hd / 2, hi = lo + hd / 2;
      const int k = low ? i : i - hd / 2;
      const float c0 = cs[2 * k], s0 = cs[2 * k + 1];
      const float want = low ? ops::rope_low(x[lo], x[hi], c0, s0) : ops::rope_high(x[lo], x[hi], c0, s0);
      const float dwant =
          low ? ops::rope_low_backward(r[lo], r[hi], c0, s0) : ops::rope_high_backward(r[lo], r[hi], c0, s0);
      same = same && y[at] == want && dx[at] == dwant;
    }
  }
  CHECK(same);
  auto xd = test::to_double(x);
  auto loss = [&] {
    std::vector<double> yd = xd;
    for (int m = 0; m < B * T; ++m)
      for (int h = 0; h < 2 * NH; ++h)
        for (int i = 0; i < hd / 2; ++i) {
          const double a = (m % T) * std::pow(double(theta), -2.0 * i / hd);
          const size_t lo = size_t(m) * 3 * C + size_t(h) * hd + i, hi = lo + hd / 2;
          yd[lo] = xd[lo] * std::cos(a) - xd[hi] * std::sin(a);
          yd[hi] = xd[hi] * std::cos(a) + xd[lo] * std::sin(a);
        }
    return test::project(yd, r);
  };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-4, "rope dqkv");
}

TEST_CASE("residual: one addition per element, in place allowed") {
  auto be = make_cpu_backend();
  const auto a = test::uniform(1000, 3);
  const auto b = test::uniform(1000, 4);
  std::vector<float> out(1000), inplace = a;
  be->residual_forward(out.data(), a.data(), b.data(), 1000);
  be->residual_forward(inplace.data(), inplace.data(), b.data(), 1000);
  bool same = true;
  for (int i = 0; i < 1000; ++i) same = same && out[i] == ops::residual_out(a[i], b[i]);
  CHECK(same);
  CHECK(test::same_bits(out, inplace, "residual in place"));
}

TEST_CASE("embedding: forward, token-ordered backward, accumulation into dwte") {
  auto be = make_cpu_backend();
  const int B = 3, T = 7, C = 13, V = 5, Tmax = 9;
  std::vector<int32_t> tokens(B * T);
  for (int n = 0; n < B * T; ++n) tokens[n] = (n * 7 + n / 5) % V;  // repeats, not sorted
  const auto wte = test::uniform(static_cast<size_t>(V) * C, 5);
  const auto wpe = test::uniform(static_cast<size_t>(Tmax) * C, 6);
  const auto r = test::uniform(static_cast<size_t>(B) * T * C, 7);
  const auto dwte0 = test::uniform(wte.size(), 8);  // e.g. the tied LM head's gradient
  std::vector<float> out(r.size()), dwte = dwte0, dwpe(wpe.size(), 42.0f);
  be->embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, {0, V});
  be->embedding_backward(dwte.data(), dwpe.data(), r.data(), tokens.data(), B, T, C, V, {0, V});

  std::vector<float> out_ref(out.size()), dwte_ref = dwte0, dwpe_ref(wpe.size(), 42.0f);
  for (int n = 0; n < B * T; ++n)
    for (int c = 0; c < C; ++c) {
      out_ref[n * C + c] = ops::embedding_out(wte[tokens[n] * C + c], wpe[(n % T) * C + c]);
      dwte_ref[tokens[n] * C + c] = ops::embedding_grad_step(dwte_ref[tokens[n] * C + c], r[n * C + c]);
    }
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      float s = 0.0f;
      for (int b = 0; b < B; ++b) s = ops::embedding_grad_step(s, r[(b * T + t) * C + c]);
      dwpe_ref[t * C + c] = s;
    }
  CHECK(test::same_bits(out, out_ref, "embedding out"));
  CHECK(test::same_bits(dwte, dwte_ref, "embedding dwte (token order)"));
  CHECK(test::same_bits(dwpe, dwpe_ref, "embedding dwpe (rows >= T untouched)"));

  // Finite differences (the op is linear: a check of indices and of the accumulation).
  auto ted = test::to_double(wte), ped = test::to_double(wpe);
  auto loss = [&] {
    std::vector<double> y(out.size());
    for (int n = 0; n < B * T; ++n)
      for (int c = 0; c < C; ++c) y[n * C + c] = ted[tokens[n] * C + c] + ped[(n % T) * C + c];
    return test::project(y, r);
  };
  std::vector<float> g_wte(wte.size()), g_wpe(static_cast<size_t>(T) * C);
  for (size_t i = 0; i < wte.size(); ++i) g_wte[i] = dwte[i] - dwte0[i];
  for (size_t i = 0; i < g_wpe.size(); ++i) g_wpe[i] = dwpe[i];
  auto num_wpe = test::fd_gradient(ped, loss);
  num_wpe.resize(g_wpe.size());
  test::check_gradient(g_wte, test::fd_gradient(ted, loss), 1e-5, "embedding dwte");
  test::check_gradient(g_wpe, num_wpe, 1e-5, "embedding dwpe");
}

TEST_CASE("embedding over vocabulary row ranges: the ranges together are the whole table's op, bit for bit") {
  // The vocabulary-parallel layout (tp_layout.hpp): each rank holds rows [begin, end) of wte and
  // writes only its tokens' rows; every other row is left as it was.
  auto be = make_cpu_backend();
  const int B = 2, T = 9, C = 6, V = 11;
  std::vector<int32_t> tokens(B * T);
  for (int n = 0; n < B * T; ++n) tokens[n] = (n * 5 + n / 4) % V;
  const auto wte = test::uniform(static_cast<size_t>(V) * C, 11);
  const auto wpe = test::uniform(static_cast<size_t>(T) * C, 12);
  const auto dout = test::uniform(static_cast<size_t>(B) * T * C, 13);
  const auto dwte0 = test::uniform(wte.size(), 14);
  std::vector<float> out(dout.size()), dwte = dwte0, dwpe(wpe.size());
  be->embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, {0, V});
  be->embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V, {0, V});
  for (const std::vector<int>& cuts : {std::vector<int>{0, 6, 11}, std::vector<int>{0, 3, 6, 9, 11}}) {
    std::vector<float> o(out.size(), -7.0f), dw = dwte0, dp(wpe.size());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const VocabRows rows{cuts[k], cuts[k + 1]};
      const size_t at = static_cast<size_t>(rows.begin) * C;
      be->embedding_forward(o.data(), tokens.data(), wte.data() + at, wpe.data(), B, T, C, rows);
      be->embedding_backward(dw.data() + at, dp.data(), dout.data(), tokens.data(), B, T, C, V, rows);
      CHECK(test::same_bits(dp, dwpe, "dwpe of every range"));
    }
    CHECK(test::same_bits(o, out, "embedding out, ranges together"));
    CHECK(test::same_bits(dw, dwte, "embedding dwte, ranges together"));
  }
  // A token outside the range leaves its row untouched.
  std::vector<float> o(out.size(), -7.0f);
  be->embedding_forward(o.data(), tokens.data(), wte.data() + 4 * C, wpe.data(), B, T, C, {4, 5});
  for (int n = 0; n < B * T; ++n) CHECK(o[static_cast<size_t>(n) * C] == (tokens[n] == 4 ? out[n * C] : -7.0f));
  std::vector<float> dw(static_cast<size_t>(C)), dp(wpe.size());
  CHECK_THROWS_AS(be->embedding_backward(dw.data(), dp.data(), dout.data(), tokens.data(), B, T, C, V, {10, 12}),
                  sb::Error);
}

TEST_CASE("embedding rejects tokens outside the vocabulary") {
  auto be = make_cpu_backend();
  std::vector<int32_t> tokens = {0, 7};
  std::vector<float> dout(2 * 4), dwte(5 * 4), dwpe(2 * 4);
  CHECK_THROWS_AS(be->embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), 1, 2, 4, 5, {0, 5}),
                  sb::Error);
}
