// The exact GEMM's scalar kernel: the digit dots of one MR × NR tile by plain loops, each product
// added in int64 (exact: exact_gemm.hpp). The reference the SIMD kernels equal bitwise (they
// compute the same integers).
#include "exact_gemm.hpp"

namespace sb::cpu::exact {

namespace {

// The two int16 digits of a digit pair (exact_gemm.hpp): the low half, then the high one.
int64_t low(int32_t pair) { return static_cast<int16_t>(pair & 0xffff); }
int64_t high(int32_t pair) { return static_cast<int16_t>(static_cast<uint32_t>(pair) >> 16); }

}  // namespace

void kernel_scalar(int kp, const int32_t* a, const int32_t* b, int64_t* d) {
  for (int p = 0; p < kp; ++p) {
    const int32_t* ap = a + static_cast<size_t>(p) * MR;  // (MR)
    const int32_t* bp = b + static_cast<size_t>(p) * NR;  // (NR)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) d[r * NR + j] += low(ap[r]) * low(bp[j]) + high(ap[r]) * high(bp[j]);
  }
}

}  // namespace sb::cpu::exact
