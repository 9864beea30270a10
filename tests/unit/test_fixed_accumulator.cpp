// FixedAccumulator and fixed_point.hpp (docs/CONTRACT.md rule 4): every partition, merge tree,
// thread count and SIMD path gives the same limbs, bitwise; the rounded sums equal ExactSum
// (checked against MPFR in test_exact_sum) where the window covers the values; the below-window
// rounding rule; overflow, NaN and Inf reported, never wrapped.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "support/random_leaves.hpp"

using sb::det::bits_of;
using sb::det::ExactSum;
using sb::det::FixedAccumulator;
using sb::det::FixedWindow;

namespace {

using sb::test::Leaves;
using sb::test::random_float;
using sb::test::random_leaves;

std::vector<int64_t> normalized_limbs(FixedAccumulator acc) {
  acc.normalize();
  return std::vector<int64_t>(acc.limbs(), acc.limbs() + acc.limb_count());
}

std::vector<uint32_t> rounded_bits(const FixedAccumulator& acc) {
  std::vector<float> out(acc.size());
  acc.round_to_fp32(out.data());
  std::vector<uint32_t> bits(out.size());
  for (size_t i = 0; i < out.size(); ++i) bits[i] = bits_of(out[i]);
  return bits;
}

FixedAccumulator sequential(const Leaves& leaves, FixedWindow w) {
  FixedAccumulator acc(leaves[0].size(), w);
  for (const auto& leaf : leaves) acc.add(leaf.data());
  return acc;
}

// x rounded to a multiple of 2^lsb, ties to even (the below-window rule), as a double.
double window_rounded(float x, int lsb) {
  return std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), -lsb)), lsb);
}

}  // namespace

TEST_CASE("fixed accumulator: any partition and merge tree equals adding sequentially") {
  std::mt19937_64 rng(21);
  const size_t n = 3001;
  const Leaves leaves = random_leaves(rng, 40, n, -110, 20);
  const FixedWindow w{};
  const FixedAccumulator seq = sequential(leaves, w);
  const std::vector<int64_t> want = normalized_limbs(seq);
  const std::vector<uint32_t> want_rounded = rounded_bits(seq);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<size_t> order(leaves.size());
    for (size_t l = 0; l < order.size(); ++l) order[l] = l;
    std::shuffle(order.begin(), order.end(), rng);
    const size_t parts = 1 + rng() % 7;
    std::vector<FixedAccumulator> part(parts, FixedAccumulator(n, w));
    for (size_t l : order) part[rng() % parts].add(leaves[l].data());
    if (trial % 2 == 0) part[0].normalize();
    while (part.size() > 1) {
      const size_t a = rng() % part.size();
      size_t b = rng() % (part.size() - 1);
      if (b >= a) ++b;
      part[a].merge(part[b]);
      part.erase(part.begin() + static_cast<std::ptrdiff_t>(b));
    }
    CHECK(part[0].adds() == leaves.size());
    CHECK(part[0].status() == 0u);
    CHECK(rounded_bits(part[0]) == want_rounded);  // before normalize: rounding is canonical too
    CHECK(normalized_limbs(part[0]) == want);
  }
}

TEST_CASE("fixed accumulator: SUM all-reduce of raw limbs, then finish_allreduce") {
  std::mt19937_64 rng(22);
  const size_t n = 1000;
  const Leaves leaves = random_leaves(rng, 24, n, -90, 25);
  const FixedWindow w{};
  const int ranks = 5;
  std::vector<FixedAccumulator> rank(ranks, FixedAccumulator(n, w));
  for (size_t l = 0; l < leaves.size(); ++l) rank[(l * 3) % ranks].add(leaves[l].data());
  rank[1].normalize();  // mixed normalized and un-normalized ranks
  std::vector<int64_t> sum(rank[0].limb_count(), 0);
  uint64_t adds = 0;
  uint32_t status = 0;
  for (const FixedAccumulator& r : rank) {
    for (size_t j = 0; j < sum.size(); ++j) sum[j] += r.limbs()[j];
    adds += r.adds();
    status |= r.status();
  }
  FixedAccumulator all(n, w);
  std::copy(sum.begin(), sum.end(), all.limbs());
  all.finish_allreduce(ranks, adds, status);
  const FixedAccumulator seq = sequential(leaves, w);
  CHECK(std::vector<int64_t>(all.limbs(), all.limbs() + all.limb_count()) == normalized_limbs(seq));
  CHECK(rounded_bits(all) == rounded_bits(seq));
  CHECK(all.adds() == leaves.size());
  CHECK_THROWS_AS(all.finish_allreduce(0, adds, status), sb::Error);
  CHECK_THROWS_AS(all.finish_allreduce(FixedAccumulator::kMaxRanks + 1, adds, status), sb::Error);
}

