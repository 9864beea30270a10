// numerics.leaf_sum=native's accumulator (Backend::make_native_accumulator, core/base/
// native_accumulator.cpp): the leaves' fp32 sum in add order — bit for bit the loop
// s = g0; s = s + g1; … on the host, whether the leaves come one by one or in pairs (the first pair
// in one pass), on 1 and 3 threads; round() divides as ops::leaf_mean; status() names a NaN or an
// Inf (a leaf's, or the fp32 sum's overflow) and round() then refuses; the statistics' squares are
// the leaves'; it has no exact wire.
#include <doctest/doctest.h>
#include <omp.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/gradient.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_point.hpp"
#include "samebits/det/philox.hpp"

using namespace sb;

namespace {

constexpr size_t kN = 10007;

// Values over 40 binades, so that the fp32 sum rounds differently from the exact one.
std::vector<float> leaf(uint32_t stream) {
  std::vector<float> g(kN);
  for (size_t i = 0; i < kN; ++i) {
    const float scale = std::ldexp(1.0f, -static_cast<int>(det::philox_u32(5, stream, i) % 40));
    g[i] = det::philox_normal(5, stream + 100, i) * scale;
  }
  return g;
}

std::vector<float> host_sum(const std::vector<std::vector<float>>& leaves) {
  std::vector<float> s = leaves[0];
  for (size_t l = 1; l < leaves.size(); ++l)
    for (size_t i = 0; i < kN; ++i) s[i] = s[i] + leaves[l][i];
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> rounded(GradAccumulator& acc, float divisor) {
  std::vector<float> out(kN);
  acc.round(out.data(), divisor);
  return out;
}

}  // namespace

TEST_CASE("native leaf sum: the fp32 sum in add order, one by one or in pairs, on 1 and 3 threads") {
  std::vector<std::vector<float>> leaves;
  for (uint32_t l = 0; l < 5; ++l) leaves.push_back(leaf(l));
  const std::vector<float> ref = host_sum(leaves);
  auto be = make_cpu_backend();
  const int saved = omp_get_max_threads();
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    CAPTURE(threads);
    auto one = be->make_native_accumulator(kN);
    auto paired = be->make_native_accumulator(kN);
    for (int pass = 0; pass < 2; ++pass) {  // the second pass after clear(): nothing carried over
      one->clear();
      paired->clear();
      for (const auto& g : leaves) one->add(g.data());
      paired->add_leaves(leaves[0].data(), leaves[1].data(), nullptr);
      paired->add_leaves(leaves[2].data(), leaves[3].data(), nullptr);
      paired->add_leaves(leaves[4].data(), nullptr, nullptr);
      CHECK(one->adds() == 5);
      CHECK(paired->adds() == 5);
      CHECK(one->status() == 0);
      CHECK(same_bits(rounded(*one, 1.0f), ref));
      CHECK(same_bits(rounded(*paired, 1.0f), ref));
      std::vector<float> mean(kN);
      for (size_t i = 0; i < kN; ++i) mean[i] = ops::leaf_mean(ref[i], 5.0f);
      CHECK(same_bits(rounded(*paired, 5.0f), mean));
    }
  }
  omp_set_num_threads(saved);
  // Not the exact sum rounded once: the switch changes bits.
  auto exact = be->make_accumulator(kN);
  exact->clear();
  for (const auto& g : leaves) exact->add(g.data());
  CHECK_FALSE(same_bits(rounded(*exact, 1.0f), ref));
}

TEST_CASE("native leaf sum: the squares are the leaves', a NaN or an Inf is reported and refused, no wire") {
  auto be = make_cpu_backend();
  const std::vector<TensorSpan> spans{{0, 100}, {100, kN - 100}};
  const std::vector<float> a = leaf(7), b = leaf(8);
  auto acc = be->make_native_accumulator(kN);
  auto squares = be->make_tensor_sums(spans), want = be->make_tensor_sums(spans);
  acc->clear();
  squares->clear();
  want->clear();
  acc->add_leaves(a.data(), b.data(), squares.get());
  want->add(a.data(), false);
  want->add(b.data(), false);
  det::ExactSum got_sq[2], want_sq[2];
  squares->read(got_sq, nullptr, nullptr);
  want->read(want_sq, nullptr, nullptr);
  for (int t = 0; t < 2; ++t) CHECK(got_sq[t].to_f64() == want_sq[t].to_f64());

  std::vector<float> bad = a;
  bad[17] = INFINITY;
  acc->add(bad.data());
  CHECK(acc->status() == det::kFixedInf);
  bad[18] = NAN;
  acc->add(bad.data());  // Inf + Inf stays Inf; the NaN joins it
  CHECK(acc->status() == (det::kFixedInf | det::kFixedNaN));
  std::vector<float> out(kN);
  CHECK_THROWS_AS(acc->round(out.data(), 1.0f), Error);

  std::vector<float> big(kN, FLT_MAX);  // finite leaves whose fp32 sum overflows
  acc->clear();
  acc->add(big.data());
  CHECK(acc->status() == 0);
  acc->add(big.data());
  CHECK(acc->status() == det::kFixedInf);

  size_t words = 0;
  CHECK_THROWS_AS(acc->encode(1, &words), Error);
  CHECK_THROWS_AS(acc->block_ranges(), Error);
  CHECK_THROWS_AS(acc->wire_words(1), Error);
}
