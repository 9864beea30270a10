// The binned exact sums behind the per-step gradient statistics (core/train/statistics.cpp):
// binned_sum equals the plain ExactSum of the elements (every exponent, subnormals, block edges, the
// sign of an exact zero, ±Inf and NaN); binned_sum_of_squares equals sum_of_squares in its exact
// value (canonical limbs) at vector and block edges and its fixed-point window's; binned_update_squares
// equals add_update_squares's two sums; GradientStatistics::finish
// reports per tensor the values of optim/clip.hpp grad_stats — norm, max |g| and mean — bitwise.
#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/det/philox.hpp"

namespace {

// The definitions: one ExactSum::add per term, in order.
sb::det::ExactSum plain_sum_of_squares(const float* x, size_t n) {
  sb::det::ExactSum s;
  for (size_t i = 0; i < n; ++i) s.add(sb::exact_square(x[i]));
  return s;
}
sb::det::ExactSum plain_exact_sum(const float* x, size_t n) {
  sb::det::ExactSum s;
  for (size_t i = 0; i < n; ++i) s.add(x[i]);
  return s;
}

bool same(const sb::det::ExactSum& a, const sb::det::ExactSum& b) {
  const double da = a.to_f64(), db = b.to_f64();
  const float fa = a.to_f32(), fb = b.to_f32();
  return std::memcmp(&da, &db, sizeof da) == 0 && std::memcmp(&fa, &fb, sizeof fa) == 0;
}

// The same exact value: the canonical limbs (ExactSum::to_words, before the counts) are equal.
bool same_value(const sb::det::ExactSum& a, const sb::det::ExactSum& b) {
  int64_t wa[sb::det::ExactSum::kWords], wb[sb::det::ExactSum::kWords];
  a.to_words(wa);
  b.to_words(wb);
  return std::memcmp(wa, wb, sizeof(int64_t) * sb::det::ExactSum::kLimbs) == 0;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Random bit patterns, finite: every exponent, subnormals and both zeros.
std::vector<float> random_finite(size_t n, uint32_t stream) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t b = sb::det::philox_u32(9, stream, i);
    if ((b >> 23 & 0xFFu) == 0xFFu) b ^= 0x00800000u;
    std::memcpy(&x[i], &b, sizeof b);
  }
  return x;
}

// One 2^16-element block at the folds' grid edges: values in the binades t .. t - (binades - 1)
// (biased exponents clamped at min_biased), significands all ones, a single low bit, a half-grid
// pattern or random, random signs; x[0] the block's top, 0x1.fffffep0 · 2^t.
std::vector<float> grid_edge_block(int t, int binades, int min_biased, uint32_t stream) {
  std::vector<float> x(size_t{1} << 16);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t r = sb::det::philox_u32(9, stream, i);
    const int down = static_cast<int>(r % static_cast<uint32_t>(binades));
    const uint32_t pattern[4] = {0x7FFFFFu, 0x000001u, 0x400001u, r >> 9};
    const int e = std::max(t - down + 127, min_biased);
    const uint32_t bits = (r & 0x80000000u) | (static_cast<uint32_t>(e) << 23) | pattern[(r >> 5) & 3u];
    std::memcpy(&x[i], &bits, sizeof bits);
  }
  x[0] = std::ldexp(0x1.fffffep0f, t);
  return x;
}

}  // namespace

