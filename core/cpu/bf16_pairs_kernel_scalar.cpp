// The bf16 pair order's scalar kernel: ops::bf16_pair_fma per pair, the definition itself; the
// reference the other kernels equal bit for bit (tests/unit/test_bf16_pairs.cpp).
#include "bf16_pairs.hpp"
#include "samebits/core/ops/bf16_pairs.hpp"

namespace sb::cpu::pairs {

void kernel_scalar(int kp, const uint32_t* a, const uint32_t* b, float* tile) {
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) {
      float acc = tile[r * NR + j];
      for (int p = 0; p < kp; ++p) {
        const uint32_t x = a[static_cast<size_t>(p) * MR + r], y = b[static_cast<size_t>(p) * NR + j];
        acc = ops::bf16_pair_fma(acc, static_cast<uint16_t>(x >> 16), static_cast<uint16_t>(y >> 16),
                                 static_cast<uint16_t>(x), static_cast<uint16_t>(y));
      }
      tile[r * NR + j] = acc;
    }
  }
}

}  // namespace sb::cpu::pairs
