// The attention heads' own ops (core/cpu/kv_repeat.cpp, qk_norm.cpp): bitwise equal to plain loops
// over the ops/ formulas in the documented orders, independent of the thread count, split over
// tensor-parallel ranks by key/value groups (each rank continuing the gains' chains) equal to the
// whole op bit for bit, and backward against fp64 finite differences.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/rmsnorm.hpp"
#include "support/row_reference.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

struct Heads {
  int N, NH, G, hd;
  int width() const { return (NH + 2 * G) * hd; }
};

// The columns of rank r of S in a row of the whole layout (tp_layout's split of attn.qkv.w: the
// NH/G + 2 blocks of G heads each cut into S parts), in the rank's own order.
std::vector<int> rank_columns(const Heads& s, int r, int S) {
  std::vector<int> cols;
  const int part = s.G / S * s.hd;
  for (int block = 0; block < s.NH / s.G + 2; ++block)
    for (int i = 0; i < part; ++i) cols.push_back(block * s.G * s.hd + r * part + i);
  return cols;
}

std::vector<float> take_columns(const std::vector<float>& x, const std::vector<int>& cols, int N, int W) {
  std::vector<float> out;
  for (int n = 0; n < N; ++n)
    for (int c : cols) out.push_back(x[size_t(n) * W + c]);
  return out;
}

}  // namespace

TEST_CASE("kv_repeat: the copy and the query-ascending chain, bitwise; 1..4 threads alike") {
  auto be = make_cpu_backend();
  const Heads s{7, 6, 2, 5};
  const int W = s.width(), M = 3 * s.NH * s.hd;
  const auto x = test::uniform(size_t(s.N) * W, 1);
  const auto dy = test::uniform(size_t(s.N) * M, 2);
  std::vector<float> y_ref(size_t(s.N) * M), dx_ref(size_t(s.N) * W);
  for (int n = 0; n < s.N; ++n)
    for (int h = 0; h < s.NH; ++h)
      for (int i = 0; i < s.hd; ++i) {
        const size_t at = size_t(n) * M + size_t(h) * s.hd + i, in = size_t(n) * W;
        y_ref[at] = x[in + h * s.hd + i];
        y_ref[at + s.NH * s.hd] = x[in + (s.NH + h % s.G) * s.hd + i];
        y_ref[at + 2 * s.NH * s.hd] = x[in + (s.NH + s.G + h % s.G) * s.hd + i];
        dx_ref[in + h * s.hd + i] = dy[at];
      }
  for (int n = 0; n < s.N; ++n)
    for (int part = 1; part <= 2; ++part)
      for (int g = 0; g < s.G; ++g)
        for (int i = 0; i < s.hd; ++i) {
          float acc = 0.0f;
          for (int h = g; h < s.NH; h += s.G) acc += dy[size_t(n) * M + size_t(part) * s.NH * s.hd + h * s.hd + i];
          dx_ref[size_t(n) * W + size_t(s.NH + (part - 1) * s.G + g) * s.hd + i] = acc;
        }
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    std::vector<float> y(y_ref.size()), dx(dx_ref.size());
    be->kv_repeat_forward(y.data(), x.data(), s.N, s.NH, s.G, s.hd);
    be->kv_repeat_backward(dx.data(), dy.data(), s.N, s.NH, s.G, s.hd);
    CAPTURE(threads);
    CHECK(test::same_bits(y, y_ref, "kv_repeat forward"));
    CHECK(test::same_bits(dx, dx_ref, "kv_repeat backward"));
  }
  omp_set_num_threads(saved);
}

