// The canonical dot product of docs/CONTRACT.md rule 1, host and device, one definition: an fp32
// accumulator, one fma per k in ascending k. Every GEMM, attention score and attention-weighted
// sum in samebits is this chain; blocked kernels continue it (load the running acc), never sum
// partial blocks. Operands are rounded to the GEMM precision on load (round_operand).
#pragma once
#include <cstddef>

#include "samebits/core/numerics.hpp"
#include "samebits/det/fp_formats.hpp"
#include "samebits/det/hd.hpp"

namespace sb::ops {

// acc ← fma(a[p·sa], b[p·sb], acc) for p = 0 .. k-1; the chain starts at `acc` (+0 for a fresh
// dot, the running value for a continued one).
SB_HD float canonical_dot(const float* a, ptrdiff_t sa, const float* b, ptrdiff_t sb, int k, float acc) {
  for (int p = 0; p < k; ++p) acc = det::fma_f32(a[p * sa], b[p * sb], acc);
  return acc;
}

// A GEMM operand as the kernels see it: rounded to bf16 / fp16 (RNE, shared conversions) or
// unchanged in fp32.
SB_HD float round_operand(float x, Precision p) {
  return p == Precision::bf16 ? det::round_to_bf16(x) : p == Precision::fp16 ? det::round_to_fp16(x) : x;
}

// canonical_dot with both operands rounded to precision p on load.
SB_HD float canonical_dot_rounded(const float* a, ptrdiff_t sa, const float* b, ptrdiff_t sb, int k, float acc,
                                  Precision p) {
  for (int p_ = 0; p_ < k; ++p_) acc = det::fma_f32(round_operand(a[p_ * sa], p), round_operand(b[p_ * sb], p), acc);
  return acc;
}

// A linear layer's output: the dot (from +0), then the bias in one addition.
SB_HD float linear_out(float dot, float bias) { return dot + bias; }

// A bias gradient, one more token: additions in token order from +0 (rule 3).
SB_HD float token_sum_step(float acc, float x) { return acc + x; }

}  // namespace sb::ops