TEST_CASE("fixed accumulator: normalized limbs are canonical digits") {
  std::mt19937_64 rng(23);
  const Leaves leaves = random_leaves(rng, 8, 500, -100, 26);
  const FixedWindow w{};
  const std::vector<int64_t> limbs = normalized_limbs(sequential(leaves, w));
  const size_t n = 500;
  for (int j = 0; j + 1 < w.limbs; ++j) {
    for (size_t i = 0; i < n; ++i) {
      CHECK(limbs[j * n + i] >= 0);
      CHECK(limbs[j * n + i] < (int64_t{1} << 32));
    }
  }
}

TEST_CASE("fixed accumulator: thread count and SIMD path do not change a bit") {
  std::mt19937_64 rng(24);
  const size_t n = 70001;  // several OpenMP chunks and a SIMD tail
  Leaves leaves = random_leaves(rng, 6, n, -140, 26);
  // Specials and out-of-window values, scattered.
  for (size_t i = 0; i < n; i += 997) leaves[2][i] = std::numeric_limits<float>::infinity();
  for (size_t i = 5; i < n; i += 1999) leaves[3][i] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 7; i < n; i += 3001) leaves[4][i] = -0x1p40f;
  const FixedWindow w{};
  std::vector<int64_t> want;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    const FixedAccumulator acc = sequential(leaves, w);
    CHECK(acc.status() == (sb::det::kFixedInf | sb::det::kFixedNaN | sb::det::kFixedOverflow));
    const std::vector<int64_t> limbs(acc.limbs(), acc.limbs() + acc.limb_count());
    if (want.empty()) want = limbs;
    CHECK(limbs == want);
  }
  omp_set_num_threads(omp_get_num_procs());

  // Each compiled SIMD form against the scalar loop, on ranges with every possible tail.
  using Range = uint32_t (*)(int64_t*, size_t, const float*, size_t, size_t, const FixedWindow&);
  std::vector<Range> forms;
#if defined(SB_HAVE_AVX2)
  forms.push_back(sb::det::detail::fixed_add_range_avx2);
#endif
#if defined(SB_HAVE_AVX512)
  forms.push_back(sb::det::detail::fixed_add_range_avx512);
#endif
  const std::pair<size_t, size_t> ranges[] = {{0, 0}, {0, 1}, {0, 7}, {0, 8}, {3, 12}, {5, 1003}, {0, 1003}};
  for (const FixedWindow win :
       {FixedWindow{}, FixedWindow{-149, 6}, FixedWindow{-40, 1}, FixedWindow{-300, 8}, FixedWindow{-20, 3}}) {
    for (Range form : forms) {
      for (const auto& [begin, end] : ranges) {
        const size_t m = 1003;
        std::vector<int64_t> a(m * win.limbs, 0), b(m * win.limbs, 0);
        uint32_t status_a = 0, status_b = 0;
        for (int l = 0; l < 6; ++l) {
          status_a |= sb::det::detail::fixed_add_range_scalar(a.data(), m, leaves[l].data(), begin, end, win);
          status_b |= form(b.data(), m, leaves[l].data(), begin, end, win);
        }
        CHECK(a == b);
        CHECK(status_a == status_b);
      }
    }
  }
}

TEST_CASE("fixed accumulator: rounded sums equal the exact sum where the window covers them") {
  std::mt19937_64 rng(25);
  const size_t n = 2000;
  // Values >= 2^(lsb + 23) are multiples of 2^lsb: added exactly.
  for (const FixedWindow w : {FixedWindow{}, FixedWindow{-149, 6}, FixedWindow{-60, 3}}) {
    const int lo = w.lsb_exponent + 23, hi = sb::det::fixed_top_exponent(w) - 1;
    Leaves leaves = random_leaves(rng, 30, n, lo, std::min(hi, 127));
    for (size_t i = 0; i < n; i += 10) leaves[0][i] = random_float(rng, hi, hi);  // near the top
    const FixedAccumulator acc = sequential(leaves, w);
    CHECK(acc.status() == 0u);
    const std::vector<uint32_t> got = rounded_bits(acc);
    for (size_t i = 0; i < n; ++i) {
      ExactSum ref;
      for (const auto& leaf : leaves) ref.add(leaf[i]);
      const float want = ref.to_f32();
      // The fixed accumulator has no signed zero: an exact zero is +0.
      CHECK(got[i] == (want == 0.0f ? 0u : bits_of(want)));
    }
  }
}

