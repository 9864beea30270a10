// The exact GEMM's rounding of a row of a tile whose integer dots fit int64 (ops::exact::narrow_dot),
// compiled once per instruction set so the compiler vectorizes it: each element's dot from its sums
// by digit-pair weight (ops::exact::slice_dot), rounded by ops::exact::exact_element_narrow (the
// rare subnormal result by exact_element), then accumulated and biased as store_element. Integer
// work and one rounding per element: every instruction set gives the same bits.
#include "exact_gemm.hpp"

namespace sb::cpu::exact {
namespace {

namespace ex = ops::exact;

template <Precision P>
[[gnu::always_inline]] inline void round_row_body(const int64_t* w, int cols, int E, const int* F, bool row_bad,
                                                  const uint8_t* col_bad, bool accumulate, const float* bias,
                                                  float* c) {
  constexpr int s = ex::slices(P);
  constexpr ex::Digits dg = kernel_digits(s);
  int64_t S[NR];
  uint32_t bits[NR];
  for (int q = 0; q < cols; ++q) {
    S[q] = static_cast<int64_t>(ex::slice_dot(w + q, MR * NR, dg, true));
    bits[q] = ex::exact_element_narrow(S[q], E, F[q], s, row_bad || col_bad[q] != 0);
  }
  for (int q = 0; q < cols; ++q)
    if (bits[q] == ex::kNarrowMiss) bits[q] = det::bits_of(ex::exact_element(S[q], E, F[q], s, false));
  for (int q = 0; q < cols; ++q) {
    const float product = det::float_of_bits(bits[q]);
    const float out = accumulate ? ex::exact_accumulate(c[q], product) : product;
    c[q] = bias != nullptr ? ops::linear_out(out, bias[q]) : out;
  }
}

template <Precision P>
void round_row_plain(const int64_t* w, int cols, int E, const int* F, bool row_bad, const uint8_t* col_bad,
                     bool accumulate, const float* bias, float* c) {
  round_row_body<P>(w, cols, E, F, row_bad, col_bad, accumulate, bias, c);
}

#if defined(__x86_64__)
template <Precision P>
__attribute__((target("avx2"))) void round_row_avx2(const int64_t* w, int cols, int E, const int* F, bool row_bad,
                                                    const uint8_t* col_bad, bool accumulate, const float* bias,
                                                    float* c) {
  round_row_body<P>(w, cols, E, F, row_bad, col_bad, accumulate, bias, c);
}
template <Precision P>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void round_row_avx512(const int64_t* w, int cols, int E,
                                                                                    const int* F, bool row_bad,
                                                                                    const uint8_t* col_bad,
                                                                                    bool accumulate, const float* bias,
                                                                                    float* c) {
  round_row_body<P>(w, cols, E, F, row_bad, col_bad, accumulate, bias, c);
}
#endif

template <Precision P>
RoundRow round_row_for(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512) return round_row_avx512<P>;
  if (isa == Isa::avx2) return round_row_avx2<P>;
#endif
  (void)isa;
  return round_row_plain<P>;
}

}  // namespace

RoundRow round_row(Isa isa, Precision prec) {
  switch (prec) {
    case Precision::bf16: return round_row_for<Precision::bf16>(isa);
    case Precision::fp16: return round_row_for<Precision::fp16>(isa);
    default: return round_row_for<Precision::fp32>(isa);
  }
}

}  // namespace sb::cpu::exact
