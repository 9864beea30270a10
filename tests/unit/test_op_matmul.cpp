// GEMM and linear layer (core/cpu/matmul.cpp): bitwise equal to the plain ascending-k std::fma
// triple loop for every transposition, odd sizes, k across several k-blocks, continued chains and
// bf16/fp16 operands; exact on integer-valued inputs; a bias in the problem bitwise the gemm then
// bias_forward; malformed problems refused; backward against fp64 finite differences.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

struct GemmCase {
  int m, n, k;
};

// Element (row, col) of op(X) where X is stored with leading dimension ld.
float op_at(const float* x, Trans t, int ld, int row, int col) {
  return t == Trans::no ? x[static_cast<size_t>(row) * ld + col] : x[static_cast<size_t>(col) * ld + row];
}

// The contract's definition of g's C, written as plainly as possible (host memory; C0 = g.c).
std::vector<float> gemm_reference(const ops::GemmProblem& g) {
  std::vector<float> c(g.c, g.c + static_cast<size_t>(g.m) * g.ldc);
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      float acc = g.accumulate ? c[static_cast<size_t>(i) * g.ldc + j] : 0.0f;
      for (int p = 0; p < g.k; ++p)
        acc = std::fma(ops::round_operand(op_at(g.a, g.ta, g.lda, i, p), g.precision),
                       ops::round_operand(op_at(g.b, g.tb, g.ldb, p, j), g.precision), acc);
      c[static_cast<size_t>(i) * g.ldc + j] = acc;
    }
  return c;
}

}  // namespace

TEST_CASE("canonical gemm equals the ascending-k fma triple loop, bitwise") {
  auto be = make_cpu_backend();
  const GemmCase cases[] = {{1, 1, 1}, {7, 5, 3}, {37, 53, 301}, {64, 96, 128}, {9, 70, 513}, {33, 1, 17}};
  for (const GemmCase& g : cases)
    for (Trans ta : {Trans::no, Trans::yes})
      for (Trans tb : {Trans::no, Trans::yes})
        for (bool accumulate : {false, true})
          for (Precision prec : {Precision::fp32, Precision::bf16, Precision::fp16}) {
            // Leading dimensions wider than the rows, so strides are exercised.
            const int lda = (ta == Trans::no ? g.k : g.m) + 3;
            const int ldb = (tb == Trans::no ? g.n : g.k) + 1;
            const int ldc = g.n + 2;
            const auto a = test::uniform(static_cast<size_t>(ta == Trans::no ? g.m : g.k) * lda, 1);
            const auto b = test::uniform(static_cast<size_t>(tb == Trans::no ? g.k : g.n) * ldb, 2);
            auto c = test::uniform(static_cast<size_t>(g.m) * ldc, 3);
            const ops::GemmProblem problem{ta,       tb,  g.m,      g.n, g.k,        a.data(), lda,
                                           b.data(), ldb, c.data(), ldc, accumulate, prec};
            const auto want = gemm_reference(problem);  // C still holds C0
            be->gemm(problem);
            CAPTURE(g.m);
            CAPTURE(g.n);
            CAPTURE(g.k);
            CAPTURE(static_cast<int>(ta));
            CAPTURE(static_cast<int>(tb));
            CAPTURE(accumulate);
            CAPTURE(static_cast<int>(prec));
            CHECK(test::same_bits(c, want, "gemm vs reference"));
          }
}

TEST_CASE("gemm on integer-valued inputs is exact, canonical and vendor") {
  for (GemmMode mode : {GemmMode::canonical, GemmMode::vendor}) {
    auto be = make_cpu_backend({mode, ReduceMode::canonical, Precision::fp32});
    const int m = 41, n = 67, k = 300;
    const auto a = test::integers(static_cast<size_t>(m) * k, 11, 8);
    const auto b = test::integers(static_cast<size_t>(k) * n, 12, 8);
    std::vector<float> c(static_cast<size_t>(m) * n);
    be->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, c.data(), n, false, Precision::fp32});
    bool exact = true;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int p = 0; p < k; ++p)
          s += static_cast<int64_t>(a[static_cast<size_t>(i) * k + p]) *
               static_cast<int64_t>(b[static_cast<size_t>(p) * n + j]);
        exact = exact && c[static_cast<size_t>(i) * n + j] == static_cast<float>(s);
      }
    CHECK_MESSAGE(exact, "gemm=", to_string(mode));
  }
}

TEST_CASE("canonical gemm bits do not depend on the thread count") {
  auto be = make_cpu_backend();
  const int m = 70, n = 90, k = 300;
  const auto a = test::uniform(static_cast<size_t>(m) * k, 5);
  const auto b = test::uniform(static_cast<size_t>(n) * k, 6);
  std::vector<float> first;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    std::vector<float> c(static_cast<size_t>(m) * n);
    be->gemm({Trans::no, Trans::yes, m, n, k, a.data(), k, b.data(), k, c.data(), n, false, Precision::fp32});
    if (first.empty()) first = c;
    CAPTURE(threads);
    CHECK(test::same_bits(c, first, "gemm threads"));
  }
  omp_set_num_threads(saved);
}

