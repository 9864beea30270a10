// samebits' Philox equals cuRAND's CURAND_RNG_PSEUDO_PHILOX4_32_10 host generator bit for bit:
// raw 32-bit words and curandGenerateUniform's floats, for several seeds and offsets. The host
// generator runs without a GPU; built without cuRAND, this test exits 77 (skipped).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "samebits/det/bits.hpp"
#include "samebits/det/philox.hpp"
#include "support/skip.hpp"

#if defined(SB_HAVE_CURAND)
#include <curand.h>

using namespace sb::det;

namespace {

struct HostGenerator {
  curandGenerator_t g = nullptr;
  HostGenerator() { REQUIRE(curandCreateGeneratorHost(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10) == CURAND_STATUS_SUCCESS); }
  ~HostGenerator() { curandDestroyGenerator(g); }
  void start(uint64_t seed, uint64_t offset) {
    REQUIRE(curandSetPseudoRandomGeneratorSeed(g, seed) == CURAND_STATUS_SUCCESS);
    REQUIRE(curandSetGeneratorOffset(g, offset) == CURAND_STATUS_SUCCESS);
  }
};

// The host generator's element j is lane j % 4 of group j / 4; group q runs in subsequence
// q mod 65536 at block q / 65536 (65536 interleaved subsequences): in samebits' terms stream
// q mod 65536, element 4·(q / 65536) + j % 4.
uint32_t samebits_for_host_element(uint64_t seed, uint64_t j) {
  const uint64_t q = j / 4;
  return philox_u32(seed, q % 65536, 4 * (q / 65536) + j % 4);
}

}  // namespace

TEST_CASE("philox_u32 and uniform_from_u32 equal cuRAND's host Philox4_32_10 bit for bit") {
  HostGenerator gen;
  const uint64_t seeds[] = {0, 42, 0x0123456789abcdefull, 0xffffffffffffffffull};
  // Offsets: aligned and not to the 4-lane group, past one full sweep of the 65536
  // subsequences (2^18 elements), and deep (2^34 + 3).
  const uint64_t offsets[] = {0, 1, 7, 1000, 262144, 262147, 123456789, (uint64_t{1} << 34) + 3};
  const size_t n = (size_t{1} << 19) + 3;  // crosses the 2^18-element sweep at every offset
  std::vector<uint32_t> words(n);          // (n)
  std::vector<float> uniforms(n);          // (n)
  for (uint64_t seed : seeds) {
    for (uint64_t offset : offsets) {
      gen.start(seed, offset);
      REQUIRE(curandGenerate(gen.g, words.data(), n) == CURAND_STATUS_SUCCESS);
      gen.start(seed, offset);
      REQUIRE(curandGenerateUniform(gen.g, uniforms.data(), n) == CURAND_STATUS_SUCCESS);
      size_t word_wrong = 0, uniform_wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        const uint32_t mine = samebits_for_host_element(seed, offset + i);
        word_wrong += mine != words[i];
        uniform_wrong += bits_of(uniform_from_u32(mine)) != bits_of(uniforms[i]);
      }
      INFO("seed " << seed << " offset " << offset);
      CHECK(word_wrong == 0);
      CHECK(uniform_wrong == 0);
    }
  }
}
#else
TEST_CASE("cuRAND host generator comparison") {
  sb::test::skip("built without cuRAND (CUDA toolkit): no reference generator");
}
#endif
