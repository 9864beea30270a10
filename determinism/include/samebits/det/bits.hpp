// Bit casts between floating-point values and their IEEE-754 encodings, host and device.
// Exact by construction (a memcpy of the object representation): no rounding, NaN payloads and
// the sign of zero kept.
#pragma once
#include <stdint.h>
#include <string.h>

#include "samebits/det/hd.hpp"

namespace sb::det {

SB_HD uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

SB_HD float float_of_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

SB_HD uint64_t bits_of(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

SB_HD double double_of_bits(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace sb::det
