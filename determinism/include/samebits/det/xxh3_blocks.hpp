// XXH3_64bits (seed 0, the default secret) of inputs longer than 240 bytes, decomposed for a
// parallel device: the fingerprint (det/fingerprint.hpp) of a tensor computed where it lives.
// XXH3's long loop keeps 8 independent 64-bit lanes. Within each 1024-byte block the 16 stripes'
// contributions to each lane are added modulo 2^64 (commutative: any thread may compute any
// stripe, in any order); only the per-block scramble is sequential. So:
//   1. block_contribution: each full block's 8 lane sums (independent blocks, in parallel);
//   2. apply_block, block after block: lane += contribution, then the scramble (a short chain);
//   3. finish_long: the last partial block, the last stripe, the merge and the avalanche.
// Every step is integer arithmetic modulo 2^64, so the value is XXH3_64bits' bit for bit
// (tests/unit/test_fingerprint_blocks.cpp checks it against libxxhash for many lengths). The
// secret is libxxhash's default (det::xxh3_default_secret()); inputs of at most kXxh3MidMax bytes
// take XXH3's short paths, which stay on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/det/hd.hpp"

namespace sb::det {

constexpr size_t kXxh3MidMax = 240;  // longer inputs take the long loop
constexpr size_t kXxh3Stripe = 64;   // bytes per stripe
constexpr size_t kXxh3StripesPerBlock = 16;
constexpr size_t kXxh3Block = kXxh3Stripe * kXxh3StripesPerBlock;  // 1024 bytes
constexpr size_t kXxh3SecretSize = 192;

// The 192 bytes of XXH3's default secret (from libxxhash: XXH3_generateSecret_fromSeed(·, 0)).
const unsigned char* xxh3_default_secret();

namespace xxh3 {

constexpr uint64_t kPrime32_1 = 0x9E3779B1u, kPrime32_2 = 0x85EBCA77u, kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull, kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull, kPrime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;

SB_HD uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = (v << 8) | p[b];
  return v;
}

// Lane i's value before the first stripe.
SB_HD uint64_t initial_lane(int i) {
  switch (i) {
    case 0: return kPrime32_3;
    case 1: return kPrime64_1;
    case 2: return kPrime64_2;
    case 3: return kPrime64_3;
    case 4: return kPrime64_4;
    case 5: return kPrime32_2;
    case 6: return kPrime64_5;
    default: return kPrime32_1;
  }
}

// One 64-byte stripe's contribution added into lanes[8], with the secret at `key`.
SB_HD void add_stripe(uint64_t* lanes, const unsigned char* stripe, const unsigned char* key) {
  for (int i = 0; i < 8; ++i) {
    const uint64_t v = read_le64(stripe + 8 * i);
    const uint64_t k = v ^ read_le64(key + 8 * i);
    lanes[i ^ 1] += v;
    lanes[i] += (k & 0xFFFFFFFFull) * (k >> 32);
  }
}

// The 8 lane sums of `stripes` stripes starting at `block` (a full block: kXxh3StripesPerBlock).
SB_HD void block_contribution(uint64_t* out, const unsigned char* block, size_t stripes, const unsigned char* secret) {
  for (int i = 0; i < 8; ++i) out[i] = 0;
  for (size_t s = 0; s < stripes; ++s) add_stripe(out, block + s * kXxh3Stripe, secret + 8 * s);
}

// Lane i's scramble key (the secret's last stripe).
SB_HD uint64_t scramble_key(const unsigned char* secret, int i) {
  return read_le64(secret + kXxh3SecretSize - kXxh3Stripe + 8 * i);
}

// A lane after a full block: its contribution added, then the scramble with its key.
SB_HD uint64_t apply_block_lane(uint64_t lane, uint64_t contribution, uint64_t key) {
  uint64_t acc = lane + contribution;
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kPrime32_1;
}

SB_HD uint64_t mul128_fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

// The hash from the lanes after every full block of an input of len > kXxh3MidMax bytes: the last
// partial block's stripes, the last stripe (the input's final 64 bytes), the merge.
SB_HD uint64_t finish_long(uint64_t* lanes, const unsigned char* input, size_t len, const unsigned char* secret) {
  const size_t blocks = (len - 1) / kXxh3Block;
  const size_t stripes = ((len - 1) - kXxh3Block * blocks) / kXxh3Stripe;
  for (size_t s = 0; s < stripes; ++s) add_stripe(lanes, input + blocks * kXxh3Block + s * kXxh3Stripe, secret + 8 * s);
  add_stripe(lanes, input + len - kXxh3Stripe, secret + kXxh3SecretSize - kXxh3Stripe - 7);
  uint64_t h = static_cast<uint64_t>(len) * kPrime64_1;
  for (int i = 0; i < 4; ++i) {
    const unsigned char* k = secret + 11 + 16 * i;
    h += mul128_fold64(lanes[2 * i] ^ read_le64(k), lanes[2 * i + 1] ^ read_le64(k + 8));
  }
  h ^= h >> 37;
  h *= 0x165667919E3779F9ull;
  return h ^ (h >> 32);
}

// The full blocks of an input of len bytes (the chain's length).
SB_HD size_t full_blocks(size_t len) { return (len - 1) / kXxh3Block; }

}  // namespace xxh3

// XXH3_64bits of len > kXxh3MidMax bytes by the three steps above, sequentially (the reference
// of the decomposition; a device runs step 1 in parallel).
inline uint64_t xxh3_long_by_blocks(const unsigned char* input, size_t len, const unsigned char* secret) {
  uint64_t lanes[8], c[8];
  for (int i = 0; i < 8; ++i) lanes[i] = xxh3::initial_lane(i);
  for (size_t b = 0; b < xxh3::full_blocks(len); ++b) {
    xxh3::block_contribution(c, input + b * kXxh3Block, kXxh3StripesPerBlock, secret);
    for (int i = 0; i < 8; ++i) lanes[i] = xxh3::apply_block_lane(lanes[i], c[i], xxh3::scramble_key(secret, i));
  }
  return xxh3::finish_long(lanes, input, len, secret);
}

}  // namespace sb::det
