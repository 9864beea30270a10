// Parity of the rule-4 gradient accumulator: the CUDA GradAccumulator's limbs (limb-major, the
// CPU's layout) equal the CPU's after every add — across the periodic carry propagation after
// FixedAccumulator::kMaxPending adds — and so do the rounded batch gradient, the status bits, the
// refusal to round after NaN/Inf, and finish_allreduce; under every launch configuration.
#include <cstring>

#include "parity/parity_support.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/fixed_point.hpp"

namespace sb::test {
namespace {

std::vector<int64_t> limbs_of(Backend& be, GradAccumulator& acc) {
  std::vector<int64_t> host(acc.limb_count());
  be.copy_to_host(host.data(), acc.limbs(), host.size() * sizeof(int64_t));
  return host;
}

TEST_CASE("GradAccumulator: CUDA limbs, rounding and status equal the CPU's") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const size_t n = 10007;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    auto cacc = cpu->make_accumulator(n);
    auto gacc = gpu->make_accumulator(n);
    REQUIRE(gacc->limb_count() == cacc->limb_count());
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
        const std::vector<int64_t> cl(cacc->limbs(), cacc->limbs() + cacc->limb_count());
        REQUIRE_MESSAGE(limbs_of(*gpu, *gacc) == cl, "limbs differ after add ", a, " on ", gpu->describe());
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
    // finish_allreduce over a world of one: normalizes, records counts; limbs still equal.
    cacc->finish_allreduce(1, cacc->adds(), cacc->status());
    gacc->finish_allreduce(1, gacc->adds(), gacc->status());
    const std::vector<int64_t> cl(cacc->limbs(), cacc->limbs() + cacc->limb_count());
    CHECK(limbs_of(*gpu, *gacc) == cl);
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
