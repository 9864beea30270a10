// The merge scheme of the device reductions (add_exact_words / exact_from_words, exact_norm.hpp),
// run on the host: per-"thread" ExactSums over grid-stride partitions of any size, their words
// added per "block" and then globally, in shuffled orders, give bitwise the sequential ExactSum
// (canonical words, fp64 and fp32 roundings, sqrt_rounded) — with ±0, subnormals, huge values,
// mixed signs, Inf and NaN. Also the host optimizer kernels' update sums (binned: the same exact
// value, not the same value counts) and ortho squares against plain loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/adamw.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "samebits/det/bits.hpp"

namespace {

using sb::det::ExactSum;
using Words = std::vector<unsigned long long>;  // (ExactSum::kWords)

struct PlainAdd {
  void operator()(unsigned long long* word, unsigned long long v) const { *word += v; }
};

// The device scheme: `threads` threads in blocks of `block` (grid-stride over n), each thread's
// sum of term(i) into its block's words, the blocks' words into the total, blocks and threads
// merged in a shuffled order (atomics land in any order).
template <class Term>
ExactSum device_scheme(size_t n, size_t threads, size_t block, uint32_t seed, const Term& term) {
  std::vector<size_t> order(threads);
  for (size_t t = 0; t < threads; ++t) order[t] = t;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  const size_t blocks = (threads + block - 1) / block;
  std::vector<Words> block_words(blocks, Words(ExactSum::kWords, 0));
  for (size_t t : order) {
    ExactSum part;
    for (size_t i = t; i < n; i += threads) part.add(term(i));
    sb::add_exact_words(block_words[t / block].data(), part, PlainAdd{});
  }
  Words total(ExactSum::kWords, 0);
  for (size_t b = blocks; b-- > 0;) {
    for (int j = 0; j < ExactSum::kWords; ++j) {
      if (block_words[b][size_t(j)] != 0) PlainAdd{}(&total[size_t(j)], block_words[b][size_t(j)]);
    }
  }
  return sb::exact_from_words(total.data());
}

std::vector<int64_t> words_of(const ExactSum& s) {
  std::vector<int64_t> w(ExactSum::kWords);
  s.to_words(w.data());
  return w;
}

// Bitwise: the canonical words, both roundings and the correctly rounded root.
void check_same(const ExactSum& got, const ExactSum& want, const std::string& what) {
  INFO(what);
  CHECK(words_of(got) == words_of(want));
  CHECK(sb::det::bits_of(got.to_f64()) == sb::det::bits_of(want.to_f64()));
  CHECK(sb::det::bits_of(got.to_f32()) == sb::det::bits_of(want.to_f32()));
  CHECK(sb::det::bits_of(sb::sqrt_rounded(got)) == sb::det::bits_of(sb::sqrt_rounded(want)));
}

// Mostly normal values, with ±0, subnormals, values near the fp32 limits and small integers.
std::vector<float> mixed_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 19);
  std::vector<float> v(n);
  for (float& x : v) {
    switch (kind(rng)) {
      case 0: x = 0.0f; break;
      case 1: x = -0.0f; break;
      case 2: x = u(rng) * 1e-40f; break;
      case 3: x = sb::det::float_of_bits(1u); break;
      case 4: x = u(rng) * 3e38f; break;
      case 5: x = static_cast<float>(kind(rng) - 10); break;
      default: x = u(rng); break;
    }
  }
  return v;
}

const std::vector<std::pair<size_t, size_t>> kLaunches = {{1, 1},    {2, 1},      {3, 3},      {32, 32},
                                                          {257, 96}, {1000, 128}, {4099, 1024}};

}  // namespace

