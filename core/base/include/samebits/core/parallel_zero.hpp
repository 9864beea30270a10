// Zero-filling of large host buffers over the OpenMP threads, in 2 MiB pieces (one huge page
// each), so that the page faults of fresh memory (the kernel clearing each page) happen on every
// core, not one; and the first touch of fresh (already zero) mappings, one write per 4 KiB, in the
// same static schedule. Zero is zero whatever the schedule: no bit depends on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sb::cpu {

inline constexpr std::size_t kZeroPiece = std::size_t{1} << 21;

inline void parallel_zero(void* p, std::size_t bytes) {
  constexpr std::size_t kPiece = kZeroPiece;
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  auto* base = static_cast<unsigned char*>(p);
#pragma omp parallel for schedule(static) if (pieces >= 8)
  for (int64_t k = 0; k < pieces; ++k) {
    const std::size_t at = static_cast<std::size_t>(k) * kPiece;
    std::memset(base + at, 0, bytes - at < kPiece ? bytes - at : kPiece);
  }
}

// p: a fresh anonymous mapping (zero, untouched). Faults its pages in over the threads.
inline void parallel_first_touch(void* p, std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const int64_t pieces = static_cast<int64_t>((bytes + kZeroPiece - 1) / kZeroPiece);
  auto* base = static_cast<volatile unsigned char*>(p);
#pragma omp parallel for schedule(static) if (pieces >= 8)
  for (int64_t k = 0; k < pieces; ++k) {
    const std::size_t at = static_cast<std::size_t>(k) * kZeroPiece;
    const std::size_t end = bytes - at < kZeroPiece ? bytes : at + kZeroPiece;
    for (std::size_t i = at; i < end; i += kPage) base[i] = 0;
  }
}

}  // namespace sb::cpu
