// The exact all-reduce's codec (det/block_wire.hpp) and BlockAccumulator against the plain 4-limb
// FixedAccumulator: on adversarial blocks, every special value and random partitions of the leaves
// over 1-7 simulated ranks (words summed as the uint64 SUM all-reduce does, modulo 2^64), every rank
// decodes exactly the 4-limb sum's integers (compared as integers, bitwise) and rounds to its bits;
// the status bits agree; the wire's size is the same for every partition and world size.
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
#include "samebits/det/block_accumulator.hpp"
#include "samebits/det/block_wire.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/wide_int.hpp"
#include "support/random_leaves.hpp"

using sb::det::BlockAccumulator;
using sb::det::FixedAccumulator;
using sb::det::Wide192;

namespace {

using sb::test::Leaves;
using sb::test::random_float;
using sb::test::random_leaves;

struct Reference {
  std::vector<Wide192> sums;   // (n) exact, in the frame
  std::vector<uint32_t> bits;  // (n) rounded
  uint32_t status = 0;
  uint64_t adds = 0;
};

Reference reference(const Leaves& leaves) {
  const size_t n = leaves[0].size();
  FixedAccumulator acc(n);
  for (const std::vector<float>& l : leaves) acc.add(l.data());
  acc.normalize();
  Reference r;
  std::vector<float> out(n);
  acc.round_to_fp32(out.data());
  for (size_t i = 0; i < n; ++i) {
    r.sums.push_back(sb::det::wide_from_limbs(acc.limbs() + i, n));
    r.bits.push_back(sb::det::bits_of(out[i]));
  }
  r.status = acc.status();
  r.adds = acc.adds();
  return r;
}

bool same(const Wide192& a, const Wide192& b) { return std::memcmp(a.w, b.w, sizeof a.w) == 0; }

struct Outcome {
  size_t words = 0;  // wire words
  size_t range_bytes = 0;
};

// Leaves split over `ranks` accumulators by owner[l] (in leaf order within a rank), the exact
// all-reduce simulated, every rank checked against the reference.
Outcome all_reduce_check(const Leaves& leaves, int ranks, const std::vector<int>& owner) {
  const size_t n = leaves[0].size();
  const Reference ref = reference(leaves);
  std::vector<BlockAccumulator> rank;
  for (int r = 0; r < ranks; ++r) rank.emplace_back(n);
  for (size_t l = 0; l < leaves.size(); ++l) rank[size_t(owner[l])].add(leaves[l].data());
  // MAX all-reduce of the ranges; SUM of adds; OR of status.
  std::vector<uint8_t> ranges(rank[0].range_bytes(), 0);
  uint64_t adds = 0;
  uint32_t status = 0;
  for (BlockAccumulator& a : rank) {
    for (size_t i = 0; i < ranges.size(); ++i) ranges[i] = std::max(ranges[i], a.ranges()[i]);
    adds += a.adds();
    status |= a.status();
  }
  CHECK(adds == ref.adds);
  CHECK(status == ref.status);
  std::vector<uint64_t> sum;
  for (BlockAccumulator& a : rank) {
    std::copy(ranges.begin(), ranges.end(), a.ranges());
    a.encode(adds);
    if (sum.empty()) sum.assign(a.wire_words(), 0);
    REQUIRE(a.wire_words() == sum.size());
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += a.wire()[k];
  }
  for (BlockAccumulator& a : rank) {
    if (!sum.empty()) std::memcpy(a.wire(), sum.data(), sum.size() * sizeof(uint64_t));
    a.decode(adds, status);
    CHECK(a.adds() == ref.adds);
    CHECK(a.status() == ref.status);
    std::vector<float> out(n);
    a.round_to_fp32(out.data());
    size_t wrong_sums = 0, wrong_bits = 0;
    for (size_t i = 0; i < n; ++i) {
      wrong_sums += same(a.value(i), ref.sums[i]) ? 0 : 1;
      wrong_bits += sb::det::bits_of(out[i]) == ref.bits[i] ? 0 : 1;
    }
    CHECK(wrong_sums == 0);
    CHECK(wrong_bits == 0);
  }
  return {sum.size(), ranges.size()};
}

std::vector<int> contiguous(size_t leaves, int ranks) {
  std::vector<int> owner(leaves);
  for (size_t l = 0; l < leaves; ++l) owner[l] = static_cast<int>(l * size_t(ranks) / leaves);
  return owner;
}

const float kMax = std::numeric_limits<float>::max();
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kTiny = std::numeric_limits<float>::denorm_min();
const float kTop = std::nextafter(134217728.0f, 0.0f);  // the largest value below 2^27
const float kLsb = std::ldexp(1.0f, -100);              // the frame's unit

// Adversarial blocks, one per kWireBlock elements: (name, leaves × values of the block).
Leaves adversarial(size_t leaves) {
  const size_t b = sb::det::kWireBlock;
  std::vector<std::vector<float>> kinds;
  std::mt19937_64 rng(11);
  auto block = [&](auto f) {
    for (size_t l = 0; l < leaves; ++l) {
      std::vector<float> v(b);
      for (size_t e = 0; e < b; ++e) v[e] = f(l, e);
      kinds.push_back(v);
    }
  };
  block([](size_t, size_t) { return 0.0f; });                                                   // empty
  block([](size_t l, size_t) { return l % 2 ? -0.0f : 0.0f; });                                 // signed zeros
  block([](size_t, size_t) { return 1.0f; });                                                   // all equal
  block([](size_t, size_t e) { return e % 2 ? kTop : -kTop; });                                 // top, alternating
  block([](size_t l, size_t e) { return (l + e) % 2 ? kTop : kLsb; });                          // full window span
  block([](size_t l, size_t) { return l % 2 ? -kTop : kTop; });                                 // cancelling, max
  block([](size_t l, size_t e) { return l % 2 ? -kTiny * float(e) : kTiny * float(e); });       // subnormals
  block([&](size_t, size_t) { return random_float(rng, -140, -95); });                          // below the window
  block([](size_t, size_t e) { return std::ldexp(1.5f, -101 - int(e % 4)); });                  // below-window ties
  block([](size_t l, size_t) { return l == 0 ? 1e6f : -1e-29f; });                              // re-base, widen
  block([](size_t l, size_t e) { return l == 0 && e == 7 ? kTop : 1e-6f; });                    // one outlier
  block([&](size_t, size_t) { return random_float(rng, -149, 26); });                           // every exponent
  block([](size_t l, size_t e) { return e < 8 ? 1e-20f * float(l + 1) : 3.0f * 1048576.0f; });  // groups far apart
  block([](size_t l, size_t e) { return e == 31 ? (l % 2 ? -kLsb : kLsb) : 0.0f; });            // one group only
  block([](size_t l, size_t e) { return e < 24 ? 0.0f : std::ldexp(1.0f, 26 - int(l % 3)); });  // last group
  // Interleave: leaf l's vector is the concatenation of every kind's leaf-l block.
  Leaves out(leaves);
  const size_t kinds_count = kinds.size() / leaves;
  for (size_t l = 0; l < leaves; ++l) {
    for (size_t k = 0; k < kinds_count; ++k) {
      const std::vector<float>& v = kinds[k * leaves + l];
      out[l].insert(out[l].end(), v.begin(), v.end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("block wire: adversarial blocks over 1-7 ranks equal the 4-limb sum") {
  for (size_t leaves : {size_t(1), size_t(2), size_t(7), size_t(12)}) {
    const Leaves data = adversarial(leaves);
    size_t words = 0;
    for (int ranks = 1; ranks <= 7; ++ranks) {
      CAPTURE(leaves);
      CAPTURE(ranks);
      const Outcome o = all_reduce_check(data, ranks, contiguous(leaves, ranks));
      if (ranks == 1) words = o.words;
      CHECK(o.words == words);  // the wire does not depend on the world size
    }
  }
}

TEST_CASE("block wire: random partitions of random leaves over 1-7 ranks") {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 12; ++trial) {
    const size_t leaves = 1 + rng() % 9;
    const size_t n = 1 + rng() % 1500;  // partial last blocks included
    const int lo = -150 + static_cast<int>(rng() % 120);
    const int hi = std::min(26, lo + static_cast<int>(rng() % 60));
    const Leaves data = random_leaves(rng, leaves, n, lo, hi);
    const int ranks = 1 + static_cast<int>(rng() % 7);
    std::vector<int> owner(leaves);
    for (int& o : owner) o = static_cast<int>(rng() % size_t(ranks));  // some ranks may get none
    CAPTURE(trial);
    const Outcome o = all_reduce_check(data, ranks, owner);
    CHECK(o.words == all_reduce_check(data, 1, std::vector<int>(leaves, 0)).words);
  }
}

TEST_CASE("block wire: every special value; the status bits agree on every rank") {
  const std::vector<float> specials = {0.0f,         -0.0f, kTiny, -kTiny, 1.17549435e-38f, kTop, -kTop,
                                       134217728.0f, kMax,  -kMax, kInf,   -kInf,           kNaN, 1.0f};
  Leaves data(3, std::vector<float>(specials.size() * 3, 0.5f));
  for (size_t l = 0; l < 3; ++l) {
    for (size_t i = 0; i < specials.size(); ++i) data[l][i * 3 + l] = specials[i];
  }
  for (int ranks = 1; ranks <= 3; ++ranks) {
    CAPTURE(ranks);
    all_reduce_check(data, ranks, contiguous(3, ranks));
  }
  BlockAccumulator acc(specials.size());
  acc.add(specials.data());
  CHECK(acc.status() == (sb::det::kFixedNaN | sb::det::kFixedInf | sb::det::kFixedOverflow));
  CHECK_THROWS_AS(acc.check("the test gradient"), sb::Error);
}

TEST_CASE("block accumulator: thread count changes no bit; memory follows the blocks' ranges") {
  std::mt19937_64 rng(5);
  const size_t n = 70000;
  const Leaves data = random_leaves(rng, 4, n, -20, 0);
  const int saved = omp_get_max_threads();
  std::vector<Wide192> one;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    BlockAccumulator acc(n);
    for (const std::vector<float>& l : data) acc.add(l.data());
    if (threads == 1) {
      for (size_t i = 0; i < n; ++i) one.push_back(acc.value(i));
    }
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += same(acc.value(i), one[i]) ? 0 : 1;
    CHECK(wrong == 0);
    // Ranges of 2^20 plus 24 mantissa bits fit one word per element: 8 bytes, plus descriptors.
    CHECK(acc.memory_bytes() < n * 9);
  }
  omp_set_num_threads(saved);
  // A block spanning the whole window: 128 bits of sum for one add, 129 for two (three words).
  BlockAccumulator wide(sb::det::kWireBlock);
  std::vector<float> x(sb::det::kWireBlock, kLsb);
  x[0] = kTop;
  wide.add(x.data());
  CHECK(wide.memory_bytes() >= 2 * 8 * sb::det::kWireBlock);
  CHECK(wide.memory_bytes() < 3 * 8 * sb::det::kWireBlock);
  wide.add(x.data());
  CHECK(wide.memory_bytes() >= 3 * 8 * sb::det::kWireBlock);
}

TEST_CASE("block wire: the cost of a group is its range plus headroom, as documented") {
  // Values ±0x800001·2^(e-23): ctz in the frame e + 77, bitlength e + 101. In group g of every
  // block, element 0 has e = e_lo - g, element 1 has e = -10, the others lie between: 8 leaves
  // (h = 3) give width_g = (91 - (e_lo - g + 77)) + 1 + 3 bits per element, all of a segment's
  // fields in one stream of 61-bit chunks.
  const size_t b = sb::det::kWireBlock, g = sb::det::kWireGroup, n = 16 * b;
  static_assert(16 <= sb::det::kWireSegment, "one segment");
  for (int e_lo : {-22, -16, -10}) {
    std::mt19937_64 rng(static_cast<uint64_t>(-e_lo));
    Leaves data(8, std::vector<float>(n));
    for (std::vector<float>& l : data) {
      for (size_t i = 0; i < n; ++i) {
        const int low = e_lo - static_cast<int>((i % b) / g);
        const int spread = static_cast<int>(rng() % static_cast<uint64_t>(-10 - low + 1));
        const int e = i % g == 0 ? low : i % g == 1 ? -10 : low + spread;
        const float x = std::ldexp(float(0x800001), e - 23);
        l[i] = rng() & 1 ? -x : x;
      }
    }
    const Outcome o = all_reduce_check(data, 2, contiguous(8, 2));
    size_t bits = 0;
    for (int k = 0; k < sb::det::kWireGroups; ++k) bits += g * size_t(91 - (e_lo - k + 77) + 1 + 3);
    CAPTURE(e_lo);
    CHECK(o.words == ((n / b) * bits + 60) / 61);
    CHECK(o.range_bytes == sizeof(sb::det::WireRange) * (n / b));
    CHECK(sizeof(sb::det::WireRange) == 1 + sb::det::kWireGroups);
  }
}

TEST_CASE("block wire: a block's range equals the fold of every value's range") {
  // wire_block_range's direct formula against wire_range_add on every exponent, subnormals,
  // values below the window (rounded), at and beyond its top, NaN, Inf and signed zeros.
  std::mt19937_64 rng(77);
  const sb::det::FixedWindow w{};
  std::vector<float> x;
  for (int e = -149; e <= 30; ++e) {
    for (int k = 0; k < 6; ++k) x.push_back(random_float(rng, e, e));
  }
  for (float v : {0.0f, -0.0f, kTiny, -kTiny, kLsb, -kLsb, std::ldexp(1.5f, -101), kTop, -kTop, 134217728.0f, kMax,
                  kInf, -kInf, kNaN, 1.0f, std::ldexp(1.0f, -77)}) {
    x.push_back(v);
  }
  std::shuffle(x.begin(), x.end(), rng);
  for (size_t at = 0; at < x.size(); at += 13) {
    const int count = static_cast<int>(std::min<size_t>(sb::det::kWireBlock, x.size() - at));
    sb::det::WireRange fold = {0, {0}};
    for (int e = 0; e < count; ++e) sb::det::wire_range_add(fold, e, x[at + size_t(e)], w);
    const sb::det::WireRange r = sb::det::wire_block_range(x.data() + at, count, w);
    CAPTURE(at);
    CHECK(std::memcmp(&r, &fold, sizeof r) == 0);
  }
}

TEST_CASE("block wire: many segments, random partitions over 1-7 ranks, any thread count") {
  std::mt19937_64 rng(909);
  const int saved = omp_get_max_threads();
  for (int trial = 0; trial < 4; ++trial) {
    const size_t seg = size_t(sb::det::kWireSegment) * sb::det::kWireBlock;
    const size_t n = 17 * seg + rng() % seg;  // 17 segments and a partial one (OpenMP splits them)
    const size_t leaves = 2 + rng() % 6;
    const int lo = -60 + static_cast<int>(rng() % 40);
    const Leaves data = random_leaves(rng, leaves, n, lo, lo + static_cast<int>(rng() % 30));
    const int ranks = 1 + static_cast<int>(rng() % 7);
    std::vector<int> owner(leaves);
    for (int& o : owner) o = static_cast<int>(rng() % size_t(ranks));
    CAPTURE(trial);
    omp_set_num_threads(1 + trial % 3);
    const Outcome o = all_reduce_check(data, ranks, owner);
    omp_set_num_threads(4);
    CHECK(o.words == all_reduce_check(data, 1, std::vector<int>(leaves, 0)).words);
  }
  omp_set_num_threads(saved);
}

TEST_CASE("wide integers: shifts, limbs round trip") {
  const Wide192 minus_one = sb::det::wide_from_i64(-1);
  CHECK(sb::det::wide_negative(minus_one));
  CHECK(same(sb::det::wide_sar(sb::det::wide_shl(minus_one, 150), 150), minus_one));
  const int64_t limbs[4] = {-5, 1ll << 40, -(1ll << 35), -(1ll << 61)};
  const Wide192 v = sb::det::wide_from_limbs(limbs, 1);
  int64_t back[4];
  sb::det::wide_to_limbs(v, back, 1);
  CHECK(same(sb::det::wide_from_limbs(back, 1), v));
  for (int j = 0; j < 3; ++j) CHECK((back[j] >= 0 && back[j] < (1ll << 32)));
}

TEST_CASE("block accumulator: add_pair leaves the state of add then add, bit for bit") {
  // Adversarial blocks (re-basing, widening, below the window, subnormals, cancelling maxima),
  // every special value, and random leaves over every exponent: pairs (and an odd last leaf) give
  // the same sums, ranges, words per block, adds, status, roundings and wire as one by one.
  std::mt19937_64 rng(21);
  Leaves adv = adversarial(5);
  Leaves any = random_leaves(rng, 5, 3000, -149, 26);
  const std::vector<float> specials = {0.0f, -0.0f, kTiny, kTop, 134217728.0f, kMax, kInf, -kInf, kNaN, 1.0f};
  Leaves spec(3, std::vector<float>(sb::det::kWireBlock * 3, 0.25f));
  for (size_t l = 0; l < 3; ++l) {
    for (size_t i = 0; i < specials.size(); ++i) spec[l][(i * 7 + l * 31) % spec[l].size()] = specials[i];
  }
  // Blocks whose range ends near 64 and 128 bits, where one more add needs one more word.
  Leaves edges(2, std::vector<float>(sb::det::kWireBlock * 40, 0.0f));
  for (int d = 0; d < 40; ++d) {
    for (size_t l = 0; l < 2; ++l) {
      edges[l][size_t(d) * sb::det::kWireBlock] = kTop;
      edges[l][size_t(d) * sb::det::kWireBlock + 1] = std::ldexp(1.0f, d < 20 ? -25 - d : -85 - (d - 20));
    }
  }
  for (const Leaves* data : {&adv, &any, &spec, &edges}) {
    const size_t n = (*data)[0].size();
    for (int threads : {1, 3}) {
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      BlockAccumulator one(n), pairs(n);
      for (const std::vector<float>& l : *data) one.add(l.data());
      size_t l = 0;
      for (; l + 1 < data->size(); l += 2) pairs.add_pair((*data)[l].data(), (*data)[l + 1].data());
      if (l < data->size()) pairs.add((*data)[l].data());
      omp_set_num_threads(saved);
      CAPTURE(n);
      CAPTURE(threads);
      CHECK(one.adds() == pairs.adds());
      CHECK(one.status() == pairs.status());
      CHECK(one.memory_bytes() == pairs.memory_bytes());
      CHECK(std::memcmp(one.ranges(), pairs.ranges(), one.range_bytes()) == 0);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += same(one.value(i), pairs.value(i)) ? 0 : 1;
      CHECK(wrong == 0);
      if (one.status() != 0) continue;  // a refused value: no rounding
      std::vector<float> a(n), b(n);
      one.round_to_fp32(a.data());
      pairs.round_to_fp32(b.data());
      CHECK(std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0);
      one.encode(one.adds());
      pairs.encode(pairs.adds());
      REQUIRE(one.wire_words() == pairs.wire_words());
      CHECK(std::memcmp(one.wire(), pairs.wire(), one.wire_words() * sizeof(uint64_t)) == 0);
    }
  }
}
