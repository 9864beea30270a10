// Fingerprints: a 64-bit hash (XXH3_64bits, seed 0) of a tensor's raw bits, as stored in memory
// (little-endian). Bits, not values: -0.0 and +0.0, or two NaN payloads, fingerprint differently,
// so equal fingerprints mean equal encodings (up to 64-bit hash collisions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "samebits/det/fp_formats.hpp"

namespace sb::det {

// XXH3_64bits of `bytes` bytes at `data` (data may be null when bytes == 0).
uint64_t fingerprint(const void* data, size_t bytes);

// The same hash over n elements: (n) floats, doubles, bf16 or fp16 encodings.
uint64_t fingerprint(const float* x, size_t n);
uint64_t fingerprint(const double* x, size_t n);
uint64_t fingerprint(const bf16* x, size_t n);
uint64_t fingerprint(const fp16* x, size_t n);

// 16 lowercase hex digits, most significant first: "2d06800538d394c2".
std::string fingerprint_hex(uint64_t fp);

}  // namespace sb::det
