// Zero-filling of large host buffers over the OpenMP threads, in 1 MiB pieces, so that the page
// faults of fresh memory (the kernel clearing each page) happen on every core, not one. Zero is
// zero whatever the schedule: no bit depends on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sb::cpu {

inline void parallel_zero(void* p, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  auto* base = static_cast<unsigned char*>(p);
#pragma omp parallel for schedule(static) if (pieces >= 8)
  for (int64_t k = 0; k < pieces; ++k) {
    const std::size_t at = static_cast<std::size_t>(k) * kPiece;
    std::memset(base + at, 0, bytes - at < kPiece ? bytes - at : kPiece);
  }
}

}  // namespace sb::cpu