TEST_CASE("matmul forward and backward follow the canonical formulas") {
  auto be = make_cpu_backend();
  const int N = 13, C = 19, OC = 11;
  const auto x = test::uniform(static_cast<size_t>(N) * C, 21);
  const auto w = test::uniform(static_cast<size_t>(OC) * C, 22);
  const auto bias = test::uniform(OC, 23);
  const auto dy = test::uniform(static_cast<size_t>(N) * OC, 24);
  std::vector<float> y(static_cast<size_t>(N) * OC), dx(static_cast<size_t>(N) * C), dw(static_cast<size_t>(OC) * C),
      db(OC);
  be->matmul_forward(y.data(), x.data(), w.data(), bias.data(), N, C, OC);
  be->matmul_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, OC);
  std::vector<float> y_ref(y.size()), dx_ref(dx.size()), dw_ref(dw.size()), db_ref(OC);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o)
      y_ref[n * OC + o] = ops::linear_out(ops::canonical_dot(&x[n * C], 1, &w[o * C], 1, C, 0.0f), bias[o]);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) dx_ref[n * C + c] = ops::canonical_dot(&dy[n * OC], 1, &w[c], C, OC, 0.0f);
  for (int o = 0; o < OC; ++o) {
    for (int c = 0; c < C; ++c) dw_ref[o * C + c] = ops::canonical_dot(&dy[o], OC, &x[c], C, N, 0.0f);
    float s = 0.0f;
    for (int n = 0; n < N; ++n) s = ops::token_sum_step(s, dy[n * OC + o]);
    db_ref[o] = s;
  }
  CHECK(test::same_bits(y, y_ref, "matmul forward"));
  CHECK(test::same_bits(dx, dx_ref, "matmul dinp"));
  CHECK(test::same_bits(dw, dw_ref, "matmul dw (chain over tokens)"));
  CHECK(test::same_bits(db, db_ref, "matmul dbias"));
}

TEST_CASE("matmul backward matches fp64 finite differences") {
  auto be = make_cpu_backend();
  const int N = 6, C = 10, OC = 7;
  const auto x = test::uniform(static_cast<size_t>(N) * C, 31);
  const auto w = test::uniform(static_cast<size_t>(OC) * C, 32);
  const auto bias = test::uniform(OC, 33);
  const auto r = test::uniform(static_cast<size_t>(N) * OC, 34);
  std::vector<float> dx(x.size()), dw(w.size()), db(OC);
  be->matmul_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC);
  std::vector<double> xd = test::to_double(x), wd = test::to_double(w), bd = test::to_double(bias);
  auto loss = [&] {
    std::vector<double> y(static_cast<size_t>(N) * OC);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) {
        double s = bd[o];
        for (int c = 0; c < C; ++c) s += xd[n * C + c] * wd[o * C + c];
        y[n * OC + o] = s;
      }
    return test::project(y, r);
  };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-5, "matmul dinp");
  test::check_gradient(dw, test::fd_gradient(wd, loss), 1e-5, "matmul dw");
  test::check_gradient(db, test::fd_gradient(bd, loss), 1e-5, "matmul dbias");
}

TEST_CASE("a GemmProblem with a bias is the gemm then bias_forward; malformed problems are refused") {
  for (GemmMode mode : {GemmMode::canonical, GemmMode::exact}) {
    auto be = make_cpu_backend({mode, ReduceMode::canonical, Precision::fp32});
    for (int k : {0, 1, 37}) {
      const int m = 9, n = 13;
      const auto a = test::uniform(static_cast<size_t>(m) * (k + 1), 41);
      const auto b = test::uniform(static_cast<size_t>(n) * (k + 1), 42);
      const auto bias = test::uniform(static_cast<size_t>(n) + k, 43);  // the first n
      std::vector<float> fused(static_cast<size_t>(m) * n, 7.0f), plain(fused.size(), 7.0f);
      const ops::GemmProblem g{Trans::no, Trans::yes, m, n, k, a.data(), k + 1, b.data(), k + 1, plain.data(), n};
      be->gemm(g);
      be->bias_forward(plain.data(), bias.data(), m, n);
      ops::GemmProblem with_bias = g.with_bias(bias.data());
      with_bias.c = fused.data();
      be->gemm(with_bias);
      CAPTURE(to_string(mode));
      CAPTURE(k);
      CHECK(test::same_bits(fused, plain, "gemm with a bias"));
    }
  }
  auto be = make_cpu_backend();
  std::vector<float> x(64, 1.0f), c(64);
  const ops::GemmProblem g{Trans::no, Trans::no, 4, 4, 4, x.data(), 4, x.data(), 4, c.data(), 4};
  ops::GemmProblem negative = g;
  negative.k = -1;
  CHECK_THROWS_AS(be->gemm(negative), Error);
  ops::GemmProblem strided_bias = g.with_bias(x.data());
  strided_bias.ldc = 8;
  CHECK_THROWS_AS(be->gemm(strided_bias), Error);
  CHECK_THROWS_AS(be->syrk(g), Error);  // op(B) is not op(A)ᵀ
  be->syrk(ops::syrk_problem(Trans::no, 4, 4, x.data(), 4, c.data(), 4, Precision::fp32));
  CHECK(c[5] == 4.0f);
  struct NoGroup final : ExactGroup {
    void max(int32_t*, size_t) override {}
    void sum(uint64_t*, size_t) override {}
  } group;
  CHECK_THROWS_AS(be->gemm(g.split_over(group, 8)), Error);  // a k-split under numerics.gemm=canonical
}
