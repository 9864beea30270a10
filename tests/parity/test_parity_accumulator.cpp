// Parity of the rule-4 gradient accumulator: the CUDA GradAccumulator's exact sums (4 limbs) and
// the CPU's (block-local words) give the same wire — block ranges and encoded words, bitwise —
// after many adds (across the GPU's periodic carry propagation after FixedAccumulator::kMaxPending
// adds), and so do the rounded batch gradient before and after decode, the status bits and the
// refusal to round after NaN/Inf; under every launch configuration.
#include <cstring>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/fixed_point.hpp"

namespace sb::test {
namespace {

// The accumulator's ranges and wire words (for total_adds = its own adds), as host bytes.
std::vector<uint8_t> wire_of(Backend& be, GradAccumulator& acc) {
  std::vector<uint8_t> out(acc.range_bytes());
  be.copy_to_host(out.data(), acc.block_ranges(), out.size());
  size_t words = 0;
  const uint64_t* w = acc.encode(acc.adds(), &words);
  out.resize(out.size() + words * sizeof(uint64_t));
  be.copy_to_host(out.data() + acc.range_bytes(), w, words * sizeof(uint64_t));
  return out;
}

TEST_CASE("GradAccumulator: CUDA wire, rounding and status equal the CPU's") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const size_t n = 10007;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    auto cacc = cpu->make_accumulator(n);
    auto gacc = gpu->make_accumulator(n);
    REQUIRE(gacc->range_bytes() == cacc->range_bytes());
    cacc->clear();
    gacc->clear();
    Guarded g(*gpu, n);
    // More adds than kMaxPending: the carry propagation between adds happens on both sides.
    const int adds = static_cast<int>(det::FixedAccumulator::kMaxPending) + 40;
    for (int a = 0; a < adds; ++a) {
      const std::vector<float> x = parity_values(n, static_cast<uint32_t>(a) + 1, 1e7f);
      cacc->add(x.data());
      gpu->copy_from_host(g.data(), x.data(), n * sizeof(float));
      gacc->add(g.data());
      if (a % 256 == 0 || a + 1 == adds) {
        REQUIRE_MESSAGE(wire_of(*gpu, *gacc) == wire_of(*cpu, *cacc), "wire differs after add ", a, " on ",
                        gpu->describe());
      }
    }
    CHECK(gacc->adds() == cacc->adds());
    CHECK(gacc->status() == 0);
    CHECK(cacc->status() == 0);
    for (float divisor : {1.0f, 8.0f, 3.0f}) {
      std::vector<float> out(n);
      cacc->round(out.data(), divisor);
      Guarded gout(*gpu, n);
      gacc->round(gout.data(), divisor);
      check_output(gout, out, detail::concat("round / ", divisor, " on ", gpu->describe()));
    }
    // decode over a world of one (after wire_of's encode): the same sums, the same rounding.
    cacc->decode(cacc->adds(), cacc->status());
    gacc->decode(gacc->adds(), gacc->status());
    CHECK(wire_of(*gpu, *gacc) == wire_of(*cpu, *cacc));
    std::vector<float> out(n);
    cacc->round(out.data(), 1.0f);
    Guarded gout(*gpu, n);
    gacc->round(gout.data(), 1.0f);
    check_output(gout, out, detail::concat("round after decode on ", gpu->describe()));
  }
}

TEST_CASE("GradAccumulator: NaN, Inf and out-of-window values set the CPU's status bits and stop the rounding") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  auto gpu = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  const size_t n = 1000;
  auto cacc = cpu->make_accumulator(n);
  auto gacc = gpu->make_accumulator(n);
  std::vector<float> x = parity_values(n, 77, 1.0f);
  x[10] = det::float_of_bits(0x7fc00000u);
  x[20] = det::float_of_bits(0xff800000u);
  x[30] = 1e30f;
  cacc->add(x.data());
  Guarded g(*gpu, n, x), out(*gpu, n);
  gacc->add(g.data());
  CHECK(gacc->status() == cacc->status());
  CHECK(gacc->status() == (det::kFixedNaN | det::kFixedInf | det::kFixedOverflow));
  std::vector<float> host(n);
  CHECK_THROWS_AS(cacc->round(host.data(), 1.0f), sb::Error);
  CHECK_THROWS_AS(gacc->round(out.data(), 1.0f), sb::Error);
  gacc->clear();
  CHECK(gacc->status() == 0);
}

}  // namespace
}  // namespace sb::test
