// LayerNorm and RMSNorm (core/cpu/layernorm.cpp, rmsnorm.cpp): bitwise equal to the shared row
// references (ops::*_row_*) and to token-ascending chains for the gain/bias gradients; backward
// against fp64 finite differences of an fp64 forward; bits independent of the thread count.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/core/ops/rmsnorm.hpp"
#include "support/row_reference.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {
constexpr double kEps = ops::kNormEps;

std::vector<double> layernorm_ref(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>* b, int N, int C) {
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[n * C + c] - m) * (x[n * C + c] - m);
    const double r = 1 / std::sqrt(v / C + kEps);
    for (int c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) * r * w[c] + (b ? (*b)[c] : 0.0);
  }
  return y;
}

std::vector<double> rmsnorm_ref(const std::vector<double>& x, const std::vector<double>& w, int N, int C) {
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[n * C + c] * x[n * C + c];
    const double r = 1 / std::sqrt(ss / C + kEps);
    for (int c = 0; c < C; ++c) y[n * C + c] = x[n * C + c] * r * w[c];
  }
  return y;
}
}  // namespace

TEST_CASE("layernorm: CPU equals the row reference and token chains, bitwise") {
  auto be = make_cpu_backend();
  for (int C : {1, 31, 32, 77, 256}) {
    for (bool bias : {true, false}) {
      const int N = 9;
      const auto x = test::uniform(static_cast<size_t>(N) * C, 1, -3, 5);
      const auto w = test::uniform(C, 2);
      const auto b = test::uniform(C, 3);
      const auto dy = test::uniform(static_cast<size_t>(N) * C, 4);
      const float* bp = bias ? b.data() : nullptr;
      std::vector<float> y(x.size()), mean(N), rstd(N), dx(x.size()), dw(C), db(C);
      be->layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), bp, N, C);
      be->layernorm_backward(dx.data(), dw.data(), bias ? db.data() : nullptr, dy.data(), x.data(), w.data(),
                             mean.data(), rstd.data(), N, C);
      std::vector<float> y_ref(x.size()), mean_ref(N), rstd_ref(N), dx_ref(x.size()), dw_ref(C), db_ref(C);
      for (int n = 0; n < N; ++n) {
        test::layernorm_row_forward(&y_ref[n * C], &mean_ref[n], &rstd_ref[n], &x[n * C], w.data(), bp, C);
        test::layernorm_row_backward(&dx_ref[n * C], &dy[n * C], &x[n * C], w.data(), mean_ref[n], rstd_ref[n], C);
      }
      for (int c = 0; c < C; ++c) {
        float gw = 0.0f, gb = 0.0f;
        for (int n = 0; n < N; ++n) {
          gw = ops::norm_gain_grad_step(gw, dy[n * C + c], ops::layernorm_xhat(x[n * C + c], mean_ref[n], rstd_ref[n]));
          gb = ops::token_sum_step(gb, dy[n * C + c]);
        }
        dw_ref[c] = gw;
        db_ref[c] = gb;
      }
      CAPTURE(C);
      CAPTURE(bias);
      CHECK(test::same_bits(y, y_ref, "layernorm out"));
      CHECK(test::same_bits(mean, mean_ref, "layernorm mean"));
      CHECK(test::same_bits(rstd, rstd_ref, "layernorm rstd"));
      CHECK(test::same_bits(dx, dx_ref, "layernorm dinp"));
      CHECK(test::same_bits(dw, dw_ref, "layernorm dw"));
      if (bias) CHECK(test::same_bits(db, db_ref, "layernorm db"));
    }
  }
}