TEST_CASE("qk_norm: each head an RMSNorm row, gains' chains in (group, head, token) order, bitwise") {
  auto be = make_cpu_backend();
  for (const Heads s : {Heads{9, 4, 4, 16}, Heads{9, 6, 2, 33}, Heads{3, 8, 1, 64}}) {
    const int W = s.width(), R = s.NH + s.G;
    const auto x = test::uniform(size_t(s.N) * W, 3, -3, 5);
    const auto wq = test::uniform(s.hd, 4), wk = test::uniform(s.hd, 5);
    const auto dy = test::uniform(size_t(s.N) * W, 6);
    std::vector<float> y_ref(x.size()), rstd_ref(size_t(s.N) * R), dx_ref(x.size()), dwq_ref(s.hd), dwk_ref(s.hd);
    for (int n = 0; n < s.N; ++n) {
      for (int h = 0; h < R; ++h) {
        const size_t at = size_t(n) * W + size_t(h) * s.hd, r = size_t(n) * R + h;
        const float* w = h < s.NH ? wq.data() : wk.data();
        test::rmsnorm_row_forward(&y_ref[at], &rstd_ref[r], &x[at], w, s.hd);
        test::rmsnorm_row_backward(&dx_ref[at], &dy[at], &x[at], w, rstd_ref[r], s.hd);
      }
      for (int c = R * s.hd; c < W; ++c)
        y_ref[size_t(n) * W + c] = x[size_t(n) * W + c], dx_ref[size_t(n) * W + c] = dy[size_t(n) * W + c];
    }
    const auto step = [&](float acc, int n, int h, int i) {
      const size_t at = size_t(n) * W + size_t(h) * s.hd + i;
      return ops::norm_gain_grad_step(acc, dy[at], ops::rmsnorm_xhat(x[at], rstd_ref[size_t(n) * R + h]));
    };
    for (int i = 0; i < s.hd; ++i) {
      float q = 0.0f, k = 0.0f;
      for (int g = 0; g < s.G; ++g) {
        for (int h = g; h < s.NH; h += s.G)
          for (int n = 0; n < s.N; ++n) q = step(q, n, h, i);
        for (int n = 0; n < s.N; ++n) k = step(k, n, s.NH + g, i);
      }
      dwq_ref[i] = q, dwk_ref[i] = k;
    }
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2, 3, 4}) {
      omp_set_num_threads(threads);
      std::vector<float> y(x.size()), rstd(rstd_ref.size()), dx(x.size()), dwq(s.hd, 7.0f), dwk(s.hd, 7.0f);
      be->qk_norm_forward(y.data(), rstd.data(), x.data(), wq.data(), wk.data(), s.N, s.NH, s.G, s.hd);
      be->qk_norm_backward(dx.data(), dwq.data(), dwk.data(), dy.data(), x.data(), wq.data(), wk.data(), rstd.data(),
                           s.N, s.NH, s.G, s.hd, false);
      CAPTURE(s.NH);
      CAPTURE(s.G);
      CAPTURE(threads);
      CHECK(test::same_bits(y, y_ref, "qk_norm out"));
      CHECK(test::same_bits(rstd, rstd_ref, "qk_norm rstd"));
      CHECK(test::same_bits(dx, dx_ref, "qk_norm dinp"));
      CHECK(test::same_bits(dwq, dwq_ref, "qk_norm dwq"));
      CHECK(test::same_bits(dwk, dwk_ref, "qk_norm dwk"));
    }
    omp_set_num_threads(saved);
  }
}

TEST_CASE("qk_norm over tensor-parallel ranks: each rank's groups continuing the chains give the whole op's bits") {
  auto be = make_cpu_backend();
  const Heads s{11, 8, 4, 12};
  const int W = s.width();
  const auto x = test::uniform(size_t(s.N) * W, 8, -3, 5);
  const auto wq = test::uniform(s.hd, 9), wk = test::uniform(s.hd, 10);
  const auto dy = test::uniform(size_t(s.N) * W, 11);
  std::vector<float> y(x.size()), rstd(size_t(s.N) * (s.NH + s.G)), dx(x.size()), dwq(s.hd), dwk(s.hd);
  be->qk_norm_forward(y.data(), rstd.data(), x.data(), wq.data(), wk.data(), s.N, s.NH, s.G, s.hd);
  be->qk_norm_backward(dx.data(), dwq.data(), dwk.data(), dy.data(), x.data(), wq.data(), wk.data(), rstd.data(), s.N,
                       s.NH, s.G, s.hd, false);
  for (int S : {2, 4}) {
    const Heads local{s.N, s.NH / S, s.G / S, s.hd};
    const int Wl = local.width();
    // The ranks in order, then (the control) in reverse: the chains' order is the ranks'.
    for (bool reversed : {false, true}) {
      std::vector<float> q(s.hd), k(s.hd);
      bool rows_same = true;
      for (int step = 0; step < S; ++step) {
        const int r = reversed ? S - 1 - step : step;
        const std::vector<int> cols = rank_columns(s, r, S);
        const auto xl = take_columns(x, cols, s.N, W), dyl = take_columns(dy, cols, s.N, W);
        std::vector<float> yl(xl.size()), rl(size_t(s.N) * (local.NH + local.G)), dxl(xl.size());
        be->qk_norm_forward(yl.data(), rl.data(), xl.data(), wq.data(), wk.data(), s.N, local.NH, local.G, s.hd);
        be->qk_norm_backward(dxl.data(), q.data(), k.data(), dyl.data(), xl.data(), wq.data(), wk.data(), rl.data(),
                             s.N, local.NH, local.G, s.hd, step > 0);
        rows_same = rows_same && test::same_bits(yl, take_columns(y, cols, s.N, W), "rank's rows") &&
                    test::same_bits(dxl, take_columns(dx, cols, s.N, W), "rank's dinp");
        CHECK(int(xl.size()) == s.N * Wl);
      }
      CAPTURE(S);
      CAPTURE(reversed);
      CHECK(rows_same);
      const bool gains_same = test::same_bits(q, dwq, "dwq") && test::same_bits(k, dwk, "dwk");
      CHECK(gains_same == !reversed);
    }
  }
}

