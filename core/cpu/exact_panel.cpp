// The exact GEMM's per-element slicing work on a panel of lines (rows of op(A) or columns of
// op(B)), compiled once per instruction set so the compiler vectorizes it: each line's scale code
// (ops::exact::line_code, from the max of |x|'s bits: exact in any order) and each element's
// integer operand cut into digit pairs (ops::exact::integer_operand, digit). Integer work per
// element: every instruction set gives the same words.
#include <algorithm>

#include "exact_gemm.hpp"

namespace sb::cpu::exact {
namespace {

namespace ex = ops::exact;

// Operand x rounded to precision P, as the bits of an fp32.
template <Precision P>
[[gnu::always_inline]] inline uint32_t rounded_bits(float x) {
  return det::bits_of(ops::round_operand(x, P));
}

// The integer operand of x under scale exponent E (0 for a NaN or an Inf: its line's outputs are NaN).
template <Precision P>
[[gnu::always_inline]] inline int32_t operand(float x, int E) {
  const float r = ops::round_operand(x, P);
  return ex::is_finite(r) ? ex::integer_operand(r, E, ex::slices(P)) : 0;
}

// Digit t of elements 2·pp and 2·pp + 1 of a line as the kernels' int32 digit pair (exact_gemm.hpp).
template <Precision P>
[[gnu::always_inline]] inline int32_t digit_pair(int32_t even, int32_t odd, int t) {
  const ex::Digits dg = kernel_digits(ex::slices(P));
  const uint32_t lo = static_cast<uint16_t>(ex::digit(even, t, dg)), hi = static_cast<uint16_t>(ex::digit(odd, t, dg));
  return static_cast<int32_t>(lo | hi << 16);
}

// code[c] ← the scale code of line i0 + c over k, c < w. Lines adjacent in memory (step_i = 1): the
// lanes are the inner loop; else k is. Both read memory in order.
template <Precision P>
[[gnu::always_inline]] inline void codes_body(const Line& line, int i0, int w, int k, int32_t* code) {
  if (line.step_i == 1) {
    uint32_t top[NR] = {}, bad[NR] = {};
    for (int p = 0; p < k; ++p) {
      const float* row = line.base + static_cast<size_t>(p) * line.step_p + i0;
      for (int c = 0; c < w; ++c) {
        const uint32_t u = rounded_bits<P>(row[c]) & 0x7fffffffu;
        const bool finite = u < 0x7f800000u;
        bad[c] |= finite ? 0u : 1u;
        top[c] = std::max(top[c], finite ? u : 0u);
      }
    }
    for (int c = 0; c < w; ++c) code[c] = ex::line_code(det::float_of_bits(top[c]), bad[c] != 0);
    return;
  }
  for (int c = 0; c < w; ++c) {
    const float* x = line.base + static_cast<size_t>(i0 + c) * line.step_i;
    uint32_t top = 0, bad = 0;
    for (int p = 0; p < k; ++p) {
      const uint32_t u = rounded_bits<P>(x[static_cast<size_t>(p) * line.step_p]) & 0x7fffffffu;
      const bool finite = u < 0x7f800000u;
      bad |= finite ? 0u : 1u;
      top = std::max(top, finite ? u : 0u);
    }
    code[c] = ex::line_code(det::float_of_bits(top), bad != 0);
  }
}

// The digit pairs of lines i0 … i0 + w − 1 (w ≤ lanes; scale exponents exp) over k into out
// (count, kp, lanes): lane c of pair pp of digit t at out[t·slice + pp·lanes + c]. Lines adjacent
// in memory: the lanes are the inner loop; else each line's pairs go through a block of kBlock
// pairs on the stack, then to their lanes.
template <Precision P>
[[gnu::always_inline]] inline void digits_body(const Line& line, int i0, int w, int lanes, int k, const int* exp,
                                               size_t slice, int32_t* out) {
  constexpr int kCount = kernel_digits(ex::slices(P)).count;
  const int kp = (k + 1) / 2;
  if (line.step_i == 1) {
    static constexpr float kZeros[NR] = {};
    for (int pp = 0; pp < kp; ++pp) {
      const float* even = line.base + static_cast<size_t>(2 * pp) * line.step_p + i0;
      const float* odd = 2 * pp + 1 < k ? even + line.step_p : kZeros;
      int32_t* to = out + static_cast<size_t>(pp) * lanes;
      for (int c = 0; c < w; ++c) {
        const int32_t X0 = operand<P>(even[c], exp[c]), X1 = operand<P>(odd[c], exp[c]);
        for (int t = 0; t < kCount; ++t) to[t * slice + c] = digit_pair<P>(X0, X1, t);
      }
    }
    return;
  }
  constexpr int kBlock = 256;
  int32_t block[kCount][kBlock];
  for (int c = 0; c < w; ++c) {
    const float* x = line.base + static_cast<size_t>(i0 + c) * line.step_i;
    const size_t sp = line.step_p;
    for (int pp0 = 0; pp0 < kp; pp0 += kBlock) {
      const int n = std::min(kBlock, k / 2 - pp0);  // whole pairs in this block
      for (int q = 0; q < n; ++q) {
        const size_t p = 2 * static_cast<size_t>(pp0 + q);
        const int32_t X0 = operand<P>(x[p * sp], exp[c]), X1 = operand<P>(x[(p + 1) * sp], exp[c]);
        for (int t = 0; t < kCount; ++t) block[t][q] = digit_pair<P>(X0, X1, t);
      }
      const int m = std::min(kBlock, kp - pp0);
      if (m > n) {  // the last pair of an odd k: its element k − 1 and a zero
        const int32_t X0 = operand<P>(x[static_cast<size_t>(k - 1) * sp], exp[c]);
        for (int t = 0; t < kCount; ++t) block[t][m - 1] = digit_pair<P>(X0, 0, t);
      }
      for (int t = 0; t < kCount; ++t)
        for (int q = 0; q < m; ++q) out[t * slice + static_cast<size_t>(pp0 + q) * lanes + c] = block[t][q];
    }
  }
}

template <Precision P>
PanelWork panel_work_plain() {
  return {[](const Line& line, int i0, int w, int k, int32_t* code) { codes_body<P>(line, i0, w, k, code); },
          [](const Line& line, int i0, int w, int lanes, int k, const int* exp, size_t slice, int32_t* out) {
            digits_body<P>(line, i0, w, lanes, k, exp, slice, out);
          }};
}

#if defined(__x86_64__)
template <Precision P>
__attribute__((target("avx2"))) void codes_avx2(const Line& line, int i0, int w, int k, int32_t* code) {
  codes_body<P>(line, i0, w, k, code);
}
template <Precision P>
__attribute__((target("avx2"))) void digits_avx2(const Line& line, int i0, int w, int lanes, int k, const int* exp,
                                                 size_t slice, int32_t* out) {
  digits_body<P>(line, i0, w, lanes, k, exp, slice, out);
}
template <Precision P>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void codes_avx512(const Line& line, int i0, int w, int k,
                                                                       int32_t* code) {
  codes_body<P>(line, i0, w, k, code);
}
template <Precision P>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void digits_avx512(const Line& line, int i0, int w, int lanes,
                                                                        int k, const int* exp, size_t slice,
                                                                        int32_t* out) {
  digits_body<P>(line, i0, w, lanes, k, exp, slice, out);
}
#endif

template <Precision P>
PanelWork panel_work_for(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512) return {codes_avx512<P>, digits_avx512<P>};
  if (isa == Isa::avx2) return {codes_avx2<P>, digits_avx2<P>};
#endif
  (void)isa;
  return panel_work_plain<P>();
}

}  // namespace

PanelWork panel_work(Isa isa, Precision prec) {
  switch (prec) {
    case Precision::bf16: return panel_work_for<Precision::bf16>(isa);
    case Precision::fp16: return panel_work_for<Precision::fp16>(isa);
    default: return panel_work_for<Precision::fp32>(isa);
  }
}

}  // namespace sb::cpu::exact