TEST_CASE("fixed accumulator: below the window, each value rounds to nearest, ties to even") {
  const FixedWindow w{-100, 4};
  const float u = 0x1p-100f;  // the window's unit
  struct Case {
    float x;
    double want;  // in units of 2^-100
  };
  const Case cases[] = {
      {0.5f * u, 0}, {1.5f * u, 2},  {2.5f * u, 2},           {-2.5f * u, -2},          {0.75f * u, 1}, {-0.25f * u, 0},
      {3.5f * u, 4}, {0x1p-149f, 0}, {u * 0x1.000002p-1f, 1}, {-u * 0x1.fffffep-2f, 0}, {7.0f * u, 7}};
  for (const Case& c : cases) {
    FixedAccumulator acc(1, w);
    acc.add(&c.x);
    float out = 0;
    acc.round_to_fp32(&out);
    CHECK(static_cast<double>(out) == std::ldexp(c.want, -100));
  }
  // Random values across and below the window: the sum of the individually rounded values.
  std::mt19937_64 rng(26);
  const size_t n = 1000;
  const Leaves leaves = random_leaves(rng, 20, n, -135, -70);
  const std::vector<uint32_t> got = rounded_bits(sequential(leaves, w));
  for (size_t i = 0; i < n; ++i) {
    ExactSum ref;
    for (const auto& leaf : leaves) ref.add(window_rounded(leaf[i], w.lsb_exponent));
    const float want = ref.to_f32();
    CHECK(got[i] == (want == 0.0f ? 0u : bits_of(want)));
  }
}

TEST_CASE("fixed accumulator: overflow, NaN and Inf are reported and not added") {
  const FixedWindow w{};  // accepts |x| < 2^27
  const float below_top = std::nextafter(0x1p27f, 0.0f);
  const float xs[] = {1.0f,
                      0x1p27f,
                      -0x1p27f,
                      below_top,
                      std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity()};
  FixedAccumulator acc(6, w);
  acc.add(xs);
  CHECK(acc.status() == (sb::det::kFixedOverflow | sb::det::kFixedNaN | sb::det::kFixedInf));
  CHECK(acc.overflowed());
  CHECK_THROWS_AS(acc.check("gradient of wte"), sb::Error);
  float out[6];
  acc.round_to_fp32(out);
  CHECK(out[0] == 1.0f);
  CHECK(bits_of(out[1]) == 0u);  // refused: nothing added
  CHECK(bits_of(out[2]) == 0u);
  CHECK(out[3] == below_top);
  CHECK(bits_of(out[4]) == 0u);
  CHECK(bits_of(out[5]) == 0u);
  // Status survives merges and clears with clear().
  FixedAccumulator other(6, w);
  other.merge(acc);
  CHECK(other.status() == acc.status());
  other.clear();
  CHECK(other.status() == 0u);
  CHECK_NOTHROW(other.check("after clear"));
  // Sums may leave the window's input range: the top limb holds them exactly.
  FixedAccumulator big(1, w);
  const float near_top = 0x1.fffffep26f;
  for (int i = 0; i < 3000; ++i) big.add(&near_top);  // crosses kMaxPending, normalizing
  float sum = 0;
  big.round_to_fp32(&sum);
  CHECK(static_cast<double>(sum) == static_cast<double>(static_cast<float>(3000.0 * near_top)));
  CHECK(big.status() == 0u);
}

TEST_CASE("fixed accumulator: windows, invalid windows and mismatched merges") {
  CHECK_THROWS_AS(FixedAccumulator(4, FixedWindow{-100, 0}), sb::Error);
  CHECK_THROWS_AS(FixedAccumulator(4, FixedWindow{-100, sb::det::kFixedMaxLimbs + 1}), sb::Error);
  CHECK_THROWS_AS(FixedAccumulator(4, FixedWindow{-500, 2}), sb::Error);
  CHECK_THROWS_AS(FixedAccumulator(4, FixedWindow{300, 4}), sb::Error);
  FixedAccumulator a(4), b(5), c(4, FixedWindow{-90, 4});
  CHECK_THROWS_AS(a.merge(b), sb::Error);
  CHECK_THROWS_AS(a.merge(c), sb::Error);
  CHECK(sb::det::fixed_top_exponent(FixedWindow{}) == 27);
  // An empty accumulator rounds to +0 and merges cleanly.
  FixedAccumulator empty(0);
  empty.add(nullptr);
  empty.normalize();
  CHECK(empty.limb_count() == 0u);
}

TEST_CASE("fixed_round_f32 reads un-normalized limbs") {
  // One element, 4 limbs: the same value written canonically and in carry-save form.
  const FixedWindow w{};
  std::mt19937_64 rng(27);
  for (int trial = 0; trial < 1000; ++trial) {
    int64_t canon[4];
    for (int j = 0; j < 3; ++j) canon[j] = static_cast<int64_t>(rng() & 0xFFFFFFFF);
    canon[3] = static_cast<int64_t>(rng() % (1u << 31)) - (int64_t{1} << 30);
    int64_t save[4] = {canon[0], canon[1], canon[2], canon[3]};
    for (int j = 0; j < 3; ++j) {  // move a random multiple of 2^32 from limb j+1 into limb j
      const int64_t t = static_cast<int64_t>(rng() % 2000) - 1000;
      save[j] += t * (int64_t{1} << 32);
      save[j + 1] -= t;
    }
    CHECK(bits_of(sb::det::fixed_round_f32(save, 1, w)) == bits_of(sb::det::fixed_round_f32(canon, 1, w)));
    sb::det::fixed_normalize(save, 1, w);
    CHECK(std::equal(save, save + 4, canon));
  }
}
