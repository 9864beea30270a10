// selftest_math: samebits math (samebits/det/math.hpp) against correctly rounded known values
// (MPFR), its special values, and the fingerprint of 65536 results per function — the bits every
// build and every device must reproduce. (The MPFR ULP sweeps are tests/unit/test_math.cpp.)
#include <stdint.h>

#include <string>

#include "samebits/det/bits.hpp"
#include "samebits/det/math.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::det {
namespace {

enum Fn { kExp, kLog, kTanh, kErf, kSin, kCos, kCos2pi, kFnCount };
constexpr const char* kFnName[kFnCount] = {"exp", "log", "tanh", "erf", "sin", "cos", "cos_2pi"};

float eval(int f, float x) {
  switch (f) {
    case kExp: return exp(x);
    case kLog: return log(x);
    case kTanh: return tanh(x);
    case kErf: return erf(x);
    case kSin: return sin(x);
    case kCos: return cos(x);
    default: return cos_2pi(x);
  }
}

struct Known {
  int f;
  uint32_t x, y;  // bits of the input and of the expected result
};

// Correctly rounded results (MPFR), and the special values (every NaN result is 0x7fc00000).
constexpr Known kKnown[] = {
    {kExp, 0x3f800000u, 0x402df854u},    {kExp, 0xbf800000u, 0x3ebc5ab2u},
    {kExp, 0x41280000u, 0x470ddb81u},    {kExp, 0xc2af0000u, 0x006cb2bcu},  // subnormal result
    {kExp, 0xc2c88000u, 0x00000015u},    {kExp, 0x42b17218u, 0x7f800000u},  // overflow
    {kExp, 0xff800000u, 0x00000000u},    {kExp, 0x7fa00001u, 0x7fc00000u},
    {kLog, 0x40000000u, 0x3f317218u},    {kLog, 0x3dcccccdu, 0xc0135d8eu},
    {kLog, 0x7149f2cau, 0x428a27b5u},    {kLog, 0x000116c2u, 0xc2b834f2u},  // subnormal input
    {kLog, 0x3f7fbe77u, 0xba8322cau},    {kLog, 0x80000000u, 0xff800000u},
    {kLog, 0xbf800000u, 0x7fc00000u},    {kLog, 0x3f800000u, 0x00000000u},
    {kTanh, 0x3f000000u, 0x3eec9a9fu},   {kTanh, 0xbf600000u, 0xbf343328u},
    {kTanh, 0x3fc00000u, 0x3f67b7ccu},   {kTanh, 0x38d1b717u, 0x38d1b717u},
    {kTanh, 0xc0800000u, 0xbf7fd40cu},   {kTanh, 0x80000000u, 0x80000000u},
    {kTanh, 0xff800000u, 0xbf800000u},   {kTanh, 0xffc12345u, 0x7fc00000u},
    {kErf, 0x3f000000u, 0x3f053f7bu},    {kErf, 0xbf800000u, 0xbf57bb3du},
    {kErf, 0x40000000u, 0x3f7ecd71u},    {kErf, 0x1e3ce508u, 0x1e552511u},
    {kErf, 0x40600000u, 0x3f7ffff4u},    {kErf, 0x80000001u, 0x80000001u},
    {kSin, 0x3f800000u, 0x3f576aa4u},    {kSin, 0xc2c80000u, 0x3f01a12eu},
    {kSin, 0x48927c00u, 0x3ddb4430u},    {kSin, 0x501502f9u, 0xbef99a64u},  // reduction
    {kSin, 0x7f61b1e6u, 0x3f5ff9c4u},    {kSin, 0x7f800000u, 0x7fc00000u},  // of huge x
    {kCos, 0x3f800000u, 0x3f0a5140u},    {kCos, 0xc2c80000u, 0x3f5cc0eeu},
    {kCos, 0x48927c00u, 0xbf7e874fu},    {kCos, 0x501502f9u, 0x3f5f84c5u},
    {kCos, 0x7f61b1e6u, 0xbef7f57cu},    {kCos, 0x80000000u, 0x3f800000u},
    {kCos2pi, 0x3dcccccdu, 0x3f4f1bbdu}, {kCos2pi, 0x3e99999au, 0xbe9e377cu},
    {kCos2pi, 0x3f19999au, 0xbf4f1bbbu}, {kCos2pi, 0x3f666666u, 0x3f4f1bbbu},
    {kCos2pi, 0x3727c5acu, 0x3f800000u}, {kCos2pi, 0x3e800000u, 0x00000000u},  // +0 at u = 1/4
};

// FNV-1a 64 of the result bits of 65536 inputs spread over all bit patterns (cos_2pi: over its
// domain (0, 1]), recorded from the reference build; any other value means this build computes
// different bits (a compiler flag, a contraction, a changed coefficient).
constexpr uint64_t kSweepFingerprint[kFnCount] = {
    0x601b1fac8be189f7ull, 0x8c1227b47579ae6cull, 0xf66a5f1cfdc4dfc9ull, 0x43c2e5cd6ee891b0ull,
    0xd6e717bc2cea2cb0ull, 0x5ddea388e59c8ea2ull, 0x49c5881999698a42ull,
};

uint64_t sweep_fingerprint(int f) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t i = 0; i < 65536u; ++i) {
    uint32_t b = (i << 16) | ((i * 40503u) & 0xffffu);
    if (f == kCos2pi) b = b % 0x3f800000u + 1u;
    const uint32_t y = bits_of(eval(f, float_of_bits(b)));
    for (int k = 0; k < 4; ++k) {
      h ^= (y >> (8 * k)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

}  // namespace

SelftestResult selftest_math() {
  std::string wrong;
  int known_ok = 0;
  for (const Known& k : kKnown) {
    const uint32_t got = bits_of(eval(k.f, float_of_bits(k.x)));
    if (got == k.y) {
      ++known_ok;
    } else if (wrong.size() < 200) {
      wrong += std::string(" ") + kFnName[k.f] + "(" + std::to_string(k.x) + ")";
    }
  }
  int sweeps_ok = 0;
  for (int f = 0; f < kFnCount; ++f) {
    if (sweep_fingerprint(f) == kSweepFingerprint[f]) {
      ++sweeps_ok;
    } else {
      wrong += std::string(" ") + kFnName[f] + "-sweep";
    }
  }
  constexpr int kKnownCount = sizeof kKnown / sizeof kKnown[0];
  const bool ok = known_ok == kKnownCount && sweeps_ok == kFnCount;
  return {"math", ok,
          std::to_string(known_ok) + "/" + std::to_string(kKnownCount) + " known values, " + std::to_string(sweeps_ok) +
              "/7 sweep fingerprints (65536 " + "results each)" + (ok ? "" : "; differ:" + wrong)};
}

}  // namespace sb::det