TEST_CASE("rmsnorm: CPU equals the row reference and token chains, bitwise") {
  auto be = make_cpu_backend();
  for (int C : {1, 31, 32, 77, 256}) {
    const int N = 9;
    const auto x = test::uniform(static_cast<size_t>(N) * C, 5, -3, 5);
    const auto w = test::uniform(C, 6);
    const auto dy = test::uniform(static_cast<size_t>(N) * C, 7);
    std::vector<float> y(x.size()), rstd(N), dx(x.size()), dw(C);
    be->rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C);
    be->rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
    std::vector<float> y_ref(x.size()), rstd_ref(N), dx_ref(x.size()), dw_ref(C);
    for (int n = 0; n < N; ++n) {
      test::rmsnorm_row_forward(&y_ref[n * C], &rstd_ref[n], &x[n * C], w.data(), C);
      test::rmsnorm_row_backward(&dx_ref[n * C], &dy[n * C], &x[n * C], w.data(), rstd_ref[n], C);
    }
    for (int c = 0; c < C; ++c) {
      float gw = 0.0f;
      for (int n = 0; n < N; ++n)
        gw = ops::norm_gain_grad_step(gw, dy[n * C + c], ops::rmsnorm_xhat(x[n * C + c], rstd_ref[n]));
      dw_ref[c] = gw;
    }
    CAPTURE(C);
    CHECK(test::same_bits(y, y_ref, "rmsnorm out"));
    CHECK(test::same_bits(rstd, rstd_ref, "rmsnorm rstd"));
    CHECK(test::same_bits(dx, dx_ref, "rmsnorm dinp"));
    CHECK(test::same_bits(dw, dw_ref, "rmsnorm dw"));
  }
}

TEST_CASE("layernorm backward matches fp64 finite differences") {
  auto be = make_cpu_backend();
  const int N = 5, C = 40;
  const auto x = test::uniform(static_cast<size_t>(N) * C, 11, -2, 3);
  const auto w = test::uniform(C, 12, 0.5f, 1.5f);
  const auto b = test::uniform(C, 13);
  const auto r = test::uniform(static_cast<size_t>(N) * C, 14);
  std::vector<float> y(x.size()), mean(N), rstd(N), dx(x.size()), dw(C), db(C);
  be->layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  be->layernorm_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  auto xd = test::to_double(x), wd = test::to_double(w), bd = test::to_double(b);
  auto loss = [&] { return test::project(layernorm_ref(xd, wd, &bd, N, C), r); };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-4, "layernorm dinp");
  test::check_gradient(dw, test::fd_gradient(wd, loss), 1e-4, "layernorm dw");
  test::check_gradient(db, test::fd_gradient(bd, loss), 1e-4, "layernorm db");
}

TEST_CASE("rmsnorm backward matches fp64 finite differences") {
  auto be = make_cpu_backend();
  const int N = 5, C = 40;
  const auto x = test::uniform(static_cast<size_t>(N) * C, 15, -2, 3);
  const auto w = test::uniform(C, 16, 0.5f, 1.5f);
  const auto r = test::uniform(static_cast<size_t>(N) * C, 17);
  std::vector<float> y(x.size()), rstd(N), dx(x.size()), dw(C);
  be->rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C);
  be->rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C);
  auto xd = test::to_double(x), wd = test::to_double(w);
  auto loss = [&] { return test::project(rmsnorm_ref(xd, wd, N, C), r); };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-4, "rmsnorm dinp");
  test::check_gradient(dw, test::fd_gradient(wd, loss), 1e-4, "rmsnorm dw");
}

TEST_CASE("norm bits do not depend on the thread count") {
  auto be = make_cpu_backend();
  const int N = 37, C = 96;
  const auto x = test::uniform(static_cast<size_t>(N) * C, 21);
  const auto w = test::uniform(C, 22);
  const auto dy = test::uniform(static_cast<size_t>(N) * C, 23);
  std::vector<float> first;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    std::vector<float> y(x.size()), mean(N), rstd(N), dx(x.size()), dw(C), db(C);
    be->layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), w.data(), N, C);
    be->layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                           C);
    std::vector<float> all = y;
    all.insert(all.end(), dx.begin(), dx.end());
    all.insert(all.end(), dw.begin(), dw.end());
    all.insert(all.end(), db.begin(), db.end());
    if (first.empty()) first = all;
    CAPTURE(threads);
    CHECK(test::same_bits(all, first, "layernorm threads"));
  }
  omp_set_num_threads(saved);
}
