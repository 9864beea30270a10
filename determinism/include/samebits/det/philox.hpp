// Philox4x32-10 counter-based generator (Salmon, Moraes, Dror, Shaw, SC'11), host and device.
// Layout of cuRAND's device API curand_init(seed, subsequence, offset): key = the 64-bit seed,
// counter = (element index / 4 as 64 bits, stream as 64 bits). Bitwise equal to cuRAND's
// CURAND_RNG_PSEUDO_PHILOX4_32_10 (tests/unit/test_philox.cpp). Pure functions: no state.
#pragma once
#include <cstdint>
#include <string_view>

#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::det {

struct Philox4 {
  uint32_t v[4];
};

namespace philox_detail {
constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;
constexpr uint32_t kW1 = 0xBB67AE85u;

SB_HD void round(uint32_t c[4], const uint32_t k[2]) {
  const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  const uint32_t n0 = hi1 ^ c[1] ^ k[0];
  const uint32_t n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}
}  // namespace philox_detail

// The raw block: 10 rounds of Philox4x32 on counter (c0, c1, c2, c3) with key (k0, k1).
SB_HD Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  uint32_t c[4] = {c0, c1, c2, c3};
  uint32_t k[2] = {k0, k1};
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += philox_detail::kW0;
      k[1] += philox_detail::kW1;
    }
    philox_detail::round(c, k);
  }
  return Philox4{{c[0], c[1], c[2], c[3]}};
}

// The block holding element `index` of stream `stream` under `seed` (cuRAND's device layout:
// curand_init(seed, subsequence = stream, offset = index)); element index % 4 is its lane.
SB_HD Philox4 philox_block(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t group = index / 4;
  return philox4x32_10(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), static_cast<uint32_t>(stream),
                       static_cast<uint32_t>(stream >> 32), static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32));
}

// One 32-bit draw: element `index` of stream `stream`.
SB_HD uint32_t philox_u32(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox_block(seed, stream, index).v[index % 4];
}

// Uniform in (0, 1], as cuRAND's _curand_uniform: float(x) · 2^-32 + 2^-33 in fp32 — x rounded to
// nearest fp32, an exact scaling, one rounded add (never fused: the build forbids contraction).
SB_HD float uniform_from_u32(uint32_t x) { return static_cast<float>(x) * 0x1p-32f + 0x1p-33f; }

SB_HD float philox_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return uniform_from_u32(philox_u32(seed, stream, index));
}

// Standard normal by Box–Muller with samebits math: element `index` uses the pair of uniforms
// (2·index, 2·index+1) of the stream, so every element is a pure function of its index.
SB_HD float normal_from_uniforms(float u1, float u2) {
  // u1, u2 in (0, 1] (uniform_from_u32): log and cos_2pi without their special cases.
  const float r = sqrt_f32(-2.0f * math_detail::log_positive_finite(u1));
  return r * math_detail::cos_2pi_below_2p24(u2);
}

SB_HD float philox_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const Philox4 b = philox_block(seed, stream, 2 * index);
  const unsigned lane = static_cast<unsigned>((2 * index) % 4);  // 0 or 2
  return normal_from_uniforms(uniform_from_u32(b.v[lane]), uniform_from_u32(b.v[lane + 1]));
}

// out[i] = scale · philox_normal(seed, stream, first + i) for i < n, first even: the same values,
// computed with one Philox block per pair of elements and in loops the compiler vectorises.
inline void philox_normal_fill(uint64_t seed, uint64_t stream, uint64_t first, uint64_t n, float scale, float* out) {
  constexpr uint64_t kChunk = 64;
  float u1[kChunk], u2[kChunk];
  for (uint64_t done = 0; done < n; done += kChunk) {
    const uint64_t m = n - done < kChunk ? n - done : kChunk;
    for (uint64_t i = 0; i < m; i += 2) {
      const Philox4 b = philox_block(seed, stream, 2 * (first + done + i));  // elements i, i + 1
      u1[i] = uniform_from_u32(b.v[0]), u2[i] = uniform_from_u32(b.v[1]);
      u1[i + 1] = uniform_from_u32(b.v[2]), u2[i + 1] = uniform_from_u32(b.v[3]);
    }
    for (uint64_t i = 0; i < m; ++i) out[done + i] = scale * normal_from_uniforms(u1[i], u2[i]);
  }
}

// 64-bit stream id of a name (FNV-1a): streams follow tensor names, not creation order.
constexpr uint64_t stream_of(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : name) {
    h ^= static_cast<uint8_t>(ch);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace sb::det