TEST_CASE("binned_sum is exactly exact_sum: every exponent, block edges, zeros, Inf, NaN") {
  auto x = random_finite(200003, 1);  // crosses several 2^16-element blocks
  x[7] = 0x1.fffffep127f;
  x[8] = -0x1.fffffep127f;
  x[9] = 0x1p-149f;
  CHECK(same(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
  CHECK(same_value(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
  // Gradient-like values: small magnitudes of both signs, lengths around the block size.
  std::vector<float> g(70000);
  for (size_t i = 0; i < g.size(); ++i) g[i] = sb::det::philox_normal(9, 2, i) * 1e-3f;
  for (size_t len : {size_t(0), size_t(1), size_t(3), size_t(65535), size_t(65536), size_t(65537), g.size()}) {
    CAPTURE(len);
    CHECK(same(sb::binned_sum(g.data(), len), plain_exact_sum(g.data(), len)));
    CHECK(same_value(sb::binned_sum(g.data(), len), plain_exact_sum(g.data(), len)));
  }
  // The sign of an exact zero: -0 when every element is -0 (one block or several), else +0.
  std::vector<float> z(70000, -0.0f);
  CHECK(std::signbit(sb::binned_sum(z.data(), z.size()).to_f64()));
  CHECK(same(sb::binned_sum(z.data(), z.size()), plain_exact_sum(z.data(), z.size())));
  z[69999] = 0.0f;
  CHECK(!std::signbit(sb::binned_sum(z.data(), z.size()).to_f64()));
  CHECK(same(sb::binned_sum(z.data(), z.size()), plain_exact_sum(z.data(), z.size())));
  std::vector<float> cancel = {1.5f, -0.0f, -1.5f, 0x1p-149f, -0x1p-149f};
  CHECK(same(sb::binned_sum(cancel.data(), cancel.size()), plain_exact_sum(cancel.data(), cancel.size())));
  // Inf, opposite Infs (NaN), NaN; +Inf and -Inf in the same exponent bin must not cancel.
  std::vector<float> s = {1.0f, INFINITY};
  CHECK(same(sb::binned_sum(s.data(), s.size()), plain_exact_sum(s.data(), s.size())));
  s.push_back(-INFINITY);
  CHECK(std::isnan(sb::binned_sum(s.data(), s.size()).to_f64()));
  CHECK(same(sb::binned_sum(s.data(), s.size()), plain_exact_sum(s.data(), s.size())));
  std::vector<float> nan = {2.0f, NAN, -3.0f};
  CHECK(same(sb::binned_sum(nan.data(), nan.size()), plain_exact_sum(nan.data(), nan.size())));
}

TEST_CASE("binned_sum: the fp64 fold at its grid's edges and the window's bottom") {
  // Values in every binade of the 49-binade window below the block's top scale t and just below it
  // (the bins), significands that round up and down at the fold's grid, both signs, 2^16 of them
  // (the fold's sums at their bounds), for tops at the bottom, middle and top of fp32's range.
  for (const int t : {-126, -100, -20, 0, 40, 127}) {
    CAPTURE(t);
    std::vector<float> x = grid_edge_block(t, 51, 0, 16);  // 49 binades in the window, 2 below; subnormals
    CHECK(same(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
    CHECK(same_value(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(0x1.fffffep0f, std::max(t, -126));  // the bound
    CHECK(same_value(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
    for (size_t i = 1; i < x.size(); i += 2) x[i] = -x[i];  // cancels to +0
    CHECK(same(sb::binned_sum(x.data(), x.size()), plain_exact_sum(x.data(), x.size())));
  }
}

// The update statistics' sums, binned (binned_update_squares) against add_update_squares's two
// ExactSums, fed the same (before, after) pairs.
void check_update_squares(const std::vector<float>& before, const std::vector<float>& after) {
  sb::det::ExactSum delta, weight, bdelta, bweight;
  for (size_t i = 0; i < before.size(); ++i) sb::add_update_squares(delta, weight, before[i], after[i]);
  sb::binned_update_squares(bdelta, bweight, before.data(), after.data(), before.size());
  CHECK(same(bdelta, delta));
  CHECK(same(bweight, weight));
  if (delta.is_finite()) CHECK(same_value(bdelta, delta));
  if (weight.is_finite()) CHECK(same_value(bweight, weight));
}

TEST_CASE("binned_update_squares has exactly the values of add_update_squares's sums") {
  // Optimizer-like steps (after within a factor 2 of before: the binned path), then random bit
  // patterns of every exponent (sign changes, huge gaps: the fallback path), subnormals, zeros,
  // chunk and block edges (> 2^16 terms), Inf and NaN.
  const size_t n = 140001;
  std::vector<float> before(n), after(n);
  for (size_t i = 0; i < n; ++i) {
    before[i] = sb::det::philox_normal(9, 6, i) * 2e-2f;
    after[i] = before[i] + sb::det::philox_normal(9, 7, i) * 1e-4f;
  }
  check_update_squares(before, after);
  const std::vector<float> rb = random_finite(n, 11), ra = random_finite(n, 12);
  check_update_squares(rb, ra);
  std::vector<float> mixed_b(rb), mixed_a(after);
  mixed_b[1] = 0x1p-149f, mixed_a[1] = -0x1p-149f;  // a subnormal step across zero
  mixed_b[2] = -0.0f, mixed_a[2] = 0.0f;
  mixed_b[3] = 0.0f, mixed_a[3] = -0.0f;
  mixed_b[4] = 0x1.fffffep127f, mixed_a[4] = -0x1.fffffep127f;  // d = −2^129: beyond fp32
  mixed_b[5] = 1.0f, mixed_a[5] = 0x1p-140f;                    // fl32(after − before) rounds: the fallback
  check_update_squares(mixed_b, mixed_a);
  std::vector<float> inf_b = {1.0f, INFINITY, 2.0f}, inf_a = {1.5f, INFINITY, 2.5f};
  check_update_squares(inf_b, inf_a);  // Inf − Inf: a NaN step
  inf_a[0] = INFINITY;
  check_update_squares(inf_b, inf_a);
  std::vector<float> nan_b = {2.0f, NAN}, nan_a = {3.0f, 1.0f};
  check_update_squares(nan_b, nan_a);
}

TEST_CASE("binned_sum_of_squares has exactly the value of sum_of_squares") {
  // Gradient-like values, then some 60 binades smaller, subnormals, zeros and Inf, at lengths
  // around the 2^16-element blocks and not multiples of 4 (the interleaved bin sets).
  std::vector<float> g(200003);
  for (size_t i = 0; i < g.size(); ++i) g[i] = sb::det::philox_normal(9, 4, i) * 3e-3f;
  for (size_t len :
       {size_t(1), size_t(7), size_t(8), size_t(9), size_t(65535), size_t(65536), size_t(65537), g.size()}) {
    CAPTURE(len);
    CHECK(same_value(sb::binned_sum_of_squares(g.data(), len), plain_sum_of_squares(g.data(), len)));
  }
  for (size_t i = 3; i < g.size(); i += 997) g[i] *= 0x1p-60f;  // 60 binades down
  g[5] = 0x1p-149f;
  g[6] = -0x1.fffffep-127f;
  g[70000] = 0.0f;
  g[70001] = -0.0f;
  g[70002] = 0x1.8p100f;  // one huge value in the second block
  CHECK(same_value(sb::binned_sum_of_squares(g.data(), g.size()), plain_sum_of_squares(g.data(), g.size())));
  g[100] = -INFINITY;
  CHECK(same(sb::binned_sum_of_squares(g.data(), g.size()), plain_sum_of_squares(g.data(), g.size())));
}

TEST_CASE("binned_sum_of_squares: the edges of its fixed-point window") {
  // The window holds the 32 binades that end at a block's largest scale max(e, 1): squares at its
  // bottom (31 binades down) and just below it (32: the bins), the largest significands there,
  // a block of subnormals and small normals only (the window reaches below scale 1), every
  // exponent (random bit patterns), and one block of 2^16 maximal squares in the top binade.
  std::vector<float> w(70000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = sb::det::philox_normal(9, 5, i) * 0x1p-3f;
  w[0] = 0x1.fffffep0f;  // the first block's largest scale: 2^0
  w[1] = 0x1p-31f, w[2] = -0x1.fffffep-31f, w[3] = 0x1.fffffep-32f, w[4] = 0x1p-32f;
  w[5] = 0x1p-126f, w[6] = 0x1p-149f;
  for (size_t len : {size_t(7), size_t(4096), w.size()}) {
    CAPTURE(len);
    CHECK(same_value(sb::binned_sum_of_squares(w.data(), len), plain_sum_of_squares(w.data(), len)));
  }
  std::vector<float> tiny(5000);
  for (size_t i = 0; i < tiny.size(); ++i) {
    const uint32_t b = sb::det::philox_u32(9, 13, i) % 0x08000000u;  // scales 0 to 15
    std::memcpy(&tiny[i], &b, sizeof b);
  }
  CHECK(
      same_value(sb::binned_sum_of_squares(tiny.data(), tiny.size()), plain_sum_of_squares(tiny.data(), tiny.size())));
  const std::vector<float> any = random_finite(150000, 14);
  CHECK(same_value(sb::binned_sum_of_squares(any.data(), any.size()), plain_sum_of_squares(any.data(), any.size())));
  const std::vector<float> top(65536, -0x1.fffffep127f);
  CHECK(same_value(sb::binned_sum_of_squares(top.data(), top.size()), plain_sum_of_squares(top.data(), top.size())));
}

TEST_CASE("binned_sum_of_squares: the fp64 folds at their grids' edges") {
  // Every binade of the window at the block's top scale t, significands that round up and down at
  // the folds' grids (all ones, a single low bit, a half-grid pattern), 2^16 of them in one block
  // (the folds' sums at their bounds), for tops at the bottom, middle and top of fp32's range.
  for (const int t : {-126, -100, -20, 0, 40, 127}) {
    CAPTURE(t);
    std::vector<float> x = grid_edge_block(t, 32, 1, 15);  // the window; scale 1 holds the subnormals' binade
    CHECK(same_value(sb::binned_sum_of_squares(x.data(), x.size()), plain_sum_of_squares(x.data(), x.size())));
    for (size_t i = 1; i < x.size(); ++i) x[i] = std::ldexp(0x1.fffffep0f, t);  // 2^16 maximal squares
    CHECK(same_value(sb::binned_sum_of_squares(x.data(), x.size()), plain_sum_of_squares(x.data(), x.size())));
  }
}

TEST_CASE("finish reports grad_stats' norm, max |g| and mean per tensor, bitwise") {
  sb::GPTConfig cfg;
  cfg.n_layer = 2;
  cfg.n_embd = 64;
  cfg.n_head = 2;
  const std::vector<sb::ParamView> layout = sb::gpt_param_layout(cfg);
  size_t flat = 0;
  for (const sb::ParamView& p : layout) flat = std::max(flat, p.offset + p.numel);
  std::vector<float> grad(flat);
  for (size_t i = 0; i < flat; ++i) grad[i] = sb::det::philox_normal(9, 3, i) * 1e-2f;
  grad[layout[1].offset] = -0.0f;
  grad[layout[2].offset + 1] = 0x1p-140f;
  for (size_t i = 0; i < layout[3].numel; ++i) grad[layout[3].offset + i] = -0.0f;  // a -0 tensor
  sb::GradientStatistics stats(layout);
  stats.clear();
  stats.add_leaf(grad.data());
  stats.add_leaf(grad.data());
  sb::StepStats st;
  stats.finish(grad.data(), 1.0, 2, 4, st);
  const std::vector<sb::GradStats> ref = sb::grad_stats(grad.data(), layout);
  REQUIRE(st.tensors.size() == layout.size());
  bool all_same = true;
  for (size_t t = 0; t < layout.size(); ++t) {
    const bool ok = same_bits(st.tensors[t].grad_norm, ref[t].norm) &&
                    same_bits(st.tensors[t].grad_max, ref[t].max_abs) &&
                    same_bits(st.tensors[t].grad_mean, ref[t].mean);
    if (!ok) MESSAGE("tensor ", layout[t].name, " differs from grad_stats");
    all_same = all_same && ok;
  }
  CHECK(all_same);
  CHECK(std::signbit(st.tensors[3].grad_mean));
}

TEST_CASE("sum_of_squares and exact_sum (binned blocks on threads) equal the plain sums") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{16383}, size_t{65536}, size_t{65537}, size_t{200003}}) {
    const std::vector<float> g = random_finite(n, 31);
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      CHECK(same_value(sb::sum_of_squares(g.data(), n), plain_sum_of_squares(g.data(), n)));
      CHECK(same(sb::sum_of_squares(g.data(), n), plain_sum_of_squares(g.data(), n)));
      CHECK(same_value(sb::exact_sum(g.data(), n), plain_exact_sum(g.data(), n)));
      CHECK(same(sb::exact_sum(g.data(), n), plain_exact_sum(g.data(), n)));
    }
  }
  std::vector<float> z(70000, -0.0f);
  CHECK(std::signbit(sb::exact_sum(z.data(), z.size()).to_f64()));
  z[69999] = 0.0f;
  CHECK(!std::signbit(sb::exact_sum(z.data(), z.size()).to_f64()));
}
