// selftest_philox: the Random123 known-answer vectors of Philox4x32-10, cuRAND's element layout,
// and the ends of the uniform map. (The bitwise comparison with cuRAND's host generator is in
// tests/unit/test_philox.cpp, which links cuRAND.)
#include <string>

#include "samebits/det/philox.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::det {
namespace {

struct KnownAnswer {
  uint32_t counter[4];
  uint32_t key[2];
  uint32_t expected[4];
};

// Random123 1.14, examples/kat_vectors, "philox4x32 10" lines.
constexpr KnownAnswer kPhiloxKat[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
     {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

}  // namespace

SelftestResult selftest_philox() {
  int kat_ok = 0;
  for (const KnownAnswer& k : kPhiloxKat) {
    const Philox4 r = philox4x32_10(k.counter[0], k.counter[1], k.counter[2], k.counter[3], k.key[0], k.key[1]);
    kat_ok += r.v[0] == k.expected[0] && r.v[1] == k.expected[1] && r.v[2] == k.expected[2] && r.v[3] == k.expected[3];
  }
  // Element i of stream s under seed k is lane i % 4 of the block at counter words
  // (i / 4 low, i / 4 high, s low, s high), key words (k low, k high): cuRAND's curand_init.
  const uint64_t seed = 0x299f31d0a4093822ull, stream = 0x0370734413198a2eull;
  const uint64_t group = 0x05a308d3243f6a88ull;
  const Philox4 block = philox4x32_10(0x243f6a88u, 0x05a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  bool layout_ok = true;
  for (unsigned lane = 0; lane < 4; ++lane) {
    layout_ok = layout_ok && philox_u32(seed, stream, 4 * group + lane) == block.v[lane] &&
                philox_u32(0, 0, lane) == kPhiloxKat[0].expected[lane];
  }
  const bool uniform_ok = uniform_from_u32(0u) == 0x1p-33f && uniform_from_u32(0xffffffffu) == 1.0f;
  const bool ok = kat_ok == 3 && layout_ok && uniform_ok;
  return {"philox", ok,
          std::to_string(kat_ok) + "/3 Random123 known answers, cuRAND element layout " + (layout_ok ? "ok" : "WRONG") +
              ", uniform ends (2^-33, 1] " + (uniform_ok ? "ok" : "WRONG")};
}

}  // namespace sb::det
