// Softmax pieces shared by attention and cross-entropy, host and device: the exact row maximum
// (rule 6) and the 32-lane denominator (rule 2). Probabilities are e / den, one IEEE division.
#pragma once
#include <cstdint>

#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/lane32.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

// Rule 6: max in any order gives the same bits. +0 beats -0; any NaN gives the canonical quiet
// NaN 0x7fc00000 (so the payload cannot depend on order).
SB_HD float exact_max(float a, float b) {
  if (a != a || b != b) return det::float_of_bits(0x7fc00000u);
  if (a == b) return det::bits_of(a) == 0x80000000u ? b : a;  // equal: prefer +0 over -0
  return a > b ? a : b;
}

// max over x[0 .. n-1] (from -inf; -inf for n = 0).
SB_HD float row_max(const float* x, int n) {
  float m = det::float_of_bits(0xff800000u);
  for (int i = 0; i < n; ++i) m = exact_max(m, x[i]);
  return m;
}

// One softmax numerator: exp(x - max) with samebits exp.
SB_HD float softmax_numerator(float x, float max) { return det::exp(x - max); }

// Σ softmax_numerator(x[i], max) over i < n in the 32-lane form: bitwise lane32_sum_ref of the
// numerators.
SB_HD float softmax_denominator(const float* x, int n, float max) {
  float s[det::kLanes];
  for (int l = 0; l < det::kLanes; ++l) s[l] = 0.0f;
  for (int i = 0; i < n; ++i) s[i % det::kLanes] = s[i % det::kLanes] + softmax_numerator(x[i], max);
  return det::lane32_fold(s);
}

SB_HD float softmax_prob(float numerator, float denominator) { return numerator / denominator; }

// log softmax: (x − max) − log(den), samebits log.
SB_HD float log_softmax_out(float x, float max, float denominator) { return (x - max) - det::log(denominator); }

// Softmax's input gradient from its output y: y·(dy − s), s = Σ dy·y over the row (32-lane dot).
SB_HD float softmax_dinp(float y, float dy, float s) { return y * (dy - s); }
// Log softmax's from its output y: dy − exp(y)·s, s = Σ dy over the row (32-lane sum).
SB_HD float log_softmax_dinp(float y, float dy, float s) { return dy - det::exp(y) * s; }

}  // namespace sb::ops