TEST_CASE("exact words: sums of squares and signed sums equal the sequential ExactSum") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{1000}, size_t{20011}}) {
    const std::vector<float> x = mixed_values(n, static_cast<uint32_t>(n) + 7);
    ExactSum squares, plain;
    for (float v : x) {
      squares.add(sb::exact_square(v));
      plain.add(v);
    }
    for (const auto& [threads, block] : kLaunches) {
      const std::string what =
          "n=" + std::to_string(n) + " threads=" + std::to_string(threads) + " block=" + std::to_string(block);
      check_same(device_scheme(n, threads, block, 3, [&](size_t i) { return sb::exact_square(x[i]); }), squares,
                 "squares " + what);
      check_same(device_scheme(n, threads, block, 4, [&](size_t i) { return static_cast<double>(x[i]); }), plain,
                 "signed " + what);
    }
  }
}

TEST_CASE("exact words: -0, Inf and NaN keep ExactSum's rules across parts") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> cases = {
      {-0.0f, -0.0f, -0.0f}, {-0.0f, 0.0f, -0.0f}, {1.0f, -1.0f}, {-1.0f, 1.0f, -0.0f},
      {inf, 1.0f, 2.0f},     {-inf, 3.0f},         {inf, -inf},   {sb::det::float_of_bits(0x7fc00001u), 1.0f}};
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<float>& x = cases[c];
    ExactSum want;
    for (float v : x) want.add(static_cast<double>(v));
    for (const auto& [threads, block] : kLaunches) {
      const ExactSum got =
          device_scheme(x.size(), threads, block, 5, [&](size_t i) { return static_cast<double>(x[i]); });
      INFO("case ", c, " threads=", threads);
      CHECK(sb::det::bits_of(got.to_f64()) == sb::det::bits_of(want.to_f64()));
      CHECK(got.count() == want.count());
    }
  }
}

TEST_CASE("exact words: an empty part adds nothing") {
  Words total(ExactSum::kWords, 0);
  sb::add_exact_words(total.data(), ExactSum{}, PlainAdd{});
  CHECK(std::all_of(total.begin(), total.end(), [](unsigned long long w) { return w == 0; }));
  CHECK(sb::det::bits_of(sb::exact_from_words(total.data()).to_f64()) == 0u);
}

// The same exact value: the canonical limbs (the words before the counts, which the host
// kernels' binned update sums do not keep), both roundings and the root.
void check_same_value(const ExactSum& got, const ExactSum& want, const std::string& what) {
  INFO(what);
  const std::vector<int64_t> g = words_of(got), w = words_of(want);
  CHECK(std::equal(g.begin(), g.begin() + ExactSum::kLimbs, w.begin()));
  CHECK(sb::det::bits_of(got.to_f64()) == sb::det::bits_of(want.to_f64()));
  CHECK(sb::det::bits_of(got.to_f32()) == sb::det::bits_of(want.to_f32()));
  CHECK(sb::det::bits_of(sb::sqrt_rounded(got)) == sb::det::bits_of(sb::sqrt_rounded(want)));
}

TEST_CASE("host optimizer kernels: update sums and ortho squares equal plain loops") {
  const size_t n = 20000;  // above the OpenMP threshold
  const std::vector<float> w0 = mixed_values(n, 11), x = mixed_values(n, 12);
  std::vector<float> w = w0;
  sb::UpdateSums sums;
  sb::host_optim_kernels().muon_apply(w.data(), x.data(), n, 0.999f, 0.02f, &sums);
  ExactSum delta, weight;
  for (size_t i = 0; i < n; ++i) {
    const float after = sb::ops::muon_apply(w0[i], x[i], 0.999f, 0.02f);
    CHECK(sb::det::bits_of(w[i]) == sb::det::bits_of(after));
    sb::add_update_squares(delta, weight, w0[i], after);
  }
  check_same_value(sums.delta_sq, delta, "Σ ΔW²");
  check_same_value(sums.weight_sq, weight, "Σ W²");

  const int r = 37;
  const std::vector<float> a = mixed_values(size_t(r) * r, 13);
  ExactSum ortho;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) ortho.add(sb::ops::ortho_square(a[size_t(i) * r + j], i == j));
  check_same(sb::host_optim_kernels().ortho_squares(a.data(), r), ortho, "Σ (A − I)²");
}