TEST_CASE("qk_norm and kv_repeat backward match fp64 finite differences") {
  auto be = make_cpu_backend();
  const Heads s{4, 4, 2, 6};
  const int W = s.width(), R = s.NH + s.G, M = 3 * s.NH * s.hd;
  const auto x = test::uniform(size_t(s.N) * W, 12, -2, 3);
  const auto wq = test::uniform(s.hd, 13, 0.5f, 1.5f), wk = test::uniform(s.hd, 14, 0.5f, 1.5f);
  const auto r = test::uniform(size_t(s.N) * M, 15);
  // loss = r · kv_repeat(qk_norm(x)).
  std::vector<float> y(x.size()), rstd(size_t(s.N) * R), rep(r.size()), dn(x.size()), dx(x.size()), dwq(s.hd),
      dwk(s.hd);
  be->qk_norm_forward(y.data(), rstd.data(), x.data(), wq.data(), wk.data(), s.N, s.NH, s.G, s.hd);
  be->kv_repeat_forward(rep.data(), y.data(), s.N, s.NH, s.G, s.hd);
  be->kv_repeat_backward(dn.data(), r.data(), s.N, s.NH, s.G, s.hd);
  be->qk_norm_backward(dx.data(), dwq.data(), dwk.data(), dn.data(), x.data(), wq.data(), wk.data(), rstd.data(), s.N,
                       s.NH, s.G, s.hd, false);
  auto xd = test::to_double(x), wqd = test::to_double(wq), wkd = test::to_double(wk);
  auto loss = [&] {
    std::vector<double> out(size_t(s.N) * M);
    for (int n = 0; n < s.N; ++n) {
      std::vector<double> row(xd.begin() + size_t(n) * W, xd.begin() + size_t(n + 1) * W);
      for (int h = 0; h < R; ++h) {
        double v = 0;
        for (int i = 0; i < s.hd; ++i) v += row[h * s.hd + i] * row[h * s.hd + i];
        const double rs = 1 / std::sqrt(v / s.hd + 1e-5);
        for (int i = 0; i < s.hd; ++i) row[h * s.hd + i] *= rs * (h < s.NH ? wqd : wkd)[i];
      }
      for (int h = 0; h < s.NH; ++h)
        for (int i = 0; i < s.hd; ++i) {
          const size_t at = size_t(n) * M + size_t(h) * s.hd + i;
          out[at] = row[h * s.hd + i];
          out[at + s.NH * s.hd] = row[(s.NH + h % s.G) * s.hd + i];
          out[at + 2 * s.NH * s.hd] = row[(s.NH + s.G + h % s.G) * s.hd + i];
        }
    }
    return test::project(out, r);
  };
  test::check_gradient(dx, test::fd_gradient(xd, loss), 1e-4, "qk_norm+kv_repeat dinp");
  test::check_gradient(dwq, test::fd_gradient(wqd, loss), 1e-4, "qk_norm dwq");
  test::check_gradient(dwk, test::fd_gradient(wkd, loss), 1e-4, "qk_norm dwk");
}
