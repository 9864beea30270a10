// The exact GEMM's scalar kernel: the int32 slice dots of one MR × NR tile by plain loops, in
// wrapping unsigned arithmetic whose result is the exact dot (exact_gemm.hpp). The reference the
// SIMD kernels equal bitwise (they compute the same integers).
#include "exact_gemm.hpp"

namespace sb::cpu::exact {

void kernel_scalar(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load) {
  uint32_t acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = load ? static_cast<uint32_t>(d[r * NR + j]) : 0u;
  for (int q = 0; q < kq; ++q) {
    const uint8_t* aq = a + static_cast<size_t>(q) * MR * kQuad;  // (MR, 4)
    const int8_t* bq = b + static_cast<size_t>(q) * NR * kQuad;   // (NR, 4)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j)
        for (int l = 0; l < kQuad; ++l)
          acc[r][j] += static_cast<uint32_t>(static_cast<int32_t>(aq[r * kQuad + l]) * bq[j * kQuad + l]);
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j)
      d[r * NR + j] =
          static_cast<int32_t>(acc[r][j] - static_cast<uint32_t>(kOffset) * static_cast<uint32_t>(b_sum[j]));
}

}  // namespace sb::cpu::exact
